//! Running async code from sync code, with one rule for the whole crate.
//!
//! * No tokio runtime on this thread: the future runs on a current-thread runtime kept per thread.
//! * A multi-thread runtime: the future runs through `block_in_place` on that runtime.
//! * A current-thread runtime: blocking its only thread would deadlock, so this is the typed error
//!   [`BlockingError::CurrentThreadRuntime`]; `await` the async API instead.

use std::future::Future;

use tokio::runtime::{Handle, RuntimeFlavor};

/// Why a blocking call could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockingError {
    /// Called on a thread that drives a current-thread tokio runtime.
    #[error(
        "a blocking call was made from inside a current-thread tokio runtime, where it would deadlock; \
         await the async method instead"
    )]
    CurrentThreadRuntime,
    /// A runtime for the call could not be started.
    #[error("could not start a runtime for a blocking call: {0}")]
    Runtime(String),
}

/// Drives `future` to completion from sync code (see the [module docs](self)).
///
/// ```
/// let answer = signet::blocking::block_on(async { 40 + 2 }).unwrap();
/// assert_eq!(answer, 42);
/// ```
pub fn block_on<F: Future>(future: F) -> Result<F::Output, BlockingError> {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            Ok(tokio::task::block_in_place(|| handle.block_on(future)))
        }
        Ok(_) => Err(BlockingError::CurrentThreadRuntime),
        Err(_) => THREAD_RUNTIME.with(|runtime| match runtime {
            Ok(runtime) => Ok(runtime.block_on(future)),
            Err(message) => Err(BlockingError::Runtime(message.clone())),
        }),
    }
}

thread_local! {
    static THREAD_RUNTIME: Result<tokio::runtime::Runtime, String> =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string());
}
