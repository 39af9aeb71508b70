//! Building an [`OpenAiLm`]: the builder's settings, what it reads from the environment, and
//! why a build fails ([`BuildError`]).

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_openai::Client;
use async_openai::config::OpenAIConfig;
use reqwest::header::{HeaderName, HeaderValue};

use super::transport::{Transport, same_origin_redirects};
use super::{
    DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_STREAM_DEADLINE, Endpoint, OPENAI_API_BASE, OpenAiLm,
};
use crate::lm::http_endpoint::*;
use crate::lm::{CallHistory, Capabilities, Pricing, ResponseCache, RetryPolicy};

/// Configures an [`OpenAiLm`]. Created by [`OpenAiLm::builder`].
///
/// Defaults: base URL from `OPENAI_BASE_URL`, else `https://api.openai.com/v1`; API key from
/// `OPENAI_API_KEY`, else none (local servers need none) — but the environment's key goes only
/// to OpenAI's API or to the `OPENAI_BASE_URL` it came with, never to a base URL set in code for
/// another host (give that one its key with [`api_key`](Self::api_key)); capabilities
/// [`Capabilities::openai`] for OpenAI's own API and [`Capabilities::default`] (text and JSON
/// mode) elsewhere; 600 s per attempt; [`RetryPolicy::default`]; no cache; a
/// [`CallHistory`] of the last 1000 calls; usage requested in streams; the length limit sent as
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
    history: Option<Arc<CallHistory>>,
    headers: Vec<(String, ApiKey)>,
    stream_usage: bool,
    max_completion_tokens: bool,
    max_response_bytes: usize,
    stream_deadline: Duration,
    provider: Option<String>,
    pricing: Option<Pricing>,
    http2: bool,
    http2_connections: usize,
    max_concurrent_requests: Option<usize>,
}

impl fmt::Debug for OpenAiLmBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("OpenAiLmBuilder")
            .field("model", &self.model)
            .field(
                "base_url",
                &self.base_url.as_deref().map(without_credentials),
            )
            .field("api_key", &self.api_key)
            .field("capabilities", &self.capabilities)
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("cache", &self.cache.is_some())
            .field("disk_cache", &self.disk_cache)
            .field("headers", &header_names)
            .field("stream_usage", &self.stream_usage)
            .field("max_completion_tokens", &self.max_completion_tokens)
            .field("http2", &self.http2)
            .field("http2_connections", &self.http2_connections)
            .field("max_concurrent_requests", &self.max_concurrent_requests)
            .finish_non_exhaustive()
    }
}

impl OpenAiLmBuilder {
    /// The builder [`OpenAiLm::builder`] returns: every setting at its default.
    pub(super) fn new(model: String) -> OpenAiLmBuilder {
        OpenAiLmBuilder {
            model,
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
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            stream_deadline: DEFAULT_STREAM_DEADLINE,
            provider: None,
            pricing: None,
            http2: false,
            http2_connections: 1,
            max_concurrent_requests: None,
        }
    }

    crate::shared::setters! {
        /// The endpoint's base URL, up to and including the version (`.../v1`); a trailing `/` is
        /// ignored. OpenAI: `https://api.openai.com/v1`; llama.cpp and vLLM:
        /// `http://HOST:PORT/v1`; Ollama: `http://localhost:11434/v1`.
        fn base_url(base_url: impl Into<String>) { base_url = Some(base_url.into()) }

        /// The API key, sent as `Authorization: Bearer <key>` (instead of `OPENAI_API_KEY`).
        fn api_key(api_key: impl Into<String>) { api_key = Some(ApiKey(api_key.into())) }

        /// What the endpoint supports (adapters choose formats from this).
        fn capabilities(capabilities: Capabilities) { capabilities = Some(capabilities) }

        /// The time limit of one attempt (connecting, sending and receiving the whole reply; for a
        /// stream: until the response starts, then between two chunks).
        fn timeout(timeout: Duration) { timeout = timeout }

        /// The retry policy.
        fn retry(retry: RetryPolicy) { retry = retry }
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
    pub fn history(mut self, history: Arc<CallHistory>) -> Self {
        self.history = Some(history);
        self
    }

    /// Adds a header to every request (for gateways: `OpenAI-Organization`, `api-key`, ..). Its
    /// value is never shown by `Debug`.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), ApiKey(value.into())));
        self
    }

