//! The OpenAI wire format: request JSON from Signet's types, [`Completion`]s from response JSON.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde::ser::{Serialize, SerializeMap, Serializer};

use super::*;
use crate::lm::ResponseDetails;

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
        model: None,
        provider_state: None,
    })
}

/// A completion from a chat-completions response body in the common shape — a string or null
/// content, string arguments, integer usage — read into typed fields without a `Value` tree, with
/// the response's details given to `record`. `None` for any other body (an error object, no
/// choices, content parts, a legacy `function_call`, a field of an unexpected type, invalid JSON):
/// [`parse_completion`] reads those, and gives the same completion for a body both accept.
pub(super) fn fast_completion(
    body: &[u8],
    record: impl FnOnce(ResponseDetails<'_>),
) -> Option<Completion> {
    let reply: FastReply<'_> = serde_json::from_slice(body).ok()?;
    if reply.error.is_some() {
        return None;
    }
    let choice = reply.choices.into_iter().next()?;
    let message = choice.message;
    if message.function_call.is_some() && message.tool_calls.as_ref().is_none_or(Vec::is_empty) {
        return None;
    }
    let usage = reply.usage.unwrap_or_default();
    let details =
        |d: &Option<FastDetails>, pick: fn(&FastDetails) -> Option<u64>| d.as_ref().and_then(pick);
    let cached = details(&usage.prompt_tokens_details, |d| d.cached_tokens);
    record(ResponseDetails {
        id: reply.id.as_deref(),
        model: reply.model.as_deref(),
        cached_tokens: cached,
        reasoning_tokens: details(&usage.completion_tokens_details, |d| d.reasoning_tokens),
    });
    let tool_calls = (message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate())
    .map(|(index, call)| {
        let id = call
            .id
            .filter(|id| !id.is_empty())
            .map_or_else(|| format!("call_{index}"), Cow::into_owned);
        let arguments = call.function.arguments.map(Cow::into_owned);
        ToolCall::new(id, call.function.name, arguments.unwrap_or_default())
    })
    .collect();
    Some(Completion {
        text: message.content.map(Cow::into_owned),
        tool_calls,
        reasoning: (message.reasoning_content.or(message.reasoning))
            .filter(|r| !r.is_empty())
            .map(Cow::into_owned),
        finish_reason: choice.finish_reason.as_deref().map(finish_reason),
        usage: Usage {
            prompt_tokens: usage.prompt_tokens.unwrap_or(0),
            completion_tokens: usage.completion_tokens.unwrap_or(0),
            cached_prompt_tokens: cached.unwrap_or(0),
            lm_calls: 1,
            ..Usage::default()
        },
        model: None,
        provider_state: None,
    })
}

/// The fields [`fast_completion`] reads of a response body (the others are skipped).
#[derive(Deserialize)]
struct FastReply<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(borrow)]
    choices: Vec<FastChoice<'a>>,
    #[serde(default)]
    usage: Option<FastUsage>,
}

#[derive(Deserialize)]
struct FastChoice<'a> {
    #[serde(borrow)]
    message: FastMessage<'a>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct FastMessage<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<FastToolCall<'a>>>,
    #[serde(default)]
    function_call: Option<IgnoredAny>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct FastToolCall<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: FastFunction<'a>,
}

#[derive(Deserialize)]
struct FastFunction<'a> {
    name: String,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct FastUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<FastDetails>,
    #[serde(default)]
    completion_tokens_details: Option<FastDetails>,
}

#[derive(Deserialize)]
struct FastDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
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

/// The JSON body of a chat-completions request, serialised straight from the [`LmRequest`]
/// (no `Value` tree, no copy of the messages): what [`OpenAiLm::request_body`] shows is this, as a
/// `Value`. Fields in a fixed order; an extra field ([`LmRequest::extra`]) that is not null
/// replaces the built-in field of its name in its place, the others follow at the end.
pub(super) struct WireBody<'a> {
    pub(super) model: &'a str,
    pub(super) request: &'a LmRequest,
    pub(super) stream: bool,
    /// Ask for usage in a stream (`stream_options`).
    pub(super) stream_usage: bool,
    /// The length limit's name: `max_completion_tokens`, else `max_tokens`.
    pub(super) max_completion_tokens: bool,
}

impl WireBody<'_> {
    /// Room for the body: its text plus the JSON around it, so that it is rarely reallocated.
    pub(super) fn size_hint(&self) -> usize {
        let text: usize = (self.request.messages.iter())
            .map(|m| m.content.as_str().len())
            .sum();
        text + text / 16 + 256 * (self.request.messages.len() + self.request.tools.len() + 1)
    }
}

