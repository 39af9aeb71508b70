//! How tool bodies are run: the one rule for sync code, panic capture, and the sync entry point.
//!
//! * **Async tools** are awaited on the caller's task. A panic inside them is caught and becomes
//!   [`ToolError::Panicked`].
//! * **Sync tools** run on tokio's blocking pool ([`tokio::task::spawn_blocking`]) when called from
//!   inside a tokio runtime (multi-thread or current-thread), so a slow sync tool never stalls the
//!   executor. Outside tokio they run on the calling thread. `#[tool(inline)]` opts a cheap,
//!   non-blocking function out of the hop to the blocking pool.
//! * **Sync callers** use [`Tool::call_blocking`](crate::Tool::call_blocking): sync tools run
//!   directly; async tools run on a per-thread current-thread runtime when there is no runtime on the
//!   thread, or through `block_in_place` on a multi-thread runtime. On a thread that drives a
//!   current-thread runtime blocking would deadlock, so that case is the typed error
//!   [`ToolError::BlockingInAsyncContext`].

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

use futures::FutureExt;
use tokio::runtime::{Handle, RuntimeFlavor};

use super::error::ToolError;

/// Runs a sync tool body without blocking the async executor (see the [module docs](self)).
pub async fn run_blocking<F, R>(tool: &str, body: F) -> Result<R, ToolError>
where
    F: FnOnce() -> R + Send + 'static,
    R: Send + 'static,
{
    if Handle::try_current().is_err() {
        return run_inline(tool, body);
    }
    match tokio::task::spawn_blocking(body).await {
        Ok(value) => Ok(value),
        Err(e) if e.is_panic() => Err(panicked(tool, e.into_panic())),
        Err(e) => Err(ToolError::Failed {
            tool: tool.to_owned(),
            message: e.to_string(),
        }),
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
    AssertUnwindSafe(body)
        .catch_unwind()
        .await
        .map_err(|payload| panicked(tool, payload))
}

/// Drives a future to completion from sync code (see the [module docs](self) for the rule).
pub fn block_on<Fut>(tool: &str, future: Fut) -> Result<Fut::Output, ToolError>
where
    Fut: Future,
{
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            Ok(tokio::task::block_in_place(|| handle.block_on(future)))
        }
        Ok(_) => Err(ToolError::BlockingInAsyncContext {
            tool: tool.to_owned(),
        }),
        Err(_) => THREAD_RUNTIME.with(|runtime| match runtime {
            Ok(runtime) => Ok(runtime.block_on(future)),
            Err(message) => Err(ToolError::Failed {
                tool: tool.to_owned(),
                message: format!("could not start a runtime for a blocking call: {message}"),
            }),
        }),
    }
}

thread_local! {
    static THREAD_RUNTIME: Result<tokio::runtime::Runtime, String> =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string());
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