    crate::shared::setters! {
        /// Whether streams ask for usage (`stream_options: {"include_usage": true}`); on by default.
        /// Turn it off for a server that rejects `stream_options`.
        fn stream_usage(stream_usage: bool) { stream_usage = stream_usage }

        /// Sends the length limit as `max_completion_tokens` (OpenAI's reasoning models require it)
        /// instead of `max_tokens` (which every compatible server understands).
        fn max_completion_tokens(max_completion_tokens: bool) {
            max_completion_tokens = max_completion_tokens
        }

        /// The most bytes of one response body the client reads (default 16 MiB): a reply body, a
        /// whole event stream, an error body (cut there). A longer reply or stream fails with
        /// [`LmError::ResponseTooLarge`](crate::lm::LmError::ResponseTooLarge), which is not retried.
        fn max_response_bytes(bytes: usize) { max_response_bytes = bytes }

        /// The longest a streamed reply may take from the request to its last event (default 10
        /// minutes), however regularly its chunks arrive ([`timeout`](Self::timeout) bounds each
        /// wait): a stream still going past it fails with [`LmError::Timeout`](crate::lm::LmError::Timeout).
        fn stream_deadline(deadline: Duration) { stream_deadline = deadline }

        /// The provider traces name (`gen_ai.provider.name` of every `chat` span: `vllm`,
        /// `llama.cpp`, ..). By default it follows the host: `openai` for api.openai.com,
        /// `groq`, `deepseek`, `mistral_ai`, `x_ai`, `azure.ai.openai`, `gcp.gemini` for theirs,
        /// and `openai` (the API spoken) for any other.
        fn provider_name(name: impl Into<String>) { provider = Some(name.into()) }

        /// The model's prices: every call's [`Usage::cost_nanousd`](crate::lm::Usage::cost_nanousd)
        /// is set from its tokens (see [`Pricing`]). Cache hits cost nothing.
        fn pricing(pricing: Pricing) { pricing = Some(pricing) }

        /// Sends requests over HTTP/2 (off by default: HTTP/1.1, one connection per call in
        /// flight). On `https` the client offers HTTP/2 and HTTP/1.1 and the server picks (ALPN);
        /// on `http` it speaks HTTP/2 from the first byte (h2c with prior knowledge), so the
        /// server must accept that: an HTTP/1.1-only server closes the connection, which is an
        /// [`LmError::Connect`](crate::lm::LmError::Connect).
        ///
        /// One HTTP/2 connection carries every call in flight, which saves a connection (its
        /// socket, buffers and handshake) per concurrent call: with 10,000 ReAct runs at once
        /// the client took 40% of the CPU and 60% of the memory per run of HTTP/1.1 (see
        /// `docs/performance.md`). The server caps the calls one connection carries at once
        /// (its `SETTINGS_MAX_CONCURRENT_STREAMS`, often 100 to 256); further calls wait for a
        /// stream, within their [`timeout`](Self::timeout), unless
        /// [`http2_connections`](Self::http2_connections) opens more connections.
        fn http2(http2: bool) { http2 = http2 }

        /// With [`http2`](Self::http2), the number of HTTP/2 connections calls are spread over, in
        /// turn (default 1; 0 counts as 1). One connection carries at most the server's limit of
        /// concurrent streams: for more calls in flight than that, open more connections.
        fn http2_connections(connections: usize) { http2_connections = connections }

        /// At most `n` requests to the endpoint at once (0 counts as 1; streams count for as
        /// long as they are open); further calls wait their turn, first come first served,
        /// *before* their request is written. By default every call is sent at once.
        ///
        /// A call that waits holds no request body, stream or connection, and the time it waits
        /// counts toward neither its [`timeout`](Self::timeout) nor its
        /// [`stream_deadline`](Self::stream_deadline). Without a limit, calls past what the
        /// server serves at once wait inside the HTTP client with their request written: at
        /// 10,000 concurrent ReAct runs over HTTP/2, a limit of 2,048 took the client's memory
        /// from 30.4 to 19.3 KiB a run, in about the same wall time (see `docs/performance.md`).
        /// Over HTTP/1.1 it also caps the connections opened (there it halved the wall time).
        /// Each retry waits its turn again (no turn is held while backing off); cache hits take
        /// none.
        fn max_concurrent_requests(n: usize) { max_concurrent_requests = Some(n.max(1)) }
    }

