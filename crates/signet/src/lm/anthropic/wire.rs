//! Anthropic's Messages wire format: the body sent for an [`LmRequest`], and the
//! [`Completion`] read from a reply (the API reference: <https://docs.anthropic.com/en/api/messages>).

use serde_json::{Map, Value, json};

use crate::lm::http_provider::{
    add_extra, answered_call, arguments_object, push_turn, system_text, unsupported,
};
use crate::lm::{
    Completion, FinishReason, LmError, LmRequest, Message, ProviderState, ResponseFormat, Role,
    ToolCall, ToolChoice, Usage,
};
use crate::media::{ContentPart, Image};

/// The API as errors name it.
const API: &str = "Anthropic's Messages API";

/// The name on the [`ProviderState`] of Anthropic's replies (their `thinking` and
/// `redacted_thinking` blocks, sent back unchanged before the turn's other blocks).
const PROVIDER: &str = "anthropic";

/// A reply's thinking blocks as its provider state (`None` when it had none).
pub(super) fn thinking_state(blocks: Vec<Value>) -> Option<ProviderState> {
    (!blocks.is_empty()).then(|| ProviderState::new(PROVIDER, Value::Array(blocks)))
}

/// How the body of a request is built: what the builder set.
#[derive(Debug, Clone)]
pub(super) struct BodySettings {
    /// `max_tokens` when the request sets none (the API requires one).
    pub(super) max_tokens: u32,
    /// Whether to mark the stable prefix (system prompt, tool list, conversation before the
    /// last turn) with `cache_control` breakpoints.
    pub(super) prompt_caching: bool,
}

/// The JSON body sent for `request` to `model` (with `"stream": true` when `stream`).
pub(super) fn request_body(
    model: &str,
    settings: &BodySettings,
    request: &LmRequest,
    stream: bool,
) -> Result<Value, LmError> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    let options = &request.options;
    body.insert(
        "max_tokens".into(),
        json!(options.max_tokens.unwrap_or(settings.max_tokens)),
    );
    let (system, mut messages) = messages(&request.messages)?;
    if settings.prompt_caching {
        mark_stable_prefix(&mut messages);
    }
    if !system.is_empty() {
        let mut block = json!({"type": "text", "text": system});
        if settings.prompt_caching {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        body.insert("system".into(), json!([block]));
    }
    body.insert("messages".into(), Value::Array(messages));
    if let Some(temperature) = options.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = options.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    if !options.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(options.stop));
    }
    let offered = offered_tools(request);
    if !offered.is_empty() {
        let mut tools: Vec<Value> = offered
            .iter()
            .map(|tool| {
                let mut entry = json!({
                    "name": tool.name,
                    "input_schema": tool.parameters.clone()
                        .unwrap_or_else(|| json!({"type": "object"})),
                });
                if let Some(description) = &tool.description {
                    entry["description"] = json!(description);
                }
                if let Some(strict) = tool.extra.get("strict") {
                    entry["strict"] = strict.clone();
                }
                entry
            })
            .collect();
        if settings.prompt_caching
            && let Some(last) = tools.last_mut()
        {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = tool_choice(request) {
            body.insert("tool_choice".into(), choice);
        }
    }
    match &request.response_format {
        None | Some(ResponseFormat::Text) => {}
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            body.insert(
                "output_config".into(),
                json!({"format": {"type": "json_schema", "schema": schema}}),
            );
        }
        Some(ResponseFormat::Raw(format)) => {
            body.insert("output_config".into(), json!({ "format": format }));
        }
        Some(ResponseFormat::JsonObject) => {
            return Err(unsupported(
                "Anthropic's Messages API has no JSON mode (`response_format: json_object`): \
                 ask for a JSON schema (structured outputs) or for text",
            ));
        }
    }
    if stream {
        body.insert("stream".into(), json!(true));
    }
    add_extra(&mut body, request);
    Ok(Value::Object(body))
}

