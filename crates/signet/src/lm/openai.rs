//! [`OpenAiLm`]: an LM behind any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM,
//! llama.cpp, Ollama, ..), on async-openai's bring-your-own-types path so that every request field
//! is sent exactly as Signet builds it.

use std::collections::VecDeque;
use std::fmt;
use std::path::PathBuf;
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
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::cache::cached_stream;
use super::history::recorded_stream;
use super::retry::parse_retry_after;
use super::{
    Capabilities, Completion, FinishReason, History, Lm, LmError, LmRequest, Message,
    ResponseCache, ResponseFormat, RetryPolicy, Role, StreamAssembler, StreamEvent, ToolCall,
    ToolChoice, Usage,
};

/// OpenAI's API base, used when neither the builder nor `OPENAI_BASE_URL` names another.
pub const OPENAI_API_BASE: &str = "https://api.openai.com/v1";

/// The longest provider message kept in an error.
const MAX_ERROR_MESSAGE: usize = 2000;

/// A client for any OpenAI-compatible chat-completions endpoint.
///
/// Built with [`OpenAiLm::builder`]. Each call:
/// 1. is answered from the [`ResponseCache`] when one is configured and holds the request;
/// 2. otherwise is sent (`POST {base_url}/chat/completions`) with a per-attempt time limit and
///    retried on transient errors according to the [`RetryPolicy`] (three retries by default,
///    exponential backoff with jitter, `Retry-After` honoured);
/// 3. is recorded in the [`History`] when it succeeds ([`inspect_history`](OpenAiLm::inspect_history)
///    prints it like `dspy.inspect_history`).
///
/// Failures are typed [`LmError`]s: `RateLimited` (429, with `Retry-After`), `Server` (5xx),
/// `Rejected` (other 4xx), `ContextWindowExceeded` (recognised from the provider's message or
/// code whatever the status), `Timeout`, `Connect`, `InvalidResponse`.
///
/// The API key never appears in `Debug` output, logs or error messages.
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
    client: Client<OpenAIConfig>,
    model: String,
    base_url: String,
    api_key: Option<ApiKey>,
    capabilities: Capabilities,
    timeout: Duration,
    retry: RetryPolicy,
    cache: Option<Arc<ResponseCache>>,
    history: Arc<History>,
    stream_usage: bool,
    max_completion_tokens: bool,
}

impl fmt::Debug for OpenAiLm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiLm")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("capabilities", &self.capabilities)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("cache", &self.cache.is_some())
            .field("history_len", &self.history.len())
            .field("stream_usage", &self.stream_usage)
            .field("max_completion_tokens", &self.max_completion_tokens)
            .finish_non_exhaustive()
    }
}

/// An API key: shown as `[redacted]` by `Debug`.
#[derive(Clone)]
struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Why an [`OpenAiLmBuilder`] could not build its client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The API key contains characters that cannot be sent in an HTTP header.
    #[error("the API key contains characters that cannot be sent in an HTTP header")]
    InvalidApiKey,
    /// The base URL is not an absolute `http`/`https` URL.
    #[error("invalid base URL {url:?}: {reason}")]
    InvalidBaseUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A custom header has an invalid name or value.
    #[error("invalid header {name:?}: {reason}")]
    InvalidHeader {
        /// The header's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The disk cache's directory could not be created.
    #[error("could not open the disk cache: {0}")]
    Cache(#[source] std::io::Error),
    /// The HTTP client could not be built (TLS setup).
    #[error("could not build the HTTP client: {0}")]
    HttpClient(String),
}

/// Configures an [`OpenAiLm`]. Created by [`OpenAiLm::builder`].
///
/// Defaults: base URL from `OPENAI_BASE_URL`, else `https://api.openai.com/v1`; API key from
/// `OPENAI_API_KEY`, else none (local servers need none); capabilities
/// [`Capabilities::openai`] for OpenAI's own API and [`Capabilities::default`] (text and JSON
/// mode) elsewhere; 600 s per attempt; [`RetryPolicy::default`]; no cache; a
/// [`History`] of the last 1000 calls; usage requested in streams; the length limit sent as
/// `max_tokens`.
///
/// ```
/// use std::time::Duration;
/// use signet::lm::{Capabilities, Lm, OpenAiLm};
///
/// let lm = OpenAiLm::builder("smollm2")
///     .base_url("http://127.0.0.1:8080/v1/")
///     .api_key("not-needed")
///     .capabilities(Capabilities::llama_cpp())
///     .timeout(Duration::from_secs(30))
///     .max_retries(1)
///     .build()
///     .unwrap();
/// assert_eq!(lm.base_url(), "http://127.0.0.1:8080/v1");
/// assert!(lm.capabilities().json_object_schema);
/// assert!(!format!("{lm:?}").contains("not-needed"));
/// ```
#[derive(Clone)]
pub struct OpenAiLmBuilder {
    model: String,
    base_url: Option<String>,
    api_key: Option<ApiKey>,
    capabilities: Option<Capabilities>,
    timeout: Duration,
    retry: RetryPolicy,
    cache: Option<Arc<ResponseCache>>,
    disk_cache: Option<PathBuf>,
    history: Option<Arc<History>>,
    headers: Vec<(String, ApiKey)>,
    stream_usage: bool,
    max_completion_tokens: bool,
}

impl fmt::Debug for OpenAiLmBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("OpenAiLmBuilder")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("capabilities", &self.capabilities)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("cache", &self.cache.is_some())
            .field("disk_cache", &self.disk_cache)
            .field("headers", &header_names)
            .field("stream_usage", &self.stream_usage)
            .field("max_completion_tokens", &self.max_completion_tokens)
            .finish_non_exhaustive()
    }
}

