//! Gemini's `generateContent` wire format: the body sent for an [`LmRequest`], the
//! [`Completion`] of a `GenerateContentResponse`, and Gemini's error bodies (the API reference:
//! <https://ai.google.dev/api/generate-content>, function calling:
//! <https://ai.google.dev/gemini-api/docs/function-calling>, errors:
//! <https://ai.google.dev/gemini-api/docs/troubleshooting>).

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::lm::http_endpoint::{classify_http, truncate};
use crate::lm::http_provider::{
    add_extra, answered_call, arguments_object, push_turn, system_text, unsupported,
};
use crate::lm::{
    Completion, FinishReason, LmError, LmRequest, Message, ProviderState, ResponseFormat, Role,
    ToolCall, ToolChoice, Usage,
};
use crate::media::{ContentPart, Image};

/// The API as errors name it.
const API: &str = "Gemini's API";

/// The name on the [`ProviderState`] of Gemini's replies (their thought signatures).
const PROVIDER: &str = "gemini";

/// The JSON body sent for `request` (the same streamed or not: the URL says which).
pub(super) fn request_body(request: &LmRequest) -> Result<Value, LmError> {
    let mut body = Map::new();
    let (system, contents) = contents(&request.messages)?;
    if !system.is_empty() {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    body.insert("contents".into(), Value::Array(contents));
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                let mut declaration = json!({"name": tool.name});
                if let Some(description) = &tool.description {
                    declaration["description"] = json!(description);
                }
                if let Some(parameters) = &tool.parameters {
                    declaration["parametersJsonSchema"] = parameters.clone();
                }
                declaration
            })
            .collect();
        body.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
        let config = match &request.tool_choice {
            None => None,
            Some(ToolChoice::Auto) => Some(json!({"mode": "AUTO"})),
            Some(ToolChoice::None) => Some(json!({"mode": "NONE"})),
            Some(ToolChoice::Required) => Some(json!({"mode": "ANY"})),
            Some(ToolChoice::Function(name)) => {
                Some(json!({"mode": "ANY", "allowedFunctionNames": [name]}))
            }
            Some(ToolChoice::OneOf(names)) => {
                Some(json!({"mode": "ANY", "allowedFunctionNames": names}))
            }
        };
        if let Some(config) = config {
            body.insert(
                "toolConfig".into(),
                json!({ "functionCallingConfig": config }),
            );
        }
    }
    let generation = generation_config(request);
    if !generation.is_empty() {
        body.insert("generationConfig".into(), Value::Object(generation));
    }
    add_extra(&mut body, request);
    Ok(Value::Object(body))
}

/// `generationConfig`: sampling, the length limit, stop sequences, and the response format.
fn generation_config(request: &LmRequest) -> Map<String, Value> {
    let options = &request.options;
    let mut config = Map::new();
    let mut set = |key: &str, value: Option<Value>| {
        if let Some(value) = value {
            config.insert(key.into(), value);
        }
    };
    set("temperature", options.temperature.map(|t| json!(t)));
    set("topP", options.top_p.map(|p| json!(p)));
    set("maxOutputTokens", options.max_tokens.map(|n| json!(n)));
    set("seed", options.seed.map(|s| json!(s)));
    set(
        "presencePenalty",
        options.presence_penalty.map(|p| json!(p)),
    );
    set(
        "frequencyPenalty",
        options.frequency_penalty.map(|p| json!(p)),
    );
    set(
        "stopSequences",
        (!options.stop.is_empty()).then(|| json!(options.stop)),
    );
    match &request.response_format {
        None | Some(ResponseFormat::Text) => {}
        Some(ResponseFormat::JsonObject) => {
            config.insert("responseMimeType".into(), json!("application/json"));
        }
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            config.insert("responseMimeType".into(), json!("application/json"));
            config.insert("responseJsonSchema".into(), schema.clone());
        }
        Some(ResponseFormat::Raw(format)) => {
            config.insert("responseMimeType".into(), json!("application/json"));
            if let Some(schema) = format.get("schema") {
                config.insert("responseJsonSchema".into(), schema.clone());
            }
        }
    }
    config
}

