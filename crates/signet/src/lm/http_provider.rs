//! One provider on the shared HTTP layer: a [`WireFormat`] (how a request is written and a reply
//! or an event stream read) is all a provider module writes; sending, time limits, the
//! concurrency limit, SSE reading, spans, pricing, secrets, the builder's common settings and the
//! wrapper stack (retries, cache, history) are here, the same for every provider.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::{Map, Value};
use tracing::Instrument;

use super::http_endpoint::{
    ApiKey, BuildError, EndpointSettings, HttpEndpoint, classify_http, http_client,
    request_headers, resolve_api_key_from, resolve_base_url_from, truncate,
};
use super::{
    CallHistory, Capabilities, Completion, Lm, LmError, LmRequest, Message, ResponseCache,
    ResponseDetails, RetryPolicy, StreamAssembler, StreamEvent,
};

/// A provider's wire format: the body of a request, the completion of a reply, the events of a
/// stream.
pub(crate) trait WireFormat: Send + Sync + 'static {
    /// The client's own settings of the body (a default `max_tokens`, prompt caching, ..).
    type Body: fmt::Debug + Clone + Send + Sync;
    /// Reads one stream's events.
    type Events: EventRead;
    /// `gen_ai.provider.name` in traces.
    const PROVIDER: &'static str;

    /// The JSON body sent for `request` (streamed when `stream`), or why the API cannot express
    /// it.
    fn body(
        model: &str,
        settings: &Self::Body,
        request: &LmRequest,
        stream: bool,
    ) -> Result<Value, LmError>;

    /// The completion of a reply body.
    fn parse(reply: &Value) -> Result<Completion, LmError>;

    /// The reply's id and the model that answered, for the span.
    fn details(reply: &Value) -> ResponseDetails<'_>;

    /// The typed error of a non-2xx response: its status, `Retry-After` and (scrubbed) body.
    fn classify(status: u16, retry_after: Option<Duration>, body: &str) -> LmError {
        classify_http(status, retry_after, body)
    }
}

/// Reads the server-sent events of one streamed reply.
pub(crate) trait EventRead: Default + Send {
    /// The stream events of one SSE event named `name` with `data`; an error ends the stream.
    fn read(&mut self, name: &str, data: &str) -> Result<Vec<StreamEvent>, LmError>;

    /// The reply's id and the model that answered, once known.
    fn details(&self) -> ResponseDetails<'_>;

    /// The whole reply, at the end of the stream; an error for a stream that ended early.
    fn finish(self) -> Result<Completion, LmError>;
}

/// A request a provider's API cannot express, as the typed error it is before anything is sent.
pub(crate) fn unsupported(what: impl Into<String>) -> LmError {
    LmError::Rejected {
        status: 0,
        message: what.into(),
    }
}

/// The text of system message `index`, for an API (`api`, as errors name it) whose system
/// prompt takes text only: an image or audio there is an error before sending.
pub(crate) fn system_text<'m>(
    message: &'m Message,
    index: usize,
    api: &str,
) -> Result<&'m str, LmError> {
    if message.content.has_media() {
        return Err(unsupported(format!(
            "message {index}: {api}'s system prompt takes text only, not images or audio"
        )));
    }
    Ok(message.content.as_str())
}

/// The id of the call tool-result message `index` answers (an error when it names none).
pub(crate) fn answered_call(message: &Message, index: usize) -> Result<&str, LmError> {
    message.tool_call_id.as_deref().ok_or_else(|| {
        unsupported(format!(
            "message {index}: a tool result without the id of the call it answers"
        ))
    })
}

