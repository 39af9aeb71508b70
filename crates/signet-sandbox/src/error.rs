//! Why a run gave no result ([`SandboxError`]).

use std::time::Duration;

/// Why a run gave no result. Every limit and every refusal has its own kind; none of them
/// harms the process or the next run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The code is not valid JavaScript.
    #[error("syntax error: {message}{}", at_text(.at))]
    Syntax {
        /// The engine's message.
        message: String,
        /// Where (`eval_script:line:column`), when the engine says.
        at: Option<String>,
    },
    /// The code threw, and nothing caught it (a granted function's failure included).
    #[error("the code threw {name}: {message}{}", at_text(.at))]
    Thrown {
        /// The error's name (`TypeError`, `Error`, ..; `value` when something else was thrown).
        name: String,
        /// Its message (or the thrown value as JSON).
        message: String,
        /// Where, when the engine says.
        at: Option<String>,
    },
    /// The code used more memory than [`Limits::memory_bytes`](crate::Limits::memory_bytes).
    #[error("the code ran out of its {limit} bytes of memory")]
    OutOfMemory {
        /// The limit.
        limit: usize,
    },
    /// The run took longer than [`Limits::time`](crate::Limits::time).
    #[error("the code ran past its time limit of {limit:?}")]
    TimeLimit {
        /// The limit.
        limit: Duration,
    },
    /// The run took more steps than [`Limits::max_steps`](crate::Limits::max_steps).
    #[error("the code ran past its limit of {limit} steps")]
    StepLimit {
        /// The limit.
        limit: u64,
    },
    /// The code recursed deeper than [`Limits::stack_bytes`](crate::Limits::stack_bytes) allow.
    #[error("the code recursed past its stack limit of {limit} bytes")]
    StackOverflow {
        /// The limit.
        limit: usize,
    },
    /// The result cannot be written as JSON (a value nested too deeply, a cycle).
    #[error("the result is not a JSON value: {reason}")]
    NotJson {
        /// Why.
        reason: String,
    },
    /// The result's JSON is longer than [`Limits::max_output_bytes`](crate::Limits::max_output_bytes).
    #[error("the result's JSON is longer than {limit} bytes")]
    ResultTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The engine itself failed (it could not start, or its thread ended).
    #[error("the sandbox failed: {0}")]
    Engine(String),
}

fn at_text(at: &Option<String>) -> String {
    at.as_ref()
        .map_or_else(String::new, |at| format!(" (at {at})"))
}