impl OpenAiLmBuilder {
    /// The endpoint's base URL, up to and including the version (`.../v1`); a trailing `/` is
    /// ignored. OpenAI: `https://api.openai.com/v1`; llama.cpp and vLLM:
    /// `http://HOST:PORT/v1`; Ollama: `http://localhost:11434/v1`.
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = Some(base_url.into());
        self
    }

    /// The API key, sent as `Authorization: Bearer <key>` (instead of `OPENAI_API_KEY`).
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey(api_key.into()));
        self
    }

    /// What the endpoint supports (adapters choose formats from this).
    pub fn capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// The time limit of one attempt (connecting, sending and receiving the whole reply; for a
    /// stream: until the response starts, then between two chunks).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Shortcut: the default retry policy with this many retries (0 turns retries off).
    pub fn max_retries(mut self, max_retries: u32) -> Self {
        self.retry = self.retry.with_max_retries(max_retries);
        self
    }

    /// Answers repeated requests from `cache` (which may be shared with other LMs).
    pub fn cache(mut self, cache: Arc<ResponseCache>) -> Self {
        self.cache = Some(cache);
        self.disk_cache = None;
        self
    }

    /// Answers repeated requests from a new in-memory cache.
    pub fn memory_cache(self) -> Self {
        self.cache(Arc::new(ResponseCache::in_memory()))
    }

    /// Answers repeated requests from a cache kept in `directory` (one JSON file per request),
    /// created by [`build`](OpenAiLmBuilder::build) if needed.
    pub fn disk_cache(mut self, directory: impl Into<PathBuf>) -> Self {
        self.cache = None;
        self.disk_cache = Some(directory.into());
        self
    }

    /// Records calls in `history` (which may be shared with other LMs) instead of a new one.
    pub fn history(mut self, history: Arc<History>) -> Self {
        self.history = Some(history);
        self
    }

    /// Adds a header to every request (for gateways: `OpenAI-Organization`, `api-key`, ..). Its
    /// value is never shown by `Debug`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), ApiKey(value.into())));
        self
    }

    /// Whether streams ask for usage (`stream_options: {"include_usage": true}`); on by default.
    /// Turn it off for a server that rejects `stream_options`.
    pub fn stream_usage(mut self, stream_usage: bool) -> Self {
        self.stream_usage = stream_usage;
        self
    }

    /// Sends the length limit as `max_completion_tokens` (OpenAI's reasoning models require it)
    /// instead of `max_tokens` (which every compatible server understands).
    pub fn max_completion_tokens(mut self, max_completion_tokens: bool) -> Self {
        self.max_completion_tokens = max_completion_tokens;
        self
    }

    /// Builds the client, reading `OPENAI_BASE_URL` and `OPENAI_API_KEY` for what was not set.
    pub fn build(self) -> Result<OpenAiLm, BuildError> {
        let base_url = self
            .base_url
            .or_else(|| env_var("OPENAI_BASE_URL"))
            .unwrap_or_else(|| OPENAI_API_BASE.to_owned());
        let base_url = base_url.trim().trim_end_matches('/').to_owned();
        let parsed = reqwest::Url::parse(&base_url).map_err(|e| BuildError::InvalidBaseUrl {
            url: base_url.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(BuildError::InvalidBaseUrl {
                url: base_url,
                reason: "the scheme must be http or https".into(),
            });
        }
        let api_key = self
            .api_key
            .or_else(|| env_var("OPENAI_API_KEY").map(ApiKey))
            .filter(|key| !key.0.is_empty());
        let capabilities = self.capabilities.unwrap_or_else(|| {
            if parsed.host_str() == Some("api.openai.com") {
                Capabilities::openai()
            } else {
                Capabilities::default()
            }
        });

        // Everything async-openai would otherwise read from the environment is set explicitly;
        // header values are checked first because async-openai turns them into headers with
        // `unwrap`.
        let key = api_key.as_ref().map_or("", |k| k.0.as_str());
        HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| BuildError::InvalidApiKey)?;
        let mut config = OpenAIConfig::new()
            .with_api_base(&base_url)
            .with_api_key(key)
            .with_org_id("")
            .with_project_id("");
        for (name, value) in &self.headers {
            let header =
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| BuildError::InvalidHeader {
                    name: name.clone(),
                    reason: e.to_string(),
                })?;
            config = config.with_header(header, value.0.as_str()).map_err(|e| {
                BuildError::InvalidHeader {
                    name: name.clone(),
                    reason: e.to_string(),
                }
            })?;
        }
        let http = reqwest::Client::builder()
            .connect_timeout(self.timeout)
            .build()
            .map_err(|e| BuildError::HttpClient(error_chain(&e)))?;
        // Our own transport replaces async-openai's, whose built-in retries would hide attempts
        // from the retry policy and whose error path drops `Retry-After`.
        let client = Client::with_config(config).with_http_service(Transport { http });

        let cache = match (self.cache, self.disk_cache) {
            (Some(cache), _) => Some(cache),
            (None, Some(directory)) => Some(Arc::new(
                ResponseCache::on_disk(directory).map_err(BuildError::Cache)?,
            )),
            (None, None) => None,
        };
        Ok(OpenAiLm {
            client,
            model: self.model,
            base_url,
            api_key,
            capabilities,
            timeout: self.timeout,
            retry: self.retry,
            cache,
            history: self.history.unwrap_or_default(),
            stream_usage: self.stream_usage,
            max_completion_tokens: self.max_completion_tokens,
        })
    }
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