/// A tool call's arguments as the JSON object an API (`api`) takes as its input (empty
/// arguments are `{}`); anything else is an error naming message `index` and the call.
#[cfg(any(feature = "anthropic", feature = "gemini"))]
pub(crate) fn arguments_object(
    call: &crate::lm::ToolCall,
    index: usize,
    api: &str,
) -> Result<Value, LmError> {
    match call.args() {
        Ok(object @ Value::Object(_)) => Ok(object),
        _ => Err(unsupported(format!(
            "message {index}: the arguments of tool call `{}` ({}) are not a JSON object, which \
             is all {api} takes as a tool's input",
            call.id, call.name
        ))),
    }
}

/// Adds `blocks` of `role` to a conversation's turns: to the last turn when it has the same role
/// (the APIs want the results of parallel calls in one turn), else as a new turn. Nothing is
/// added for no blocks (the APIs refuse an empty turn).
#[cfg(any(feature = "anthropic", feature = "gemini"))]
pub(crate) fn push_turn(
    turns: &mut Vec<(&'static str, Vec<Value>)>,
    role: &'static str,
    blocks: Vec<Value>,
) {
    if blocks.is_empty() {
        return;
    }
    match turns.last_mut() {
        Some((last, previous)) if *last == role => previous.extend(blocks),
        _ => turns.push((role, blocks)),
    }
}

/// Sets `request`'s extra fields (those not null) on `body`, over the fields built in.
pub(crate) fn add_extra(body: &mut Map<String, Value>, request: &LmRequest) {
    for (key, value) in &request.extra {
        if !value.is_null() {
            body.insert(key.clone(), value.clone());
        }
    }
}

/// The completion `assembler` gathered from a stream, if the stream said it `ended` (else the
/// reply is incomplete: `what` names the event that did not come).
pub(crate) fn assembled(
    assembler: StreamAssembler,
    ended: bool,
    what: &str,
) -> Result<Completion, LmError> {
    if !ended {
        return Err(LmError::InvalidResponse {
            message: format!("the event stream ended before {what}: the reply is incomplete"),
        });
    }
    let mut completion = assembler.finish();
    completion.usage.lm_calls = completion.usage.lm_calls.max(1);
    Ok(completion)
}

/// One provider endpoint: one attempt per call, in its `chat` span.
pub(crate) struct ProviderEndpoint<W: WireFormat> {
    pub(crate) http: HttpEndpoint,
    client: reqwest::Client,
    /// Every request's headers.
    headers: reqwest::header::HeaderMap,
    /// Where requests are POSTed.
    pub(crate) url: reqwest::Url,
    /// Where streamed requests are POSTed (the same URL for most providers).
    pub(crate) stream_url: reqwest::Url,
    pub(crate) body: W::Body,
    pub(crate) capabilities: Capabilities,
}

impl<W: WireFormat> ProviderEndpoint<W> {
    /// The serialised body of `request`.
    fn body_bytes(&self, request: &LmRequest, stream: bool) -> Result<Vec<u8>, LmError> {
        let body = W::body(&self.http.model, &self.body, request, stream)?;
        serde_json::to_vec(&body).map_err(|error| LmError::Rejected {
            status: 0,
            message: format!("the request could not be serialised: {error}"),
        })
    }

    /// One attempt, in its `chat` span (once it has its turn).
    async fn complete_once(&self, request: &LmRequest) -> Result<Completion, LmError> {
        let _turn = self.http.turn().await;
        let span = self.http.chat_span(request, false);
        let result = async {
            let body = self.body_bytes(request, false)?;
            let reply = self
                .http
                .post_and_read((&self.client, &self.headers), &self.url, body, W::classify)
                .await?;
            let reply: Value = serde_json::from_slice(&reply).map_err(|error| {
                let body = truncate(&String::from_utf8_lossy(&reply), 200);
                LmError::InvalidResponse {
                    message: format!(
                        "the body is not valid JSON ({error}): {}",
                        self.http.scrub(body)
                    ),
                }
            })?;
            span.record_response(W::details(&reply));
            let mut completion = W::parse(&reply).map_err(|e| self.http.scrub_error(e))?;
            self.http.price(&mut completion);
            Ok(completion)
        }
        .instrument(span.span().clone())
        .await;
        span.finish(result.as_ref());
        result
    }

    /// One streamed attempt: the deadline and the timeout run from its turn.
    fn stream_once<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        let span = self.http.chat_span(request, true);
        let traced = span.span().clone();
        let cut = Arc::new(AtomicU64::new(0));
        let open = {
            let cut = cut.clone();
            async move {
                let turn = self.http.turn().await;
                let deadline = tokio::time::Instant::now() + self.http.stream_deadline;
                let body = self.body_bytes(request, true)?;
                let sender = (&self.client, &self.headers);
                let sent = self
                    .http
                    .post(sender, &self.stream_url, body, W::classify, Some(cut));
                match tokio::time::timeout(self.http.timeout, sent).await {
                    Err(_) => Err(self.http.timed_out()),
                    Ok(response) => Ok((response?, deadline, turn)),
                }
            }
        };
        let events = stream::once(open)
            .flat_map(move |opened| match opened {
                Err(error) => stream::iter([Err(error)]).boxed(),
                Ok((response, deadline, turn)) => {
                    let state = StreamState::<W> {
                        endpoint: self,
                        events: response.bytes_stream().eventsource().boxed(),
                        reader: Some(W::Events::default()),
                        pending: Vec::new(),
                        deadline,
                        cut: cut.clone(),
                        span: traced.clone(),
                        _turn: turn,
                    };
                    stream::unfold(state, StreamState::next_event).boxed()
                }
            })
            .boxed();
        span.run_stream(events)
    }
}

