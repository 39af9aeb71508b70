//! The journal that turns a Signet run's LM calls and tool calls into Restate `ctx.run` steps.
//!
//! Restate's context cannot leave the handler, so the run does not call Restate itself: its
//! [`RestateJournal`] sends each call as an [`Effect`] over a channel, and the handler, which
//! holds the context, runs the effects one at a time under `ctx.run` ([`drive`]) and sends each
//! result back. On a replay Restate answers `ctx.run` from its journal without running the
//! closure, so an LM call or a tool call that completed before a crash is neither paid nor
//! executed again.

use std::future::Future;

use futures::FutureExt;
use futures::future::BoxFuture;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use signet::journal::{Journal, LmCall, ToolRun};
use signet::lm::{Completion, LmError};
use signet::tool::ToolError;
use tokio::sync::{mpsc, oneshot};

/// What one journaled step produced, as recorded by Restate.
type Recorded = Result<Json<Value>, HandlerError>;

/// One call waiting to become a journaled step.
pub(crate) struct Effect {
    /// The step's name in Restate's journal (`lm`, `tool.<name>`): deterministic, since a replay
    /// checks it.
    name: String,
    /// What the agent's events list shows of it.
    event: Event,
    /// Runs the call; `Err` (a transient LM failure) makes Restate retry the step.
    work: Box<dyn FnOnce() -> BoxFuture<'static, Recorded> + Send>,
    reply: oneshot::Sender<Result<Value, TerminalError>>,
}

/// An entry of a run's event list: one journaled LM call or tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// An LM call.
    Lm {
        /// The model.
        model: String,
        /// Whether it returned a completion.
        #[serde(default)]
        ok: bool,
    },
    /// A tool call.
    Tool {
        /// The tool.
        tool: String,
        /// The arguments.
        args: Value,
        /// What it returned, or its error's text.
        #[serde(default)]
        result: Value,
        /// Whether it returned a value (else `result` is the error).
        #[serde(default)]
        ok: bool,
    },
}

/// A [`Journal`] whose calls become steps of the Restate invocation that [`drive`]s it.
#[derive(Clone)]
pub(crate) struct RestateJournal {
    effects: mpsc::UnboundedSender<Effect>,
}

impl RestateJournal {
    /// A journal, and the receiving end [`drive`] reads.
    pub(crate) fn new() -> (RestateJournal, mpsc::UnboundedReceiver<Effect>) {
        let (effects, received) = mpsc::unbounded_channel();
        (RestateJournal { effects }, received)
    }

    /// Sends one effect and waits for its recorded value.
    fn submit(
        &self,
        name: String,
        event: Event,
        work: Box<dyn FnOnce() -> BoxFuture<'static, Recorded> + Send>,
    ) -> impl Future<Output = Result<Value, String>> + Send + 'static {
        let (reply, answer) = oneshot::channel();
        // The step runs where the handler drives it: in the span of the call that asked for it
        // (the agent's, a tool's), so that its `chat` or tool spans nest there.
        let span = tracing::Span::current();
        let work: Box<dyn FnOnce() -> BoxFuture<'static, Recorded> + Send> =
            Box::new(move || Box::pin(tracing::Instrument::instrument(work(), span)));
        let sent = self.effects.send(Effect {
            name,
            event,
            work,
            reply,
        });
        async move {
            sent.map_err(|_| "the Restate handler is gone".to_owned())?;
            match answer.await {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(error)) => Err(format!(
                    "Restate ended the step (code {}): {}",
                    error.code(),
                    error.message()
                )),
                Err(_) => Err("the Restate handler is gone".to_owned()),
            }
        }
    }
}

/// A recorded `{ "ok": .. }` or `{ "err": .. }`, decoded.
fn decode<T, E>(value: Value) -> Result<Result<T, E>, String>
where
    T: serde::de::DeserializeOwned,
    E: serde::de::DeserializeOwned,
{
    let mut value = value;
    if let Some(ok) = value.get_mut("ok") {
        return serde_json::from_value(ok.take())
            .map(Ok)
            .map_err(|e| format!("a recorded result does not decode: {e}"));
    }
    match value.get_mut("err") {
        Some(err) => serde_json::from_value(err.take())
            .map(Err)
            .map_err(|e| format!("a recorded error does not decode: {e}")),
        None => Err(format!("a recorded step is neither ok nor err: {value}")),
    }
}

