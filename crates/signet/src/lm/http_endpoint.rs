//! What Signet's HTTP clients of language models share (feature `http`), whatever the provider's
//! wire format: configuration from the environment and secrets kept out of `Debug` and errors,
//! response bodies capped in size, `Retry-After`, redirects refused with a reason, provider error
//! bodies turned into typed [`LmError`]s, and [`HttpEndpoint`]: one provider endpoint's HTTP
//! clients, headers, time limits, concurrency turns, pricing and `chat` spans.
//!
//! A provider module ([`OpenAiLm`](super::OpenAiLm)'s, [`AnthropicLm`](super::AnthropicLm)'s)
//! maps Signet's [`LmRequest`] to its wire format and its replies back; everything else is here.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use super::retry::parse_retry_after;
use super::{ChatSpan, Completion, LmError, LmRequest, Pricing};

/// Why a client builder ([`OpenAiLmBuilder`](super::OpenAiLmBuilder),
/// [`AnthropicLmBuilder`](super::AnthropicLmBuilder), ..) could not build its client.
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

/// An API key: shown as `[redacted]` by `Debug`.
#[derive(Clone)]
pub(crate) struct ApiKey(pub(crate) String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// The credentials a base URL carries (`https://user:password@host/..`): the password, raw and
/// percent-decoded, or the user name when it comes alone (a token in the user-name place).
/// reqwest sends them as basic auth; errors and `Debug` must not show them.
pub(crate) fn url_credentials(url: &reqwest::Url) -> Vec<String> {
    let (user, password) = (url.username(), url.password().unwrap_or_default());
    let secret = if password.is_empty() { user } else { password };
    let decoded = percent_encoding::percent_decode_str(secret)
        .decode_utf8_lossy()
        .into_owned();
    vec![secret.to_owned(), decoded]
}

/// `url` with its credentials replaced by `[redacted]`, for `Debug`.
pub(crate) fn without_credentials(url: &str) -> String {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return url.to_owned();
    };
    if parsed.username().is_empty() && parsed.password().is_none() {
        return url.to_owned();
    }
    let mut shown = parsed;
    let _ = shown.set_username("[redacted]");
    let _ = shown.set_password(None);
    shown.to_string().replace("%5Bredacted%5D", "[redacted]")
}

pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// The longest provider message kept in an error.
pub(crate) const MAX_ERROR_MESSAGE: usize = 2000;

/// The typed error for an HTTP failure.
pub(crate) fn classify_http(status: u16, retry_after: Option<Duration>, body: &str) -> LmError {
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

/// The provider's message and code from an error body: OpenAI's `{"error": {"message", "code",
/// "type"}}`, `{"error": "..."}`, `{"message": ..}`, `{"detail": ..}`, or the raw text.
pub(crate) fn provider_message(body: &str) -> (String, Option<String>) {
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
pub(crate) fn is_context_error(code: Option<&str>, message: &str) -> bool {
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
        "exceeds the maximum number of tokens",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// An error and its sources, joined by `: `.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
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
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// How long a response asks to be waited for before trying again: `retry-after-ms`, else
/// `Retry-After` (seconds or an HTTP date).
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    header("retry-after-ms")
        .and_then(|ms| ms.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .and_then(|ms| Duration::try_from_secs_f64(ms / 1000.0).ok())
        .or_else(|| header("retry-after").and_then(parse_retry_after))
}

/// A redirect the client did not follow (see [`same_origin_redirects`]).
#[derive(Debug)]
pub(crate) struct RefusedRedirect {
    pub(crate) status: u16,
    /// Where the request was sent (after the redirects that were followed): origin and path.
    pub(crate) from: String,
    /// Where the server redirected it: origin and path, without credentials, query or fragment;
    /// `None` when the response had no usable `Location`.
    pub(crate) to: Option<String>,
    /// Whether `to` is on another origin than `from`.
    pub(crate) cross_origin: bool,
}

impl RefusedRedirect {
    pub(crate) fn of(response: &reqwest::Response) -> RefusedRedirect {
        let from = response.url();
        let to = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|location| location.to_str().ok())
            .and_then(|location| from.join(location.trim()).ok());
        RefusedRedirect {
            status: response.status().as_u16(),
            from: shown_url(from),
            cross_origin: to.as_ref().is_some_and(|to| to.origin() != from.origin()),
            to: to.as_ref().map(shown_url),
        }
    }

    /// The message of the [`LmError`] it becomes.
    pub(crate) fn message(&self) -> String {
        let from = &self.from;
        match (&self.to, self.cross_origin) {
            (None, _) => format!(
                "the server redirected {from} without a usable Location; the redirect was not \
                 followed: set the base URL to the endpoint's final address"
            ),
            (Some(to), true) => format!(
                "the server redirected {from} to another origin, {to}; the request was not sent \
                 there, as it carries the API key and the custom headers: set the base URL to the \
                 endpoint's final address if you trust it"
            ),
            (Some(to), false) => format!(
                "the server redirected {from} to {to}; only 307 and 308 redirects within the same \
                 origin are followed (a {} would resend the POST as a GET without its body): set \
                 the base URL to the endpoint's final address",
                self.status
            ),
        }
    }
}

impl fmt::Display for RefusedRedirect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for RefusedRedirect {}

/// A URL as errors show it: scheme, host, port and path; no credentials, query or fragment.
fn shown_url(url: &reqwest::Url) -> String {
    format!("{}{}", url.origin().ascii_serialization(), url.path())
}

/// A response body longer than the client's limit.
#[derive(Debug)]
pub(crate) struct BodyTooLarge {
    pub(crate) limit: usize,
}

impl fmt::Display for BodyTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the response body exceeds the client's limit of {} bytes",
            self.limit
        )
    }
}