    /// Builds the client, reading `OPENAI_BASE_URL` and `OPENAI_API_KEY` for what was not set.
    pub fn build(self) -> Result<OpenAiLm, BuildError> {
        let base_url_given = self.base_url.is_some();
        let (base_url, parsed) = resolve_base_url(self.base_url)?;
        let api_key =
            resolve_api_key(self.api_key.map(|key| key.0), base_url_given, &parsed).map(ApiKey);
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
        // HTTP/2 without negotiation: TLS's ALPN is not there to agree on it.
        let h2c = self.http2 && parsed.scheme() == "http";
        let http = || {
            let http = reqwest::Client::builder()
                .connect_timeout(self.timeout)
                .redirect(same_origin_redirects());
            let http = match (self.http2, h2c) {
                (false, _) => http.http1_only(),
                (true, true) => http.http2_prior_knowledge(),
                (true, false) => http,
            };
            http.build()
                .map_err(|e| BuildError::HttpClient(error_chain(&e)))
        };
        let pools = if self.http2 {
            self.http2_connections
        } else {
            1
        };
        let clients = (0..pools.max(1))
            .map(|_| http())
            .collect::<Result<_, _>>()?;
        // Our own transport replaces async-openai's, whose built-in retries would hide attempts
        // from the retry policy and whose error path drops `Retry-After`.
        let transport = Transport {
            clients,
            sent: Arc::default(),
            max_body_bytes: self.max_response_bytes,
        };
        // What async-openai sends with a streamed request, made once for the others.
        let mut headers = async_openai::config::Config::headers(&config);
        if let Some(authorization) = headers.get_mut(reqwest::header::AUTHORIZATION) {
            authorization.set_sensitive(true);
        }
        headers.insert(
            reqwest::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let completions = format!("{base_url}/chat/completions");
        let completions_url =
            reqwest::Url::parse(&completions).map_err(|e| BuildError::InvalidBaseUrl {
                url: base_url.clone(),
                reason: e.to_string(),
            })?;
        let client = Client::with_config(config).with_http_service(transport.clone());

        let cache = match (self.cache, self.disk_cache) {
            (Some(cache), _) => Some(cache),
            (None, Some(directory)) => Some(Arc::new(
                ResponseCache::on_disk(directory).map_err(BuildError::Cache)?,
            )),
            (None, None) => None,
        };
        let provider = self
            .provider
            .unwrap_or_else(|| provider_of(parsed.host_str().unwrap_or_default()).to_owned());
        let settings = EndpointSettings {
            model: self.model,
            headers: self.headers,
            public_headers: Vec::new(),
            secrets: api_key.iter().cloned().collect(),
            timeout: self.timeout,
            max_response_bytes: self.max_response_bytes,
            stream_deadline: self.stream_deadline,
            pricing: self.pricing,
            max_concurrent_requests: self.max_concurrent_requests,
        };
        let endpoint = Endpoint {
            client,
            transport,
            completions_url,
            headers,
            http: HttpEndpoint::new(provider, base_url, &parsed, settings),
            api_key,
            capabilities,
            stream_usage: self.stream_usage,
            max_completion_tokens: self.max_completion_tokens,
            h2c,
        };
        let history = self.history.unwrap_or_default();
        Ok(OpenAiLm::layered(endpoint, self.retry, cache, history))
    }
}

/// The `gen_ai.provider.name` of a host, after the OpenTelemetry GenAI conventions' well-known
/// values; an OpenAI-compatible server of any other host is `openai`, the API it speaks.
fn provider_of(host: &str) -> &'static str {
    let host = host.to_ascii_lowercase();
    let is = |domain: &str| host == domain || host.ends_with(&format!(".{domain}"));
    if is("openai.azure.com") {
        "azure.ai.openai"
    } else if is("groq.com") {
        "groq"
    } else if is("deepseek.com") {
        "deepseek"
    } else if is("mistral.ai") {
        "mistral_ai"
    } else if is("x.ai") {
        "x_ai"
    } else if is("generativelanguage.googleapis.com") {
        "gcp.gemini"
    } else if is("perplexity.ai") {
        "perplexity"
    } else {
        "openai"
    }
}

/// The base URL a client uses: `given`, else `OPENAI_BASE_URL`, else OpenAI's, without a trailing
/// `/`; an error unless it is an absolute `http`/`https` URL.
pub(crate) fn resolve_base_url(
    given: Option<String>,
) -> Result<(String, reqwest::Url), BuildError> {
    resolve_base_url_from(given, "OPENAI_BASE_URL", OPENAI_API_BASE)
}

/// The API key a client sends: `given`; else `OPENAI_API_KEY`, but only to OpenAI's API or to the
/// base URL the environment names too (see [`resolve_api_key_from`]); none when empty.
pub(crate) fn resolve_api_key(
    given: Option<String>,
    base_url_given: bool,
    base_url: &reqwest::Url,
) -> Option<String> {
    resolve_api_key_from(
        given,
        "OPENAI_API_KEY",
        "api.openai.com",
        base_url_given,
        base_url,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environments_api_key_goes_only_to_the_host_it_was_given_for() {
        let goes = |given: bool, host: &str| env_key_goes_to("api.openai.com", given, Some(host));
        // The base URL from the environment (or OpenAI's default): the key that came with it.
        assert!(goes(false, "gateway.internal"));
        assert!(goes(false, "api.openai.com"));
        // A base URL set in code: OpenAI's own host only.
        assert!(goes(true, "api.openai.com"));
        assert!(!goes(true, "127.0.0.1"));
        assert!(!goes(true, "api.openai.com.evil.example"));
        assert!(!env_key_goes_to("api.openai.com", true, None));
        // An explicit key goes where it is told.
        let url = reqwest::Url::parse("http://127.0.0.1:8080/v1").unwrap();
        assert_eq!(
            resolve_api_key(Some("sk-given".into()), true, &url).as_deref(),
            Some("sk-given")
        );
    }
}
