//! Checks on a reply while it streams: an [`Lm`] wrapper that asks for the reply through
//! [`Lm::stream`], splits the answer into its output fields as it arrives (the adapter's format, or
//! the arguments of the answering tool's call), gives each piece to the checks' watchers, and
//! stops the reply at the first failure: the stream is dropped (so the server stops generating)
//! and the call fails with [`LmError::Stopped`]; the module reads the failure with
//! [`Watch::take_stopped`] and re-asks.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

use super::{Answer, Checks, FailedAttempt, Watcher};
use crate::adapter::Fields;
use crate::adapter::field_stream::FieldStream;
use crate::lm::{Capabilities, Completion, Lm, LmError, LmRequest, StreamEvent};
use crate::module::react::trajectory::Trajectory;
use crate::tool::Tool;

/// What one run's watched replies are checked against, and the reply it stopped, if any.
pub(crate) struct Watch {
    checks: Arc<Checks>,
    /// The inputs, the trajectory before the reply and the loop's tools (updated before each
    /// turn of a loop).
    context: Mutex<Context>,
    /// The attempt a watcher stopped, until the module takes it.
    stopped: Mutex<Option<FailedAttempt>>,
}

/// What the watchers read besides the reply.
#[derive(Default)]
struct Context {
    inputs: Fields,
    trajectory: Option<Trajectory>,
    tools: Vec<Arc<dyn Tool>>,
}

impl Watch {
    /// A watch of `checks` for a run on `inputs`, when any of them watches replies; `None`
    /// otherwise (nothing is streamed for them).
    pub(crate) fn of(checks: Option<&Arc<Checks>>, inputs: &Fields) -> Option<Arc<Watch>> {
        let checks = checks.filter(|c| c.watches())?;
        Some(Arc::new(Watch {
            checks: checks.clone(),
            context: Mutex::new(Context {
                inputs: inputs.clone(),
                ..Context::default()
            }),
            stopped: Mutex::new(None),
        }))
    }

    /// The next reply comes after `trajectory`, in a loop offering `tools`.
    pub(crate) fn set_trajectory(&self, trajectory: &Trajectory, tools: &[Arc<dyn Tool>]) {
        let mut context = self.context.lock().unwrap_or_else(|e| e.into_inner());
        context.trajectory = Some(trajectory.clone());
        if context.tools.len() != tools.len() {
            context.tools = tools.to_vec();
        }
    }

    /// `lm`, its replies watched: the text (its fields marked as the Chat adapter marks them, when
    /// `chat_markers`; one JSON object or XML tags otherwise), or only the arguments of the calls
    /// of `answering_tool` when one is named.
    pub(crate) fn wrap(
        self: &Arc<Self>,
        lm: Arc<dyn Lm>,
        answering_tool: Option<&'static str>,
        chat_markers: bool,
    ) -> Arc<dyn Lm> {
        Arc::new(Watched {
            inner: lm,
            watch: self.clone(),
            answering_tool,
            chat_markers,
        })
    }

