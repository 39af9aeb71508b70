//! Dispatch: async tools are awaited, sync tools never block the executor (multi-thread and
//! current-thread runtimes), sync callers have an entry point, panics and errors become typed
//! `ToolError`s.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use serde_json::json;
use signet::{Tool, ToolBox, ToolError, tool};

/// Report the thread the tool body ran on.
#[tool]
fn where_sync() -> String {
    format!("{:?}", thread::current().id())
}

/// Report the thread the tool body ran on, without leaving it.
#[tool(inline)]
fn where_inline() -> String {
    format!("{:?}", thread::current().id())
}

/// An async tool that really suspends.
#[tool]
async fn slow_echo(text: String) -> String {
    tokio::time::sleep(Duration::from_millis(1)).await;
    text
}

#[tool]
fn sync_panics() -> i32 {
    panic!("sync boom")
}

#[tool]
async fn async_panics() -> i32 {
    panic!("async boom")
}

#[tool]
fn fails(reason: String) -> Result<i32, String> {
    Err(reason)
}

#[tool]
fn io_result() -> std::io::Result<Vec<u8>> {
    Ok(vec![1, 2])
}

#[tool]
fn unit() {}

fn id(thread: ThreadId) -> String {
    format!("{thread:?}")
}

/// A sync tool that waits until an async task on the same runtime opens the gate: it can only
/// finish if the executor thread stays free while the tool blocks.
struct Gate {
    rx: Mutex<mpsc::Receiver<()>>,
}

#[tool]
impl Gate {
    /// Wait for the gate to open.
    #[tool]
    fn wait_for_gate(&self) -> Result<&'static str, String> {
        let rx = self.rx.lock().map_err(|e| e.to_string())?;
        rx.recv_timeout(Duration::from_secs(10))
            .map_err(|e| format!("gate never opened: {e}"))?;
        Ok("opened")
    }
}