impl OpenAiLm {
    /// A builder for a client of `model` (see [`OpenAiLmBuilder`] for the defaults).
    pub fn builder(model: impl Into<String>) -> OpenAiLmBuilder {
        OpenAiLmBuilder {
            model: model.into(),
            base_url: None,
            api_key: None,
            capabilities: None,
            timeout: Duration::from_secs(600),
            retry: RetryPolicy::default(),
            cache: None,
            disk_cache: None,
            history: None,
            headers: Vec::new(),
            stream_usage: true,
            max_completion_tokens: false,
        }
    }

    /// The base URL requests go to (without a trailing `/`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The time limit of one attempt.
    pub fn timeout(&self) -> Duration {
        self.timeout
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
    pub fn history(&self) -> &Arc<History> {
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
    /// request.response_format = Some(ResponseFormat::JsonObject);
    /// request.tool_choice = Some(ToolChoice::Function("add".into()));
    /// request.extra.insert("top_k".into(), json!(40));
    /// assert_eq!(lm.request_body(&request, false), json!({
    ///     "model": "m",
    ///     "messages": [{"role": "user", "content": "hi"}],
    ///     "temperature": 0.7,
    ///     "response_format": {"type": "json_object"},
    ///     "tool_choice": {"type": "function", "function": {"name": "add"}},
    ///     "top_k": 40,
    /// }));
    /// ```
    pub fn request_body(&self, request: &LmRequest, stream: bool) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), Value::String(self.model.clone()));
        body.insert(
            "messages".into(),
            Value::Array(request.messages.iter().map(message_json).collect()),
        );
        let options = &request.options;
        if let Some(temperature) = options.temperature {
            body.insert("temperature".into(), f32_json(temperature));
        }
        if let Some(top_p) = options.top_p {
            body.insert("top_p".into(), f32_json(top_p));
        }
        if let Some(max_tokens) = options.max_tokens {
            let field = if self.max_completion_tokens {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body.insert(field.into(), json!(max_tokens));
        }
        if !options.stop.is_empty() {
            body.insert("stop".into(), json!(options.stop));
        }
        if let Some(seed) = options.seed {
            body.insert("seed".into(), json!(seed));
        }
        if let Some(format) = &request.response_format {
            body.insert("response_format".into(), response_format_json(format));
        }
        if !request.tools.is_empty() {
            body.insert(
                "tools".into(),
                Value::Array(request.tools.iter().map(tool_json).collect()),
            );
        }
        if let Some(choice) = &request.tool_choice {
            body.insert("tool_choice".into(), tool_choice_json(choice));
        }
        if let Some(parallel) = request.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), Value::Bool(parallel));
        }
        if stream {
            body.insert("stream".into(), Value::Bool(true));
            if self.stream_usage {
                body.insert("stream_options".into(), json!({"include_usage": true}));
            }
        }
        // Extra fields go last and win: they are the escape hatch for server extensions.
        for (key, value) in &request.extra {
            body.insert(key.clone(), value.clone());
        }
        Value::Object(body)
    }

    /// One attempt, without cache, retries or history.
    async fn complete_once(&self, request: &LmRequest) -> Result<Completion, LmError> {
        let body = self.request_body(request, false);
        let chat = self.client.chat();
        let reply = match tokio::time::timeout(self.timeout, chat.create_byot::<Value, Value>(body))
            .await
        {
            Err(_) => return Err(self.timed_out()),
            Ok(reply) => reply.map_err(|e| self.map_error(e))?,
        };
        parse_completion(&reply).map_err(|e| self.scrub_error(e))
    }

    /// One streamed attempt, without cache, retries or history.
    fn stream_once<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        let open = async move {
            let body = self.request_body(request, true);
            let chat = self.client.chat();
            match tokio::time::timeout(self.timeout, chat.create_stream_byot::<Value, Value>(body))
                .await
            {
                Err(_) => Err(self.timed_out()),
                Ok(opened) => opened.map_err(|e| self.map_error(e)),
            }
        };
        stream::once(open)
            .flat_map(move |opened| match opened {
                Err(error) => stream::iter([Err(error)]).boxed(),
                Ok(chunks) => {
                    let state = StreamState {
                        lm: self,
                        chunks,
                        assembler: StreamAssembler::default(),
                        pending: VecDeque::new(),
                        finished: false,
                        saw_choice: false,
                    };
                    stream::unfold(state, StreamState::next_event).boxed()
                }
            })
            .boxed()
    }

    fn timed_out(&self) -> LmError {
        LmError::Timeout {
            after: self.timeout,
        }
    }

    /// Turns a client error into an [`LmError`], with the API key scrubbed from its message.
    fn map_error(&self, error: OpenAIError) -> LmError {
        let mapped = match error {
            OpenAIError::Boxed(boxed) => match boxed.downcast::<HttpFailure>() {
                Ok(failure) => classify_http(failure.status, failure.retry_after, &failure.body),
                Err(other) => LmError::Connect {
                    message: error_chain(other.as_ref()),
                },
            },
            OpenAIError::Reqwest(error) => self.map_reqwest(&error),
            OpenAIError::JSONDeserialize(error, body) => LmError::InvalidResponse {
                message: format!(
                    "the body is not valid JSON ({error}): {}",
                    truncate(&body, MAX_ERROR_MESSAGE)
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
                classify_http(response.status_code.as_u16(), None, &body.to_string())
            }
            OpenAIError::InvalidArgument(message) => LmError::Rejected { status: 0, message },
            other => LmError::InvalidResponse {
                message: other.to_string(),
            },
        };
        self.scrub_error(mapped)
    }

    fn map_reqwest(&self, error: &reqwest::Error) -> LmError {
        if error.is_timeout() {
            return self.timed_out();
        }
        LmError::Connect {
            message: error_chain(error),
        }
    }

    /// Removes the API key from an error's message, should a server have echoed it.
    fn scrub_error(&self, error: LmError) -> LmError {
        let Some(ApiKey(key)) = &self.api_key else {
            return error;
        };
        let scrub = |message: String| message.replace(key.as_str(), "[redacted]");
        match error {
            LmError::RateLimited {
                retry_after,
                message,
            } => LmError::RateLimited {
                retry_after,
                message: scrub(message),
            },
            LmError::ContextWindowExceeded { message } => LmError::ContextWindowExceeded {
                message: scrub(message),
            },
            LmError::Server { status, message } => LmError::Server {
                status,
                message: scrub(message),
            },
            LmError::Rejected { status, message } => LmError::Rejected {
                status,
                message: scrub(message),
            },
            LmError::Connect { message } => LmError::Connect {
                message: scrub(message),
            },
            LmError::InvalidResponse { message } => LmError::InvalidResponse {
                message: scrub(message),
            },
            other => other,
        }
    }
}

