//! How a served endpoint takes on more work than it runs at once: a limit, a bounded line of
//! waiters in front of it with a deadline, and past either, a refusal that says when to come back.
//!
//! A burst any client can make (50 calls at once from each of 20 clients) waits its turn for a
//! few milliseconds instead of being refused; work that cannot be served within the wait is shed
//! with a retry hint, which Signet's client follows (with jitter) within the call's timeout. Over
//! HTTP a shed request is `503 Service Unavailable` with `Retry-After`; elsewhere it is the
//! JSON-RPC error [`SERVER_BUSY`](crate::shed::SERVER_BUSY) with the hint in its `data` (`retry_after_ms`).
//!
//! tower's `ConcurrencyLimit` waits without bound and `LoadShed` refuses without waiting; the line
//! here waits, but only for so many and so long, and counts what it sheds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The default of [`McpServer::max_waiting`](crate::McpServer::max_waiting).
pub(crate) const DEFAULT_MAX_WAITING: usize = 1024;

/// The default of [`McpServer::max_wait`](crate::McpServer::max_wait).
pub(crate) const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(10);

/// The largest JSON answer read back to see whether it is a shed call (a shed answer is a few
/// hundred bytes; anything larger is passed on unread).
const SHED_ANSWER_MAX: usize = 2048;

/// How the line in front of a limit behaves: how many may wait and for how long.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line {
    pub(crate) max_waiting: usize,
    pub(crate) max_wait: Duration,
}

impl Default for Line {
    fn default() -> Self {
        Line {
            max_waiting: DEFAULT_MAX_WAITING,
            max_wait: DEFAULT_MAX_WAIT,
        }
    }
}

impl Line {
    /// What a shed caller is told to wait before trying again: a quarter of the wait it was
    /// allowed, between 50 ms and 1 s (the client adds jitter and backs off).
    pub(crate) fn retry_after(&self) -> Duration {
        (self.max_wait / 4).clamp(Duration::from_millis(50), Duration::from_secs(1))
    }
}

/// Why work was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shed {
    /// `max_waiting` were already waiting.
    LineFull { waiting: usize },
    /// No place came free within `max_wait`.
    WaitedTooLong { waited: Duration },
}

impl Shed {
    /// What the refusal says, for `what` (`tool calls`, `requests`) over a limit of `limit`.
    pub(crate) fn describe(&self, what: &str, limit: usize, setting: &str) -> String {
        let why = match self {
            Shed::LineFull { waiting: 0 } => "none may wait (McpServer::max_waiting)".to_owned(),
            Shed::LineFull { waiting } => format!("{waiting} more are waiting"),
            Shed::WaitedTooLong { waited } => {
                format!("none finished within {} ms", waited.as_millis())
            }
        };
        format!(
            "the MCP server is busy: {limit} {what} are running ({setting}) and {why}; try again \
             later"
        )
    }
}

/// A limit on work running at once with a bounded, deadlined line in front of it; cheap to
/// clone, every clone sharing the same places and counts.
#[derive(Debug, Clone)]
pub(crate) struct Admission {
    places: Arc<Semaphore>,
    limit: usize,
    waiting: Arc<AtomicUsize>,
    shed: Arc<AtomicU64>,
    pub(crate) line: Line,
}

/// A place in the line, given back when dropped (admitted or not).
struct InLine(Arc<AtomicUsize>);

impl Drop for InLine {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Admission {
    /// `limit` at once (at least 1), waiting as `line` says.
    pub(crate) fn new(limit: usize, line: Line) -> Admission {
        let limit = limit.clamp(1, Semaphore::MAX_PERMITS);
        Admission {
            places: Arc::new(Semaphore::new(limit)),
            limit,
            waiting: Arc::default(),
            shed: Arc::default(),
            line,
        }
    }

    /// The limit.
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Work running now.
    pub(crate) fn running(&self) -> usize {
        self.limit - self.places.available_permits()
    }

    /// Work waiting for a place now.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Work shed since the server was made.
    pub(crate) fn shed_count(&self) -> u64 {
        self.shed.load(Ordering::SeqCst)
    }