async fn sync_tool_does_not_block_the_executor() {
    let (tx, rx) = mpsc::channel();
    let gate = Arc::new(Gate { rx: Mutex::new(rx) });
    let tools = Gate::tools(&gate);
    let opener = tokio::spawn(async move {
        tokio::task::yield_now().await;
        tx.send(()).unwrap();
    });
    assert_eq!(tools[0].call(json!({})).await.unwrap(), "opened");
    opener.await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn current_thread_sync_tool_does_not_block_the_executor() {
    sync_tool_does_not_block_the_executor().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn multi_thread_sync_tool_does_not_block_the_executor() {
    sync_tool_does_not_block_the_executor().await;
}

#[tokio::test(flavor = "current_thread")]
async fn current_thread_dispatch() {
    let here = id(thread::current().id());
    assert_ne!(
        WhereSyncTool.call(json!({})).await.unwrap(),
        here,
        "sync tools leave the executor"
    );
    assert_eq!(
        WhereInlineTool.call(json!({})).await.unwrap(),
        here,
        "inline tools stay"
    );
    assert_eq!(
        SlowEchoTool.call(json!({"text": "hi"})).await.unwrap(),
        "hi"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_thread_dispatch_runs_calls_concurrently() {
    let calls = (0..16).map(|i| SlowEchoTool.call(json!({"text": format!("m{i}")})));
    let results = futures::future::join_all(calls).await;
    for (i, result) in results.into_iter().enumerate() {
        assert_eq!(result.unwrap(), format!("m{i}"));
    }
    assert!(WhereSyncTool.call(json!({})).await.is_ok());
}

#[tokio::test]
async fn panics_become_errors_and_the_caller_keeps_running() {
    assert_eq!(
        SyncPanicsTool.call(json!({})).await.unwrap_err(),
        ToolError::Panicked {
            tool: "sync_panics".into(),
            message: "sync boom".into()
        }
    );
    assert_eq!(
        AsyncPanicsTool.call(json!({})).await.unwrap_err(),
        ToolError::Panicked {
            tool: "async_panics".into(),
            message: "async boom".into()
        }
    );
    assert_eq!(
        SlowEchoTool
            .call(json!({"text": "still here"}))
            .await
            .unwrap(),
        "still here"
    );
}

#[test]
fn errors_and_return_types() {
    assert_eq!(
        FailsTool
            .call_blocking(json!({"reason": "no"}))
            .unwrap_err(),
        ToolError::Failed {
            tool: "fails".into(),
            message: "no".into()
        }
    );
    assert_eq!(
        FailsTool
            .call_blocking(json!({"reason": "no"}))
            .unwrap_err()
            .to_string(),
        "tool `fails` failed: no"
    );
    assert_eq!(
        IoResultTool.call_blocking(json!({})).unwrap(),
        json!([1, 2])
    );
    assert_eq!(UnitTool.call_blocking(json!({})).unwrap(), json!(null));
    assert_eq!(
        SyncPanicsTool.call_blocking(json!({})).unwrap_err(),
        ToolError::Panicked {
            tool: "sync_panics".into(),
            message: "sync boom".into()
        }
    );
}

#[test]
fn blocking_entry_point_outside_any_runtime() {
    // Async tools get a runtime of their own; sync tools run right here.
    assert_eq!(
        SlowEchoTool
            .call_blocking(json!({"text": "sync caller"}))
            .unwrap(),
        "sync caller"
    );
    assert_eq!(
        WhereSyncTool.call_blocking(json!({})).unwrap(),
        id(thread::current().id())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_entry_point_inside_a_multi_thread_runtime() {
    assert_eq!(
        SlowEchoTool
            .call_blocking(json!({"text": "nested"}))
            .unwrap(),
        "nested"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn blocking_entry_point_inside_a_current_thread_runtime_is_a_typed_error() {
    assert_eq!(
        SlowEchoTool
            .call_blocking(json!({"text": "x"}))
            .unwrap_err(),
        ToolError::BlockingInAsyncContext {
            tool: "slow_echo".into()
        }
    );
    // Sync tools need no runtime, so they still work.
    assert!(WhereSyncTool.call_blocking(json!({})).is_ok());
}

/// How many pages `crawl` had read when it saw its call cancelled (0: not yet).
static CRAWL_STOPPED_AT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Read pages until done or cancelled.
#[tool]
fn crawl() -> Result<String, String> {
    for page in 1..=400 {
        if signet::tool::is_cancelled() {
            CRAWL_STOPPED_AT.store(page, std::sync::atomic::Ordering::SeqCst);
            return Err("cancelled".into());
        }
        thread::sleep(Duration::from_millis(5));
    }
    Ok("read everything".into())
}

/// Whether the call looked cancelled while it ran to completion.
#[tool]
fn cancelled_now() -> bool {
    signet::tool::is_cancelled()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sync_tool_given_up_sees_is_cancelled_and_can_stop() {
    use std::sync::atomic::Ordering::SeqCst;
    let call = CrawlTool.call(json!({}));
    assert!(
        tokio::time::timeout(Duration::from_millis(40), call)
            .await
            .is_err()
    );
    // The thread notices at its next page instead of reading all 400 (2 s).
    for _ in 0..100 {
        if CRAWL_STOPPED_AT.load(SeqCst) != 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopped = CRAWL_STOPPED_AT.load(SeqCst);
    assert!((1..100).contains(&stopped), "stopped at page {stopped}");
    // A call that completes is never cancelled, and outside a call nothing is.
    assert_eq!(
        CancelledNowTool.call(json!({})).await.unwrap(),
        json!(false)
    );
    assert!(!signet::tool::is_cancelled());
}

/// Remove a file (needs a person's approval).
#[tool(confirm)]
fn remove(path: String) -> String {
    format!("removed {path}")
}

/// Wait, then say which.
#[tool]
async fn wait_then(ms: u64, say: String) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    say
}

#[tokio::test]
async fn a_tool_executor_runs_a_models_tool_calls_as_the_loops_do() {
    use signet::adapter::ToolCalls;
    use signet::module::{Approval, Limits, Observation, ToolExecutor};
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(RemoveTool), Arc::new(WaitThenTool)];
    let calls: ToolCalls = serde_json::from_value(json!({"tool_calls": [
        {"name": "wait_then", "args": {"ms": 80, "say": "slow"}},
        {"name": "wait_then", "args": {"ms": 1, "say": "fast"}},
        {"name": "wait_then", "args": "{\"ms\": 1, \"say\": \"from text\"}"},
        {"name": "wait_then", "args": "ms=1"},
        {"name": "wait_then", "args": {"ms": "one"}},
        {"name": "remove", "args": {"path": "/tmp/a"}},
    ]}))
    .unwrap();
    let executor = ToolExecutor::new(tools.clone()).unwrap();
    let seen = executor.execute_all(&calls).await;
    // In the calls' order, though the first finished last.
    assert_eq!(seen[0], Observation::Output(json!("slow")));
    assert_eq!(seen[1], Observation::Output(json!("fast")));
    assert_eq!(seen[2], Observation::Output(json!("from text")));
    let error = |o: &Observation| match o {
        Observation::Error(text) => text.clone(),
        other => panic!("expected an error: {other:?}"),
    };
    assert!(
        error(&seen[3])
            .starts_with("Execution error in wait_then: the arguments are not valid JSON")
    );
    assert!(
        error(&seen[4]).contains("invalid arguments for tool `wait_then`"),
        "{}",
        error(&seen[4])
    );
    // No approver: a confirmed tool is denied, never run.
    assert!(error(&seen[5]).contains("needs a person's approval and was denied"));

    let approving = ToolExecutor::new(tools.clone())
        .unwrap()
        .with_limits(Limits::default().max_concurrent_tools(1))
        .with_approver(|_| async { Approval::Approve });
    assert_eq!(
        approving.execute(&calls.tool_calls[5]).await,
        Observation::Output(json!("removed /tmp/a"))
    );
    let twice = ToolExecutor::new([Arc::new(RemoveTool) as Arc<dyn Tool>, Arc::new(RemoveTool)]);
    assert!(matches!(twice, Err(signet::Error::ToolNames { .. })));
}
