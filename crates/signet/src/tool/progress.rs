//! Progress of a running call, reported to whoever waits for it: a tool served over MCP sends
//! each report to the client as a `notifications/progress` message.
//!
//! A ReAct run reports one line per step of its own (a turn begins, a tool is called or returns,
//! the answer is written), and any tool body may add its own with [`report_progress`]. Reports go
//! to the sink installed around the call with [`with_progress`]; with none installed they cost a
//! task-local lookup and go nowhere.

use std::cell::RefCell;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

/// Where progress reports go: called once per report, with its message, on the task (or the
/// blocking-pool thread of a sync tool) that made it. Keep it cheap — send the message on a
/// channel rather than doing I/O in it.
pub type ProgressSink = Arc<dyn Fn(String) + Send + Sync>;

tokio::task_local! {
    static TASK_SINK: ProgressSink;
}

thread_local! {
    static THREAD_SINK: RefCell<Option<ProgressSink>> = const { RefCell::new(None) };
}

/// Reports `message` as progress of the call running here, to the sink installed with
/// [`with_progress`] (an MCP client waiting on a served tool, for one). Nothing happens when no
/// one listens, so a tool may report unconditionally. Works in async tool bodies and in sync ones
/// (which run on the blocking pool).
///
/// ```
/// use signet::tool::{FnTool, ProgressLog, report_progress, with_progress};
/// use signet::Tool;
///
/// let import = FnTool::builder("import").sync_fn(|_args| {
///     for file in ["a.csv", "b.csv"] {
///         report_progress(format!("reading {file}"));
///     }
///     Ok::<_, String>("2 files")
/// });
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let log = ProgressLog::new();
/// with_progress(log.sink(), import.call(serde_json::json!({}))).await.unwrap();
/// assert_eq!(log.lines(), ["reading a.csv", "reading b.csv"]);
/// # });
/// ```
pub fn report_progress(message: impl Into<String>) {
    if let Some(sink) = current() {
        sink(message.into());
    }
}

/// Whether a [report](report_progress) made here reaches anyone: build costly messages only
/// when it does.
pub fn progress_listened() -> bool {
    current().is_some()
}

/// The sink that reports made here go to, to hand to code that reports from elsewhere — another
/// task, or a callback such as an MCP client's progress handler. `None` when no one listens.
pub fn progress_sink() -> Option<ProgressSink> {
    current()
}

/// Runs `body` with `sink` receiving every progress report made inside it — by the tools it
/// calls, sync or async, and by ReAct runs, nested ones included. An inner `with_progress`
/// takes the reports of its own body.
pub async fn with_progress<F>(sink: impl Fn(String) + Send + Sync + 'static, body: F) -> F::Output
where
    F: Future,
{
    TASK_SINK.scope(Arc::new(sink), body).await
}

/// A sink that keeps every line, in order: for tests, and for a log shown after the call.
///
/// ```
/// use signet::tool::{ProgressLog, report_progress, with_progress};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let log = ProgressLog::new();
/// with_progress(log.sink(), async { report_progress("half way") }).await;
/// assert_eq!(log.lines(), ["half way"]);
/// # });
/// ```
#[derive(Debug, Clone, Default)]
pub struct ProgressLog(Arc<Mutex<Vec<String>>>);

impl ProgressLog {
    /// An empty log.
    pub fn new() -> ProgressLog {
        ProgressLog::default()
    }

    /// A sink that adds each line to this log (for [`with_progress`]).
    pub fn sink(&self) -> impl Fn(String) + Send + Sync + 'static {
        let lines = self.0.clone();
        move |line| {
            lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(line)
        }
    }

    /// The lines so far.
    pub fn lines(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The sink reports made here go to: the thread's (inside a sync tool body), else the task's.
pub(crate) fn current() -> Option<ProgressSink> {
    if let Some(sink) = THREAD_SINK.with(|sink| sink.borrow().clone()) {
        return Some(sink);
    }
    TASK_SINK.try_with(Arc::clone).ok()
}

/// Runs a sync body with `sink` as its thread's sink (the task-local one does not cross to the
/// blocking pool).
pub(crate) fn on_thread<R>(sink: Option<ProgressSink>, body: impl FnOnce() -> R) -> R {
    struct Restore(Option<ProgressSink>);
    impl Drop for Restore {
        fn drop(&mut self) {
            THREAD_SINK.with(|slot| *slot.borrow_mut() = self.0.take());
        }
    }
    let previous = THREAD_SINK.with(|slot| std::mem::replace(&mut *slot.borrow_mut(), sink));
    let _restore = Restore(previous);
    body()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reports_reach_the_innermost_sink_and_none_leak_outside() {
        report_progress("nobody listens");
        assert!(!progress_listened());
        let (outer, inner) = (ProgressLog::new(), ProgressLog::new());
        with_progress(outer.sink(), async {
            report_progress("outer 1");
            with_progress(inner.sink(), async { report_progress("inner") }).await;
            report_progress("outer 2");
        })
        .await;
        assert_eq!(outer.lines(), ["outer 1", "outer 2"]);
        assert_eq!(inner.lines(), ["inner"]);
    }

    #[test]
    fn a_thread_sink_is_restored_after_the_body() {
        let log = ProgressLog::new();
        on_thread(Some(Arc::new(log.sink())), || report_progress("inside"));
        report_progress("after");
        assert_eq!(log.lines(), ["inside"]);
        assert!(!progress_listened());
    }
}
