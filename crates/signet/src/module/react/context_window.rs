//! What every protocol of the tool loop does when the provider says a prompt does not fit its
//! context window (DSPy's `_call_with_potential_trajectory_truncation`): truncate what the loop
//! has gathered and ask again, three calls in all, then give up with the provider's message.
//! Text mode's steps and answer, native turns (ReAct's and `Predict` with tools') and history
//! mode's turns all count their calls and word their failure with one [`WindowRetries`].

use std::fmt::Display;

/// How many calls are made in all while the provider keeps saying the prompt does not fit.
pub(crate) const CONTEXT_ATTEMPTS: usize = 3;

/// The calls of one step while the provider refuses its prompt as too long:
///
/// ```text
/// let mut retries = WindowRetries::new("Trajectory");
/// while retries.another_call() {
///     match call().await {
///         Ok(reply) => return Ok(reply),
///         Err(TooLong(message)) => {
///             retries.refused(message);
///             truncate().await.map_err(|reason| retries.cannot_truncate(reason))?;
///         }
///         Err(other) => return Err(other),
///     }
/// }
/// Err(retries.exhausted())
/// ```
#[derive(Debug)]
pub(crate) struct WindowRetries {
    /// What is truncated, as the warning names it (`Trajectory`, as DSPy's, or `The history`).
    what: &'static str,
    calls: usize,
    last: String,
}

impl WindowRetries {
    pub(crate) fn new(what: &'static str) -> WindowRetries {
        WindowRetries {
            what,
            calls: 0,
            last: String::new(),
        }
    }

    /// Whether another call may be made ([`CONTEXT_ATTEMPTS`] in all); counts it.
    pub(crate) fn another_call(&mut self) -> bool {
        let more = self.calls < CONTEXT_ATTEMPTS;
        self.calls += usize::from(more);
        more
    }

    /// The provider refused the prompt as too long, saying `message`: logged (DSPy's warning)
    /// and kept for the failure.
    pub(crate) fn refused(&mut self, message: String) {
        tracing::warn!(
            "{} exceeded the context window, truncating the oldest tool call information.",
            self.what
        );
        self.last = message;
    }

    /// The failure when truncating could not shorten the prompt, for `reason`.
    pub(crate) fn cannot_truncate(&self, reason: impl Display) -> String {
        format!("{}; {reason}", self.last)
    }

    /// The failure once every call was refused.
    pub(crate) fn exhausted(&self) -> String {
        format!(
            "the context window was exceeded even after {CONTEXT_ATTEMPTS} truncations: {}",
            self.last
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_calls_in_all_then_the_last_message() {
        let mut retries = WindowRetries::new("Trajectory");
        let mut calls = 0;
        while retries.another_call() {
            calls += 1;
            retries.refused(format!("too long {calls}"));
        }
        assert_eq!(calls, 3);
        assert_eq!(
            retries.exhausted(),
            "the context window was exceeded even after 3 truncations: too long 3"
        );
        assert_eq!(
            retries.cannot_truncate("nothing left to drop"),
            "too long 3; nothing left to drop"
        );
    }
}