/// The SSE events of one body, as eventsource-stream reads them.
type SseEvents<'a> = BoxStream<
    'a,
    Result<eventsource_stream::Event, eventsource_stream::EventStreamError<reqwest::Error>>,
>;

/// A stream of SSE events being read.
struct StreamState<'a, W: WireFormat> {
    endpoint: &'a ProviderEndpoint<W>,
    events: SseEvents<'a>,
    /// `None` once the stream has ended (with `Done` or an error).
    reader: Option<W::Events>,
    /// Events read and not yet given, in reverse order.
    pending: Vec<StreamEvent>,
    deadline: tokio::time::Instant,
    /// Set when the body was cut at the client's limit.
    cut: Arc<AtomicU64>,
    span: tracing::Span,
    /// The stream's turn, held while it is open.
    _turn: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl<'a, W: WireFormat> StreamState<'a, W> {
    async fn next_event(mut self) -> Option<(Result<StreamEvent, LmError>, StreamState<'a, W>)> {
        loop {
            if let Some(event) = self.pending.pop() {
                return Some((Ok(event), self));
            }
            let reader = self.reader.as_mut()?;
            let http = &self.endpoint.http;
            let now = tokio::time::Instant::now();
            if now >= self.deadline {
                return self.fail(http.past_deadline());
            }
            // Each wait is bounded by the client's timeout, the whole stream by its deadline.
            let wait = http.timeout.min(self.deadline - now);
            let next = match tokio::time::timeout(wait, self.events.next()).await {
                Err(_) if tokio::time::Instant::now() >= self.deadline => {
                    return self.fail(http.past_deadline());
                }
                Err(_) => return self.fail(http.timed_out()),
                Ok(next) => next,
            };
            match next {
                None => {
                    let reader = self.reader.take()?;
                    super::record_response(&self.span, reader.details());
                    return match reader.finish() {
                        Ok(mut completion) => {
                            http.price(&mut completion);
                            Some((Ok(StreamEvent::Done(completion)), self))
                        }
                        Err(error) => self.fail(error),
                    };
                }
                Some(Err(_)) if self.cut.load(Ordering::Relaxed) > 0 => {
                    return self.fail(http.too_large());
                }
                Some(Err(eventsource_stream::EventStreamError::Transport(error))) => {
                    let error = http.map_reqwest(&error);
                    return self.fail(error);
                }
                Some(Err(error)) => {
                    let message = format!("the event stream is malformed: {error}");
                    return self.fail(LmError::InvalidResponse { message });
                }
                Some(Ok(event)) => match reader.read(&event.event, &event.data) {
                    Ok(mut events) => {
                        events.reverse();
                        self.pending = events;
                    }
                    Err(error) => {
                        let error = http.scrub_error(error);
                        return self.fail(error);
                    }
                },
            }
        }
    }

    /// Ends the stream with `error`.
    fn fail(
        mut self,
        error: LmError,
    ) -> Option<(Result<StreamEvent, LmError>, StreamState<'a, W>)> {
        self.reader = None;
        self.pending.clear();
        Some((Err(error), self))
    }
}

