//! What a streamed module run reports ([`streamify`](super::streamify)): each predictor's call —
//! its start, its output fields as the model writes them, the tools it calls, its end — and the
//! module's result. The run's predictors find where to report through a task-local sink.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::adapter::Fields;
use crate::lm::Usage;
use crate::trace::PredictorId;

/// An event of a streamed module run ([`streamify`](super::streamify), DSPy's `streamify`):
/// what one of its predictors did, then the module's result. Serialized with a `type` tag
/// (`{"type": "predictor", "predictor": "draft.predict", "event": {...}}`), ready for
/// Server-Sent Events.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModuleEvent<O, E: std::fmt::Display = crate::error::Error> {
    /// A predictor of the module reported something.
    Predictor {
        /// Its path in the module, as [`named_predictors`](super::Predictors::named_predictors)
        /// names it (`draft.predict`, `agent.react`); a predictor the module does not list (made
        /// at run time) by its signature's name.
        predictor: String,
        /// What it did.
        event: PredictorEvent,
    },
    /// The module returned.
    Done {
        /// Its output.
        output: O,
        /// LM usage over every call of the run.
        usage: Usage,
        /// Wall time, in milliseconds.
        elapsed_ms: u64,
    },
    /// The module failed.
    Failed {
        /// Why.
        #[serde(serialize_with = "display")]
        error: Arc<E>,
        /// LM usage over every call of the run.
        usage: Usage,
    },
}

fn display<S: serde::Serializer, E: std::fmt::Display>(
    error: &Arc<E>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(error)
}

/// What one predictor did, in a streamed module run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PredictorEvent {
    /// A call begins.
    Started,
    /// A piece of an output field as the model writes it (DSPy's `StreamResponse`): only that
    /// field's text, whatever the adapter (see
    /// [`ReActEvent::AnswerDelta`](super::ReActEvent::AnswerDelta) for the rules).
    FieldDelta {
        /// The output field; `None` for a reply in no known format (it arrives whole).
        field: Option<String>,
        /// The text.
        text: String,
    },
    /// A tool call begins (ReAct, or `Predict` with tools, inside the module).
    ToolCallStarted {
        /// The tool.
        tool: String,
        /// Its arguments.
        args: Value,
    },
    /// A tool call ended.
    ToolCallFinished {
        /// The tool.
        tool: String,
        /// What the model reads of the result (or the error).
        observation: String,
        /// How long it took, in milliseconds.
        elapsed_ms: u64,
    },
    /// The call returned these outputs.
    Finished {
        /// The outputs.
        outputs: Fields,
    },
    /// The call failed.
    Failed {
        /// Why.
        error: String,
    },
}

impl PredictorEvent {
    /// DSPy's default status message for this event (`StatusMessageProvider`): `Calling tool
    /// add...` when a tool call begins, `Tool calling finished! Querying the LLM with tool calling
    /// results...` when it ends; `None` for the others.
    ///
    /// ```
    /// use signet::module::PredictorEvent;
    /// let started = PredictorEvent::ToolCallStarted { tool: "add".into(), args: serde_json::json!({}) };
    /// assert_eq!(started.status_message().as_deref(), Some("Calling tool add..."));
    /// assert_eq!(PredictorEvent::Started.status_message(), None);
    /// ```
    pub fn status_message(&self) -> Option<String> {
        match self {
            PredictorEvent::ToolCallStarted { tool, .. } => Some(format!("Calling tool {tool}...")),
            PredictorEvent::ToolCallFinished { .. } => Some(
                "Tool calling finished! Querying the LLM with tool calling results...".to_owned(),
            ),
            _ => None,
        }
    }
}

/// Where a streamed module run's predictors report: the channel to the stream, and the path of
/// each predictor of the module.
#[derive(Clone)]
pub(crate) struct Sink {
    sender: tokio::sync::mpsc::UnboundedSender<(String, PredictorEvent)>,
    paths: Arc<HashMap<PredictorId, String>>,
}

tokio::task_local! {
    static SINK: Sink;
}

impl Sink {
    pub(crate) fn new(
        sender: tokio::sync::mpsc::UnboundedSender<(String, PredictorEvent)>,
        paths: HashMap<PredictorId, String>,
    ) -> Sink {
        Sink {
            sender,
            paths: Arc::new(paths),
        }
    }

    /// Runs `future` with this sink as the one its predictors report to.
    pub(crate) async fn scope<F: std::future::Future>(self, future: F) -> F::Output {
        SINK.scope(self, future).await
    }

    /// The sink of the streamed run this task belongs to, if any.
    pub(crate) fn current() -> Option<Sink> {
        SINK.try_with(Sink::clone).ok()
    }

    /// The path of predictor `id` (or `name` when the module does not list it).
    pub(crate) fn path(&self, id: PredictorId, name: &str) -> String {
        self.paths
            .get(&id)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    }

    /// Reports `event` of the predictor at `path` (dropped when nobody listens any more).
    pub(crate) fn send(&self, path: &str, event: PredictorEvent) {
        let _ = self.sender.send((path.to_owned(), event));
    }
}
