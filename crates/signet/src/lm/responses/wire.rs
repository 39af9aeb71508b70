//! OpenAI's Responses wire format: the body sent for an [`LmRequest`], and the [`Completion`] read
//! from a response object (the API reference: <https://platform.openai.com/docs/api-reference/responses>).

use serde_json::{Map, Value, json};

use crate::lm::http_endpoint::{classify_http, truncate};
use crate::lm::http_provider::{add_extra, answered_call, system_text, unsupported};
use crate::lm::{
    Completion, FinishReason, LmError, LmRequest, Message, ProviderState, ResponseFormat, Role,
    ToolCall, ToolChoice, Usage,
};
use crate::media::ContentPart;

/// The name on the [`ProviderState`] of a response (its `reasoning` output items, sent back as
/// input items before the calls they led to, as the API asks of a tool loop).
const PROVIDER: &str = "openai-responses";

/// A response's reasoning items as its provider state (`None` when it had none).
pub(super) fn reasoning_state(items: Vec<Value>) -> Option<ProviderState> {
    (!items.is_empty()).then(|| ProviderState::new(PROVIDER, Value::Array(items)))
}

/// The JSON body sent for `request` to `model` (with `"stream": true` when `stream`).
pub(super) fn request_body(
    model: &str,
    request: &LmRequest,
    stream: bool,
) -> Result<Value, LmError> {
    let options = &request.options;
    if !options.stop.is_empty() {
        return Err(unsupported(
            "OpenAI's Responses API has no stop sequences: leave `stop` empty, or use OpenAiLm \
             (chat completions)",
        ));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let (instructions, input) = input_items(&request.messages)?;
    if !instructions.is_empty() {
        body.insert("instructions".into(), json!(instructions));
    }
    body.insert("input".into(), Value::Array(input));
    if let Some(max_tokens) = options.max_tokens {
        body.insert("max_output_tokens".into(), json!(max_tokens));
    }
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = options.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    let only = match &request.tool_choice {
        Some(ToolChoice::OneOf(names)) => Some(names),
        _ => None,
    };
    let tools: Vec<Value> = request
        .tools
        .iter()
        .filter(|tool| only.is_none_or(|names| names.contains(&tool.name)))
        .map(|tool| {
            let mut entry = json!({
                "type": "function",
                "name": tool.name,
                "parameters": tool.parameters.clone().unwrap_or_else(|| json!({"type": "object"})),
                // The API's default is strict, which refuses most schemas `#[tool]` writes.
                "strict": tool.extra.get("strict").cloned().unwrap_or(json!(false)),
            });
            if let Some(description) = &tool.description {
                entry["description"] = json!(description);
            }
            entry
        })
        .collect();
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            None => None,
            Some(ToolChoice::Auto) => Some(json!("auto")),
            Some(ToolChoice::None) => Some(json!("none")),
            Some(ToolChoice::Required) | Some(ToolChoice::OneOf(_)) => Some(json!("required")),
            Some(ToolChoice::Function(name)) => Some(json!({"type": "function", "name": name})),
        };
        if let Some(choice) = choice {
            body.insert("tool_choice".into(), choice);
        }
        if let Some(parallel) = request.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    }
    let format = match &request.response_format {
        None | Some(ResponseFormat::Text) => None,
        Some(ResponseFormat::JsonObject) => Some(json!({"type": "json_object"})),
        Some(ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        }) => {
            Some(json!({"type": "json_schema", "name": name, "schema": schema, "strict": strict}))
        }
        Some(ResponseFormat::Raw(format)) => Some(format.clone()),
    };
    if let Some(format) = format {
        body.insert("text".into(), json!({ "format": format }));
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    add_extra(&mut body, request);
    Ok(Value::Object(body))
}

