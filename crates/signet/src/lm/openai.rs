//! [`OpenAiLm`]: an LM behind any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
//! llama.cpp, Ollama, ..), on async-openai's bring-your-own-types path so that every request field
//! is sent exactly as Signet builds it.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{Map, Value, json};
use tracing::Instrument;

mod builder;
mod errors;
mod sse;
mod transport;
mod wire;

pub use builder::OpenAiLmBuilder;
use errors::*;
use sse::*;
use transport::*;
use wire::*;

use super::http_endpoint::*;
use super::{
    CallHistory, Capabilities, ChatSpan, Completion, FinishReason, Lm, LmError, LmRequest, Message,
    ResponseCache, RetryPolicy, Role, StreamAssembler, StreamEvent, ToolCall, ToolChoice,
    ToolDefinition, Usage,
};

/// OpenAI's API base, used when neither the builder nor `OPENAI_BASE_URL` names another.
pub(super) const OPENAI_API_BASE: &str = "https://api.openai.com/v1";

/// The most bytes of one response body a client reads unless told otherwise: 16 MiB.
const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 << 20;

/// The longest a streamed reply may take unless told otherwise: 10 minutes.
const DEFAULT_STREAM_DEADLINE: Duration = Duration::from_secs(600);

/// A client for any OpenAI-compatible chat-completions endpoint.
///
/// Built with [`OpenAiLm::builder`]: the endpoint behind the same wrappers any LM can have — a
/// [`RetryLm`](super::RetryLm), a [`CachedLm`](super::CachedLm) and a
/// [`HistoryLm`](super::HistoryLm), composed for you. Each call:
/// 1. is answered from the [`ResponseCache`] when one is configured and holds the request;
/// 2. otherwise is sent (`POST {base_url}/chat/completions`) with a per-attempt time limit and
///    retried on transient errors according to the [`RetryPolicy`] (three retries by default,
///    exponential backoff with jitter, `Retry-After` honoured);
/// 3. is recorded in the [`CallHistory`] when it succeeds ([`inspect_history`](OpenAiLm::inspect_history)
///    prints it like `dspy.inspect_history`).
///
/// Failures are typed [`LmError`]s: `RateLimited` (429, with `Retry-After`), `Server` (5xx),
/// `Rejected` (other 4xx), `ContextWindowExceeded` (recognised from the provider's message or
/// code whatever the status), `Timeout`, `Connect`, `InvalidResponse`.
///
/// The API key and the values of custom [headers](OpenAiLmBuilder::header) never appear in `Debug`
/// output, logs or error messages (a server that echoes them gets them replaced by `[redacted]`).
/// Redirects are followed only within the base URL's origin (scheme, host and port), and only
/// `307`/`308`: another origin would receive those headers. A redirect that is not followed is a
/// [`LmError::Rejected`] with the redirect's status, naming where it led.
///
/// ```no_run
/// use std::time::Duration;
/// use signet::lm::{Lm, LmRequest, Message, OpenAiLm, RetryPolicy};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // OpenAI: the key comes from OPENAI_API_KEY.
/// let openai = OpenAiLm::builder("gpt-4o-mini").build()?;
///
/// // A local llama.cpp / vLLM / Ollama server.
/// let local = OpenAiLm::builder("smollm2")
///     .base_url("http://127.0.0.1:8080/v1")
///     .timeout(Duration::from_secs(60))
///     .retry(RetryPolicy::default().with_max_retries(1))
///     .memory_cache()
///     .build()?;
///
/// let reply = local.complete(&LmRequest::new(vec![Message::user("Say hi")])).await?;
/// println!("{:?}", reply.text);
/// local.inspect_history(1);
/// # let _ = openai; Ok(()) }
/// ```
pub struct OpenAiLm {
    endpoint: Arc<Endpoint>,
    retry: RetryPolicy,
    cache: Option<Arc<ResponseCache>>,
    history: Arc<CallHistory>,
    /// What [`complete`](Lm::complete) and [`stream`](Lm::stream) call: the endpoint behind a
    /// [`RetryLm`], a [`CachedLm`] when there is a cache, and a [`HistoryLm`].
    layers: Arc<dyn Lm>,
}