    /// A place, at once or after waiting in line (first come, first served); the work runs while
    /// the permit is held.
    pub(crate) async fn enter(&self) -> Result<OwnedSemaphorePermit, Shed> {
        if let Ok(permit) = self.places.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let max = self.line.max_waiting;
        let joined = self
            .waiting
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < max).then_some(n + 1)
            });
        let _in_line = match joined {
            Ok(_) => InLine(self.waiting.clone()),
            Err(waiting) => return Err(self.count(Shed::LineFull { waiting })),
        };
        let wait = self.line.max_wait;
        match tokio::time::timeout(wait, self.places.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed; were it, the work could not run either.
            Ok(Err(_)) | Err(_) => Err(self.count(Shed::WaitedTooLong { waited: wait })),
        }
    }

    fn count(&self, shed: Shed) -> Shed {
        self.shed.fetch_add(1, Ordering::SeqCst);
        shed
    }
}

/// The JSON-RPC error of shed work: [`SERVER_BUSY`](crate::shed::SERVER_BUSY), `message`, and `data` with the limit and
/// `retry_after_ms`.
pub(crate) fn busy_error(message: String, limit: usize, retry_after: Duration) -> rmcp::ErrorData {
    rmcp::ErrorData::new(
        rmcp::model::ErrorCode(crate::shed::SERVER_BUSY),
        message,
        Some(crate::shed::data(limit, retry_after)),
    )
}

/// `Retry-After` in whole seconds (at least 1), as HTTP has it.
fn retry_after_header(retry_after: Duration) -> HeaderValue {
    let seconds = retry_after.as_millis().div_ceil(1000).max(1);
    HeaderValue::from_str(&seconds.to_string()).unwrap_or(HeaderValue::from_static("1"))
}

/// `503 Service Unavailable` with `Retry-After` and `body` (JSON when it starts with `{`).
pub(crate) fn unavailable(retry_after: Duration, body: impl Into<Body>) -> Response {
    let body = body.into();
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, retry_after_header(retry_after));
    response
}

/// Waits for a place for an HTTP request (stateless: every POST is one); the caller holds it
/// until the answer is ready: a JSON answer once the call has finished, an event stream (a call
/// sending progress) once it starts, the call itself staying under its own limit. A request that
/// gets no place is answered `503` with `Retry-After` before its body is read.
pub(crate) async fn admit_request(
    admission: &Admission,
    method: &axum::http::Method,
) -> Result<Option<OwnedSemaphorePermit>, Response> {
    if method != axum::http::Method::POST {
        return Ok(None);
    }
    match admission.enter().await {
        Ok(permit) => Ok(Some(permit)),
        Err(shed) => {
            let message = shed.describe(
                "requests",
                admission.limit(),
                "McpServer::max_sessions, stateless",
            );
            tracing::debug!(%message, "shed an MCP request");
            Err(unavailable(admission.line.retry_after(), message))
        }
    }
}

/// What a client is told when `max` sessions are open.
pub(crate) fn sessions_full(max: usize) -> String {
    format!(
        "the MCP server is busy: {max} sessions are open (McpServer::max_sessions); try again later"
    )
}

/// With sessions: answers a request that would open one (a POST without `Mcp-Session-Id`) with
/// `503 Service Unavailable` and `Retry-After: 1` while [`McpServer::max_sessions`] are open; a
/// session can last minutes, so it is not worth waiting for. (rmcp itself can only answer a
/// refused session with a 500, which reads as a server fault; this check comes first, and the
/// 500 remains only for a request that loses a race for the last place.)
///
/// [`McpServer::max_sessions`]: crate::McpServer::max_sessions
pub(crate) fn refuse_when_full(
    open: &AtomicUsize,
    max: usize,
    request: &axum::extract::Request,
) -> Option<Response> {
    let opens_one = request.method() == axum::http::Method::POST
        && !request.headers().contains_key("mcp-session-id");
    if opens_one && open.load(Ordering::SeqCst) >= max {
        tracing::debug!(max, "refused an MCP session: the server is full");
        return Some(unavailable(Duration::from_secs(1), sessions_full(max)));
    }
    None
}