/// The tools the request offers: all of them, or for [`ToolChoice::OneOf`] only those it names
/// (the API cannot say "one of these").
fn offered_tools(request: &LmRequest) -> Vec<&crate::lm::ToolDefinition> {
    match &request.tool_choice {
        Some(ToolChoice::OneOf(names)) if names.len() > 1 => request
            .tools
            .iter()
            .filter(|tool| names.contains(&tool.name))
            .collect(),
        _ => request.tools.iter().collect(),
    }
}

/// `tool_choice` for the request's choice and parallel-call setting (`None`: the API's default,
/// `auto` with parallel calls).
fn tool_choice(request: &LmRequest) -> Option<Value> {
    let mut choice = match &request.tool_choice {
        None => json!({"type": "auto"}),
        Some(ToolChoice::Auto) => json!({"type": "auto"}),
        Some(ToolChoice::None) => json!({"type": "none"}),
        Some(ToolChoice::Required) => json!({"type": "any"}),
        Some(ToolChoice::Function(name)) => json!({"type": "tool", "name": name}),
        Some(ToolChoice::OneOf(names)) => match names.as_slice() {
            [one] => json!({"type": "tool", "name": one}),
            _ => json!({"type": "any"}),
        },
    };
    if request.parallel_tool_calls == Some(false) && choice["type"] != "none" {
        choice["disable_parallel_tool_use"] = json!(true);
    } else if request.tool_choice.is_none() {
        return None;
    }
    Some(choice)
}

/// The system prompt (every system message's text, joined by a blank line) and the other
/// messages as the API's turns: each a role and a list of content blocks, consecutive messages
/// of one role merged into one turn (the results of parallel tool calls, in particular, go back
/// in one user turn, as the API requires).
fn messages(messages: &[Message]) -> Result<(String, Vec<Value>), LmError> {
    let mut system = Vec::new();
    let mut turns = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let (role, blocks) = match message.role {
            Role::System => {
                system.push(system_text(message, index, API)?);
                continue;
            }
            Role::User => ("user", content_blocks(message, index)?),
            Role::Assistant => ("assistant", assistant_blocks(message, index)?),
            Role::Tool => {
                let id = answered_call(message, index)?;
                let content = content_blocks(message, index)?;
                let block = json!({"type": "tool_result", "tool_use_id": id, "content": content});
                ("user", vec![block])
            }
        };
        push_turn(&mut turns, role, blocks);
    }
    let turns = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    Ok((system.join("\n\n"), turns))
}

/// A message's text and images as content blocks (empty text left out: the API refuses it).
fn content_blocks(message: &Message, index: usize) -> Result<Vec<Value>, LmError> {
    let content = &message.content;
    if !content.has_media() {
        return Ok(text_block(content.as_str()).into_iter().collect());
    }
    let mut blocks = Vec::new();
    for part in content.parts().iter() {
        match part {
            ContentPart::Text(text) => blocks.extend(text_block(text)),
            ContentPart::Image(image) => blocks.push(image_block(image)),
            ContentPart::Audio(_) => {
                return Err(unsupported(format!(
                    "message {index}: Anthropic's Messages API takes no audio input"
                )));
            }
        }
    }
    Ok(blocks)
}

fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// An image block: inline (`base64`, from a data URI) or by URL.
fn image_block(image: &Image) -> Value {
    match image.inline_data() {
        Some((mime, data)) => json!({"type": "image", "source": {
            "type": "base64", "media_type": mime, "data": data}}),
        None => json!({"type": "image", "source": {"type": "url", "url": image.url()}}),
    }
}