/// The OpenAI-compatible endpoint itself: one attempt per call, without cache, retries or
/// history ([`OpenAiLm`] layers those on).
pub(crate) struct Endpoint {
    /// async-openai's client over [`Transport`], for streams.
    client: Client<OpenAIConfig>,
    /// The HTTP layer, which non-streamed calls use directly.
    transport: Transport,
    /// `{base_url}/chat/completions`.
    completions_url: reqwest::Url,
    /// Every request's headers: `Authorization`, the custom ones, `Content-Type`.
    headers: reqwest::header::HeaderMap,
    /// The model, where it is, its limits and turns, spans, prices, secrets and typed errors.
    http: HttpEndpoint,
    api_key: Option<ApiKey>,
    capabilities: Capabilities,
    stream_usage: bool,
    max_completion_tokens: bool,
    /// HTTP/2 with prior knowledge on an `http` URL ([`OpenAiLmBuilder::http2`]).
    h2c: bool,
}

impl fmt::Debug for OpenAiLm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let endpoint = &self.endpoint;
        f.debug_struct("OpenAiLm")
            .field("model", &endpoint.http.model)
            .field("base_url", &without_credentials(&endpoint.http.base_url))
            .field("api_key", &endpoint.api_key)
            .field("headers", &endpoint.http.header_names)
            .field("capabilities", &endpoint.capabilities)
            .field("timeout", &endpoint.http.timeout)
            .field("retry", &self.retry)
            .field("cache", &self.cache.is_some())
            .field("history_len", &self.history.len())
            .field("stream_usage", &endpoint.stream_usage)
            .field("max_completion_tokens", &endpoint.max_completion_tokens)
            .field(
                "max_concurrent_requests",
                &endpoint.http.turns.as_ref().map(|(limit, _)| limit),
            )
            .finish_non_exhaustive()
    }
}

impl OpenAiLm {
    /// A builder for a client of `model` (see [`OpenAiLmBuilder`] for the defaults).
    pub fn builder(model: impl Into<String>) -> OpenAiLmBuilder {
        OpenAiLmBuilder::new(model.into())
    }

    /// The client of `endpoint`, behind retries with `retry`, `cache` when there is one, and
    /// `history` (outermost, so cache hits are recorded too).
    pub(super) fn layered(
        endpoint: Endpoint,
        retry: RetryPolicy,
        cache: Option<Arc<ResponseCache>>,
        history: Arc<CallHistory>,
    ) -> OpenAiLm {
        let endpoint = Arc::new(endpoint);
        let layers =
            super::layers::layered(endpoint.clone(), retry, cache.clone(), history.clone());
        OpenAiLm {
            endpoint,
            retry,
            cache,
            history,
            layers,
        }
    }

    /// The base URL requests go to (without a trailing `/`).
    pub fn base_url(&self) -> &str {
        &self.endpoint.http.base_url
    }

