//! The `chat {model}` span of one request to a model, after the OpenTelemetry GenAI conventions
//! (see [`crate::telemetry`]).

use std::time::Instant;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use serde_json::{Value, json};
use tracing::Instrument;
use tracing::field::Empty;

use super::{Completion, FinishReason, LmError, LmRequest, Message, Role, StreamEvent};
use crate::media::ContentPart;
use crate::telemetry::{self, TARGET};

/// The span of one model request: created before the request is sent, finished with its outcome.
///
/// [`OpenAiLm`](crate::lm::OpenAiLm) and the test LMs open one per attempt; an [`Lm`](super::Lm)
/// of your own opens one the same way so that its calls show in traces:
///
/// ```
/// use signet::lm::{ChatSpan, Completion, LmRequest, Message};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let request = LmRequest::new(vec![Message::user("hi")]);
/// let span = ChatSpan::start("my_provider", "my-model", &request, false);
/// let reply = span.run(async { Ok(Completion::text("hello")) }).await;
/// assert_eq!(reply.unwrap().text.as_deref(), Some("hello"));
/// # });
/// ```
#[derive(Debug)]
pub struct ChatSpan {
    span: tracing::Span,
    /// When the request was sent; `None` when the span is disabled (nothing is measured).
    started: Option<Instant>,
}

impl ChatSpan {
    /// Opens the span of `request` to `model` of `provider` (`gen_ai.provider.name`: `openai`,
    /// `vllm`, ..); `stream`: whether the reply is streamed.
    pub fn start(provider: &str, model: &str, request: &LmRequest, stream: bool) -> ChatSpan {
        let options = &request.options;
        let span = tracing::info_span!(
            target: TARGET,
            "chat",
            "otel.name" = %format_args!("chat {model}"),
            "otel.kind" = "client",
            "otel.status_code" = Empty,
            "otel.status_description" = Empty,
            "gen_ai.operation.name" = "chat",
            "gen_ai.provider.name" = provider,
            "gen_ai.request.model" = model,
            "gen_ai.request.max_tokens" = options.max_tokens.map(i64::from),
            "gen_ai.request.temperature" = options.temperature.map(f64::from),
            "gen_ai.request.top_p" = options.top_p.map(f64::from),
            "gen_ai.request.frequency_penalty" = options.frequency_penalty.map(f64::from),
            "gen_ai.request.presence_penalty" = options.presence_penalty.map(f64::from),
            "gen_ai.request.seed" = options.seed,
            "gen_ai.request.stop_sequences" = Empty,
            "gen_ai.request.stream" = stream,
            "gen_ai.output.type" = Empty,
            "gen_ai.response.id" = Empty,
            "gen_ai.response.model" = Empty,
            "gen_ai.response.finish_reasons" = Empty,
            "gen_ai.response.time_to_first_chunk" = Empty,
            "gen_ai.usage.input_tokens" = Empty,
            "gen_ai.usage.output_tokens" = Empty,
            "gen_ai.usage.cache_read.input_tokens" = Empty,
            "gen_ai.usage.reasoning.output_tokens" = Empty,
            "gen_ai.usage.cost" = Empty,
            "server.address" = Empty,
            "server.port" = Empty,
            "error.type" = Empty,
            "gen_ai.system_instructions" = Empty,
            "gen_ai.input.messages" = Empty,
            "gen_ai.output.messages" = Empty,
            "gen_ai.tool.definitions" = Empty,
        );
        if span.is_disabled() {
            return ChatSpan {
                span,
                started: None,
            };
        }
        if !options.stop.is_empty() {
            span.record(
                "gen_ai.request.stop_sequences",
                json!(options.stop).to_string(),
            );
        }
        if let Some(format) = &request.response_format {
            let kind = match format {
                super::ResponseFormat::Text => "text",
                _ => "json",
            };
            span.record("gen_ai.output.type", kind);
        }
        if telemetry::capture_content() {
            let (system, messages) = input_messages(&request.messages);
            if !system.is_empty() {
                span.record(
                    "gen_ai.system_instructions",
                    Value::Array(system).to_string(),
                );
            }
            span.record("gen_ai.input.messages", Value::Array(messages).to_string());
            if !request.tools.is_empty() {
                let tools: Vec<Value> = request
                    .tools
                    .iter()
                    .map(|tool| {
                        json!({
                            "type": "function",
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": tool.parameters,
                        })
                    })
                    .collect();
                span.record("gen_ai.tool.definitions", Value::Array(tools).to_string());
            }
        }
        ChatSpan {
            span,
            started: Some(Instant::now()),
        }
    }