/// The system instruction (every system message's text, joined by a blank line) and the other
/// messages as `contents`: `user` and `model` turns of parts, consecutive messages of one role
/// merged (a model's parallel calls' responses go back in one user turn).
fn contents(messages: &[Message]) -> Result<(String, Vec<Value>), LmError> {
    let mut system = Vec::new();
    let mut turns = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let (role, parts) = match message.role {
            Role::System => {
                system.push(system_text(message, index, API)?);
                continue;
            }
            Role::User => ("user", parts(message)),
            Role::Assistant => {
                let signatures = message.provider_state_of(PROVIDER);
                let mut parts = parts(message);
                if let (Some(signature), Some(last)) = (
                    signatures
                        .and_then(|s| s.get("text"))
                        .filter(|s| s.is_string()),
                    parts.last_mut(),
                ) {
                    last["thoughtSignature"] = signature.clone();
                }
                for call in &message.tool_calls {
                    let args = arguments_object(call, index, API)?;
                    let mut part =
                        json!({"functionCall": {"id": call.id, "name": call.name, "args": args}});
                    if let Some(signature) = signatures
                        .and_then(|s| s["calls"].get(&call.id))
                        .filter(|s| s.is_string())
                    {
                        part["thoughtSignature"] = signature.clone();
                    }
                    parts.push(part);
                }
                ("model", parts)
            }
            Role::Tool => {
                let id = answered_call(message, index)?;
                // Gemini answers a call by its function's name: the call's, found by its id.
                let name = messages[..index]
                    .iter()
                    .rev()
                    .flat_map(|earlier| &earlier.tool_calls)
                    .find(|call| call.id == id)
                    .map(|call| call.name.clone())
                    .ok_or_else(|| {
                        unsupported(format!(
                            "message {index}: the result of call `{id}`, which no earlier \
                             message made (Gemini needs the function's name)"
                        ))
                    })?;
                let response = json!({"result": message.content.as_str()});
                (
                    "user",
                    vec![
                        json!({"functionResponse": {"id": id, "name": name, "response": response}}),
                    ],
                )
            }
        };
        push_turn(&mut turns, role, parts);
    }
    let turns = turns
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    Ok((system.join("\n\n"), turns))
}

/// A message's text and media as parts (empty text left out).
fn parts(message: &Message) -> Vec<Value> {
    let text = |text: &str| (!text.is_empty()).then(|| json!({ "text": text }));
    let content = &message.content;
    if !content.has_media() {
        return text(content.as_str()).into_iter().collect();
    }
    let mut parts = Vec::new();
    for part in content.parts().iter() {
        match part {
            ContentPart::Text(t) => parts.extend(text(t)),
            ContentPart::Image(image) => parts.push(image_part(image)),
            ContentPart::Audio(audio) => parts.push(json!({"inlineData": {
                "mimeType": format!("audio/{}", audio.format()), "data": audio.data()}})),
        }
    }
    parts
}

/// An image: inline data, or a file URI with its type guessed from the name.
fn image_part(image: &Image) -> Value {
    match image.inline_data() {
        Some((mime, data)) => json!({"inlineData": {"mimeType": mime, "data": data}}),
        None => {
            let url = image.url();
            let mime = mime_guess::from_path(url.split(['?', '#']).next().unwrap_or(url))
                .first()
                .map_or_else(|| "image/jpeg".to_owned(), |mime| mime.to_string());
            json!({"fileData": {"mimeType": mime, "fileUri": url}})
        }
    }
}

/// What a response's `usageMetadata` says, in Signet's terms (thinking tokens are generated
/// tokens: counted as completion tokens).
pub(super) fn usage_of(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        prompt_tokens: count("promptTokenCount"),
        completion_tokens: count("candidatesTokenCount")
            .saturating_add(count("thoughtsTokenCount")),
        cached_prompt_tokens: count("cachedContentTokenCount"),
        lm_calls: 1,
        ..Usage::default()
    }
}

/// Signet's finish reason for a `finishReason`.
pub(super) fn finish_reason(reason: &str, called_tools: bool) -> FinishReason {
    match reason {
        "STOP" if called_tools => FinishReason::ToolCalls,
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            FinishReason::ContentFilter
        }
        other => FinishReason::Other(other.to_owned()),
    }
}

/// What one response (or one streamed chunk) adds: text, thoughts, calls, its finish reason.
#[derive(Debug, Default)]
pub(super) struct Chunk {
    pub(super) text: Option<String>,
    pub(super) thoughts: Option<String>,
    pub(super) calls: Vec<ToolCall>,
    pub(super) finish: Option<String>,
    pub(super) usage: Option<Usage>,
    /// The prompt was blocked (`promptFeedback.blockReason`), with no candidate.
    pub(super) blocked: Option<String>,
    /// The thought signatures of its parts.
    pub(super) signatures: Signatures,
}

/// The thought signatures of a reply (<https://ai.google.dev/gemini-api/docs/thought-signatures>):
/// the one on a text part, and those on function calls (by call id), sent back on the parts they
/// came on when the conversation goes on.
#[derive(Debug, Default)]
pub(super) struct Signatures {
    text: Option<Value>,
    calls: Map<String, Value>,
}

impl Signatures {
    /// Adds a later chunk's signatures.
    pub(super) fn extend(&mut self, later: Signatures) {
        if later.text.is_some() {
            self.text = later.text;
        }
        self.calls.extend(later.calls);
    }