impl<W: WireFormat> Lm for ProviderEndpoint<W> {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        self.complete_once(request).boxed()
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

/// Where a provider's client finds its defaults: the environment variables of its base URL and
/// key, its own API's base URL and host, the path requests go to, and how the key is sent.
pub(crate) struct Defaults {
    pub(crate) base_url_env: &'static str,
    pub(crate) api_key_env: &'static str,
    pub(crate) base_url: &'static str,
    /// The host the environment's key may always go to.
    pub(crate) home: &'static str,
    /// Appended to the base URL (`{model}` is replaced by the model's name).
    pub(crate) path: &'static str,
    /// Appended to the base URL for a streamed request, when it is not `path`.
    pub(crate) stream_path: Option<&'static str>,
    /// The header that carries a key.
    pub(crate) key_header: fn(String) -> (String, ApiKey),
    /// Headers every request carries whose values are not secret (an API version).
    pub(crate) public_headers: &'static [(&'static str, &'static str)],
}

/// What every provider's builder sets the same way.
#[derive(Clone)]
pub(crate) struct ClientSettings {
    pub(crate) base_url: Option<String>,
    pub(crate) api_key: Option<ApiKey>,
    pub(crate) capabilities: Capabilities,
    pub(crate) retry: RetryPolicy,
    pub(crate) cache: Option<Arc<ResponseCache>>,
    pub(crate) disk_cache: Option<PathBuf>,
    pub(crate) history: Option<Arc<CallHistory>>,
    pub(crate) endpoint: EndpointSettings,
}

impl fmt::Debug for ClientSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientSettings")
            .field(
                "base_url",
                &self
                    .base_url
                    .as_deref()
                    .map(super::http_endpoint::without_credentials),
            )
            .field("api_key", &self.api_key)
            .field("capabilities", &self.capabilities)
            .field("retry", &self.retry)
            .field(
                "cache",
                &(self.cache.is_some() || self.disk_cache.is_some()),
            )
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl ClientSettings {
    /// The defaults for `model`: 600 s per attempt and per stream, 16 MiB per reply, the default
    /// retry policy, no cache, a new history.
    pub(crate) fn new(model: String, capabilities: Capabilities) -> ClientSettings {
        ClientSettings {
            base_url: None,
            api_key: None,
            capabilities,
            retry: RetryPolicy::default(),
            cache: None,
            disk_cache: None,
            history: None,
            endpoint: EndpointSettings {
                model,
                headers: Vec::new(),
                public_headers: Vec::new(),
                secrets: Vec::new(),
                timeout: Duration::from_secs(600),
                max_response_bytes: 16 << 20,
                stream_deadline: Duration::from_secs(600),
                pricing: None,
                max_concurrent_requests: None,
            },
        }
    }

    /// The client these settings describe, for the wire format `W` with `body`.
    pub(crate) fn build<W: WireFormat>(
        self,
        defaults: &Defaults,
        body: W::Body,
    ) -> Result<ProviderClient<W>, BuildError> {
        let base_url_given = self.base_url.is_some();
        let (base_url, parsed) =
            resolve_base_url_from(self.base_url, defaults.base_url_env, defaults.base_url)?;
        let api_key = resolve_api_key_from(
            self.api_key.map(|key| key.0),
            defaults.api_key_env,
            defaults.home,
            base_url_given,
            &parsed,
        );
        let mut settings = self.endpoint;
        if let Some(key) = api_key {
            settings.secrets.push(ApiKey(key.clone()));
            let (name, value) = (defaults.key_header)(key);
            reqwest::header::HeaderValue::from_str(&value.0)
                .map_err(|_| BuildError::InvalidApiKey)?;
            settings.headers.insert(0, (name, value));
        }
        settings
            .public_headers
            .extend_from_slice(defaults.public_headers);
        let url_of = |path: &str| {
            let path = path.replace("{model}", settings.model.trim_start_matches("models/"));
            reqwest::Url::parse(&format!("{base_url}{path}")).map_err(|e| {
                BuildError::InvalidBaseUrl {
                    url: base_url.clone(),
                    reason: e.to_string(),
                }
            })
        };
        let url = url_of(defaults.path)?;
        let stream_url = url_of(defaults.stream_path.unwrap_or(defaults.path))?;
        let headers = request_headers(&settings)?;
        let client = http_client(settings.timeout)?;
        let http = HttpEndpoint::new(W::PROVIDER.to_owned(), base_url, &parsed, settings);
        let cache = match (self.cache, self.disk_cache) {
            (Some(cache), _) => Some(cache),
            (None, Some(directory)) => Some(Arc::new(
                ResponseCache::on_disk(directory).map_err(BuildError::Cache)?,
            )),
            (None, None) => None,
        };
        let endpoint = Arc::new(ProviderEndpoint {
            http,
            client,
            headers,
            url,
            stream_url,
            body,
            capabilities: self.capabilities,
        });
        let history = self.history.unwrap_or_default();
        let layers = super::layers::layered(endpoint.clone(), self.retry, cache, history.clone());
        Ok(ProviderClient {
            endpoint,
            history,
            layers,
        })
    }
}

/// A provider's client: its endpoint behind retries, the cache and the history.
pub(crate) struct ProviderClient<W: WireFormat> {
    pub(crate) endpoint: Arc<ProviderEndpoint<W>>,
    pub(crate) history: Arc<CallHistory>,
    layers: Arc<dyn Lm>,
}

impl<W: WireFormat> fmt::Debug for ProviderClient<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderClient")
            .field("endpoint", &self.endpoint.http)
            .field("body", &self.endpoint.body)
            .field("capabilities", &self.endpoint.capabilities)
            .field("history_len", &self.history.len())
            .finish_non_exhaustive()
    }
}

