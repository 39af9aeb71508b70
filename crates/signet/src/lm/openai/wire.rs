//! The OpenAI wire format: request JSON from Signet's types, [`Completion`]s from response JSON.

use super::*;

/// A completion from a chat-completions response body.
pub(super) fn parse_completion(body: &Value) -> Result<Completion, LmError> {
    let invalid = |what: &str| LmError::InvalidResponse {
        message: format!("{what}: {}", truncate(&body.to_string(), MAX_ERROR_MESSAGE)),
    };
    let Some(object) = body.as_object() else {
        return Err(invalid("the body is not a JSON object"));
    };
    if let Some(error) = object.get("error").filter(|e| !e.is_null()) {
        return Err(error_in_body(error));
    }
    let choices = object.get("choices").and_then(Value::as_array);
    let Some(choice) = choices.and_then(|c| c.first()) else {
        return Err(invalid("the response has no choices"));
    };
    let Some(message) = choice.get("message").and_then(Value::as_object) else {
        return Err(invalid("the first choice has no message"));
    };
    let mut tool_calls = Vec::new();
    let calls = message.get("tool_calls").and_then(Value::as_array);
    for (index, call) in calls.into_iter().flatten().enumerate() {
        let Some(function) = call.get("function") else {
            return Err(invalid("a tool call has no function"));
        };
        let Some(name) = function.get("name").and_then(Value::as_str) else {
            return Err(invalid("a tool call has no name"));
        };
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map_or_else(|| format!("call_{index}"), str::to_owned);
        let arguments = function
            .get("arguments")
            .map(arguments_text)
            .unwrap_or_default();
        tool_calls.push(ToolCall::new(id, name, arguments));
    }
    // The legacy single `function_call`.
    if tool_calls.is_empty()
        && let Some(function) = message.get("function_call").filter(|f| f.is_object())
        && let Some(name) = function.get("name").and_then(Value::as_str)
    {
        let arguments = function
            .get("arguments")
            .map(arguments_text)
            .unwrap_or_default();
        tool_calls.push(ToolCall::new("call_0", name, arguments));
    }
    let usage = object.get("usage").map(parse_usage).unwrap_or_default();
    Ok(Completion {
        text: content_text(message.get("content")),
        tool_calls,
        reasoning: reasoning_of(message),
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(finish_reason),
        usage: Usage {
            lm_calls: 1,
            ..usage
        },
    })
}

/// Message content: a string, or the text parts of a content array.
pub(super) fn content_text(content: Option<&Value>) -> Option<String> {
    match content? {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let text: String = parts
                .iter()
                .filter_map(|part| match part {
                    Value::String(s) => Some(s.as_str()),
                    part => part.get("text").and_then(Value::as_str),
                })
                .collect();
            Some(text)
        }
        _ => None,
    }
}

/// `reasoning_content` (DeepSeek, vLLM, llama.cpp) or `reasoning` (OpenRouter, newer vLLM).
pub(super) fn reasoning_of(message: &Map<String, Value>) -> Option<String> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|key| message.get(*key).and_then(Value::as_str))
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
}

/// Tool-call arguments as text: a string as is, anything else (some servers send an object) as
/// JSON.
pub(super) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

pub(super) fn parse_usage(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let cached = usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Usage {
        prompt_tokens: count("prompt_tokens"),
        completion_tokens: count("completion_tokens"),
        cached_prompt_tokens: cached,
        ..Usage::default()
    }
}

pub(super) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// A message in the OpenAI shape. An assistant message that calls tools keeps `"content": ""`
/// (llama.cpp rejects `null` or a missing content).
pub(super) fn message_json(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut object = Map::new();
    object.insert("role".into(), Value::String(role.into()));
    object.insert("content".into(), message.content.to_value());
    if !message.tool_calls.is_empty() {
        let calls = message
            .tool_calls
            .iter()
            .map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })
            })
            .collect();
        object.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &message.tool_call_id {
        object.insert("tool_call_id".into(), Value::String(id.clone()));
    }
    Value::Object(object)
}

pub(super) fn tool_choice_json(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Function(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// An `f32` as the JSON number it reads as (`0.7`, not `0.699999988079071`).
pub(super) fn f32_json(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}