    /// The time limit of one attempt.
    pub fn timeout(&self) -> Duration {
        self.endpoint.http.timeout
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The response cache, if any.
    pub fn cache(&self) -> Option<&Arc<ResponseCache>> {
        self.cache.as_ref()
    }

    /// The calls made so far.
    pub fn history(&self) -> &Arc<CallHistory> {
        &self.history
    }

    /// Prints the last `n` calls like Python's `dspy.inspect_history(n)`.
    pub fn inspect_history(&self, n: usize) {
        self.history.inspect(n);
    }

    /// The JSON body this client sends for `request` (with `stream: true` and, unless turned off,
    /// `stream_options` when `stream`): useful to debug what a server receives.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::lm::{LmRequest, Message, OpenAiLm, ResponseFormat, ToolChoice};
    ///
    /// let lm = OpenAiLm::builder("m").base_url("http://localhost:1/v1").build().unwrap();
    /// let mut request = LmRequest::new(vec![Message::user("hi")]);
    /// request.options.temperature = Some(0.7);
    /// request.options.frequency_penalty = Some(0.5);
    /// request.options.rollout_id = Some(3); // a cache key only: not sent
    /// request.response_format = Some(ResponseFormat::JsonObject);
    /// request.tool_choice = Some(ToolChoice::Function("add".into()));
    /// request.extra.insert("top_k".into(), json!(40));
    /// request.extra.insert("reasoning_effort".into(), json!(null)); // null: not sent
    /// assert_eq!(lm.request_body(&request, false), json!({
    ///     "model": "m",
    ///     "messages": [{"role": "user", "content": "hi"}],
    ///     "temperature": 0.7,
    ///     "frequency_penalty": 0.5,
    ///     "response_format": {"type": "json_object"},
    ///     "tool_choice": {"type": "function", "function": {"name": "add"}},
    ///     "top_k": 40,
    /// }));
    /// ```
    pub fn request_body(&self, request: &LmRequest, stream: bool) -> Value {
        self.endpoint.request_body(request, stream)
    }
}

impl Endpoint {
    /// See [`OpenAiLm::request_body`].
    fn request_body(&self, request: &LmRequest, stream: bool) -> Value {
        // A body's fields never fail to serialise: every key is a string.
        serde_json::to_value(self.wire_body(request, stream)).unwrap_or_default()
    }

    /// The body sent for `request`.
    fn wire_body<'a>(&'a self, request: &'a LmRequest, stream: bool) -> WireBody<'a> {
        WireBody {
            model: &self.http.model,
            request,
            stream,
            stream_usage: self.stream_usage,
            max_completion_tokens: self.max_completion_tokens,
        }
    }

    /// The HTTP request of one non-streamed attempt: the body serialised into a buffer of its
    /// size, the URL and headers made once by the builder.
    fn http_request(&self, request: &LmRequest) -> Result<reqwest::Request, LmError> {
        let wire = self.wire_body(request, false);
        let mut body = Vec::with_capacity(wire.size_hint());
        serde_json::to_writer(&mut body, &wire).map_err(|error| LmError::Rejected {
            status: 0,
            message: format!("the request could not be serialised: {error}"),
        })?;
        let mut http = reqwest::Request::new(reqwest::Method::POST, self.completions_url.clone());
        *http.headers_mut() = self.headers.clone();
        *http.body_mut() = Some(reqwest::Body::from(body));
        Ok(http)
    }

    /// One attempt, without cache, retries or history, in its `chat` span (once the attempt has
    /// its turn, which `Lm::complete` takes first).
    async fn complete_once(&self, request: &LmRequest) -> Result<Completion, LmError> {
        let span = self.http.chat_span(request, false);
        let result = self
            .complete_unspanned(request, &span)
            .instrument(span.span().clone())
            .await;
        span.finish(result.as_ref());
        result
    }

    async fn complete_unspanned(
        &self,
        request: &LmRequest,
        span: &ChatSpan,
    ) -> Result<Completion, LmError> {
        let http = self.http_request(request)?;
        let body = match tokio::time::timeout(self.http.timeout, self.transport.send_and_read(http))
            .await
        {
            Err(_) => return Err(self.http.timed_out()),
            Ok(body) => body.map_err(|e| self.map_error(e))?,
        };
        let fast = fast_completion(&body, |details| {
            super::record_response(span.span(), details)
        });
        let mut completion = match fast {
            Some(completion) => completion,
            None => self.completion_of(&body, span)?,
        };
        self.http.price(&mut completion);
        Ok(completion)
    }

    /// The completion of a response body [`fast_completion`] does not read: an error in the
    /// body, a lenient reading of an unusual shape, or an [`LmError::InvalidResponse`].
    fn completion_of(&self, body: &[u8], span: &ChatSpan) -> Result<Completion, LmError> {
        let reply: Value = serde_json::from_slice(body).map_err(|error| {
            let body = String::from_utf8_lossy(body).into_owned();
            self.map_error(OpenAIError::JSONDeserialize(error, body))
        })?;
        if let Some(body) = reply.as_object() {
            super::record_openai_body(span.span(), body);
        }
        parse_completion(&reply).map_err(|e| self.http.scrub_error(e))
    }

