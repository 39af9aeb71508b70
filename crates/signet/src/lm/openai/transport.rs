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

/// The client's redirect policy ([`crate::http::same_origin_redirects`]): within the request's
/// origin only, so the API key and custom headers never leave it. Any other redirect is returned
/// as the response, which [`Transport`] turns into a [`RefusedRedirect`].
pub(crate) use crate::http::same_origin_redirects;

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