/// The instructions (every system message's text, joined by a blank line) and the other messages
/// as input items: messages with typed content parts, `function_call` items for an assistant's
/// tool calls and `function_call_output` items for their results.
fn input_items(messages: &[Message]) -> Result<(String, Vec<Value>), LmError> {
    let mut instructions = Vec::new();
    let mut items = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        match message.role {
            Role::System => {
                instructions.push(system_text(message, index, "OpenAI's Responses API")?);
            }
            Role::User => {
                let content = parts(message, index, "input_text")?;
                items.push(json!({"type": "message", "role": "user", "content": content}))
            }
            Role::Assistant => {
                if let Some(Value::Array(reasoning)) = message.provider_state_of(PROVIDER) {
                    items.extend(reasoning.iter().cloned());
                }
                let content = parts(message, index, "output_text")?;
                if !content.is_empty() {
                    items.push(json!({"type": "message", "role": "assistant", "content": content}));
                }
                for call in &message.tool_calls {
                    items.push(json!({"type": "function_call", "call_id": call.id,
                                      "name": call.name, "arguments": call.arguments}));
                }
            }
            Role::Tool => {
                let id = answered_call(message, index)?;
                items.push(json!({"type": "function_call_output", "call_id": id,
                                  "output": message.content.as_str()}));
            }
        }
    }
    Ok((instructions.join("\n\n"), items))
}

/// A message's content as parts (`input_text`/`output_text`, `input_image`); empty text left out.
fn parts(message: &Message, index: usize, text_type: &str) -> Result<Vec<Value>, LmError> {
    let text = |text: &str| (!text.is_empty()).then(|| json!({"type": text_type, "text": text}));
    let content = &message.content;
    if !content.has_media() {
        return Ok(text(content.as_str()).into_iter().collect());
    }
    let mut parts = Vec::new();
    for part in content.parts().iter() {
        match part {
            ContentPart::Text(t) => parts.extend(text(t)),
            ContentPart::Image(image) => {
                parts.push(json!({"type": "input_image", "image_url": image.url()}))
            }
            ContentPart::Audio(_) => {
                return Err(unsupported(format!(
                    "message {index}: the Responses API takes no audio input"
                )));
            }
        }
    }
    Ok(parts)
}

/// What a response's `usage` says, in Signet's terms.
pub(super) fn usage_of(usage: &Value) -> Usage {
    let count = |path: &[&str]| {
        path.iter()
            .try_fold(usage, |value, key| value.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Usage {
        prompt_tokens: count(&["input_tokens"]),
        completion_tokens: count(&["output_tokens"]),
        cached_prompt_tokens: count(&["input_tokens_details", "cached_tokens"]),
        lm_calls: 1,
        ..Usage::default()
    }
}

/// The completion of a response object: its messages' text, its function calls, its reasoning
/// summaries; the finish reason from its status.
pub(super) fn parse_response(response: &Value) -> Result<Completion, LmError> {
    if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
        return Err(error_of(error));
    }
    let items = response
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| LmError::InvalidResponse {
            message: format!(
                "the response has no `output` list: {}",
                truncate(&response.to_string(), 200)
            ),
        })?;
    let mut completion = Completion::default();
    let mut reasoning = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let text_of =
            |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item["content"].as_array().into_iter().flatten() {
                    let text = text_of(part, "text").or_else(|| text_of(part, "refusal"));
                    if let Some(text) = text {
                        completion
                            .text
                            .get_or_insert_with(String::new)
                            .push_str(&text);
                    }
                }
            }
            Some("function_call") => {
                let (Some(id), Some(name)) = (text_of(item, "call_id"), text_of(item, "name"))
                else {
                    return Err(LmError::InvalidResponse {
                        message: format!(
                            "output item {index} is a `function_call` without its call_id or name"
                        ),
                    });
                };
                let arguments = text_of(item, "arguments").unwrap_or_default();
                completion
                    .tool_calls
                    .push(ToolCall::new(id, name, arguments));
            }
            Some("reasoning") => {
                reasoning.push(item.clone());
                for part in item["summary"].as_array().into_iter().flatten() {
                    if let Some(text) = text_of(part, "text") {
                        completion
                            .reasoning
                            .get_or_insert_with(String::new)
                            .push_str(&text);
                    }
                }
            }
            // Built-in tools' items: nothing Signet reads.
            _ => {}
        }
    }
    completion.provider_state = reasoning_state(reasoning);
    completion.finish_reason = Some(finish_reason(response, !completion.tool_calls.is_empty()));
    completion.usage = response.get("usage").map(usage_of).unwrap_or(Usage {
        lm_calls: 1,
        ..Usage::default()
    });
    Ok(completion)
}

