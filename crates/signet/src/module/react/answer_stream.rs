//! Streaming the answer (the extractor's, and a native step's text answer): an [`Lm`] wrapper
//! that sends each request through [`Lm::stream`], reports the text as
//! [`ReActEvent::AnswerDelta`]s while it arrives, and returns the assembled completion, so the
//! adapter parses exactly what it would have parsed otherwise.

use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;

use super::events::{Emitter, ReActEvent};
use crate::lm::{Capabilities, Completion, Lm, LmError, LmRequest, StreamEvent};

/// Forwards a streamed reply's text to the run's events.
pub(super) struct AnswerStream {
    inner: Arc<dyn Lm>,
    events: Emitter,
    /// Whether replies use the Chat adapter's `[[ ## field ## ]]` markers (then deltas are routed to
    /// their field and the markers are not shown).
    chat_markers: bool,
}

impl AnswerStream {
    pub(super) fn new(inner: Arc<dyn Lm>, events: Emitter, chat_markers: bool) -> AnswerStream {
        AnswerStream {
            inner,
            events,
            chat_markers,
        }
    }

    fn emit(&self, pieces: Vec<(Option<String>, String)>) {
        for (field, text) in pieces {
            self.events.emit(ReActEvent::AnswerDelta { field, text });
        }
    }
}

impl Lm for AnswerStream {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        Box::pin(async move {
            let mut splitter = self.chat_markers.then(MarkerSplitter::default);
            let mut stream = self.inner.stream(request);
            while let Some(event) = stream.next().await {
                match event? {
                    StreamEvent::TextDelta(text) => match &mut splitter {
                        Some(splitter) => self.emit(splitter.push(&text)),
                        None => self.emit(vec![(None, text)]),
                    },
                    StreamEvent::Done(completion) => {
                        if let Some(splitter) = &mut splitter {
                            self.emit(splitter.finish());
                        }
                        if !completion.tool_calls.is_empty() {
                            // A native step that wrote field text and called tools did not
                            // answer: the answer still comes, whole or streamed, later.
                            self.events.forget_answer();
                        }
                        return Ok(completion);
                    }
                    StreamEvent::ReasoningDelta(_) | StreamEvent::ToolCallDelta { .. } => {}
                }
            }
            Err(LmError::InvalidResponse {
                message: "the reply stream ended before the completion was done".to_owned(),
            })
        })
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        self.inner.stream(request)
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

const OPEN: &str = "[[ ## ";
const CLOSE: &str = " ## ]]";

/// Splits streamed Chat-adapter text into per-field pieces, hiding the `[[ ## field ## ]]` markers
/// and the blank lines around them. Text before the first marker and after `completed` is dropped
/// (the adapter ignores it too).
#[derive(Debug, Default)]
pub(super) struct MarkerSplitter {
    /// Text not yet emitted: a possible marker start, or whitespace that may precede one.
    pending: String,
    /// The field being written.
    field: Option<String>,
    /// Whether the field has shown any text yet (leading newlines are skipped).
    started: bool,
}

impl MarkerSplitter {
    /// Feeds a delta; returns the pieces that are now certain.
    pub(super) fn push(&mut self, text: &str) -> Vec<(Option<String>, String)> {
        self.pending.push_str(text);
        let mut out = Vec::new();
        loop {
            let Some(open) = self.pending.find(OPEN) else {
                // No marker start: keep back a tail that could begin one.
                let keep = partial_open_suffix(&self.pending);
                self.emit_up_to(self.pending.len() - keep, &mut out);
                return out;
            };
            let after = &self.pending[open + OPEN.len()..];
            let name_len = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            let rest = &after[name_len..];
            if name_len > 0 && rest.starts_with(CLOSE) {
                let name = after[..name_len].to_owned();
                self.emit_up_to(open, &mut out);
                // What precedes the marker is only the gap before it.
                let marker_end = self.pending.find(CLOSE).map_or(0, |c| c + CLOSE.len());
                self.pending.drain(..marker_end);
                self.field = (name != "completed").then_some(name);
                self.started = false;
            } else if rest.len() < CLOSE.len() && CLOSE.starts_with(rest) {
                // Possibly a marker still arriving: emit what precedes it and wait.
                self.emit_up_to(open, &mut out);
                return out;
            } else {
                // Not a marker after all: it is text.
                let end = open + OPEN.len();
                let text: String = self.pending.drain(..end).collect();
                self.emit_text(&text, &mut out);
            }
        }
    }

