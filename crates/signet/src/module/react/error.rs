//! Why a ReAct run failed, with what it did before it failed.

use super::trajectory::Trajectory;
use crate::error::Error;
use crate::lm::Usage;

/// Why a ReAct run failed, with everything the run did before: every failure of a run carries its
/// steps and usage (empty when it failed before the first step), never only a message.
///
/// ```
/// use signet::module::{ReActError, react::RunFailure, Trajectory};
/// use signet::lm::Usage;
/// let error = ReActError {
///     reason: RunFailure::LmCallLimit { limit: 3 },
///     trajectory: Trajectory::default(),
///     usage: Usage::default(),
/// };
/// assert_eq!(error.to_string(), "the agent's run failed after 0 steps: the run reached its limit of 3 LM calls");
/// assert!(!error.is_retryable());
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("the agent's run failed after {} steps: {reason}", trajectory.steps.len())]
pub struct ReActError {
    /// What went wrong.
    #[source]
    pub reason: RunFailure,
    /// The steps so far.
    pub trajectory: Trajectory,
    /// LM usage up to the failure.
    pub usage: Usage,
}

/// What ended a ReAct run with an error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RunFailure {
    /// An LM call, a reply that could not be read where the run cannot go on without it (the
    /// extractor's), or the inputs and outputs themselves.
    #[error(transparent)]
    Call(#[from] Error),
    /// The trajectory no longer fits the context window, even after truncation.
    #[error("the trajectory does not fit the context window: {message}")]
    TrajectoryTooLong {
        /// What the provider and the truncation policy reported.
        message: String,
    },
    /// In history mode, the forced `submit` did not produce the outputs (no `submit` call, or
    /// one whose arguments were not valid).
    #[error("{message}")]
    NoFinalOutputs {
        /// DSPy's message, with the `submit` errors.
        message: String,
    },
    /// A suspended run could not be resumed (another agent, a missing decision, ..).
    #[error("the run cannot be resumed: {0}")]
    Resume(#[from] crate::error::ResumeError),
    /// The run reached its limit of LM calls ([`Limits::max_lm_calls`](super::Limits::max_lm_calls)).
    #[error("the run reached its limit of {limit} LM calls")]
    LmCallLimit {
        /// The limit.
        limit: u32,
    },
    /// The next LM call would have gone past the run's [`Budget`](crate::lm::Budget) of tokens or
    /// cost ([`Limits::budget`](super::Limits::budget)); it was not made.
    #[error("{0}")]
    Budget(crate::lm::BudgetExceeded),
}

impl RunFailure {
    /// The failure's class as the OpenTelemetry `error.type` attribute records it: a call
    /// error's [`Error::error_type`], else `trajectory_too_long`, `no_final_outputs`, `resume`,
    /// `lm_call_limit` or `budget_exceeded`.
    pub fn error_type(&self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed(match self {
            RunFailure::Call(error) => return error.error_type(),
            RunFailure::TrajectoryTooLong { .. } => "trajectory_too_long",
            RunFailure::NoFinalOutputs { .. } => "no_final_outputs",
            RunFailure::Resume(_) => "resume",
            RunFailure::LmCallLimit { .. } => "lm_call_limit",
            RunFailure::Budget(_) => "budget_exceeded",
        })
    }
}

impl ReActError {
    pub(crate) fn new(
        reason: impl Into<RunFailure>,
        trajectory: &Trajectory,
        usage: Usage,
    ) -> Self {
        ReActError {
            reason: reason.into(),
            trajectory: trajectory.clone(),
            usage,
        }
    }

    /// A failure before the run made any step (no LM configured, inputs that do not serialize).
    pub(crate) fn before_start(reason: impl Into<RunFailure>) -> Self {
        ReActError::new(reason, &Trajectory::default(), Usage::default())
    }

    /// Whether running again may succeed: the run failed on a transient LM error.
    pub fn is_retryable(&self) -> bool {
        matches!(&self.reason, RunFailure::Call(error) if error.is_retryable())
    }

    /// The call error behind the failure, when a call is what failed.
    pub fn call_error(&self) -> Option<&Error> {
        match &self.reason {
            RunFailure::Call(error) => Some(error),
            _ => None,
        }
    }
}
