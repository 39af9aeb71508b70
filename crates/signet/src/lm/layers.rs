//! The wrapper stack every HTTP client of Signet is built with: retries, a response cache when
//! there is one, and the call history (outermost, so cache hits are recorded too).

use std::sync::Arc;

use super::{CachedLm, CallHistory, HistoryLm, Lm, ResponseCache, RetryLm, RetryPolicy};

/// `endpoint` behind a [`RetryLm`] with `retry`, a [`CachedLm`] over `cache` when there is one,
/// and a [`HistoryLm`] recording into `history`.
pub(crate) fn layered(
    endpoint: Arc<dyn Lm>,
    retry: RetryPolicy,
    cache: Option<Arc<ResponseCache>>,
    history: Arc<CallHistory>,
) -> Arc<dyn Lm> {
    let retried = RetryLm::new(endpoint, retry);
    let cached: Arc<dyn Lm> = match cache {
        Some(cache) => Arc::new(CachedLm::new(retried, cache)),
        None => Arc::new(retried),
    };
    Arc::new(HistoryLm::new(cached, history))
}