impl Lm for OpenAiLm {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        async move {
            if let Some(hit) = self
                .cache
                .as_ref()
                .and_then(|c| c.get(&self.model, request))
            {
                self.history.record(&self.model, request, &hit);
                return Ok(hit);
            }
            let completion = self
                .retry
                .run(&self.model, || self.complete_once(request))
                .await?;
            if let Some(cache) = &self.cache {
                cache.put(&self.model, request, &completion);
            }
            self.history.record(&self.model, request, &completion);
            Ok(completion)
        }
        .boxed()
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        let open = move || {
            self.retry
                .run_stream(&self.model, move || self.stream_once(request))
        };
        let events = match &self.cache {
            Some(cache) => cached_stream(cache, &self.model, request, open),
            None => open(),
        };
        recorded_stream(&self.history, &self.model, request, events)
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn model(&self) -> &str {
        &self.model
    }
}

/// The state of one SSE stream being turned into [`StreamEvent`]s.
struct StreamState<'a> {
    lm: &'a OpenAiLm,
    chunks: async_openai::types::stream::StreamResponse<Value>,
    assembler: StreamAssembler,
    pending: VecDeque<Result<StreamEvent, LmError>>,
    finished: bool,
    saw_choice: bool,
}

impl<'a> StreamState<'a> {
    async fn next_event(mut self) -> Option<(Result<StreamEvent, LmError>, StreamState<'a>)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((event, self));
            }
            if self.finished {
                return None;
            }
            let next = tokio::time::timeout(self.lm.timeout, self.chunks.next()).await;
            match next {
                Err(_) => self.fail(self.lm.timed_out()),
                Ok(Some(Err(error))) => {
                    let error = self.lm.map_error(error);
                    self.fail(error);
                }
                Ok(Some(Ok(chunk))) => match self.apply_chunk(&chunk) {
                    Ok(()) => {}
                    Err(error) => {
                        let error = self.lm.scrub_error(error);
                        self.fail(error);
                    }
                },
                Ok(None) => {
                    self.finished = true;
                    if self.saw_choice && self.assembler.finish_reason.is_none() {
                        // Every complete reply ends with a `finish_reason`; a stream that ends
                        // without one was cut off (a dropped connection, a crashed server), and
                        // what arrived must not pass for the whole reply.
                        self.pending.push_back(Err(LmError::InvalidResponse {
                            message: "the stream was cut off: it ended before the reply's \
                                      finish_reason"
                                .into(),
                        }));
                    } else if self.saw_choice {
                        let mut completion = std::mem::take(&mut self.assembler).finish();
                        completion.usage.lm_calls = 1;
                        self.pending.push_back(Ok(StreamEvent::Done(completion)));
                    } else {
                        self.pending.push_back(Err(LmError::InvalidResponse {
                            message: "the stream ended without a completion".into(),
                        }));
                    }
                }
            }
        }
    }

    fn fail(&mut self, error: LmError) {
        self.finished = true;
        self.pending.push_back(Err(error));
    }

    /// Turns one chunk into events (queued in `pending`) and folds them into the assembler.
    fn apply_chunk(&mut self, chunk: &Value) -> Result<(), LmError> {
        let Some(chunk) = chunk.as_object() else {
            return Err(LmError::InvalidResponse {
                message: format!(
                    "a stream chunk is not a JSON object: {}",
                    truncate(&chunk.to_string(), MAX_ERROR_MESSAGE)
                ),
            });
        };
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(error_in_body(error));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.assembler.usage = parse_usage(usage);
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first());
        let Some(choice) = choice else {
            return Ok(());
        };
        self.saw_choice = true;
        let mut events = Vec::new();
        if let Some(delta) = choice.get("delta").and_then(Value::as_object) {
            if let Some(reasoning) = reasoning_of(delta) {
                events.push(StreamEvent::ReasoningDelta(reasoning));
            }
            if let Some(text) = content_text(delta.get("content")).filter(|t| !t.is_empty()) {
                events.push(StreamEvent::TextDelta(text));
            }
            let calls = delta.get("tool_calls").and_then(Value::as_array);
            for (position, call) in calls.into_iter().flatten().enumerate() {
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .and_then(|i| usize::try_from(i).ok())
                    .unwrap_or(position);
                let function = call.get("function");
                let field = |v: Option<&Value>, name: &str| {
                    v.and_then(|v| v.get(name))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                events.push(StreamEvent::ToolCallDelta {
                    index,
                    id: field(Some(call), "id"),
                    name: field(function, "name"),
                    arguments: function
                        .and_then(|f| f.get("arguments"))
                        .map(arguments_text)
                        .unwrap_or_default(),
                });
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.assembler.finish_reason = Some(finish_reason(reason));
        }
        for event in events {
            self.assembler.push(&event);
            self.pending.push_back(Ok(event));
        }
        Ok(())
    }
}

