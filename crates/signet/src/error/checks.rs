//! Why an answer was refused: what each output check found wrong ([`CheckFailure`]), each
//! refused attempt ([`FailedAttempt`]) and the error of a call whose answer still failed after
//! its last re-ask ([`ChecksFailed`]).

use serde::{Deserialize, Serialize};

use crate::adapter::Fields;

/// What one output check found wrong with an answer: the check's name, the output field it is
/// about (if one), the message the model is re-asked with, and the tools a re-ask of an agent
/// offers (a check that found a figure no tool returned names the tools not called yet).
///
/// ```
/// use signet::module::check::CheckFailure;
/// let failure = CheckFailure::new("one word", "answer with one word")
///     .on_field("answer")
///     .offering(["lookup"]);
/// assert_eq!(failure.to_string(), "check `one word` on `answer`: answer with one word");
/// assert_eq!(failure.offer_tools, ["lookup"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CheckFailure {
    /// The check's name.
    pub check: String,
    /// The output field the failure is about, when it is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// What is wrong, in words the model can act on: it is shown the message when re-asked.
    pub message: String,
    /// Tools a re-ask of an agent offers: its next turn must call one of these (the turn after
    /// answers); empty: the agent's tools as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offer_tools: Vec<String>,
}

impl CheckFailure {
    /// A failure of the check named `check`, saying `message`.
    pub fn new(check: impl Into<String>, message: impl Into<String>) -> CheckFailure {
        CheckFailure {
            check: check.into(),
            field: None,
            message: message.into(),
            offer_tools: Vec::new(),
        }
    }

    /// The same failure, about output field `field`.
    pub fn on_field(mut self, field: impl Into<String>) -> CheckFailure {
        self.field = Some(field.into());
        self
    }

    /// The same failure, offering `tools` to an agent's re-ask.
    pub fn offering<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> CheckFailure {
        self.offer_tools = tools.into_iter().map(Into::into).collect();
        self
    }
}

impl std::fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "check `{}`", self.check)?;
        if let Some(field) = &self.field {
            write!(f, " on `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// One answer its checks refused: the outputs as the model gave them (for a reply stopped while
/// it streamed, the fields written so far) and every check that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FailedAttempt {
    /// The refused outputs.
    pub outputs: Fields,
    /// Why: each failing check, in the order the checks were added.
    pub failures: Vec<CheckFailure>,
    /// Whether the reply was stopped while it streamed, at the first failure (the outputs are
    /// then what had been written).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_early: bool,
}

impl FailedAttempt {
    /// An attempt whose `outputs` failed `failures`.
    pub fn new(outputs: Fields, failures: Vec<CheckFailure>) -> FailedAttempt {
        FailedAttempt {
            outputs,
            failures,
            stopped_early: false,
        }
    }

    /// The failures' messages, one per line: what a re-ask shows the model.
    pub fn message(&self) -> String {
        self.failures
            .iter()
            .map(|f| f.message.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A module's answer failed its output checks on every attempt: the first answer and each
/// re-asked one, in order, with why each was refused. A module with a
/// [fallback](crate::module::check::CheckFallback) answers instead of failing.
///
/// ```
/// use signet::module::check::{CheckFailure, ChecksFailed, FailedAttempt};
/// let attempt = FailedAttempt::new(Default::default(), vec![CheckFailure::new("short", "too long")]);
/// let error = ChecksFailed::new(vec![attempt.clone(), attempt]);
/// assert_eq!(
///     error.to_string(),
///     "the answer failed its checks on all 2 attempts; the last: check `short`: too long"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[non_exhaustive]
pub struct ChecksFailed {
    /// Every refused attempt, the first answer first.
    pub attempts: Vec<FailedAttempt>,
}

impl ChecksFailed {
    /// The error after `attempts`.
    pub fn new(attempts: Vec<FailedAttempt>) -> ChecksFailed {
        ChecksFailed { attempts }
    }

    /// The last attempt's failures.
    pub fn last_failures(&self) -> &[CheckFailure] {
        self.attempts.last().map_or(&[], |a| a.failures.as_slice())
    }
}

impl std::fmt::Display for ChecksFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.attempts.len();
        write!(f, "the answer failed its checks on all {n} attempts")?;
        let last: Vec<String> = self.last_failures().iter().map(|f| f.to_string()).collect();
        if !last.is_empty() {
            write!(f, "; the last: {}", last.join("; "))?;
        }
        Ok(())
    }
}