/// An assistant message's thinking blocks (its provider state, first, as the API requires when
/// tool use goes on with thinking on), text and tool calls as blocks (`tool_use` with the
/// arguments as an object, as the API takes them).
fn assistant_blocks(message: &Message, index: usize) -> Result<Vec<Value>, LmError> {
    let mut blocks: Vec<Value> = match message.provider_state_of(PROVIDER) {
        Some(Value::Array(thinking)) => thinking.clone(),
        _ => Vec::new(),
    };
    blocks.extend(content_blocks(message, index)?);
    for call in &message.tool_calls {
        let input = arguments_object(call, index, API)?;
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    Ok(blocks)
}

/// Marks the end of the conversation before its last turn with a `cache_control` breakpoint:
/// the demos and earlier turns, which the next call sends again unchanged.
fn mark_stable_prefix(turns: &mut [Value]) {
    let Some(count) = turns.len().checked_sub(1).filter(|n| *n > 0) else {
        return;
    };
    if let Some(block) = turns[count - 1]["content"]
        .as_array_mut()
        .and_then(|blocks| blocks.last_mut())
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
}

/// What a reply's `usage` says, in Signet's terms: every prompt token (fresh, written to the
/// cache, read from it) in `prompt_tokens`; those read from the cache also in
/// `cached_prompt_tokens`; those written in `cache_write_prompt_tokens`.
pub(super) fn usage_of(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (fresh, written, read) = (
        count("input_tokens"),
        count("cache_creation_input_tokens"),
        count("cache_read_input_tokens"),
    );
    Usage {
        prompt_tokens: fresh.saturating_add(written).saturating_add(read),
        completion_tokens: count("output_tokens"),
        cached_prompt_tokens: read,
        cache_write_prompt_tokens: written,
        lm_calls: 1,
        ..Usage::default()
    }
}

/// Signet's finish reason for a `stop_reason`.
pub(super) fn finish_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "refusal" => FinishReason::ContentFilter,
        other => FinishReason::Other(other.to_owned()),
    }
}

/// The completion of a reply body: its text blocks joined, its `tool_use` blocks as calls (the
/// input object as the arguments text), its `thinking` blocks as the reasoning and, with the
/// `redacted_thinking` ones, as its provider state.
pub(super) fn parse_reply(reply: &Value) -> Result<Completion, LmError> {
    let invalid = |message: String| LmError::InvalidResponse { message };
    if reply.get("type").and_then(Value::as_str) == Some("error") {
        return Err(error_event(reply));
    }
    let blocks = reply
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            invalid(format!(
                "the reply has no `content` list: {}",
                excerpt(reply)
            ))
        })?;
    let mut completion = Completion::default();
    let mut thinking = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        let text_of = |key: &str| block.get(key).and_then(Value::as_str);
        match text_of("type") {
            Some("text") => completion
                .text
                .get_or_insert_with(String::new)
                .push_str(text_of("text").unwrap_or_default()),
            Some("thinking") => {
                completion
                    .reasoning
                    .get_or_insert_with(String::new)
                    .push_str(text_of("thinking").unwrap_or_default());
                thinking.push(block.clone());
            }
            Some("redacted_thinking") => thinking.push(block.clone()),
            Some("tool_use") => {
                let (Some(id), Some(name)) = (text_of("id"), text_of("name")) else {
                    return Err(invalid(format!(
                        "content block {index} is a `tool_use` without its id or name: {}",
                        excerpt(block)
                    )));
                };
                let input = block.get("input").cloned().unwrap_or_else(|| json!({}));
                completion
                    .tool_calls
                    .push(ToolCall::new(id, name, input.to_string()));
            }
            // Server tool results, citations: nothing Signet reads.
            _ => {}
        }
    }
    completion.provider_state = thinking_state(thinking);
    completion.finish_reason = reply
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(finish_reason);
    completion.usage = reply.get("usage").map(usage_of).unwrap_or(Usage {
        lm_calls: 1,
        ..Usage::default()
    });
    Ok(completion)
}

/// The typed error of an `error` object (a reply body or a stream's `error` event):
/// `{"type": "error", "error": {"type": "overloaded_error", "message": ..}}`.
pub(super) fn error_event(event: &Value) -> LmError {
    let error = event.get("error").unwrap_or(event);
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map_or_else(|| excerpt(event), str::to_owned);
    let status = match kind {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => {
            return LmError::InvalidResponse {
                message: format!("the server reported an error ({kind}): {message}"),
            };
        }
    };
    crate::lm::http_endpoint::classify_http(status, None, &json!({"error": error}).to_string())
}