/// The HTTP layer under async-openai: sends the request, and turns every non-2xx response into an
/// [`HttpFailure`] that keeps the status, `Retry-After` and the raw body.
#[derive(Clone)]
struct Transport {
    http: reqwest::Client,
}

impl tower::Service<HttpRequestFactory> for Transport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = BoxFuture<'static, Result<reqwest::Response, OpenAIError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let http = self.http.clone();
        async move {
            let request = factory.build().await?;
            let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
            let status = response.status();
            if status.is_success() {
                return Ok(response);
            }
            let headers = response.headers();
            let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
            let retry_after = header("retry-after-ms")
                .and_then(|ms| ms.trim().parse::<f64>().ok())
                .filter(|ms| ms.is_finite() && *ms >= 0.0)
                .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
                .or_else(|| header("retry-after").and_then(parse_retry_after));
            let body = match response.text().await {
                Ok(body) => body,
                Err(error) => format!("(the error body could not be read: {error})"),
            };
            Err(OpenAIError::Boxed(Box::new(HttpFailure {
                status: status.as_u16(),
                retry_after,
                body,
            })))
        }
        .boxed()
    }
}

/// A non-2xx HTTP response.
#[derive(Debug)]
struct HttpFailure {
    status: u16,
    retry_after: Option<Duration>,
    body: String,
}