/// Why the response stopped: its status, and whether it called tools.
pub(super) fn finish_reason(response: &Value, called_tools: bool) -> FinishReason {
    let reason = response["incomplete_details"]["reason"].as_str();
    match (response["status"].as_str(), reason) {
        (Some("incomplete"), Some("max_output_tokens")) => FinishReason::Length,
        (Some("incomplete"), Some("content_filter")) => FinishReason::ContentFilter,
        (Some("incomplete"), Some(other)) => FinishReason::Other(other.to_owned()),
        _ if called_tools => FinishReason::ToolCalls,
        _ => FinishReason::Stop,
    }
}

/// The typed error of an `error` object (`{"code": "server_error", "message": ..}`), as a failed
/// response or a stream's `error` event carries it.
pub(super) fn error_of(error: &Value) -> LmError {
    let code = error["code"].as_str().unwrap_or_default();
    let status = match code {
        "rate_limit_exceeded" => 429,
        "server_error" | "vector_store_timeout" => 500,
        "context_length_exceeded" | "invalid_prompt" => 400,
        _ => {
            let message = error["message"].as_str().unwrap_or(code);
            let message = format!("the server reported an error ({code}): {message}");
            return LmError::InvalidResponse { message };
        }
    };
    classify_http(status, None, &json!({ "error": error }).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::ToolDefinition;

    #[test]
    fn a_conversation_becomes_instructions_and_input_items() {
        let mut request = LmRequest::new(vec![
            Message::system("Be brief."),
            Message::user("1 + 1?"),
            Message::assistant_tool_calls(vec![ToolCall::new("call_1", "add", r#"{"a":1}"#)]),
            Message::tool_result("call_1", "2"),
        ]);
        request.tools = vec![ToolDefinition::new(
            "add",
            "Adds.",
            json!({"type": "object"}),
        )];
        request.tool_choice = Some(ToolChoice::Auto);
        request.options.max_tokens = Some(50);
        request.response_format = Some(ResponseFormat::JsonObject);
        let body = request_body("gpt", &request, true).unwrap();
        assert_eq!(body["instructions"], "Be brief.");
        assert_eq!(
            body["input"][0],
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "1 + 1?"}]})
        );
        assert_eq!(body["input"][1]["type"], "function_call");
        assert_eq!(
            body["input"][2],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "2"})
        );
        assert_eq!(body["tools"][0]["strict"], false);
        assert_eq!(
            (
                body["tool_choice"].clone(),
                body["max_output_tokens"].clone()
            ),
            (json!("auto"), json!(50))
        );
        assert_eq!(body["text"]["format"]["type"], "json_object");
        let mut stopped = LmRequest::new(vec![Message::user("hi")]);
        stopped.options.stop = vec!["x".into()];
        assert!(request_body("gpt", &stopped, false).is_err());
    }

    #[test]
    fn responses_are_read_and_odd_ones_never_panic() {
        let response = json!({"id": "resp_1", "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "reasoning", "summary": [{"type": "summary_text", "text": "hm"}]},
                       {"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 4}, "output_tokens": 3}});
        let completion = parse_response(&response).unwrap();
        assert_eq!(
            (completion.text.as_deref(), completion.reasoning.as_deref()),
            (Some("Hi"), Some("hm"))
        );
        assert_eq!(completion.finish_reason, Some(FinishReason::Length));
        assert_eq!(
            (
                completion.usage.prompt_tokens,
                completion.usage.cached_prompt_tokens
            ),
            (10, 4)
        );
        for odd in [
            json!(null),
            json!({"output": 1}),
            json!({"output": [{"type": "function_call"}]}),
            json!({"error": {"code": "server_error", "message": "boom"}}),
        ] {
            assert!(parse_response(&odd).is_err(), "{odd}");
        }
        assert!(matches!(
            error_of(&json!({"code": "rate_limit_exceeded", "message": "slow"})),
            LmError::RateLimited { .. }
        ));
    }
}