    /// One streamed attempt, without cache, retries or history.
    fn stream_once<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        let span = self.http.chat_span(request, true);
        let traced = span.span().clone();
        span.run_stream(self.stream_unspanned(request, traced))
    }

    fn stream_unspanned<'a>(
        &'a self,
        request: &'a LmRequest,
        span: tracing::Span,
    ) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        let cut = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let flag = cut.clone();
        let open = async move {
            // The deadline and the timeout run from the turn, not from the wait for it.
            let turn = self.http.turn().await;
            let deadline = tokio::time::Instant::now() + self.http.stream_deadline;
            let body = self.wire_body(request, true);
            let chat = self.client.chat();
            let wait = self
                .http
                .timeout
                .min(deadline.saturating_duration_since(tokio::time::Instant::now()));
            let opening = BODY_CUT.scope(flag, chat.create_stream_byot::<_, Value>(body));
            match tokio::time::timeout(wait, opening).await {
                Err(_) if tokio::time::Instant::now() >= deadline => Err(self.http.past_deadline()),
                Err(_) => Err(self.http.timed_out()),
                Ok(opened) => opened
                    .map(|chunks| (chunks, deadline, turn))
                    .map_err(|e| self.map_error(e)),
            }
        };
        stream::once(open)
            .flat_map(move |opened| match opened {
                Err(error) => stream::iter([Err(error)]).boxed(),
                Ok((chunks, deadline, turn)) => {
                    let state = StreamState {
                        lm: self,
                        chunks,
                        assembler: StreamAssembler::default(),
                        pending: VecDeque::new(),
                        finished: false,
                        saw_choice: false,
                        deadline,
                        cut: cut.clone(),
                        span: span.clone(),
                        saw_response_id: false,
                        _turn: turn,
                    };
                    stream::unfold(state, StreamState::next_event).boxed()
                }
            })
            .boxed()
    }

    /// Turns a client error into an [`LmError`], with every secret scrubbed from its message.
    fn map_error(&self, error: OpenAIError) -> LmError {
        let mapped = match error {
            OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
                // The body is scrubbed before it is parsed and cut to length, so that no part of
                // a secret survives at the cut.
                Ok(failure) => classify_http(
                    failure.status,
                    failure.retry_after,
                    &self.http.scrub(failure.body),
                ),
                Err(other) => match other.downcast::<RefusedRedirect>() {
                    Ok(redirect) => LmError::Rejected {
                        status: redirect.status,
                        message: redirect.message(),
                    },
                    Err(other) => match body_too_large(other.as_ref()) {
                        Some(limit) => LmError::ResponseTooLarge {
                            limit: limit as u64,
                        },
                        None => LmError::Connect {
                            message: error_chain(other.as_ref()),
                        },
                    },
                },
            },
            OpenAIError::Reqwest(error) => self.map_reqwest(&error),
            OpenAIError::JSONDeserialize(error, body) => LmError::InvalidResponse {
                message: format!(
                    "the body is not valid JSON ({error}): {}",
                    truncate(&self.http.scrub(body), MAX_ERROR_MESSAGE)
                ),
            },
            OpenAIError::StreamError(error) => {
                let message = error.to_string();
                if message.contains("Transport") {
                    LmError::Connect { message }
                } else {
                    LmError::InvalidResponse { message }
                }
            }
            OpenAIError::ApiError(response) => {
                let api = &response.api_error;
                let body = json!({"error": {"message": api.message, "code": api.code, "type": api.r#type}});
                let body = self.http.scrub(body.to_string());
                classify_http(response.status_code.as_u16(), None, &body)
            }
            OpenAIError::InvalidArgument(message) => LmError::Rejected { status: 0, message },
            other => LmError::InvalidResponse {
                message: other.to_string(),
            },
        };
        self.http.scrub_error(mapped)
    }

    /// The typed error of a failed HTTP exchange (with a word on h2c for a refused connection).
    fn map_reqwest(&self, error: &reqwest::Error) -> LmError {
        match self.http.map_reqwest(error) {
            LmError::Connect { mut message } if self.h2c => {
                message.push_str(
                    " (this client speaks HTTP/2 from the first byte, `http2(true)` on an http:// \
                     URL: a server that speaks only HTTP/1.1 closes such connections)",
                );
                LmError::Connect { message }
            }
            other => other,
        }
    }
}

/// What the embeddings client ([`OpenAiEmbedder`](crate::embed::OpenAiEmbedder)) shares with this
/// one: the HTTP pieces of every provider, and OpenAI's configuration from the environment.
pub(crate) mod shared_http {
    pub(crate) use super::builder::{resolve_api_key, resolve_base_url};
    pub(crate) use crate::http::same_origin_redirects;
    pub(crate) use crate::lm::http_endpoint::*;
}

impl Lm for OpenAiLm {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        self.layers.complete(request)
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        self.layers.stream(request)
    }

    fn capabilities(&self) -> Capabilities {
        self.endpoint.capabilities
    }

    fn model(&self) -> &str {
        &self.endpoint.http.model
    }
}

