//! Turning a `streamGenerateContent?alt=sse` stream (each event one `GenerateContentResponse`
//! chunk) into [`StreamEvent`]s.

use serde_json::Value;

use super::wire::{Signatures, finish_reason, read_chunk};
use crate::lm::http_endpoint::truncate;
use crate::lm::http_provider::{EventRead, assembled};
use crate::lm::{Completion, FinishReason, LmError, ResponseDetails, StreamAssembler, StreamEvent};

/// What one stream has said so far.
#[derive(Debug, Default)]
pub(super) struct EventReader {
    assembler: StreamAssembler,
    calls: usize,
    id: Option<String>,
    model: Option<String>,
    /// The finish reason, once a chunk gave it: the reply is whole.
    finish: Option<String>,
    blocked: bool,
    signatures: Signatures,
}

impl EventRead for EventReader {
    fn read(&mut self, _name: &str, data: &str) -> Result<Vec<StreamEvent>, LmError> {
        if data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|error| LmError::InvalidResponse {
                message: format!("a chunk is not JSON ({error}): {}", truncate(data, 200)),
            })?;
        if self.id.is_none() {
            self.id = chunk["responseId"].as_str().map(str::to_owned);
            self.model = chunk["modelVersion"].as_str().map(str::to_owned);
        }
        let read = read_chunk(&chunk, self.calls)?;
        let mut events = Vec::new();
        events.extend(read.thoughts.map(StreamEvent::ReasoningDelta));
        events.extend(read.text.map(StreamEvent::TextDelta));
        for call in read.calls {
            events.push(StreamEvent::ToolCallDelta {
                index: self.calls,
                id: Some(call.id),
                name: Some(call.name),
                arguments: call.arguments,
            });
            self.calls += 1;
        }
        if let Some(usage) = read.usage {
            self.assembler.usage = usage;
        }
        if read.finish.is_some() {
            self.finish = read.finish;
        }
        self.blocked |= read.blocked.is_some();
        self.signatures.extend(read.signatures);
        for event in &events {
            self.assembler.push(event);
        }
        Ok(events)
    }

    fn details(&self) -> ResponseDetails<'_> {
        ResponseDetails::new(self.id.as_deref(), self.model.as_deref())
    }

    fn finish(mut self) -> Result<Completion, LmError> {
        self.assembler.finish_reason = match (&self.finish, self.blocked) {
            (Some(reason), _) => Some(finish_reason(reason, self.calls > 0)),
            (None, true) => Some(FinishReason::ContentFilter),
            (None, false) => None,
        };
        let ended = self.assembler.finish_reason.is_some();
        let mut completion = assembled(self.assembler, ended, "a chunk with the finish reason")?;
        completion.provider_state = self.signatures.into_state();
        Ok(completion)
    }
}
