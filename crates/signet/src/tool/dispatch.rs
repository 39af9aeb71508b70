//! How tool bodies are run (the rules are in the [`tool`](super) module's docs): panic capture,
//! the blocking pool for sync bodies (with a bound on the calls of one tool that were given up on
//! and still run, [`max_blocking_calls_per_tool`]), and the sync entry point.

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use tokio::runtime::Handle;

use super::cancel::{CancelOnDrop, CancelToken, on_task, on_thread};
use super::error::ToolError;

/// Runs a sync tool body without blocking the async executor.
pub async fn run_blocking<F, R>(tool: &str, body: F) -> Result<R, ToolError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    if Handle::try_current().is_err() {
        return run_inline(tool, body);
    }
    // Given up before the thread returns (a time limit, a dropped run): the body's
    // `is_cancelled()` turns true.
    // A call given up on counts until its body returns (see `set_max_blocking_calls_per_tool`).
    let (caller, thread) = claim(tool)?;
    let token = CancelToken::default();
    let guard = CancelOnDrop::new(&token);
    let progress = super::progress::current();
    let joined = tokio::task::spawn_blocking(move || {
        let _thread = thread;
        super::progress::on_thread(progress, || on_thread(token, body))
    })
    .await;
    caller.disarm();
    guard.finish();
    match joined {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => Err(panicked(tool, e.into_panic())),
        Err(e) => Err(ToolError::Failed {
            tool: tool.to_owned(),
            message: e.to_string(),
        }),
    }
}

/// How many calls of one sync tool that were given up on (timed out, cancelled) may still hold
/// threads of the blocking pool, unless set with [`set_max_blocking_calls_per_tool`].
pub const DEFAULT_MAX_BLOCKING_CALLS_PER_TOOL: usize = 16;

static MAX_BLOCKING_CALLS_PER_TOOL: AtomicUsize =
    AtomicUsize::new(DEFAULT_MAX_BLOCKING_CALLS_PER_TOOL);

/// Sets how many calls of one sync tool (by name) that were given up on may still be running in
/// the process (default [`DEFAULT_MAX_BLOCKING_CALLS_PER_TOOL`]). A sync body cannot be stopped:
/// a call that timed out (or whose run was dropped) keeps its thread of tokio's blocking pool
/// until the body returns, so a tool that hangs, called again and again, would take every thread
/// of the pool. Once this many such calls are still running, a new call of the tool fails at once
/// with [`ToolError::Busy`], until some of them return. Calls that are awaited are not limited
/// here. 0 is taken as 1.
pub fn set_max_blocking_calls_per_tool(n: usize) {
    MAX_BLOCKING_CALLS_PER_TOOL.store(n.max(1), Ordering::Relaxed);
}

/// How many given-up calls of one sync tool may still be running (see
/// [`set_max_blocking_calls_per_tool`]).
pub fn max_blocking_calls_per_tool() -> usize {
    MAX_BLOCKING_CALLS_PER_TOOL.load(Ordering::Relaxed)
}

/// A call's state, shared by its caller and its thread.
const RUNNING: u8 = 0;
const ABANDONED: u8 = 1;
const DONE: u8 = 2;

/// The caller's side of a sync call: dropped before [`disarm`](Self::disarm) (the caller gave
/// up while the thread runs), it counts the call as abandoned until its thread returns.
struct Caller {
    abandoned: Arc<AtomicUsize>,
    state: Arc<AtomicU8>,
    armed: bool,
}

/// The thread's side of a sync call: dropped when the body returns (or unwinds).
struct OnThread {
    abandoned: Arc<AtomicUsize>,
    state: Arc<AtomicU8>,
}

/// Both sides of a call of `tool`, or [`ToolError::Busy`] when too many of its given-up calls
/// still run.
fn claim(tool: &str) -> Result<(Caller, OnThread), ToolError> {
    static ABANDONED_CALLS: Mutex<Option<HashMap<String, Arc<AtomicUsize>>>> = Mutex::new(None);
    let abandoned = {
        let mut calls = ABANDONED_CALLS.lock().unwrap_or_else(|e| e.into_inner());
        calls
            .get_or_insert_with(HashMap::new)
            .entry(tool.to_owned())
            .or_default()
            .clone()
    };
    let limit = max_blocking_calls_per_tool();
    if abandoned.load(Ordering::Acquire) >= limit {
        return Err(ToolError::Busy {
            tool: tool.to_owned(),
            limit,
        });
    }
    let state = Arc::new(AtomicU8::new(RUNNING));
    let caller = Caller {
        abandoned: abandoned.clone(),
        state: state.clone(),
        armed: true,
    };
    Ok((caller, OnThread { abandoned, state }))
}

impl Caller {
    /// The caller got the result: nothing was given up.
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for Caller {
    fn drop(&mut self) {
        if self.armed
            && self
                .state
                .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.abandoned.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Drop for OnThread {
    fn drop(&mut self) {
        if self.state.swap(DONE, Ordering::AcqRel) == ABANDONED {
            self.abandoned.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Runs a sync tool body on the current thread, catching a panic.
pub fn run_inline<F, R>(tool: &str, body: F) -> Result<R, ToolError>
where
    F: FnOnce() -> R,
{
    catch_unwind(AssertUnwindSafe(body)).map_err(|payload| panicked(tool, payload))
}

/// Awaits an async tool body, catching a panic.
pub async fn run_async<Fut>(tool: &str, body: Fut) -> Result<Fut::Output, ToolError>
where
    Fut: Future,
{
    let token = CancelToken::default();
    let guard = CancelOnDrop::new(&token);
    let result = on_task(token, AssertUnwindSafe(body).catch_unwind()).await;
    guard.finish();
    result.map_err(|payload| panicked(tool, payload))
}

/// Drives a tool's future to completion from sync code (the crate's rule:
/// [`crate::blocking::block_on`]), its failure as a [`ToolError`].
pub(crate) fn block_on_tool<Fut>(tool: &str, future: Fut) -> Result<Fut::Output, ToolError>
where
    Fut: Future,
{
    crate::blocking::block_on(future).map_err(|error| match error {
        crate::blocking::BlockingError::CurrentThreadRuntime => ToolError::BlockingInAsyncContext {
            tool: tool.to_owned(),
        },
        other => ToolError::Failed {
            tool: tool.to_owned(),
            message: other.to_string(),
        },
    })
}

fn panicked(tool: &str, payload: Box<dyn Any + Send>) -> ToolError {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    };
    ToolError::Panicked {
        tool: tool.to_owned(),
        message,
    }
}
