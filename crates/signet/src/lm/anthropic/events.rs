//! Turning a Messages event stream (`message_start`, `content_block_*`, `message_delta`,
//! `message_stop`, `ping`, `error`) into [`StreamEvent`]s.

use serde_json::Value;

use super::wire::{error_event, finish_reason, thinking_state, usage_of};
use crate::lm::http_provider::{EventRead, assembled};
use crate::lm::{Completion, LmError, ResponseDetails, StreamAssembler, StreamEvent, Usage};

/// What one stream has said so far: the assembled reply, and which content blocks are tool calls.
#[derive(Debug, Default)]
pub(super) struct EventReader {
    assembler: StreamAssembler,
    /// Per content block index, its tool call's index among the reply's calls (`None` for a text
    /// or thinking block).
    tool_of_block: Vec<Option<usize>>,
    tools: usize,
    /// The thinking blocks as they are assembled (text and signature from their deltas), with
    /// their content block index.
    thinking: Vec<(usize, Value)>,
    /// The response id and model (`message_start`), for the span.
    id: Option<String>,
    model: Option<String>,
    /// Whether `message_stop` came: the reply is whole.
    stopped: bool,
}

impl EventRead for EventReader {
    /// The events of one SSE event named `name` with JSON `data`; an `error` event, or data that
    /// is not what the API sends, is an error.
    fn read(&mut self, name: &str, data: &str) -> Result<Vec<StreamEvent>, LmError> {
        if name == "ping" || data.trim().is_empty() {
            return Ok(Vec::new());
        }
        let event: Value =
            serde_json::from_str(data).map_err(|error| LmError::InvalidResponse {
                message: format!(
                    "the `{name}` event's data is not JSON ({error}): {}",
                    crate::lm::http_endpoint::truncate(data, 200)
                ),
            })?;
        let kind = event.get("type").and_then(Value::as_str).unwrap_or(name);
        let mut events = Vec::new();
        match kind {
            "message_start" => {
                let message = &event["message"];
                self.id = message["id"].as_str().map(str::to_owned);
                self.model = message["model"].as_str().map(str::to_owned);
                if let Some(usage) = message.get("usage") {
                    self.assembler.usage = usage_of(usage);
                }
            }
            "content_block_start" => {
                let index = block_index(&event)?;
                let block = &event["content_block"];
                if self.tool_of_block.len() <= index {
                    self.tool_of_block.resize(index + 1, None);
                }
                match block["type"].as_str() {
                    Some("tool_use") => {
                        let tool = self.tools;
                        self.tools += 1;
                        self.tool_of_block[index] = Some(tool);
                        events.push(StreamEvent::ToolCallDelta {
                            index: tool,
                            id: block["id"].as_str().map(str::to_owned),
                            name: block["name"].as_str().map(str::to_owned),
                            arguments: String::new(),
                        });
                    }
                    Some("thinking" | "redacted_thinking") => {
                        if self.thinking.len() >= 4096 {
                            return Err(LmError::InvalidResponse {
                                message: "more than 4096 thinking blocks in one reply".into(),
                            });
                        }
                        self.thinking.push((index, block.clone()));
                        events.extend(
                            block["thinking"]
                                .as_str()
                                .filter(|t| !t.is_empty())
                                .map(|t| StreamEvent::ReasoningDelta(t.to_owned())),
                        );
                    }
                    Some("text") => events.extend(
                        block["text"]
                            .as_str()
                            .filter(|t| !t.is_empty())
                            .map(|t| StreamEvent::TextDelta(t.to_owned())),
                    ),
                    _ => {}
                }
            }
            "content_block_delta" => {
                let index = block_index(&event)?;
                let delta = &event["delta"];
                let text = |key: &str| delta[key].as_str().unwrap_or_default().to_owned();
                match delta["type"].as_str() {
                    Some("text_delta") => events.push(StreamEvent::TextDelta(text("text"))),
                    Some("thinking_delta") => {
                        self.append_thinking(index, "thinking", &text("thinking"));
                        events.push(StreamEvent::ReasoningDelta(text("thinking")))
                    }
                    Some("signature_delta") => {
                        self.append_thinking(index, "signature", &text("signature"))
                    }
                    Some("input_json_delta") => {
                        let Some(Some(tool)) = self.tool_of_block.get(index) else {
                            return Err(LmError::InvalidResponse {
                                message: format!(
                                    "an `input_json_delta` for content block {index}, which is \
                                     not a tool call"
                                ),
                            });
                        };
                        events.push(StreamEvent::ToolCallDelta {
                            index: *tool,
                            id: None,
                            name: None,
                            arguments: text("partial_json"),
                        });
                    }
                    // Citations: nothing Signet reads.
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = event["delta"]["stop_reason"].as_str() {
                    self.assembler.finish_reason = Some(finish_reason(reason));
                }
                if let Some(output) = event["usage"]["output_tokens"].as_u64() {
                    self.assembler.usage.completion_tokens = output;
                }
                // Some servers report the prompt's tokens only here.
                let usage = &event["usage"];
                if usage
                    .get("input_tokens")
                    .is_some_and(|n| n.as_u64() > Some(0))
                {
                    let completion_tokens = self.assembler.usage.completion_tokens;
                    self.assembler.usage = Usage {
                        completion_tokens,
                        ..usage_of(usage)
                    };
                }
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(error_event(&event)),
            // `content_block_stop`, and event types added after this client was written.
            _ => {}
        }
        for event in &events {
            self.assembler.push(event);
        }
        Ok(events)
    }

    fn details(&self) -> ResponseDetails<'_> {
        let mut details = ResponseDetails::new(self.id.as_deref(), self.model.as_deref());
        details.cached_tokens = Some(self.assembler.usage.cached_prompt_tokens);
        details
    }

    /// The whole reply, once `message_stop` came; an error for a stream that ended before.
    fn finish(self) -> Result<Completion, LmError> {
        let mut completion = assembled(self.assembler, self.stopped, "`message_stop`")?;
        completion.provider_state =
            thinking_state(self.thinking.into_iter().map(|(_, block)| block).collect());
        Ok(completion)
    }
}

impl EventReader {
    /// Appends `text` to the `key` field (`thinking`, `signature`) of the thinking block at
    /// content block `index` (a delta for another block is not one Signet keeps).
    fn append_thinking(&mut self, index: usize, key: &str, text: &str) {
        if let Some((_, block)) = self.thinking.iter_mut().find(|(i, _)| *i == index) {
            match &mut block[key] {
                Value::String(whole) => whole.push_str(text),
                other => *other = Value::String(text.to_owned()),
            }
        }
    }
}

/// The `index` of a content block event.
fn block_index(event: &Value) -> Result<usize, LmError> {
    event["index"]
        .as_u64()
        .and_then(|index| usize::try_from(index).ok())
        .filter(|index| *index < 4096)
        .ok_or_else(|| LmError::InvalidResponse {
            message: format!(
                "a content block event without a valid `index`: {}",
                crate::lm::http_endpoint::truncate(&event.to_string(), 200)
            ),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::FinishReason;

    #[test]
    fn a_stream_with_text_and_parallel_tool_calls_is_assembled() {
        let mut reader = EventReader::default();
        let events = [
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":10,"cache_read_input_tokens":90,"output_tokens":1}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type":"ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Adding"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_a","name":"add","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": "}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"1}"}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_b","name":"add","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            ),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ];
        let mut seen = Vec::new();
        for (name, data) in events {
            seen.extend(reader.read(name, data).unwrap());
        }
        assert_eq!(seen[0], StreamEvent::TextDelta("Adding".into()));
        assert_eq!(reader.id.as_deref(), Some("msg_1"));
        let completion = reader.finish().unwrap();
        assert_eq!(completion.text.as_deref(), Some("Adding"));
        assert_eq!(completion.tool_calls.len(), 2);
        assert_eq!(completion.tool_calls[0].arguments, r#"{"a": 1}"#);
        assert_eq!(completion.tool_calls[1].id, "toolu_b");
        assert_eq!(completion.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(
            (
                completion.usage.prompt_tokens,
                completion.usage.cached_prompt_tokens
            ),
            (100, 90)
        );
        assert_eq!(completion.usage.completion_tokens, 20);
    }

    #[test]
    fn torn_and_forged_streams_are_typed_errors() {
        let mut reader = EventReader::default();
        assert!(reader.read("message_start", "{not json").is_err());
        let delta = r#"{"type":"content_block_delta","index":5,"delta":{"type":"input_json_delta","partial_json":"x"}}"#;
        assert!(reader.read("content_block_delta", delta).is_err());
        let huge = r#"{"type":"content_block_start","index":18446744073709551615,"content_block":{"type":"text"}}"#;
        assert!(reader.read("content_block_start", huge).is_err());
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(matches!(
            reader.read("error", overloaded),
            Err(LmError::Server { status: 529, .. })
        ));
        // No `message_stop`: cut short.
        assert!(EventReader::default().finish().is_err());
    }
}