/// The start of a JSON value, for error messages.
fn excerpt(value: &Value) -> String {
    crate::lm::http_endpoint::truncate(&value.to_string(), 200)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::ToolDefinition;

    fn settings() -> BodySettings {
        BodySettings {
            max_tokens: 1024,
            prompt_caching: true,
        }
    }

    #[test]
    fn a_conversation_becomes_turns_with_a_system_prompt_and_cache_breakpoints() {
        let call = ToolCall::new("toolu_1", "add", r#"{"a": 1}"#);
        let other = ToolCall::new("toolu_2", "add", "");
        let mut request = LmRequest::new(vec![
            Message::system("Be brief."),
            Message::user("demo question"),
            Message::assistant("demo answer"),
            Message::user("1 + 1?"),
            Message::assistant_tool_calls(vec![call, other]),
            Message::tool_result("toolu_1", "2"),
            Message::tool_result("toolu_2", "2"),
        ]);
        request.tools = vec![ToolDefinition::new(
            "add",
            "Adds.",
            json!({"type": "object"}),
        )];
        request.parallel_tool_calls = Some(false);
        let body = request_body("claude", &settings(), &request, true).unwrap();
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}])
        );
        let turns = body["messages"].as_array().unwrap();
        assert_eq!(turns.len(), 5, "{turns:#?}");
        // Both results of the parallel calls in one user turn, last.
        assert_eq!(turns[4]["role"], "user");
        assert_eq!(turns[4]["content"].as_array().unwrap().len(), 2);
        assert_eq!(turns[4]["content"][1]["tool_use_id"], "toolu_2");
        // The breakpoint on the turn before the last.
        assert_eq!(
            turns[3]["content"][1]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(turns[3]["content"][1]["input"], json!({}));
        assert_eq!(
            body["tools"][0]["cache_control"],
            json!({"type": "ephemeral"})
        );
        assert_eq!(
            body["tool_choice"],
            json!({"type": "auto", "disable_parallel_tool_use": true})
        );
        assert_eq!(
            (body["max_tokens"].clone(), body["stream"].clone()),
            (json!(1024), json!(true))
        );
    }

    #[test]
    fn what_the_api_cannot_take_is_a_typed_error_before_sending() {
        let mut request = LmRequest::new(vec![Message::user("hi")]);
        request.response_format = Some(ResponseFormat::JsonObject);
        let error = request_body("m", &settings(), &request, false).unwrap_err();
        assert!(error.to_string().contains("no JSON mode"), "{error}");
        let bad = Message::assistant_tool_calls(vec![ToolCall::new("t", "f", "[1]")]);
        let request = LmRequest::new(vec![Message::user("hi"), bad]);
        let error = request_body("m", &settings(), &request, false).unwrap_err();
        assert!(error.to_string().contains("message 1"), "{error}");
    }

    #[test]
    fn replies_are_read_and_odd_ones_never_panic() {
        let reply = json!({"id": "msg_1", "type": "message", "role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "s"},
            {"type": "text", "text": "Let me add."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100,
                      "cache_read_input_tokens": 900, "output_tokens": 7}});
        let completion = parse_reply(&reply).unwrap();
        assert_eq!(completion.text.as_deref(), Some("Let me add."));
        assert_eq!(completion.reasoning.as_deref(), Some("hm"));
        assert_eq!(completion.tool_calls[0].arguments, r#"{"a":1}"#);
        assert_eq!(completion.finish_reason, Some(FinishReason::ToolCalls));
        let usage = completion.usage;
        assert_eq!(
            (usage.prompt_tokens, usage.cached_prompt_tokens),
            (1005, 900)
        );
        assert_eq!(usage.cache_write_prompt_tokens, 100);
        for odd in [
            json!(null),
            json!([]),
            json!({"content": 3}),
            json!({"content": [{"type": "tool_use"}]}),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
        ] {
            assert!(parse_reply(&odd).is_err(), "{odd}");
        }
        assert!(matches!(
            error_event(
                &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
            ),
            LmError::Server { status: 529, .. }
        ));
        assert!(matches!(
            error_event(
                &json!({"error": {"type": "invalid_request_error", "message": "prompt is too long: 300000 tokens > 200000 maximum"}})
            ),
            LmError::ContextWindowExceeded { .. }
        ));
    }
}