    /// The signatures as the completion's provider state (`None` when there were none).
    pub(super) fn into_state(self) -> Option<ProviderState> {
        if self.text.is_none() && self.calls.is_empty() {
            return None;
        }
        let mut data = json!({"calls": self.calls});
        if let Some(text) = self.text {
            data["text"] = text;
        }
        Some(ProviderState::new(PROVIDER, data))
    }
}

/// Reads one `GenerateContentResponse` (a whole reply, or a chunk of a stream); `calls_before`
/// numbers the calls that have no id.
pub(super) fn read_chunk(response: &Value, calls_before: usize) -> Result<Chunk, LmError> {
    if let Some(error) = response.get("error") {
        return Err(error_of(error, None));
    }
    if !response.is_object() {
        return Err(LmError::InvalidResponse {
            message: format!(
                "the response is not an object: {}",
                truncate(&response.to_string(), 200)
            ),
        });
    }
    let mut chunk = Chunk {
        usage: response.get("usageMetadata").map(usage_of),
        blocked: response["promptFeedback"]["blockReason"]
            .as_str()
            .map(str::to_owned),
        ..Chunk::default()
    };
    let Some(candidate) = response["candidates"].get(0) else {
        return Ok(chunk);
    };
    chunk.finish = candidate["finishReason"].as_str().map(str::to_owned);
    for (index, part) in candidate["content"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let signature = part.get("thoughtSignature").filter(|s| s.is_string());
        if let Some(text) = part["text"].as_str() {
            if let Some(signature) = signature {
                chunk.signatures.text = Some(signature.clone());
            }
            let into = if part["thought"] == json!(true) {
                &mut chunk.thoughts
            } else {
                &mut chunk.text
            };
            into.get_or_insert_with(String::new).push_str(text);
        } else if let Some(call) = part.get("functionCall") {
            let Some(name) = call["name"].as_str() else {
                return Err(LmError::InvalidResponse {
                    message: format!("part {index} is a `functionCall` without a name"),
                });
            };
            let id = call["id"].as_str().map_or_else(
                || format!("call_{}", calls_before + chunk.calls.len()),
                str::to_owned,
            );
            let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
            if let Some(signature) = signature {
                chunk.signatures.calls.insert(id.clone(), signature.clone());
            }
            chunk.calls.push(ToolCall::new(id, name, args.to_string()));
        }
    }
    Ok(chunk)
}

/// The completion of a whole reply.
pub(super) fn parse_response(response: &Value) -> Result<Completion, LmError> {
    let chunk = read_chunk(response, 0)?;
    let called = !chunk.calls.is_empty();
    let finish_reason = match (&chunk.finish, &chunk.blocked) {
        (Some(reason), _) => Some(finish_reason(reason, called)),
        (None, Some(_)) => Some(FinishReason::ContentFilter),
        (None, None) => {
            return Err(LmError::InvalidResponse {
                message: format!(
                    "the response has no candidate with a finish reason: {}",
                    truncate(&response.to_string(), 200)
                ),
            });
        }
    };
    Ok(Completion {
        text: chunk.text,
        tool_calls: chunk.calls,
        reasoning: chunk.thoughts,
        finish_reason,
        usage: chunk.usage.unwrap_or(Usage {
            lm_calls: 1,
            ..Usage::default()
        }),
        model: None,
        provider_state: chunk.signatures.into_state(),
    })
}

/// The typed error of a Gemini error body (`{"error": {"code": 429, "message", "status":
/// "RESOURCE_EXHAUSTED", "details": [{"@type": "...RetryInfo", "retryDelay": "37s"}]}}`), its
/// HTTP status `status` when it came with one.
pub(super) fn error_of(error: &Value, status: Option<u16>) -> LmError {
    let status = status
        .or_else(|| error["code"].as_u64().and_then(|c| u16::try_from(c).ok()))
        .unwrap_or(500);
    let retry_after = error["details"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|detail| detail["retryDelay"].as_str())
        .and_then(|delay| delay.strip_suffix('s'))
        .and_then(|seconds| seconds.parse::<f64>().ok())
        .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok());
    classify_http(status, retry_after, &json!({ "error": error }).to_string())
}

/// The typed error of a non-2xx response: Gemini's body read for its retry delay.
pub(super) fn classify(status: u16, retry_after: Option<Duration>, body: &str) -> LmError {
    match serde_json::from_str::<Value>(body) {
        Ok(value) if value["error"].is_object() => {
            match (error_of(&value["error"], Some(status)), retry_after) {
                (
                    LmError::RateLimited {
                        retry_after: None,
                        message,
                    },
                    Some(header),
                ) => LmError::RateLimited {
                    retry_after: Some(header),
                    message,
                },
                (error, _) => error,
            }
        }
        _ => classify_http(status, retry_after, body),
    }
}
