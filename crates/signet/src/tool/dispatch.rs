//! How tool bodies are run (the rules are in the [`tool`](super) module's docs): panic capture,
//! the blocking pool for sync bodies, and the sync entry point.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};

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
    let token = CancelToken::default();
    let guard = CancelOnDrop::new(&token);
    let progress = super::progress::current();
    let joined = tokio::task::spawn_blocking(move || {
        super::progress::on_thread(progress, || on_thread(token, body))
    })
    .await;
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
