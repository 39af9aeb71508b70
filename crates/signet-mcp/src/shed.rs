//! The answer a busy server gives and a client reads: the JSON-RPC error [`SERVER_BUSY`] with the
//! retry hint in its `data` as `retry_after_ms` (the server's `admission`, the client's `busy`).

use std::time::Duration;

use serde_json::Value;

/// The JSON-RPC code of work shed because the server is busy (in the implementation-defined
/// range).
pub(crate) const SERVER_BUSY: i32 = -32000;

/// The key of the retry hint in the error's `data`.
pub(crate) const RETRY_AFTER_MS: &str = "retry_after_ms";

/// The `data` of a shed answer: the limit and the retry hint.
pub(crate) fn data(limit: usize, retry_after: Duration) -> Value {
    serde_json::json!({
        "limit": limit,
        RETRY_AFTER_MS: retry_after.as_millis() as u64,
    })
}

/// The retry hint of a JSON-RPC error, if it is a shed answer: [`SERVER_BUSY`] with
/// `retry_after_ms` in its `data` (an application error that uses the same code without the
/// hint is not one).
pub(crate) fn retry_hint(code: i64, data: Option<&Value>) -> Option<Duration> {
    if code != i64::from(SERVER_BUSY) {
        return None;
    }
    let ms = data?.get(RETRY_AFTER_MS)?.as_u64()?;
    Some(Duration::from_millis(ms))
}