    /// Records where the request goes (`server.address`, `server.port`): a host name or IP
    /// address, never a URL (which may carry credentials).
    pub fn with_server(self, address: &str, port: u16) -> ChatSpan {
        if self.started.is_some() {
            self.span.record("server.address", address);
            self.span.record("server.port", i64::from(port));
        }
        self
    }

    /// The `tracing` span (to enter it, or record more attributes).
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Records the first streamed chunk's arrival (`gen_ai.response.time_to_first_chunk`, in
    /// seconds); later calls do nothing.
    pub fn first_chunk(&mut self) {
        if let Some(started) = self.started.take() {
            self.span.record(
                "gen_ai.response.time_to_first_chunk",
                started.elapsed().as_secs_f64(),
            );
        }
    }

    /// Records the outcome: usage, finish reason and (with content capture) the reply; or the
    /// error's type and message.
    pub fn finish(&self, result: Result<&Completion, &LmError>) {
        if self.span.is_disabled() {
            return;
        }
        match result {
            Ok(completion) => {
                let usage = &completion.usage;
                self.span.record(
                    "gen_ai.usage.input_tokens",
                    telemetry::int(usage.prompt_tokens),
                );
                self.span.record(
                    "gen_ai.usage.output_tokens",
                    telemetry::int(usage.completion_tokens),
                );
                if usage.cost_nanousd > 0 {
                    self.span.record("gen_ai.usage.cost", usage.cost_usd());
                }
                let reason = finish_reason(completion.finish_reason.as_ref());
                self.span.record(
                    "gen_ai.response.finish_reasons",
                    json!([reason]).to_string(),
                );
                if telemetry::capture_content() {
                    self.span.record(
                        "gen_ai.output.messages",
                        json!([output_message(completion, reason)]).to_string(),
                    );
                }
            }
            Err(error) => telemetry::record_error(&self.span, &error.error_type(), error),
        }
    }

    /// Runs `call` inside the span and records its outcome.
    pub fn run<'a>(
        self,
        call: impl Future<Output = Result<Completion, LmError>> + Send + 'a,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        if self.span.is_disabled() {
            return call.boxed();
        }
        let span = self.span.clone();
        async move {
            let result = call.await;
            self.finish(result.as_ref());
            result
        }
        .instrument(span)
        .boxed()
    }

    /// Runs `events` inside the span: the first event is the first chunk, `Done` or an error the
    /// outcome. Dropped early (the caller stopped reading), the span ends without an outcome.
    pub fn run_stream<'a>(
        mut self,
        events: BoxStream<'a, Result<StreamEvent, LmError>>,
    ) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        if self.span.is_disabled() {
            return events;
        }
        let span = self.span.clone();
        events
            .map(move |event| {
                let _entered = span.enter();
                self.first_chunk();
                match &event {
                    Ok(StreamEvent::Done(completion)) => self.finish(Ok(completion)),
                    Err(error) => self.finish(Err(error)),
                    Ok(_) => {}
                }
                event
            })
            .boxed()
    }
}