/// The built-in fields a body may carry, at most this many.
const BUILT_IN_FIELDS: usize = 16;

impl Serialize for WireBody<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let request = self.request;
        let options = &request.options;
        let mut map = Fields {
            map: serializer.serialize_map(None)?,
            extra: &request.extra,
            written: [""; BUILT_IN_FIELDS],
            count: 0,
        };
        map.entry("model", self.model)?;
        map.entry("messages", &Messages(&request.messages))?;
        if let Some(temperature) = options.temperature {
            map.entry("temperature", &f32_json(temperature))?;
        }
        if let Some(top_p) = options.top_p {
            map.entry("top_p", &f32_json(top_p))?;
        }
        for (name, penalty) in [
            ("frequency_penalty", options.frequency_penalty),
            ("presence_penalty", options.presence_penalty),
            ("repeat_penalty", options.repeat_penalty),
        ] {
            if let Some(penalty) = penalty {
                map.entry(name, &f32_json(penalty))?;
            }
        }
        if let Some(max_tokens) = options.max_tokens {
            let field = if self.max_completion_tokens {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            map.entry(field, &max_tokens)?;
        }
        if !options.stop.is_empty() {
            map.entry("stop", &options.stop)?;
        }
        if let Some(seed) = options.seed {
            map.entry("seed", &seed)?;
        }
        if let Some(format) = &request.response_format {
            map.entry("response_format", &format.to_json())?;
        }
        if let Some(ToolChoice::OneOf(names)) = &request.tool_choice {
            // Chat completions cannot name a subset: only these tools go, one required.
            let allowed: Vec<ToolDefinition> = request
                .tools
                .iter()
                .filter(|t| names.contains(&t.name))
                .cloned()
                .collect();
            if !allowed.is_empty() {
                map.entry("tools", &Tools(&allowed))?;
            }
        } else if !request.tools.is_empty() {
            map.entry("tools", &Tools(&request.tools))?;
        }
        if let Some(choice) = &request.tool_choice {
            map.entry("tool_choice", &tool_choice_json(choice))?;
        }
        if let Some(parallel) = request.parallel_tool_calls {
            map.entry("parallel_tool_calls", &parallel)?;
        }
        if self.stream {
            map.entry("stream", &true)?;
            if self.stream_usage {
                map.entry("stream_options", &json!({"include_usage": true}))?;
            }
        }
        map.end()
    }
}

/// A body's map as it is written: the built-in fields written so far, and the extra fields that
/// replace them.
struct Fields<'a, M> {
    map: M,
    extra: &'a Map<String, Value>,
    written: [&'static str; BUILT_IN_FIELDS],
    count: usize,
}

impl<M: SerializeMap> Fields<'_, M> {
    /// Writes a built-in field, or the extra field of its name when there is one (not null).
    fn entry<V: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &V,
    ) -> Result<(), M::Error> {
        if let Some(slot) = self.written.get_mut(self.count) {
            *slot = key;
            self.count += 1;
        }
        match self.extra.get(key).filter(|v| !v.is_null()) {
            Some(replacement) => self.map.serialize_entry(key, replacement),
            None => self.map.serialize_entry(key, value),
        }
    }

    /// Writes the extra fields not written in place of a built-in one (a null one is not sent, as
    /// LiteLLM drops `None` parameters: DSPy's forced submit passes `reasoning_effort=None`), and
    /// ends the map. Extra fields are the escape hatch for server extensions.
    fn end(mut self) -> Result<M::Ok, M::Error> {
        let written = &self.written[..self.count];
        for (key, value) in self.extra.iter().filter(|(_, v)| !v.is_null()) {
            if !written.contains(&key.as_str()) {
                self.map.serialize_entry(key, value)?;
            }
        }
        self.map.end()
    }
}

/// The `messages` of a body.
struct Messages<'a>(&'a [Message]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(WireMessage))
    }
}