impl std::error::Error for BodyTooLarge {}

/// The limit of a body cut at the client's limit, found in an error's chain of sources.
pub(crate) fn body_too_large(error: &(dyn std::error::Error + 'static)) -> Option<usize> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(cut) = error.downcast_ref::<BodyTooLarge>() {
            return Some(cut.limit);
        }
        current = error.source();
    }
    None
}

/// `response` with a body that fails with [`BodyTooLarge`] past `limit` bytes, and then ends
/// (whatever the server goes on sending is not read).
pub(crate) fn capped(
    response: reqwest::Response,
    limit: usize,
    flag: Option<Arc<std::sync::atomic::AtomicU64>>,
) -> reqwest::Response {
    let status = response.status();
    let version = response.version();
    let headers = response.headers().clone();
    let body = response
        .bytes_stream()
        .scan((0usize, false), move |(seen, cut), chunk| {
            if *cut {
                return futures::future::ready(None);
            }
            let item: Result<_, Box<dyn std::error::Error + Send + Sync>> = match chunk {
                Ok(chunk) => {
                    *seen = seen.saturating_add(chunk.len());
                    if *seen > limit {
                        *cut = true;
                        if let Some(flag) = &flag {
                            flag.store(limit as u64, std::sync::atomic::Ordering::Relaxed);
                        }
                        Err(Box::new(BodyTooLarge { limit }))
                    } else {
                        Ok(chunk)
                    }
                }
                Err(error) => Err(Box::new(error)),
            };
            futures::future::ready(Some(item))
        });
    let mut capped = http::Response::new(reqwest::Body::wrap_stream(body));
    *capped.status_mut() = status;
    *capped.version_mut() = version;
    *capped.headers_mut() = headers;
    reqwest::Response::from(capped)
}

/// At most `limit` bytes of an error response's body, as text (a longer one is cut, with a note).
pub(crate) async fn read_error_body(mut response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = limit.saturating_sub(body.len());
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    let mut text = String::from_utf8_lossy(&body).into_owned();
                    text.push_str(&format!(
                        " [the error body was cut at the client's limit of {limit} bytes]"
                    ));
                    return text;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => return String::from_utf8_lossy(&body).into_owned(),
            Err(error) => return format!("(the error body could not be read: {error})"),
        }
    }
}