/// Turns a small JSON answer that is a shed call ([`SERVER_BUSY`](crate::shed::SERVER_BUSY) with `retry_after_ms`) into
/// `503 Service Unavailable` with `Retry-After`, keeping the JSON-RPC error as the body (MCP
/// clients read a JSON-RPC error from a failed response). Other answers pass unchanged.
pub(crate) async fn shed_calls_as_unavailable(response: Response) -> Response {
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let small = axum::body::HttpBody::size_hint(response.body())
        .exact()
        .is_some_and(|n| n <= SHED_ANSWER_MAX as u64);
    if response.status() != StatusCode::OK || !json || !small {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, SHED_ANSWER_MAX).await else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the answer could not be read",
        )
            .into_response();
    };
    match shed_retry_after(&bytes) {
        Some(retry_after) => {
            let mut response = unavailable(retry_after, bytes);
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// The retry hint of a JSON-RPC error that is a shed call, if `bytes` is one.
fn shed_retry_after(bytes: &[u8]) -> Option<Duration> {
    let key = crate::shed::RETRY_AFTER_MS.as_bytes();
    if !bytes.windows(key.len()).any(|w| w == key) {
        return None;
    }
    let message: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let error = message.get("error")?;
    crate::shed::retry_hint(error.get("code")?.as_i64()?, error.get("data"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(limit: usize, max_waiting: usize, max_wait_ms: u64) -> Admission {
        Admission::new(
            limit,
            Line {
                max_waiting,
                max_wait: Duration::from_millis(max_wait_ms),
            },
        )
    }

    #[tokio::test]
    async fn work_over_the_limit_waits_its_turn_instead_of_being_refused() {
        let gate = admission(2, 100, 5_000);
        let first = gate.enter().await.unwrap();
        let _second = gate.enter().await.unwrap();
        assert_eq!(gate.running(), 2);
        let third = tokio::spawn({
            let gate = gate.clone();
            async move { gate.enter().await.map(|_| ()) }
        });
        while gate.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        drop(first);
        assert_eq!(third.await.unwrap(), Ok(()));
        assert_eq!(gate.waiting(), 0);
        assert_eq!(gate.shed_count(), 0);
    }

    #[tokio::test]
    async fn a_full_line_sheds_at_once_and_a_long_wait_sheds_at_the_deadline() {
        let gate = admission(1, 1, 50);
        let _running = gate.enter().await.unwrap();
        let waiter = tokio::spawn({
            let gate = gate.clone();
            async move { gate.enter().await.map(|_| ()) }
        });
        while gate.waiting() == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            gate.enter().await.map(|_| ()),
            Err(Shed::LineFull { waiting: 1 })
        );
        assert_eq!(
            waiter.await.unwrap(),
            Err(Shed::WaitedTooLong {
                waited: Duration::from_millis(50)
            })
        );
        assert_eq!(gate.shed_count(), 2);
        assert_eq!(gate.waiting(), 0, "a shed waiter leaves the line");
    }

    #[test]
    fn the_retry_hint_is_a_quarter_of_the_wait_within_bounds() {
        let line = |ms| Line {
            max_waiting: 1,
            max_wait: Duration::from_millis(ms),
        };
        assert_eq!(line(10_000).retry_after(), Duration::from_secs(1));
        assert_eq!(line(400).retry_after(), Duration::from_millis(100));
        assert_eq!(line(10).retry_after(), Duration::from_millis(50));
        assert_eq!(retry_after_header(Duration::from_millis(100)), "1");
        assert_eq!(retry_after_header(Duration::from_millis(2500)), "3");
    }

    #[test]
    fn only_a_busy_error_with_a_hint_reads_as_shed() {
        let error = busy_error("busy".into(), 4, Duration::from_millis(250));
        let message = serde_json::json!({"jsonrpc": "2.0", "id": 3, "error": error});
        let bytes = serde_json::to_vec(&message).unwrap();
        assert_eq!(shed_retry_after(&bytes), Some(Duration::from_millis(250)));
        let other = serde_json::json!({"jsonrpc": "2.0", "id": 3, "error": {
            "code": -32602, "message": "x", "data": {"retry_after_ms": 5}}});
        assert_eq!(shed_retry_after(&serde_json::to_vec(&other).unwrap()), None);
        let result = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"retry_after_ms"}]}}"#;
        assert_eq!(shed_retry_after(result), None);
    }
}