/// Records the response `id` and `model` and the token details of an OpenAI-shaped response body
/// or stream chunk on `span` (what is absent is left unrecorded).
#[cfg(feature = "openai")]
pub(crate) fn record_openai_body(span: &tracing::Span, body: &serde_json::Map<String, Value>) {
    if span.is_disabled() {
        return;
    }
    let usage = body.get("usage");
    let detail = |details: &str, key: &str| {
        usage
            .and_then(|u| u.get(details))
            .and_then(|d| d.get(key))
            .and_then(Value::as_u64)
    };
    record_response(
        span,
        ResponseDetails {
            id: body.get("id").and_then(Value::as_str),
            model: body.get("model").and_then(Value::as_str),
            cached_tokens: detail("prompt_tokens_details", "cached_tokens"),
            reasoning_tokens: detail("completion_tokens_details", "reasoning_tokens"),
        },
    );
}

/// What a chat span records of a response, beyond its usage and finish reason
/// ([`ChatSpan::record_response`]): a provider's response id, the model that answered (which may
/// name a version the request did not), and the token details it reports.
#[derive(Debug, Default, Clone, Copy)]
#[non_exhaustive]
pub struct ResponseDetails<'a> {
    /// The provider's id of the response (`gen_ai.response.id`).
    pub id: Option<&'a str>,
    /// The model that answered (`gen_ai.response.model`).
    pub model: Option<&'a str>,
    /// Prompt tokens served from the provider's cache (`gen_ai.usage.cache_read.input_tokens`).
    pub cached_tokens: Option<u64>,
    /// Tokens of reasoning in the reply (`gen_ai.usage.reasoning.output_tokens`).
    pub reasoning_tokens: Option<u64>,
}

impl<'a> ResponseDetails<'a> {
    /// Details with the response's `id` and the `model` that answered.
    pub fn new(id: Option<&'a str>, model: Option<&'a str>) -> ResponseDetails<'a> {
        ResponseDetails {
            id,
            model,
            ..ResponseDetails::default()
        }
    }

    crate::shared::setters! {
        /// The prompt tokens served from the provider's cache.
        fn with_cached_tokens(tokens: u64) { cached_tokens = Some(tokens) }

        /// The reply's reasoning tokens.
        fn with_reasoning_tokens(tokens: u64) { reasoning_tokens = Some(tokens) }
    }
}

impl ChatSpan {
    /// Records a response's id, model and token details: what an [`Lm`](super::Lm) of your own
    /// reads from its provider's reply, for traces as full as `OpenAiLm`'s.
    ///
    /// ```
    /// use signet::lm::{ChatSpan, LmRequest, Message, ResponseDetails};
    /// let request = LmRequest::new(vec![Message::user("hi")]);
    /// let span = ChatSpan::start("my_provider", "my-model", &request, false);
    /// span.record_response(ResponseDetails::new(Some("msg_1"), Some("my-model-2026-01")).with_cached_tokens(12));
    /// ```
    pub fn record_response(&self, details: ResponseDetails<'_>) {
        record_response(&self.span, details);
    }
}

/// Records a response's id, model and token details on its chat span.
pub(crate) fn record_response(span: &tracing::Span, details: ResponseDetails<'_>) {
    if span.is_disabled() {
        return;
    }
    if let Some(id) = details.id {
        span.record("gen_ai.response.id", id);
    }
    if let Some(model) = details.model {
        span.record("gen_ai.response.model", model);
    }
    if let Some(cached) = details.cached_tokens {
        span.record(
            "gen_ai.usage.cache_read.input_tokens",
            telemetry::int(cached),
        );
    }
    if let Some(reasoning) = details.reasoning_tokens {
        span.record(
            "gen_ai.usage.reasoning.output_tokens",
            telemetry::int(reasoning),
        );
    }
}

/// Records what a module call or an evaluation spent on its span: tokens, LM calls and cost.
pub(crate) fn record_usage(span: &tracing::Span, usage: &super::Usage) {
    telemetry::record_usage(
        span,
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.lm_calls,
        usage.cost_nanousd,
    );
}

/// The conventions' name of a finish reason.
fn finish_reason(reason: Option<&FinishReason>) -> &str {
    match reason {
        Some(FinishReason::Stop) | None => "stop",
        Some(FinishReason::Length) => "length",
        Some(FinishReason::ToolCalls) => "tool_call",
        Some(FinishReason::ContentFilter) => "content_filter",
        Some(FinishReason::Other(other)) => other,
    }
}