/// `text` with every one of `secrets` replaced by `[redacted]`, as sent and as escaped in a JSON
/// string.
pub(crate) fn scrub_secrets(secrets: &[String], mut text: String) -> String {
    for secret in secrets {
        if text.contains(secret.as_str()) {
            text = text.replace(secret.as_str(), "[redacted]");
        }
        let escaped = Value::String(secret.clone()).to_string();
        let escaped = &escaped[1..escaped.len() - 1];
        if escaped != secret && text.contains(escaped) {
            text = text.replace(escaped, "[redacted]");
        }
    }
    text
}

/// A base URL: `given`, else the environment variable `env`, else `default`; without a trailing
/// `/`; an error unless it is an absolute `http`/`https` URL.
pub(crate) fn resolve_base_url_from(
    given: Option<String>,
    env: &str,
    default: &str,
) -> Result<(String, reqwest::Url), BuildError> {
    let base_url = given
        .or_else(|| env_var(env))
        .unwrap_or_else(|| default.to_owned());
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
    Ok((base_url, parsed))
}

/// The API key a client sends: `given`; else the environment variable `env`, but only to the
/// host it belongs with — the provider's own `home` host, or a base URL that came from the
/// environment too (not one set in code for another host: the key was not given for it); none
/// when empty.
pub(crate) fn resolve_api_key_from(
    given: Option<String>,
    env: &str,
    home: &str,
    base_url_given: bool,
    base_url: &reqwest::Url,
) -> Option<String> {
    if let Some(key) = given.filter(|key| !key.is_empty()) {
        return Some(key);
    }
    let key = env_var(env)?;
    if env_key_goes_to(home, base_url_given, base_url.host_str()) {
        return Some(key);
    }
    tracing::warn!(
        host = base_url.host_str().unwrap_or_default(),
        "{env} is not sent to a base URL set in code for another host than {home}; pass \
         .api_key(..) to send a key there"
    );
    None
}

/// Whether a key from the environment may go to `host`: the provider's own `home` host, or the
/// base URL the environment names too (or the provider's default). A base URL set in code for
/// another host gets a key only through `.api_key(..)`: the key in the environment was not given
/// for it.
pub(crate) fn env_key_goes_to(home: &str, base_url_given: bool, host: Option<&str>) -> bool {
    !base_url_given || host == Some(home)
}

/// What every HTTP endpoint of a provider is configured with (its builder's common settings).
#[derive(Clone)]
pub(crate) struct EndpointSettings {
    pub(crate) model: String,
    /// The headers every request carries, the key's among them (values are secrets).
    pub(crate) headers: Vec<(String, ApiKey)>,
    /// Headers whose values are not secret (an API version), sent after `headers` unless one of
    /// those has the same name.
    pub(crate) public_headers: Vec<(&'static str, &'static str)>,
    /// Secrets sent inside a header's value (the key in `Authorization: Bearer <key>`), kept out
    /// of errors like the values themselves.
    pub(crate) secrets: Vec<ApiKey>,
    pub(crate) timeout: Duration,
    pub(crate) max_response_bytes: usize,
    pub(crate) stream_deadline: Duration,
    pub(crate) pricing: Option<Pricing>,
    pub(crate) max_concurrent_requests: Option<usize>,
}

impl fmt::Debug for EndpointSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("EndpointSettings")
            .field("model", &self.model)
            .field("headers", &header_names)
            .field("public_headers", &self.public_headers)
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("stream_deadline", &self.stream_deadline)
            .field("pricing", &self.pricing)
            .field("max_concurrent_requests", &self.max_concurrent_requests)
            .finish()
    }
}

/// The headers every request of `settings` carries: its (secret) headers, its public ones unless
/// a secret one has the name, and `Content-Type: application/json`.
pub(crate) fn request_headers(
    settings: &EndpointSettings,
) -> Result<reqwest::header::HeaderMap, BuildError> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in &settings.headers {
        let invalid = |reason: String| BuildError::InvalidHeader {
            name: name.clone(),
            reason,
        };
        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| invalid(e.to_string()))?;
        let mut value =
            reqwest::header::HeaderValue::from_str(&value.0).map_err(|e| invalid(e.to_string()))?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    for (name, value) in &settings.public_headers {
        if !headers.contains_key(*name) {
            headers.insert(*name, reqwest::header::HeaderValue::from_static(value));
        }
    }
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        reqwest::header::HeaderValue::from_static("application/json"),
    );
    Ok(headers)
}