    /// Emits `pending[..end]` except its trailing whitespace, which may be the gap before a marker
    /// and stays pending.
    fn emit_up_to(&mut self, end: usize, out: &mut Vec<(Option<String>, String)>) {
        let certain_end = self.pending[..end].trim_end().len();
        let text: String = self.pending.drain(..certain_end).collect();
        self.emit_text(&text, out);
    }

    /// The stream ended: emits what was held back (a marker that never closed is text).
    pub(super) fn finish(&mut self) -> Vec<(Option<String>, String)> {
        let rest = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        self.emit_text(rest.trim_end(), &mut out);
        out
    }

    fn emit_text(&mut self, text: &str, out: &mut Vec<(Option<String>, String)>) {
        let Some(field) = &self.field else {
            return;
        };
        let text = if self.started {
            text
        } else {
            text.trim_start_matches(['\n', '\r'])
        };
        if text.is_empty() {
            return;
        }
        self.started = true;
        match out.last_mut() {
            Some((Some(last), pending)) if last == field => pending.push_str(text),
            _ => out.push((Some(field.clone()), text.to_owned())),
        }
    }
}

/// The length of the longest suffix of `text` that is a proper prefix of `[[ ## `.
fn partial_open_suffix(text: &str) -> usize {
    (1..OPEN.len())
        .rev()
        .find(|&n| text.ends_with(&OPEN[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&str]) -> Vec<(Option<String>, String)> {
        let mut splitter = MarkerSplitter::default();
        let mut pieces: Vec<(Option<String>, String)> = Vec::new();
        for chunk in chunks {
            pieces.extend(splitter.push(chunk));
        }
        pieces.extend(splitter.finish());
        // Merge consecutive pieces of one field, as a UI would display them.
        let mut merged: Vec<(Option<String>, String)> = Vec::new();
        for (field, text) in pieces {
            match merged.last_mut() {
                Some((last, acc)) if *last == field => acc.push_str(&text),
                _ => merged.push((field, text)),
            }
        }
        merged
    }

    const REPLY: &str =
        "[[ ## reasoning ## ]]\nIt is 4.\n\n[[ ## answer ## ]]\n4 apples\n\n[[ ## completed ## ]]";

    fn expected() -> Vec<(Option<String>, String)> {
        vec![
            (Some("reasoning".into()), "It is 4.".into()),
            (Some("answer".into()), "4 apples".into()),
        ]
    }

    #[test]
    fn whole_reply_in_one_delta() {
        assert_eq!(split(&[REPLY]), expected());
    }

    #[test]
    fn every_split_point_gives_the_same_fields() {
        for cut in 0..=REPLY.len() {
            let (a, b) = REPLY.split_at(cut);
            assert_eq!(split(&[a, b]), expected(), "cut at {cut}");
        }
    }

    #[test]
    fn character_by_character() {
        let chars: Vec<String> = REPLY.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        assert_eq!(split(&refs), expected());
    }

    #[test]
    fn inner_blank_lines_and_brackets_are_kept() {
        let reply = "[[ ## answer ## ]]\nline one\n\nline [two] [[ x\n\n[[ ## completed ## ]]";
        assert_eq!(
            split(&[reply]),
            vec![(Some("answer".into()), "line one\n\nline [two] [[ x".into())]
        );
    }

    #[test]
    fn an_unclosed_marker_at_the_end_is_text() {
        assert_eq!(
            split(&["[[ ## answer ## ]]\n42 [[ ## ans"]),
            vec![(Some("answer".into()), "42 [[ ## ans".into())]
        );
    }

    #[test]
    fn a_marker_lookalike_with_spaces_is_text() {
        assert_eq!(
            split(&[
                "[[ ## answer ## ]]\nsee [[ ## not a field",
                " here\n\n[[ ## completed ## ]]"
            ]),
            vec![(Some("answer".into()), "see [[ ## not a field here".into())]
        );
    }

    #[test]
    fn text_before_the_first_marker_is_dropped() {
        assert_eq!(
            split(&["Sure!\n[[ ## answer ## ]]\nyes"]),
            vec![(Some("answer".into()), "yes".into())]
        );
    }
}