/// A message in the OpenAI shape. An assistant message that calls tools keeps `"content": ""`
/// (llama.cpp rejects `null` or a missing content).
struct WireMessage<'a>(&'a Message);

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let message = self.0;
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("role", role)?;
        if let Some(json) = message.content.raw_json() {
            // A prompt rendered once, escaped once.
            map.serialize_entry("content", json)?;
        } else if !message.content.has_media() {
            map.serialize_entry("content", message.content.as_str())?;
        } else {
            map.serialize_entry("content", &message.content.to_value())?;
        }
        if !message.tool_calls.is_empty() {
            let calls = message.tool_calls.iter().map(|call| {
                json!({
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                })
            });
            map.serialize_entry("tool_calls", &calls.collect::<Vec<_>>())?;
        }
        if let Some(id) = &message.tool_call_id {
            map.serialize_entry("tool_call_id", id)?;
        }
        map.end()
    }
}

/// The `tools` of a body: each tool's OpenAI descriptor.
struct Tools<'a>(&'a [ToolDefinition]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(ToolDefinition::to_value))
    }
}

pub(super) fn tool_choice_json(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required | ToolChoice::OneOf(_) => json!("required"),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(request: &LmRequest, stream: bool) -> WireBody<'_> {
        WireBody {
            model: "m",
            request,
            stream,
            stream_usage: true,
            max_completion_tokens: false,
        }
    }

    fn body(request: &LmRequest, stream: bool) -> String {
        serde_json::to_string(&wire(request, stream)).unwrap()
    }

    #[test]
    fn one_of_some_tools_sends_only_those_and_requires_a_call() {
        use crate::lm::{ToolChoice, ToolDefinition};
        let mut request = LmRequest::new(vec![Message::user("u")]);
        let tool = |name: &str| ToolDefinition::new(name, "d", json!({"type": "object"}));
        request.tools = vec![tool("a"), tool("b"), tool("finish")];
        request.tool_choice = Some(ToolChoice::OneOf(vec!["b".into()]));
        let sent: Value = serde_json::from_str(&body(&request, false)).unwrap();
        assert_eq!(sent["tool_choice"], "required");
        let names: Vec<&str> = sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["b"]);
    }

    #[test]
    fn extra_fields_replace_built_in_ones_in_place_and_null_ones_are_not_sent() {
        let mut request = LmRequest::new(vec![Message::system("s\n\"q\""), Message::user("u")]);
        request.options.temperature = Some(0.7);
        request.options.max_tokens = Some(5);
        request.extra.insert("top_k".into(), json!(40));
        request.extra.insert("temperature".into(), json!(0.1));
        request.extra.insert("seed".into(), Value::Null);
        request.extra.insert("stream".into(), json!(false));
        assert_eq!(
            body(&request, false),
            r#"{"model":"m","messages":[{"role":"system","content":"s\n\"q\""},{"role":"user","content":"u"}],"temperature":0.1,"max_tokens":5,"top_k":40,"stream":false}"#
        );
        // Streamed: `stream` is built in, so the extra one replaces it in place.
        assert_eq!(
            body(&request, true),
            r#"{"model":"m","messages":[{"role":"system","content":"s\n\"q\""},{"role":"user","content":"u"}],"temperature":0.1,"max_tokens":5,"stream":false,"stream_options":{"include_usage":true},"top_k":40}"#
        );
    }

    #[test]
    fn a_prompt_escaped_once_is_sent_as_the_same_bytes() {
        let text = "Rules:\n\t\"quoted\" \\ back\u{1}slash, caf\u{e9}, \u{2028} and \u{1F600}";
        let plain = LmRequest::new(vec![Message::system(text), Message::user("u")]);
        let shared = crate::shared::SharedText::new(text.to_owned());
        let prompt = LmRequest::new(vec![
            Message::system(crate::lm::Content::prompt(shared.clone())),
            Message::user("u"),
        ]);
        assert!(prompt.messages[0].content.raw_json().is_some());
        assert_eq!(body(&prompt, false), body(&plain, false));
        // Twice: the second body reuses the escaped text.
        assert_eq!(body(&prompt, true), body(&plain, true));
        let as_value = |request: &LmRequest| serde_json::to_value(wire(request, false)).unwrap();
        assert_eq!(as_value(&prompt), as_value(&plain));
    }

    #[test]
    fn the_size_hint_holds_a_prompt() {
        // Prompt-like text: a line break in every 40 characters or so.
        let line = "[[ ## question ## ]] \"what is 2 + 2?\"\n";
        let request = LmRequest::new(vec![
            Message::system(line.repeat(80)),
            Message::user(line.repeat(40)),
        ]);
        let wire = wire(&request, false);
        let written = serde_json::to_vec(&wire).unwrap();
        assert!(
            written.len() <= wire.size_hint(),
            "{} > {}",
            written.len(),
            wire.size_hint()
        );
    }
}