/// An HTTP/1.1 client with Signet's redirect policy, connecting within `timeout`.
pub(crate) fn http_client(timeout: Duration) -> Result<reqwest::Client, BuildError> {
    reqwest::Client::builder()
        .connect_timeout(timeout)
        .redirect(crate::http::same_origin_redirects())
        .http1_only()
        .build()
        .map_err(|e| BuildError::HttpClient(error_chain(&e)))
}

/// One provider endpoint as every client sees it, whatever sends its requests: the model, where
/// it is, its limits and turns, its spans, its prices, its secrets and its typed errors.
pub(crate) struct HttpEndpoint {
    /// `gen_ai.provider.name` in traces.
    provider: String,
    /// The host and port traces record (`server.address`, `server.port`).
    server: Option<(String, u16)>,
    pricing: Option<Pricing>,
    pub(crate) model: String,
    pub(crate) base_url: String,
    /// The names of the headers sent (their values are in `secrets`).
    pub(crate) header_names: Vec<String>,
    /// Every secret the client sends, longest first: removed from error messages.
    secrets: Vec<String>,
    pub(crate) timeout: Duration,
    pub(crate) max_response_bytes: usize,
    pub(crate) stream_deadline: Duration,
    /// The concurrency limit and its turns (none: no limit).
    pub(crate) turns: Option<(usize, Arc<tokio::sync::Semaphore>)>,
}

impl HttpEndpoint {
    /// The endpoint of `base_url` for `provider`, with `settings`.
    pub(crate) fn new(
        provider: String,
        base_url: String,
        parsed: &reqwest::Url,
        settings: EndpointSettings,
    ) -> HttpEndpoint {
        let secrets = secrets_of(
            settings
                .headers
                .iter()
                .map(|(_, value)| value.0.clone())
                .chain(settings.secrets.iter().map(|secret| secret.0.clone()))
                .chain(url_credentials(parsed)),
        );
        let server = parsed
            .host_str()
            .map(|host| {
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned()
            })
            .zip(parsed.port_or_known_default());
        HttpEndpoint {
            provider,
            server,
            pricing: settings.pricing,
            model: settings.model,
            base_url,
            header_names: settings.headers.into_iter().map(|(name, _)| name).collect(),
            secrets,
            timeout: settings.timeout,
            max_response_bytes: settings.max_response_bytes,
            stream_deadline: settings.stream_deadline,
            turns: settings.max_concurrent_requests.map(|n| {
                let n = n.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
                (n, Arc::new(tokio::sync::Semaphore::new(n)))
            }),
        }
    }

    /// A turn to send a request, held until the permit is dropped; `None` at once when there is
    /// no limit.
    pub(crate) async fn turn(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        // `acquire_owned` fails only on a closed semaphore, which this one never is.
        let (_, turns) = self.turns.as_ref()?;
        turns.clone().acquire_owned().await.ok()
    }

    /// The `chat` span of one attempt.
    pub(crate) fn chat_span(&self, request: &LmRequest, stream: bool) -> ChatSpan {
        let span = ChatSpan::start(&self.provider, &self.model, request, stream);
        match &self.server {
            Some((host, port)) => span.with_server(host, *port),
            None => span,
        }
    }

    /// Sets the completion's cost, when the model's prices are known.
    pub(crate) fn price(&self, completion: &mut Completion) {
        if let Some(pricing) = &self.pricing {
            pricing.apply(&mut completion.usage);
        }
    }

    /// The error of an attempt past its time limit.
    pub(crate) fn timed_out(&self) -> LmError {
        LmError::Timeout {
            after: self.timeout,
        }
    }

    /// A stream still going at its deadline.
    pub(crate) fn past_deadline(&self) -> LmError {
        LmError::Timeout {
            after: self.stream_deadline,
        }
    }

    /// A body cut at the client's limit.
    pub(crate) fn too_large(&self) -> LmError {
        LmError::ResponseTooLarge {
            limit: self.max_response_bytes as u64,
        }
    }