impl Journal for RestateJournal {
    fn lm_call(&self, call: LmCall) -> BoxFuture<'static, Result<Completion, LmError>> {
        let event = Event::Lm {
            model: call.model().to_owned(),
            ok: false,
        };
        let work = Box::new(move || {
            async move {
                match call.run().await {
                    Ok(completion) => Ok(Json(json!({ "ok": completion }))),
                    // Retried by Restate (with the invocation's retry policy), not journaled.
                    Err(error) if error.is_transient() => Err(HandlerError::from(error)),
                    Err(error) => Ok(Json(json!({ "err": error }))),
                }
            }
            .boxed()
        });
        let recorded = self.submit("lm".to_owned(), event, work);
        async move {
            let value = recorded
                .await
                .map_err(|message| LmError::Journal { message })?;
            decode::<Completion, LmError>(value).map_err(|message| LmError::Journal { message })?
        }
        .boxed()
    }

    fn tool_call(&self, call: ToolRun) -> BoxFuture<'static, Result<Value, ToolError>> {
        let tool = call.tool().to_owned();
        let event = Event::Tool {
            tool: tool.clone(),
            args: call.args().clone(),
            result: Value::Null,
            ok: false,
        };
        let work = Box::new(move || {
            async move {
                Ok(Json(match call.run().await {
                    Ok(value) => json!({ "ok": value }),
                    Err(error) => json!({ "err": error }),
                }))
            }
            .boxed()
        });
        let recorded = self.submit(format!("tool.{tool}"), event, work);
        async move {
            let failed = |message| ToolError::Remote {
                tool: tool.clone(),
                message,
            };
            let value = recorded.await.map_err(failed)?;
            decode::<Value, ToolError>(value).map_err(failed)?
        }
        .boxed()
    }
}

/// The state key of a run's `index`-th event (the `events` key holds how many there are). One
/// key per event, so recording an event writes that event alone, not the list so far.
pub(crate) fn event_key(index: u64) -> String {
    format!("event.{index}")
}

/// Polls `run` while running every effect it sends under `ctx.run`, one at a time, and
/// recording each as the workflow's next event ([`event_key`]; `recorded` counts them). Returns
/// the run's result.
pub(crate) async fn drive<T>(
    ctx: &WorkflowContext<'_>,
    run: impl Future<Output = T>,
    effects: &mut mpsc::UnboundedReceiver<Effect>,
    recorded: &mut u64,
) -> T {
    let mut run = std::pin::pin!(run);
    loop {
        tokio::select! {
            biased;
            done = &mut run => return done,
            Some(effect) = effects.recv() => {
                let journaled = ctx.run(effect.work).name(effect.name).await;
                let result = journaled.map(|json| json.into_inner());
                ctx.set(&event_key(*recorded), Json(settled(effect.event, &result)));
                *recorded += 1;
                ctx.set("events", *recorded);
                let _ = effect.reply.send(result);
            }
        }
    }
}

/// The event of an effect, with what it returned.
fn settled(event: Event, result: &Result<Value, TerminalError>) -> Event {
    let (ok, value) = match result {
        Ok(value) => match (value.get("ok"), value.get("err")) {
            (Some(ok), _) => (true, ok.clone()),
            (None, Some(err)) => (false, err.clone()),
            _ => (false, value.clone()),
        },
        Err(error) => (false, Value::String(error.message().to_owned())),
    };
    match event {
        Event::Lm { model, .. } => Event::Lm { model, ok },
        Event::Tool { tool, args, .. } => Event::Tool {
            tool,
            args,
            result: value,
            ok,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_results_decode_and_a_bad_record_is_an_error() {
        let ok: Result<Value, ToolError> = decode(json!({"ok": 3})).unwrap();
        assert_eq!(ok, Ok(json!(3)));
        let error = ToolError::Failed {
            tool: "t".into(),
            message: "no".into(),
        };
        let err: Result<Value, ToolError> = decode(json!({ "err": error })).unwrap();
        assert_eq!(err, Err(error));
        let bad = decode::<Value, ToolError>(json!({"what": 1})).unwrap_err();
        assert!(bad.contains("neither ok nor err"), "{bad}");
    }
}