impl fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}: {}", self.status, truncate(&self.body, 200))
    }
}

impl std::error::Error for HttpFailure {}

/// The typed error for an HTTP failure.
fn classify_http(status: u16, retry_after: Option<Duration>, body: &str) -> LmError {
    let (message, code) = provider_message(body);
    let message = if message.is_empty() {
        format!("HTTP {status} with an empty body")
    } else {
        message
    };
    if is_context_error(code.as_deref(), &message) {
        return LmError::ContextWindowExceeded { message };
    }
    match status {
        429 if code.as_deref() == Some("insufficient_quota") => {
            LmError::Rejected { status, message }
        }
        429 => LmError::RateLimited {
            retry_after,
            message,
        },
        400..=499 => LmError::Rejected { status, message },
        500..=599 => LmError::Server { status, message },
        _ => LmError::InvalidResponse {
            message: format!("unexpected HTTP status {status}: {message}"),
        },
    }
}

/// The error for an `error` object inside a 200 response or a stream.
fn error_in_body(error: &Value) -> LmError {
    let (message, code) = provider_message(&json!({ "error": error }).to_string());
    if is_context_error(code.as_deref(), &message) {
        LmError::ContextWindowExceeded { message }
    } else {
        LmError::InvalidResponse {
            message: format!("the server reported an error: {message}"),
        }
    }
}