    /// POSTs `body` to `url` with `client` and `headers`: a 2xx response with its body capped at
    /// the client's limit (past which it fails with [`BodyTooLarge`], which `cut` records),
    /// anything else a typed error (`classify` reads a non-2xx status, its `Retry-After` and its
    /// scrubbed body).
    pub(crate) async fn post(
        &self,
        (client, headers): (&reqwest::Client, &reqwest::header::HeaderMap),
        url: &reqwest::Url,
        body: Vec<u8>,
        classify: fn(u16, Option<Duration>, &str) -> LmError,
        cut: Option<Arc<AtomicU64>>,
    ) -> Result<reqwest::Response, LmError> {
        let mut http = reqwest::Request::new(reqwest::Method::POST, url.clone());
        *http.headers_mut() = headers.clone();
        *http.body_mut() = Some(reqwest::Body::from(body));
        let response = client
            .execute(http)
            .await
            .map_err(|e| self.map_reqwest(&e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(capped(response, self.max_response_bytes, cut));
        }
        if status.is_redirection() {
            return Err(LmError::Rejected {
                status: status.as_u16(),
                message: RefusedRedirect::of(&response).message(),
            });
        }
        let retry_after = retry_after(response.headers());
        let body = read_error_body(response, self.max_response_bytes).await;
        Err(self.scrub_error(classify(status.as_u16(), retry_after, &self.scrub(body))))
    }

    /// [`post`](Self::post), then the whole body, within the attempt's time limit.
    pub(crate) async fn post_and_read(
        &self,
        sender: (&reqwest::Client, &reqwest::header::HeaderMap),
        url: &reqwest::Url,
        body: Vec<u8>,
        classify: fn(u16, Option<Duration>, &str) -> LmError,
    ) -> Result<Vec<u8>, LmError> {
        let read = async {
            let response = self.post(sender, url, body, classify, None).await?;
            let mut body = Vec::new();
            let mut chunks = response.bytes_stream();
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk.map_err(|e| self.map_reqwest(&e))?;
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        };
        match tokio::time::timeout(self.timeout, read).await {
            Err(_) => Err(self.timed_out()),
            Ok(result) => result,
        }
    }

    /// The typed error of a failed HTTP exchange.
    pub(crate) fn map_reqwest(&self, error: &reqwest::Error) -> LmError {
        if let Some(limit) = body_too_large(error) {
            return LmError::ResponseTooLarge {
                limit: limit as u64,
            };
        }
        if error.is_timeout() {
            return self.timed_out();
        }
        if error.is_redirect() {
            // A redirect loop: trying again would loop again.
            return LmError::InvalidResponse {
                message: self.scrub(error_chain(error)),
            };
        }
        LmError::Connect {
            message: self.scrub(error_chain(error)),
        }
    }

    /// `text` without any secret the client sends (see [`scrub_secrets`]).
    pub(crate) fn scrub(&self, text: String) -> String {
        scrub_secrets(&self.secrets, text)
    }

    /// `error` without any secret the client sends, should a server have echoed one.
    pub(crate) fn scrub_error(&self, error: LmError) -> LmError {
        scrub_error(&self.secrets, error)
    }
}

impl fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEndpoint")
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("base_url", &without_credentials(&self.base_url))
            .field("headers", &self.header_names)
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("stream_deadline", &self.stream_deadline)
            .field(
                "max_concurrent_requests",
                &self.turns.as_ref().map(|(limit, _)| limit),
            )
            .finish_non_exhaustive()
    }
}

/// `secrets` without the empty ones, longest first (a secret containing another is removed
/// whole), each once.
pub(crate) fn secrets_of(secrets: impl Iterator<Item = String>) -> Vec<String> {
    let mut secrets: Vec<String> = secrets.filter(|secret| !secret.is_empty()).collect();
    secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    secrets.dedup();
    secrets
}

/// `error` with every one of `secrets` removed from its message.
pub(crate) fn scrub_error(secrets: &[String], error: LmError) -> LmError {
    if secrets.is_empty() {
        return error;
    }
    let scrub = |message: String| scrub_secrets(secrets, message);
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