/// The system instructions and the other messages, in the conventions' message shape.
fn input_messages(messages: &[Message]) -> (Vec<Value>, Vec<Value>) {
    let mut system = Vec::new();
    let mut rest = Vec::new();
    for message in messages {
        match message.role {
            Role::System => system.extend(parts(message)),
            Role::User => rest.push(json!({"role": "user", "parts": parts(message)})),
            Role::Assistant => {
                let mut parts = parts(message);
                parts.extend(message.tool_calls.iter().map(|call| {
                    json!({
                        "type": "tool_call",
                        "id": call.id,
                        "name": call.name,
                        "arguments": arguments(&call.arguments),
                    })
                }));
                rest.push(json!({"role": "assistant", "parts": parts}));
            }
            Role::Tool => rest.push(json!({
                "role": "tool",
                "parts": [{
                    "type": "tool_call_response",
                    "id": message.tool_call_id,
                    "response": message.content.as_str(),
                }],
            })),
        }
    }
    (system, rest)
}

/// A message's content as parts: text as it is, media by kind only (their bytes stay out of
/// traces).
fn parts(message: &Message) -> Vec<Value> {
    if !message.content.has_media() {
        if message.content.is_empty() {
            return Vec::new();
        }
        return vec![json!({"type": "text", "content": message.content.as_str()})];
    }
    message
        .content
        .parts()
        .iter()
        .map(|part| match part {
            ContentPart::Text(text) => json!({"type": "text", "content": text}),
            ContentPart::Image(_) => json!({"type": "blob", "modality": "image"}),
            ContentPart::Audio(_) => json!({"type": "blob", "modality": "audio"}),
        })
        .collect()
}

/// The reply as the conventions' output message.
fn output_message(completion: &Completion, reason: &str) -> Value {
    let mut parts = Vec::new();
    if let Some(reasoning) = completion.reasoning.as_ref().filter(|r| !r.is_empty()) {
        parts.push(json!({"type": "reasoning", "content": reasoning}));
    }
    if let Some(text) = completion.text.as_ref().filter(|t| !t.is_empty()) {
        parts.push(json!({"type": "text", "content": text}));
    }
    for call in &completion.tool_calls {
        parts.push(json!({
            "type": "tool_call",
            "id": call.id,
            "name": call.name,
            "arguments": arguments(&call.arguments),
        }));
    }
    json!({"role": "assistant", "parts": parts, "finish_reason": reason})
}

/// Tool-call arguments as an object when they are JSON, else as their text.
fn arguments(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_take_the_conventions_shape() {
        let mut assistant = Message::assistant("");
        assistant.tool_calls = vec![super::super::ToolCall::new("c1", "add", r#"{"a":1}"#)];
        let mut tool = Message::new(Role::Tool, "3");
        tool.tool_call_id = Some("c1".into());
        let (system, rest) = input_messages(&[
            Message::system("Be brief."),
            Message::user("1+2?"),
            assistant,
            tool,
        ]);
        assert_eq!(
            system,
            vec![json!({"type": "text", "content": "Be brief."})]
        );
        assert_eq!(
            rest,
            vec![
                json!({"role": "user", "parts": [{"type": "text", "content": "1+2?"}]}),
                json!({"role": "assistant", "parts": [
                    {"type": "tool_call", "id": "c1", "name": "add", "arguments": {"a": 1}}
                ]}),
                json!({"role": "tool", "parts": [
                    {"type": "tool_call_response", "id": "c1", "response": "3"}
                ]}),
            ]
        );
        let mut completion = Completion::text("3");
        completion.finish_reason = Some(FinishReason::Length);
        assert_eq!(
            output_message(
                &completion,
                finish_reason(completion.finish_reason.as_ref())
            ),
            json!({"role": "assistant", "parts": [{"type": "text", "content": "3"}],
                   "finish_reason": "length"})
        );
    }
}