    /// The attempt the last watched reply was stopped at, if it was (taken once).
    pub(crate) fn take_stopped(&self) -> Option<FailedAttempt> {
        self.stopped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// An LM whose replies a [`Watch`] reads as they stream.
struct Watched {
    inner: Arc<dyn Lm>,
    watch: Arc<Watch>,
    answering_tool: Option<&'static str>,
    chat_markers: bool,
}

/// One reply being watched.
struct Reading {
    /// The reply's text, split into fields in the adapter's format.
    fields: FieldStream,
    /// The answering call's arguments, a JSON object, split into fields.
    arguments: FieldStream,
    /// The fields written so far, as text.
    outputs: Fields,
    watchers: Vec<Box<dyn Watcher>>,
    /// The index of the answering tool's call in the reply, once its name arrived.
    answering: Option<usize>,
    /// Whether another call came before the answering one: the answer then waits a turn (the
    /// model has not read those calls' results), so it is not watched, and the calls run.
    answer_waits: bool,
}

impl Reading {
    /// Reads `event`; the failure that stops the reply, if one.
    fn read(&mut self, event: &StreamEvent, watched: &Watched) -> Option<FailedAttempt> {
        let pieces = match (event, watched.answering_tool) {
            (StreamEvent::TextDelta(text), None) => self.fields.push(text),
            (StreamEvent::TextDelta(text), Some(_)) if watched.chat_markers => {
                self.fields.push(text)
            }
            (
                StreamEvent::ToolCallDelta {
                    index,
                    name,
                    arguments,
                    ..
                },
                Some(tool),
            ) => {
                if self.answering.is_none() {
                    match name.as_deref() {
                        Some(name) if name == tool => self.answering = Some(*index),
                        Some(_) => self.answer_waits = true,
                        None => {}
                    }
                }
                if self.answer_waits || self.answering != Some(*index) {
                    return None;
                }
                self.arguments.push(arguments)
            }
            _ => return None,
        };
        let context = watched
            .watch
            .context
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        for (field, text) in pieces {
            let Some(field) = field else { continue };
            let entry = self
                .outputs
                .entry(field.clone())
                .or_insert_with(|| Value::String(String::new()));
            let Value::String(written) = entry else {
                continue;
            };
            let new_from = written.len();
            written.push_str(&text);
            let Some(Value::String(written)) = self.outputs.get(&field) else {
                continue;
            };
            let mut answer = Answer::new(&self.outputs, &context.inputs);
            if let Some(trajectory) = &context.trajectory {
                answer = answer.after(trajectory, &context.tools);
            }
            for watcher in &mut self.watchers {
                if let Some(failure) = watcher.push(&field, written, new_from, &answer) {
                    let mut attempt = FailedAttempt::new(self.outputs.clone(), vec![failure]);
                    attempt.stopped_early = true;
                    return Some(attempt);
                }
            }
        }
        None
    }
}

impl Lm for Watched {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        Box::pin(async move {
            let mut stream = self.stream(request);
            while let Some(event) = stream.next().await {
                if let StreamEvent::Done(completion) = event? {
                    return Ok(completion);
                }
            }
            Err(LmError::InvalidResponse {
                message: "the reply stream ended before the completion was done".to_owned(),
            })
        })
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        let reading = Reading {
            fields: FieldStream::new(self.chat_markers),
            arguments: FieldStream::new(false),
            outputs: Fields::new(),
            watchers: self
                .watch
                .checks
                .list()
                .iter()
                .filter_map(|c| c.watcher())
                .collect(),
            answering: None,
            answer_waits: false,
        };
        let inner = self.inner.stream(request);
        futures::stream::unfold(Some((inner, reading)), move |state| async move {
            let (mut inner, mut reading) = state?;
            let event = inner.next().await?;
            let stopped = match &event {
                Ok(event) => reading.read(event, self),
                Err(_) => None,
            };
            match stopped {
                None => Some((event, Some((inner, reading)))),
                Some(attempt) => {
                    let reason = attempt
                        .failures
                        .first()
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    *self.watch.stopped.lock().unwrap_or_else(|e| e.into_inner()) = Some(attempt);
                    // The inner stream is dropped here: the request is cancelled.
                    drop(inner);
                    Some((Err(LmError::Stopped { reason }), None))
                }
            }
        })
        .boxed()
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::module::check::{Check, ChecksSlot, NoRepetition};
    use crate::testing::ScriptedLm;

    struct Slot(Option<Arc<Checks>>);

    impl ChecksSlot for Slot {
        fn checks_slot(&mut self) -> &mut Option<Arc<Checks>> {
            &mut self.0
        }
    }

    fn watch_of(check: impl Check + 'static) -> Arc<Watch> {
        let mut slot = Slot(None);
        slot.add_check(Arc::new(check));
        Watch::of(slot.0.as_ref(), &Fields::new()).expect("a watching check")
    }

    #[tokio::test]
    async fn a_looping_reply_is_stopped_and_its_fields_so_far_kept() {
        let looping = format!(
            "[[ ## answer ## ]]\nTomorrow: {}\n\n[[ ## completed ## ]]",
            "120 EUR is ".repeat(50)
        );
        let watch = watch_of(NoRepetition::new());
        let lm = watch.wrap(Arc::new(ScriptedLm::texts([looping])), None, true);
        let error = lm.complete(&LmRequest::default()).await.unwrap_err();
        assert!(matches!(error, LmError::Stopped { .. }), "{error}");
        let stopped = watch.take_stopped().expect("the stopped attempt");
        assert!(stopped.stopped_early);
        assert_eq!(stopped.failures[0].field.as_deref(), Some("answer"));
        assert!(
            stopped.outputs["answer"]
                .as_str()
                .unwrap()
                .starts_with("Tomorrow: 120 EUR is")
        );
        assert!(watch.take_stopped().is_none(), "taken once");
    }

    #[tokio::test]
    async fn a_reply_that_passes_is_returned_whole() {
        let text = "[[ ## answer ## ]]\nTomorrow in Oslo: 4 °C.\n\n[[ ## completed ## ]]";
        let watch = watch_of(NoRepetition::new());
        let lm = watch.wrap(Arc::new(ScriptedLm::texts([text])), None, true);
        let reply = lm.complete(&LmRequest::default()).await.unwrap();
        assert_eq!(reply.text.as_deref(), Some(text));
        assert!(watch.take_stopped().is_none());
    }

    #[tokio::test]
    async fn only_the_answering_tools_arguments_are_watched() {
        use crate::lm::ToolCall;
        let looping = json!({"answer": "is 5 EUR is 5 EUR is 5 EUR is 5 EUR is 5 EUR"}).to_string();
        let calls = vec![
            ToolCall::new("c0", "finish", looping.clone()),
            ToolCall::new("c1", "lookup", looping),
        ];
        let watch = watch_of(NoRepetition::new());
        let lm = watch.wrap(
            Arc::new(ScriptedLm::new([Completion::tool_calls(calls)])),
            Some("finish"),
            false,
        );
        let error = lm.complete(&LmRequest::default()).await.unwrap_err();
        assert!(matches!(error, LmError::Stopped { .. }));
        assert_eq!(watch.take_stopped().unwrap().outputs.len(), 1);
    }

    #[tokio::test]
    async fn an_answer_after_other_calls_waits_and_is_not_stopped() {
        use crate::lm::ToolCall;
        let looping = json!({"answer": "is 5 EUR is 5 EUR is 5 EUR is 5 EUR is 5 EUR"}).to_string();
        let calls = vec![
            ToolCall::new("c0", "lookup", json!({"q": "Oslo"}).to_string()),
            ToolCall::new("c1", "finish", looping),
        ];
        let watch = watch_of(NoRepetition::new());
        let lm = watch.wrap(
            Arc::new(ScriptedLm::new([Completion::tool_calls(calls)])),
            Some("finish"),
            false,
        );
        let reply = lm.complete(&LmRequest::default()).await.unwrap();
        assert_eq!(reply.tool_calls.len(), 2, "the lookup still runs");
        assert!(watch.take_stopped().is_none());
    }
}
