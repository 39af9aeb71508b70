//! The HTTP layer under async-openai, which keeps what its own error types drop.

use super::*;

/// The HTTP layer under async-openai: sends the request, and turns every non-2xx response into an
/// [`HttpFailure`] that keeps the status, `Retry-After` and the raw body.
#[derive(Clone)]
pub(super) struct Transport {
    pub(super) http: reqwest::Client,
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
