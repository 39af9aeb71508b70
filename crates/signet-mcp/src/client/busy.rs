//! A server that is busy says so and says when to come back: the JSON-RPC error `-32000` with
//! `retry_after_ms` in its `data` (Signet's server, over every transport), or HTTP `429`/`503`
//! with `Retry-After` (any HTTP server or proxy). A `tools/call` refused that way never ran, so
//! the client tries it again after the hint, backing off with jitter, as long as the call's
//! timeout allows; then it reports [`Error::Busy`](crate::Error::Busy).

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use rmcp::service::ServiceError;
use rmcp::transport::streamable_http_client::HttpStatusError;

/// The wait when a busy answer gives no usable hint.
const DEFAULT_HINT: Duration = Duration::from_secs(1);

/// The longest wait between two tries, whatever the hint and the backoff say.
const MAX_WAIT: Duration = Duration::from_secs(10);

/// What a busy answer said: its message and how long it asked to wait.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Busy {
    pub(super) message: String,
    pub(super) retry_after: Duration,
}

/// The busy answer in `error`, if the server refused the request as busy.
pub(super) fn busy(error: &ServiceError) -> Option<Busy> {
    match error {
        ServiceError::McpError(e) => Some(Busy {
            message: e.message.to_string(),
            retry_after: crate::shed::retry_hint(i64::from(e.code.0), e.data.as_ref())?,
        }),
        ServiceError::TransportSend(e) => {
            let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e.error.as_ref());
            while let Some(current) = source {
                if let Some(status) = current.downcast_ref::<HttpStatusError>() {
                    return matches!(status.status, 429 | 503).then(|| Busy {
                        message: format!("HTTP {}", status.status),
                        retry_after: status
                            .retry_after
                            .as_deref()
                            .and_then(|s| s.trim().parse::<u64>().ok())
                            .map_or(DEFAULT_HINT, Duration::from_secs),
                    });
                }
                source = current.source();
            }
            None
        }
        _ => None,
    }
}

/// The wait before try `retry` (1 for the first retry): the hint, doubled for each retry before
/// it, at most [`MAX_WAIT`], then spread by a random factor between ½ and 1½ so that clients shed
/// together do not come back together.
pub(super) fn backoff(hint: Duration, retry: u32) -> Duration {
    let doubled = hint.saturating_mul(1 << retry.saturating_sub(1).min(8));
    let base = doubled.min(MAX_WAIT).max(Duration::from_millis(1));
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(retry);
    let spread = 0.5 + (hasher.finish() % 1000) as f64 / 1000.0;
    base.mul_f64(spread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shed::SERVER_BUSY;

    #[test]
    fn a_busy_error_with_a_hint_reads_as_busy_and_others_do_not() {
        let error = |code, data| {
            ServiceError::McpError(rmcp::ErrorData::new(
                rmcp::model::ErrorCode(code),
                "busy",
                data,
            ))
        };
        let shed = error(
            SERVER_BUSY,
            Some(serde_json::json!({"retry_after_ms": 250})),
        );
        assert_eq!(
            busy(&shed),
            Some(Busy {
                message: "busy".into(),
                retry_after: Duration::from_millis(250)
            })
        );
        // An application error that happens to use -32000 without a hint is not retried.
        assert_eq!(busy(&error(SERVER_BUSY, None)), None);
        assert_eq!(
            busy(&error(
                -32602,
                Some(serde_json::json!({"retry_after_ms": 5}))
            )),
            None
        );
    }

    #[test]
    fn backoff_doubles_from_the_hint_with_jitter_and_a_ceiling() {
        let hint = Duration::from_millis(100);
        for retry in 1..=4 {
            let expected = hint * (1 << (retry - 1));
            let wait = backoff(hint, retry);
            assert!(
                wait >= expected / 2 && wait <= expected * 3 / 2,
                "retry {retry}: {wait:?}"
            );
        }
        assert!(backoff(Duration::from_secs(5), 12) <= MAX_WAIT * 3 / 2);
        let waits: std::collections::BTreeSet<Duration> =
            (0..20).map(|_| backoff(hint, 1)).collect();
        assert!(waits.len() > 1, "jittered: {waits:?}");
    }
}
