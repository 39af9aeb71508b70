//! Streaming the answer (the extractor's, a native step's text answer, `Predict`'s, and the
//! arguments of history mode's `submit` call): an [`Lm`] wrapper that sends each request through
//! [`Lm::stream`], reports the answer's text as [`ReActEvent::AnswerDelta`]s while it arrives — split into the output fields in the adapter's
//! format ([`FieldStream`]), so every piece names its field and shows only that field's text —
//! and returns the assembled completion, so the adapter parses exactly what it would have parsed
//! otherwise.

use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;

use super::events::{Emitter, ReActEvent};
use crate::adapter::field_stream::{FieldStream, Pieces};
use crate::lm::{Capabilities, Completion, Lm, LmError, LmRequest, StreamEvent};

/// The LM a run asks for an answer: in a streamed run (one whose `events` someone receives), `lm`
/// behind an [`AnswerStream`] — when the adapter marks its fields, or when no reply of this LM
/// calls tools (`answers_only`): text a model writes beside its tool calls is not the answer, and
/// only the Chat adapter's markers tell the answer's fields apart from it.
pub(crate) fn answer_lm(
    lm: Arc<dyn Lm>,
    adapter: &dyn crate::adapter::Adapter,
    events: &Emitter,
    answers_only: bool,
) -> Arc<dyn Lm> {
    let chat_markers = adapter.marks_fields();
    if events.listening() && (chat_markers || answers_only) {
        Arc::new(AnswerStream::new(lm, events.clone(), chat_markers))
    } else {
        lm
    }
}

/// Forwards a streamed reply's text to the run's events.
pub(super) struct AnswerStream {
    inner: Arc<dyn Lm>,
    events: Emitter,
    /// Whether replies use the Chat adapter's `[[ ## field ## ]]` markers; otherwise they are the
    /// JSON adapter's object or the XML adapter's tags (told apart by the reply itself).
    chat_markers: bool,
    /// The tool whose call's arguments are the answer (history mode's `submit`, a JSON object of
    /// the outputs); the reply's text is then not the answer.
    answer_tool: Option<&'static str>,
}

impl AnswerStream {
    pub(super) fn new(inner: Arc<dyn Lm>, events: Emitter, chat_markers: bool) -> AnswerStream {
        AnswerStream {
            inner,
            events,
            chat_markers,
            answer_tool: None,
        }
    }

    /// A stream whose answer is the arguments of the calls of `tool` (history mode's `submit`),
    /// as the model writes them.
    pub(super) fn arguments_of(inner: Arc<dyn Lm>, events: Emitter, tool: &'static str) -> Self {
        AnswerStream {
            answer_tool: Some(tool),
            ..AnswerStream::new(inner, events, false)
        }
    }

    fn emit(&self, pieces: Pieces) {
        for (field, text) in pieces {
            self.events.emit(ReActEvent::AnswerDelta { field, text });
        }
    }
}

/// One reply being shown: its field splitter and the answering call's index.
struct Showing {
    fields: FieldStream,
    /// The index of the answering tool's call in the reply, once its name arrived.
    answering: Option<usize>,
}

impl AnswerStream {
    /// Shows what `event` adds to the answer.
    fn show(&self, showing: &mut Showing, event: &StreamEvent) {
        match event {
            StreamEvent::TextDelta(text) if self.answer_tool.is_none() => {
                self.emit(showing.fields.push(text));
            }
            StreamEvent::ToolCallDelta {
                index,
                name,
                arguments,
                ..
            } if self.answer_tool.is_some() => {
                if showing.answering.is_none() && name.as_deref() == self.answer_tool {
                    showing.answering = Some(*index);
                }
                if showing.answering == Some(*index) {
                    self.emit(showing.fields.push(arguments));
                }
            }
            StreamEvent::Done(completion) => {
                self.emit(showing.fields.finish());
                if self.answer_tool.is_none() && !completion.tool_calls.is_empty() {
                    // A native step that wrote field text and called tools did not answer:
                    // the answer still comes, whole or streamed, later.
                    self.events.forget_answer();
                }
            }
            StreamEvent::TextDelta(_)
            | StreamEvent::ReasoningDelta(_)
            | StreamEvent::ToolCallDelta { .. } => {}
        }
    }
}

impl Lm for AnswerStream {
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

    /// The reply's events as they arrive, each piece of the answer shown as it passes.
    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        let mut showing = Showing {
            fields: FieldStream::new(self.chat_markers),
            answering: None,
        };
        self.inner
            .stream(request)
            .inspect(move |event| {
                if let Ok(event) = event {
                    self.show(&mut showing, event);
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