/// The provider's message and code from an error body: OpenAI's `{"error": {"message", "code",
/// "type"}}`, `{"error": "..."}`, `{"message": ..}`, `{"detail": ..}`, or the raw text.
fn provider_message(body: &str) -> (String, Option<String>) {
    let text = |v: Option<&Value>| -> Option<String> {
        match v? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    };
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let error = value.get("error").filter(|e| !e.is_null());
        let (message, code) = match error {
            Some(Value::Object(error)) => (
                text(error.get("message")),
                text(error.get("code")).or_else(|| text(error.get("type"))),
            ),
            Some(other) => (text(Some(other)), None),
            None => (
                text(value.get("message")).or_else(|| text(value.get("detail"))),
                text(value.get("code")),
            ),
        };
        if let Some(message) = message {
            return (truncate(message.trim(), MAX_ERROR_MESSAGE), code);
        }
    }
    (truncate(body.trim(), MAX_ERROR_MESSAGE), None)
}

/// Whether a provider error says the prompt does not fit the context window (OpenAI, vLLM,
/// llama.cpp's two servers, and Anthropic-style gateways word it differently).
fn is_context_error(code: Option<&str>, message: &str) -> bool {
    if code == Some("context_length_exceeded") {
        return true;
    }
    let message = message.to_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "context window",
        "context length",
        "context size",
        "exceeds the context",
        "exceed context",
        "n_ctx",
        "prompt is too long",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// A completion from a chat-completions response body.
fn parse_completion(body: &Value) -> Result<Completion, LmError> {
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
fn content_text(content: Option<&Value>) -> Option<String> {
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
fn reasoning_of(message: &Map<String, Value>) -> Option<String> {
    ["reasoning_content", "reasoning"]
        .iter()
        .find_map(|key| message.get(*key).and_then(Value::as_str))
        .filter(|r| !r.is_empty())
        .map(str::to_owned)
}

/// Tool-call arguments as text: a string as is, anything else (some servers send an object) as
/// JSON.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn parse_usage(usage: &Value) -> Usage {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        prompt_tokens: count("prompt_tokens"),
        completion_tokens: count("completion_tokens"),
        ..Usage::default()
    }
}

fn finish_reason(reason: &str) -> FinishReason {
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
fn message_json(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut object = Map::new();
    object.insert("role".into(), Value::String(role.into()));
    object.insert("content".into(), Value::String(message.content.clone()));
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

fn response_format_json(format: &ResponseFormat) -> Value {
    match format {
        ResponseFormat::Text => json!({"type": "text"}),
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
        } => json!({
            "type": "json_schema",
            "json_schema": {"name": name, "strict": strict, "schema": schema},
        }),
        ResponseFormat::Raw(value) => value.clone(),
    }
}

/// A tool descriptor: sent as given when it already has the OpenAI shape
/// (`{"type": "function", "function": {..}}`); a bare function object is wrapped.
fn tool_json(tool: &Value) -> Value {
    if tool.get("function").is_some() || tool.get("name").is_none() {
        tool.clone()
    } else {
        json!({"type": "function", "function": tool})
    }
}

fn tool_choice_json(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Function(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// An `f32` as the JSON number it reads as (`0.7`, not `0.699999988079071`).
fn f32_json(value: f32) -> Value {
    value
        .to_string()
        .parse::<f64>()
        .ok()
        .and_then(serde_json::Number::from_f64)
        .map_or(Value::Null, Value::Number)
}

/// An error and its sources, joined by `: `.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
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
    fn helpers() {
        assert_eq!(f32_json(0.7), json!(0.7));
        assert_eq!(f32_json(f32::NAN), Value::Null);
        assert_eq!(truncate("héllo", 2), "h…");
        assert_eq!(
            tool_json(&json!({"name": "f", "parameters": {}})),
            json!({"type": "function", "function": {"name": "f", "parameters": {}}})
        );
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
        let echoed = lm.scrub_error(LmError::Rejected {
            status: 401,
            message: "Incorrect API key provided: sk-very-secret-123".into(),
        });
        assert!(!echoed.to_string().contains("sk-very-secret-123"));
    }
}
