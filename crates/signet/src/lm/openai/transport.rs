//! The HTTP layer under async-openai, which keeps what its own error types drop.

use super::*;

/// The HTTP layer under async-openai: sends the request, and turns every non-2xx response into an
/// [`HttpFailure`] that keeps the status, `Retry-After` and the raw body, or, for a redirect the
/// client did not follow, a [`RefusedRedirect`].
#[derive(Clone)]
pub(super) struct Transport {
    /// One client per connection pool ([`OpenAiLmBuilder::http2_connections`]); requests take
    /// them in turn.
    pub(super) clients: Arc<[reqwest::Client]>,
    /// The number of requests sent, which picks the next one's client.
    pub(super) sent: Arc<std::sync::atomic::AtomicUsize>,
    /// The most bytes of a response body read ([`OpenAiLmBuilder::max_response_bytes`]).
    pub(super) max_body_bytes: usize,
}

impl tower::Service<HttpRequestFactory> for Transport {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = BoxFuture<'static, Result<reqwest::Response, OpenAIError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let transport = self.clone();
        async move { transport.send(factory.build().await?).await }.boxed()
    }
}

impl Transport {
    /// Sends `request`; a 2xx response comes back with its body capped at the client's limit,
    /// anything else as an error.
    pub(super) async fn send(
        &self,
        request: reqwest::Request,
    ) -> Result<reqwest::Response, OpenAIError> {
        let response = self.send_checked(request).await?;
        // The caller's flag, taken here (in its task): the body may be read in another.
        let flag = BODY_CUT.try_with(Arc::clone).ok();
        Ok(capped(response, self.max_body_bytes, flag))
    }

    /// Sends `request`, and reads the whole body of a 2xx response: at most the client's limit,
    /// past which it fails with [`BodyTooLarge`] (as the source of a [`OpenAIError::Boxed`]).
    pub(super) async fn send_and_read(
        &self,
        request: reqwest::Request,
    ) -> Result<Vec<u8>, OpenAIError> {
        let limit = self.max_body_bytes;
        let mut response = self.send_checked(request).await?;
        let expected = response.content_length().unwrap_or(0).min(limit as u64) as usize;
        let mut body = Vec::with_capacity(expected);
        while let Some(chunk) = response.chunk().await.map_err(OpenAIError::Reqwest)? {
            if chunk.len() > limit - body.len() {
                return Err(OpenAIError::Boxed(Box::new(BodyTooLarge { limit })));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Sends `request`: a 2xx response as it came, anything else as an error.
    async fn send_checked(
        &self,
        request: reqwest::Request,
    ) -> Result<reqwest::Response, OpenAIError> {
        let limit = self.max_body_bytes;
        let turn = self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let http = &self.clients[turn % self.clients.len()];
        let response = http.execute(request).await.map_err(OpenAIError::Reqwest)?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        if status.is_redirection() {
            return Err(OpenAIError::Boxed(Box::new(RefusedRedirect::of(&response))));
        }
        let retry_after = retry_after(response.headers());
        let body = read_error_body(response, limit).await;
        Err(OpenAIError::Boxed(Box::new(HttpFailure {
            status: status.as_u16(),
            retry_after,
            body,
        })))
    }
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

/// The client's redirect policy ([`crate::http::same_origin_redirects`]): within the request's
/// origin only, so the API key and custom headers never leave it. Any other redirect is returned
/// as the response, which [`Transport`] turns into a [`RefusedRedirect`].
pub(crate) use crate::http::same_origin_redirects;

/// A redirect the client did not follow (see [`same_origin_redirects`]).
#[derive(Debug)]
pub(super) struct RefusedRedirect {
    pub(super) status: u16,
    /// Where the request was sent (after the redirects that were followed): origin and path.
    pub(super) from: String,
    /// Where the server redirected it: origin and path, without credentials, query or fragment;
    /// `None` when the response had no usable `Location`.
    pub(super) to: Option<String>,
    /// Whether `to` is on another origin than `from`.
    pub(super) cross_origin: bool,
}

impl RefusedRedirect {
    fn of(response: &reqwest::Response) -> RefusedRedirect {
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
    pub(super) fn message(&self) -> String {
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

/// A non-2xx HTTP response.
#[derive(Debug)]
pub(super) struct HttpFailure {
    pub(super) status: u16,
    pub(super) retry_after: Option<Duration>,
    pub(super) body: String,
}

impl fmt::Display for HttpFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HTTP {}: {}", self.status, truncate(&self.body, 200))
    }
}

impl std::error::Error for HttpFailure {}

tokio::task_local! {
    /// The flag of the call in progress, which a body cut at the client's limit sets, for the
    /// call to report [`LmError::ResponseTooLarge`] (the SSE layer keeps only the text of a
    /// body's error).
    pub(super) static BODY_CUT: Arc<std::sync::atomic::AtomicU64>;
}

/// A response body longer than the client's limit.
#[derive(Debug)]
pub(super) struct BodyTooLarge {
    pub(super) limit: usize,
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