impl<W: WireFormat> ProviderClient<W> {
    /// The JSON body sent for `request`.
    pub(crate) fn request_body(&self, request: &LmRequest, stream: bool) -> Result<Value, LmError> {
        let endpoint = &self.endpoint;
        W::body(&endpoint.http.model, &endpoint.body, request, stream)
    }
}

impl<W: WireFormat> Lm for ProviderClient<W> {
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

/// The builder methods every provider's builder has, over its `client: ClientSettings` field,
/// written (and documented) once.
macro_rules! client_setters {
    () => {
        crate::shared::setters! {
            /// The server's base URL (a trailing `/` is ignored).
            fn base_url(base_url: impl Into<String>) { client.base_url = Some(base_url.into()) }

            /// The API key (instead of the environment's).
            fn api_key(api_key: impl Into<String>) {
                client.api_key = Some(crate::lm::http_endpoint::ApiKey(api_key.into()))
            }

            /// What the endpoint supports (adapters choose formats from this).
            fn capabilities(capabilities: crate::lm::Capabilities) {
                client.capabilities = capabilities
            }

            /// The retry policy.
            fn retry(retry: crate::lm::RetryPolicy) { client.retry = retry }

            /// The time limit of one attempt (for a stream: until the response starts, then
            /// between two events).
            fn timeout(timeout: std::time::Duration) { client.endpoint.timeout = timeout }

            /// The longest a streamed reply may take from the request to its last event (default
            /// 10 minutes).
            fn stream_deadline(deadline: std::time::Duration) {
                client.endpoint.stream_deadline = deadline
            }

            /// The most bytes of one response body read (default 16 MiB); a longer one fails with
            /// [`LmError::ResponseTooLarge`](crate::lm::LmError::ResponseTooLarge), which is not
            /// retried.
            fn max_response_bytes(bytes: usize) { client.endpoint.max_response_bytes = bytes }

            /// The model's prices: every call's cost is set from its tokens, cache reads and
            /// writes included (see [`Pricing`](crate::lm::Pricing)).
            fn pricing(pricing: crate::lm::Pricing) { client.endpoint.pricing = Some(pricing) }

            /// At most `n` requests at once (0 counts as 1); further calls wait their turn before
            /// their request is written.
            fn max_concurrent_requests(n: usize) {
                client.endpoint.max_concurrent_requests = Some(n.max(1))
            }
        }

        /// Shortcut: the default retry policy with this many retries (0 turns retries off).
        pub fn max_retries(mut self, max_retries: u32) -> Self {
            self.client.retry = self.client.retry.with_max_retries(max_retries);
            self
        }

        /// Adds a header to every request (a beta flag, a gateway's key, ..). Its value is never
        /// shown by `Debug` or in errors.
        pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            let value = crate::lm::http_endpoint::ApiKey(value.into());
            self.client.endpoint.headers.push((name.into(), value));
            self
        }

        /// Answers repeated requests from `cache` (which may be shared with other LMs).
        pub fn cache(mut self, cache: std::sync::Arc<crate::lm::ResponseCache>) -> Self {
            self.client.cache = Some(cache);
            self.client.disk_cache = None;
            self
        }

        /// Answers repeated requests from a cache kept in `directory`, created by `build` if
        /// needed.
        pub fn disk_cache(mut self, directory: impl Into<std::path::PathBuf>) -> Self {
            self.client.cache = None;
            self.client.disk_cache = Some(directory.into());
            self
        }

        /// Records calls in `history` (which may be shared with other LMs) instead of a new one.
        pub fn history(mut self, history: std::sync::Arc<crate::lm::CallHistory>) -> Self {
            self.client.history = Some(history);
            self
        }
    };
}
pub(crate) use client_setters;

