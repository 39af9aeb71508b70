//! Cooperative cancellation for tool bodies: a flag a long tool checks to stop early once its
//! call was given up (timed out, or its run dropped).

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the tool call running here was given up: its time limit passed or its run was
/// dropped. An async tool is simply dropped at its next `.await`; a sync tool's thread cannot be
/// interrupted, so a long one should check this between units of work and stop (what it returns
/// then is discarded). Outside a tool call it is always `false`.
///
/// ```
/// use std::time::Duration;
/// use signet::tool::{FnTool, is_cancelled};
/// use signet::Tool;
///
/// let crawl = FnTool::builder("crawl").sync_fn(|_args| {
///     for page in 0..1_000 {
///         if is_cancelled() {
///             return Err(format!("stopped after {page} pages"));
///         }
///         std::thread::sleep(Duration::from_millis(5)); // fetch a page
///     }
///     Ok("done".to_owned())
/// });
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let gave_up = tokio::time::timeout(Duration::from_millis(30), crawl.call(serde_json::json!({}))).await;
/// assert!(gave_up.is_err()); // the crawl sees is_cancelled() at its next page and stops
/// # });
/// ```
pub fn is_cancelled() -> bool {
    CancelToken::current().is_cancelled()
}

/// The cancellation flag of one tool call; [`CancelToken::current`] inside a tool body. Clone it
/// into threads the tool starts.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// The token of the tool call running on this thread or task (a token that is never
    /// cancelled outside a call).
    pub fn current() -> CancelToken {
        if let Some(token) = THREAD_TOKEN.with(|token| token.borrow().clone()) {
            return token;
        }
        TASK_TOKEN.try_with(CancelToken::clone).unwrap_or_default()
    }

    /// Whether the call was given up.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

thread_local! {
    static THREAD_TOKEN: RefCell<Option<CancelToken>> = const { RefCell::new(None) };
}

tokio::task_local! {
    static TASK_TOKEN: CancelToken;
}

/// Cancels its token when dropped before [`finish`](Self::finish): the future that waited for the
/// tool's result was dropped.
pub(crate) struct CancelOnDrop(Option<CancelToken>);

impl CancelOnDrop {
    pub(crate) fn new(token: &CancelToken) -> CancelOnDrop {
        CancelOnDrop(Some(token.clone()))
    }

    /// The call completed: nothing to cancel.
    pub(crate) fn finish(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = &self.0 {
            token.cancel();
        }
    }
}

/// Runs a sync body with `token` as this thread's current token.
pub(crate) fn on_thread<R>(token: CancelToken, body: impl FnOnce() -> R) -> R {
    struct Restore(Option<CancelToken>);
    impl Drop for Restore {
        fn drop(&mut self) {
            THREAD_TOKEN.with(|slot| *slot.borrow_mut() = self.0.take());
        }
    }
    let previous = THREAD_TOKEN.with(|slot| slot.borrow_mut().replace(token));
    let _restore = Restore(previous);
    body()
}

/// Runs an async body with `token` as its task's current token.
pub(crate) async fn on_task<F: std::future::Future>(token: CancelToken, body: F) -> F::Output {
    TASK_TOKEN.scope(token, body).await
}