impl Lm for Endpoint {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        if self.http.turns.is_none() {
            return self.complete_once(request).boxed();
        }
        // The attempt's own (larger) future is made once the call has its turn: a call waiting
        // for one holds only this.
        async move {
            let _turn = self.http.turn().await;
            Box::pin(self.complete_once(request)).await
        }
        .boxed()
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        self.stream_once(request)
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn model(&self) -> &str {
        &self.http.model
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_messages_are_classified() {
        let body = r#"{"error": {"message": "slow down", "type": "requests", "code": null}}"#;
        let limited = classify_http(429, Some(Duration::from_secs(3)), body);
        assert_eq!(
            limited,
            LmError::RateLimited {
                retry_after: Some(Duration::from_secs(3)),
                message: "slow down".into()
            }
        );
        let quota = r#"{"error": {"message": "no money", "code": "insufficient_quota"}}"#;
        assert!(matches!(
            classify_http(429, None, quota),
            LmError::Rejected { status: 429, .. }
        ));
        assert!(matches!(
            classify_http(404, None, "not found"),
            LmError::Rejected { status: 404, .. }
        ));
        assert!(matches!(
            classify_http(503, None, "<html>busy</html>"),
            LmError::Server { status: 503, .. }
        ));
        assert!(matches!(
            classify_http(302, None, ""),
            LmError::InvalidResponse { .. }
        ));
        let llama = r#"{"error": {"code": 500, "message": "Requested tokens (5000) exceed context window of 4096", "type": "server_error"}}"#;
        assert!(matches!(
            classify_http(500, None, llama),
            LmError::ContextWindowExceeded { .. }
        ));
        let server = r#"{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error"}}"#;
        assert!(matches!(
            classify_http(400, None, server),
            LmError::ContextWindowExceeded { .. }
        ));
        let coded = r#"{"error": {"message": "too long", "code": "context_length_exceeded"}}"#;
        assert!(matches!(
            classify_http(400, None, coded),
            LmError::ContextWindowExceeded { .. }
        ));
        assert!(matches!(
            classify_http(500, None, "n_ctx is 512"),
            LmError::ContextWindowExceeded { .. }
        ));
        let detail = classify_http(422, None, r#"{"detail": "bad field"}"#);
        assert_eq!(
            detail,
            LmError::Rejected {
                status: 422,
                message: "bad field".into()
            }
        );
        let empty = classify_http(500, None, "");
        assert_eq!(
            empty,
            LmError::Server {
                status: 500,
                message: "HTTP 500 with an empty body".into()
            }
        );
    }

    #[test]
    fn odd_bodies_never_panic() {
        let bodies = [
            json!(null),
            json!([]),
            json!({"choices": null}),
            json!({"choices": []}),
            json!({"choices": [1]}),
            json!({"choices": [{"message": "x"}]}),
            json!({"choices": [{"message": {"tool_calls": [{"function": 3}]}}]}),
            json!({"choices": [{"message": {"tool_calls": [{"function": {"name": 1}}]}}]}),
            json!({"error": "boom"}),
        ];
        for body in &bodies {
            assert!(parse_completion(body).is_err(), "{body}");
        }
        let lenient = json!({
            "choices": [{"message": {
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}],
                "reasoning": "r"
            }, "finish_reason": "weird"}],
            "usage": {"prompt_tokens": "many"}
        });
        let completion = parse_completion(&lenient).expect("lenient parse");
        assert_eq!(completion.text.as_deref(), Some("ab"));
        assert_eq!(completion.tool_calls[0].id, "call_0");
        assert_eq!(completion.tool_calls[0].arguments, r#"{"x":1}"#);
        assert_eq!(completion.reasoning.as_deref(), Some("r"));
        assert_eq!(
            completion.finish_reason,
            Some(FinishReason::Other("weird".into()))
        );
        assert_eq!(completion.usage.prompt_tokens, 0);
        let legacy = json!({"choices": [{"message": {"content": null, "function_call": {"name": "g", "arguments": "{}"}}}]});
        let completion = parse_completion(&legacy).expect("legacy function_call");
        assert_eq!(completion.tool_calls[0].name, "g");
        assert_eq!(completion.text, None);
    }

    #[test]
    fn the_fast_reading_of_a_reply_agrees_with_the_lenient_one() {
        let read = |body: &Value| {
            let bytes = body.to_string().into_bytes();
            let mut seen = None;
            let fast = fast_completion(&bytes, |d| {
                seen = Some((
                    d.id.map(str::to_owned),
                    d.model.map(str::to_owned),
                    d.cached_tokens,
                ))
            });
            (fast, seen)
        };
        // The common shapes: the fast reading gives what parse_completion gives.
        let common = [
            json!({"id": "c1", "model": "m", "choices": [{"message": {"role": "assistant", "content": "a \"quoted\"\nline ✓"}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "prompt_tokens_details": {"cached_tokens": 3}}}),
            json!({"choices": [{"message": {"content": null, "tool_calls": [
                {"id": "", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
                {"id": "t2", "function": {"name": "g", "arguments": null}},
                {"function": {"name": "h"}}]}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [{"message": {"content": "x", "reasoning_content": "", "reasoning": "r"}, "finish_reason": null}], "usage": null, "error": null}),
            json!({"choices": [{"message": {"content": "x", "reasoning_content": null, "reasoning": "r"}}, {"message": {"content": "second"}}], "system_fingerprint": "fp"}),
            json!({"choices": [{"message": {}}]}),
        ];
        for body in &common {
            let (fast, seen) = read(body);
            assert_eq!(fast, Some(parse_completion(body).unwrap()), "{body}");
            let details = seen.expect("details recorded");
            assert_eq!(details.0.as_deref(), body["id"].as_str());
            assert_eq!(details.1.as_deref(), body["model"].as_str());
        }
        assert_eq!(read(&common[0]).1.unwrap().2, Some(3));
        // Other shapes are left to parse_completion (its lenient reading, or its error).
        let others = [
            json!({"choices": [{"message": {"content": [{"type": "text", "text": "a"}]}}]}),
            json!({"choices": [{"message": {"tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]}}]}),
            json!({"choices": [{"message": {"content": null, "function_call": {"name": "g", "arguments": "{}"}}}]}),
            json!({"choices": [{"message": {"content": "x"}, "finish_reason": 3}]}),
            json!({"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": "many"}}),
            json!({"choices": [], "error": {"message": "boom"}}),
            json!({"choices": [{"message": {"content": "x"}}], "error": {"message": "boom"}}),
            json!({"choices": []}),
            json!([1]),
        ];
        for body in &others {
            assert_eq!(read(body), (None, None), "{body}");
        }
        assert_eq!(fast_completion(b"{\"choices\": [", |_| ()), None);
    }

    #[test]
    fn helpers() {
        assert_eq!(f32_json(0.7), json!(0.7));
        assert_eq!(f32_json(f32::NAN), Value::Null);
        assert_eq!(truncate("héllo", 2), "h…");
    }

    #[test]
    fn bad_configuration_is_an_error() {
        let key = OpenAiLm::builder("m")
            .base_url("http://localhost:1/v1")
            .api_key("bad\nkey")
            .build();
        assert!(matches!(key, Err(BuildError::InvalidApiKey)));
        let url = OpenAiLm::builder("m").base_url("localhost:1/v1").build();
        assert!(matches!(url, Err(BuildError::InvalidBaseUrl { .. })));
        let header = OpenAiLm::builder("m")
            .base_url("http://localhost:1/v1")
            .header("bad header", "x")
            .build();
        assert!(matches!(header, Err(BuildError::InvalidHeader { .. })));
        let openai = OpenAiLm::builder("m")
            .base_url("https://api.openai.com/v1")
            .api_key("k")
            .build()
            .expect("valid");
        assert_eq!(openai.capabilities(), Capabilities::openai());
    }

    #[test]
    fn debug_never_shows_secrets() {
        let builder = OpenAiLm::builder("m")
            .base_url("http://localhost:1/v1")
            .api_key("sk-very-secret-123")
            .header("x-api-key", "header-secret-456");
        let shown = format!("{builder:?} {builder:#?}");
        assert!(!shown.contains("sk-very-secret-123") && !shown.contains("header-secret-456"));
        assert!(shown.contains("[redacted]") && shown.contains("x-api-key"));
        let lm = builder.build().expect("valid");
        let shown = format!("{lm:?} {lm:#?}");
        assert!(!shown.contains("sk-very-secret-123") && !shown.contains("header-secret-456"));
        assert!(shown.contains("[redacted]"));
        let echoed = lm.endpoint.http.scrub_error(LmError::Rejected {
            status: 401,
            message: "Incorrect API key provided: sk-very-secret-123".into(),
        });
        assert!(!echoed.to_string().contains("sk-very-secret-123"));
        let echoed = lm.endpoint.http.scrub_error(LmError::Server {
            status: 500,
            message: r#"headers: {"x-api-key": "header-secret-456"}"#.into(),
        });
        assert!(
            !echoed.to_string().contains("header-secret-456"),
            "{echoed}"
        );
        assert!(echoed.to_string().contains("x-api-key"), "{echoed}");
    }

    #[tokio::test]
    async fn credentials_in_the_base_url_are_never_shown() {
        let builder = OpenAiLm::builder("m")
            .base_url("http://bob:pa%24%24-url-secret@127.0.0.1:1/v1")
            .retry(crate::lm::RetryPolicy::none());
        let shown = format!("{builder:?}");
        assert!(!shown.contains("url-secret"), "{shown}");
        assert!(
            shown.contains("http://[redacted]@127.0.0.1:1/v1"),
            "{shown}"
        );
        let lm = builder.build().expect("valid");
        let shown = format!("{lm:?}");
        assert!(!shown.contains("url-secret"), "{shown}");
        let echoed = lm.endpoint.http.scrub_error(LmError::Connect {
            message:
                "refused for url http://bob:pa%24%24-url-secret@127.0.0.1:1/v1 (pa$$-url-secret)"
                    .into(),
        });
        assert!(!echoed.to_string().contains("url-secret"), "{echoed}");
        // A real failed connection says nothing of them either.
        let error = lm
            .complete(&LmRequest::new(vec![crate::lm::Message::user("hi")]))
            .await
            .unwrap_err();
        assert!(!error.to_string().contains("url-secret"), "{error}");

        let token_only = OpenAiLm::builder("m")
            .base_url("https://tok-url-secret@example.com/v1")
            .build()
            .expect("valid");
        assert!(!format!("{token_only:?}").contains("url-secret"));
    }
}