/// What every provider's public client (a newtype over its [`ProviderClient`]) has: `Debug`,
/// `Lm`, and its base URL and call history.
macro_rules! provider_client {
    ($client:ident) => {
        impl std::fmt::Debug for $client {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_tuple(stringify!($client)).field(&self.0).finish()
            }
        }

        impl $client {
            /// The base URL requests go to (without a trailing `/`).
            pub fn base_url(&self) -> &str {
                &self.0.endpoint.http.base_url
            }

            /// The calls made so far.
            pub fn history(&self) -> &std::sync::Arc<crate::lm::CallHistory> {
                &self.0.history
            }
        }

        impl crate::lm::Lm for $client {
            fn complete<'a>(
                &'a self,
                request: &'a crate::lm::LmRequest,
            ) -> futures::future::BoxFuture<'a, Result<crate::lm::Completion, crate::lm::LmError>>
            {
                crate::lm::Lm::complete(&self.0, request)
            }

            fn stream<'a>(
                &'a self,
                request: &'a crate::lm::LmRequest,
            ) -> futures::stream::BoxStream<'a, Result<crate::lm::StreamEvent, crate::lm::LmError>>
            {
                crate::lm::Lm::stream(&self.0, request)
            }

            fn capabilities(&self) -> crate::lm::Capabilities {
                crate::lm::Lm::capabilities(&self.0)
            }

            fn model(&self) -> &str {
                crate::lm::Lm::model(&self.0)
            }
        }
    };
}
pub(crate) use provider_client;
