//! Turning a Responses event stream (`response.created`, `response.output_item.added`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`, `response.completed`,
//! ..) into [`StreamEvent`]s.

use serde_json::Value;

use super::wire::{error_of, finish_reason, reasoning_state, usage_of};
use crate::lm::http_endpoint::truncate;
use crate::lm::http_provider::{EventRead, assembled};
use crate::lm::{Completion, LmError, ResponseDetails, StreamAssembler, StreamEvent};

/// What one stream has said so far.
#[derive(Debug, Default)]
pub(super) struct EventReader {
    assembler: StreamAssembler,
    /// Each function call's output index and item id (either may be absent: llama.cpp's server
    /// sends no index), in the order of the reply's calls.
    calls: Vec<(Option<u64>, Option<String>)>,
    /// The reasoning items, whole (`response.output_item.done`).
    reasoning: Vec<Value>,
    id: Option<String>,
    model: Option<String>,
    /// Whether `response.completed` or `response.incomplete` came: the reply is whole.
    ended: bool,
}

impl EventReader {
    /// The function call an event names, by its output index or else its item id.
    fn tool_at(&self, event: &Value) -> Option<usize> {
        let (index, id) = (event["output_index"].as_u64(), event["item_id"].as_str());
        self.calls
            .iter()
            .position(|(call_index, call_id)| match index {
                Some(index) => *call_index == Some(index),
                None => id.is_some() && call_id.as_deref() == id,
            })
    }
}

impl EventRead for EventReader {
    fn read(&mut self, name: &str, data: &str) -> Result<Vec<StreamEvent>, LmError> {
        if data.trim().is_empty() || data.trim() == "[DONE]" {
            return Ok(Vec::new());
        }
        let event: Value =
            serde_json::from_str(data).map_err(|error| LmError::InvalidResponse {
                message: format!(
                    "the `{name}` event's data is not JSON ({error}): {}",
                    truncate(data, 200)
                ),
            })?;
        let kind = event["type"].as_str().unwrap_or(name);
        let text = |key: &str| event[key].as_str().unwrap_or_default().to_owned();
        let mut events = Vec::new();
        match kind {
            "response.created" | "response.in_progress" => {
                let response = &event["response"];
                self.id = response["id"].as_str().map(str::to_owned);
                self.model = response["model"].as_str().map(str::to_owned);
            }
            "response.output_item.added" => {
                let item = &event["item"];
                if item["type"] == "function_call" {
                    if self.calls.len() >= 4096 {
                        return Err(LmError::InvalidResponse {
                            message: "more than 4096 function calls in one reply".into(),
                        });
                    }
                    let key = (
                        event["output_index"].as_u64(),
                        item["id"].as_str().map(str::to_owned),
                    );
                    events.push(StreamEvent::ToolCallDelta {
                        index: self.calls.len(),
                        id: item["call_id"].as_str().map(str::to_owned),
                        name: item["name"].as_str().map(str::to_owned),
                        arguments: item["arguments"].as_str().unwrap_or_default().to_owned(),
                    });
                    self.calls.push(key);
                }
            }
            "response.output_item.done" if event["item"]["type"] == "reasoning" => {
                if self.reasoning.len() >= 4096 {
                    return Err(LmError::InvalidResponse {
                        message: "more than 4096 reasoning items in one reply".into(),
                    });
                }
                self.reasoning.push(event["item"].clone());
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                events.push(StreamEvent::TextDelta(text("delta")));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                events.push(StreamEvent::ReasoningDelta(text("delta")));
            }
            "response.function_call_arguments.delta" => {
                let Some(tool) = self.tool_at(&event) else {
                    return Err(LmError::InvalidResponse {
                        message: format!(
                            "function call arguments for an output item that is not a function \
                             call: {}",
                            truncate(data, 200)
                        ),
                    });
                };
                events.push(StreamEvent::ToolCallDelta {
                    index: tool,
                    id: None,
                    name: None,
                    arguments: text("delta"),
                });
            }
            "response.completed" | "response.incomplete" => {
                let response = &event["response"];
                self.assembler.finish_reason =
                    Some(finish_reason(response, !self.calls.is_empty()));
                if let Some(usage) = response.get("usage").filter(|u| u.is_object()) {
                    self.assembler.usage = usage_of(usage);
                }
                self.ended = true;
            }
            "response.failed" => {
                let error = &event["response"]["error"];
                return Err(error_of(error));
            }
            "error" => return Err(error_of(event.get("error").unwrap_or(&event))),
            // Other `.done` events repeat what the deltas said; others are built-in tools'.
            _ => {}
        }
        for event in &events {
            self.assembler.push(event);
        }
        Ok(events)
    }

    fn details(&self) -> ResponseDetails<'_> {
        ResponseDetails::new(self.id.as_deref(), self.model.as_deref())
    }

    fn finish(self) -> Result<Completion, LmError> {
        let mut completion = assembled(self.assembler, self.ended, "`response.completed`")?;
        completion.provider_state = reasoning_state(self.reasoning);
        Ok(completion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::FinishReason;

    #[test]
    fn a_stream_with_text_and_a_function_call_is_assembled_and_a_torn_one_is_an_error() {
        let mut reader = EventReader::default();
        let events = [
            r#"{"type":"response.created","response":{"id":"resp_1","model":"gpt"}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message"}}"#,
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"Hel"}"#,
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"lo"}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","call_id":"call_1","name":"add","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\"a\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":1,"delta":"1}"}"#,
            r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":9,"output_tokens":4}}}"#,
        ];
        for data in events {
            reader.read("", data).unwrap();
        }
        let completion = reader.finish().unwrap();
        assert_eq!(completion.text.as_deref(), Some("Hello"));
        assert_eq!(completion.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(completion.finish_reason, Some(FinishReason::ToolCalls));
        assert_eq!(completion.usage.prompt_tokens, 9);

        let mut torn = EventReader::default();
        torn.read(
            "",
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"x"}"#,
        )
        .unwrap();
        assert!(torn.finish().is_err());
        let mut forged = EventReader::default();
        let stray =
            r#"{"type":"response.function_call_arguments.delta","output_index":7,"delta":"x"}"#;
        assert!(forged.read("", stray).is_err());
        let failed = r#"{"type":"response.failed","response":{"error":{"code":"server_error","message":"boom"}}}"#;
        assert!(matches!(
            EventReader::default().read("", failed),
            Err(LmError::Server { status: 500, .. })
        ));
    }
}
