//! Why a prediction failed: [`Error`], shared by every adapted call, `Predict`, `ChainOfThought`
//! and each step of a ReAct run (whose own failures are [`ReActError`](crate::module::ReActError)).

mod checks;

use std::sync::Arc;

pub use checks::{CheckFailure, ChecksFailed, FailedAttempt};

use crate::adapter::ParseError;
use crate::lm::LmError;

/// Why a call failed: the LM, the reply, or the values on either side of it.
///
/// ```
/// use signet::Error;
/// use signet::lm::LmError;
/// let error = Error::from(LmError::RateLimited { retry_after: None, message: "slow down".into() });
/// assert!(error.is_retryable());
/// assert!(error.to_string().contains("rate limited"));
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The LM call failed.
    #[error(transparent)]
    Lm(#[from] LmError),
    /// The reply could not be read (after the fallbacks, if any).
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The signature or inputs cannot be used with this adapter or LM.
    #[error("invalid signature for this call: {message}")]
    InvalidSignature {
        /// What is wrong.
        message: String,
    },
    /// Two tools offered to one module share a name, or a tool takes a name the module reserves
    /// (ReAct's `finish`): the model could not say which it calls. Checked before the first LM
    /// call.
    #[error("{message}")]
    ToolNames {
        /// Which names clash.
        message: String,
    },
    /// An input field of the signature was not given.
    #[error("input field `{field}` is missing")]
    MissingInput {
        /// The field's name.
        field: String,
    },
    /// An image or audio input holds something else (a local path, a forged URL scheme, bad
    /// base64, ...). Checked before any LM call.
    #[error("input field `{field}`: {source}")]
    InvalidMedia {
        /// The field's name.
        field: String,
        /// What is wrong with the value.
        #[source]
        source: crate::media::MediaError,
    },
    /// The typed input could not be turned into field values.
    #[error("the input could not be serialized: {source}")]
    InputType {
        /// What serde reported.
        #[source]
        source: JsonError,
    },
    /// The parsed outputs do not fit the typed output struct.
    #[error("the outputs do not fit the output type: {source}")]
    OutputType {
        /// What serde reported.
        #[source]
        source: JsonError,
    },
    /// `Predict` with tools kept calling tools past its limit without answering.
    #[error("the model was still calling tools after {turns} rounds")]
    TooManyToolTurns {
        /// The limit.
        turns: usize,
    },
    /// `Predict` with tools reached the LM-call limit of its
    /// [tool limits](crate::module::Limits::max_lm_calls) before it answered.
    #[error("the call reached its limit of {limit} LM calls")]
    LmCallLimit {
        /// The limit.
        limit: u32,
    },
    /// `Predict` with tools stopped before an LM call that would have gone past its
    /// [budget](crate::module::Limits::budget) of tokens or cost.
    #[error("{0}")]
    Budget(crate::lm::BudgetExceeded),
    /// A blocking call could not run (see [`crate::blocking`]).
    #[error(transparent)]
    Blocking(#[from] crate::blocking::BlockingError),
    /// The module cannot do what was asked in its configuration (say which and what to use).
    #[error("not supported: {what}")]
    Unsupported {
        /// What was asked, and what to do instead.
        what: String,
    },
    /// A suspended call could not be resumed (another predictor, a missing decision, ..).
    #[error("the call cannot be resumed: {0}")]
    Resume(#[from] ResumeError),
    /// The demos for the call could not be chosen: the
    /// [embedder](crate::module::EmbeddingDemos) failed on its inputs.
    #[error("the demos could not be selected: {0}")]
    Embed(#[from] crate::embed::EmbedError),
    /// The answer failed its output checks ([`crate::module::check`]) on the first attempt and
    /// on every re-ask; the error holds each attempt and why it was refused.
    #[error(transparent)]
    Checks(#[from] ChecksFailed),
    /// [`MultiChainComparison`](crate::module::MultiChainComparison) was given completions it
    /// cannot compare: not M of them, or one without its reasoning or answer.
    #[error("cannot compare the completions: {message}")]
    Completions {
        /// Which completion, and what it lacks.
        message: String,
    },
}

impl Error {
    /// The error's class as the OpenTelemetry `error.type` attribute records it: an LM error's
    /// [`LmError::error_type`] (`429`, `timeout`, ..), else the variant's name in snake case
    /// (`parse`, `missing_input`, `too_many_tool_turns`, ..).
    ///
    /// ```
    /// use signet::Error;
    /// assert_eq!(Error::MissingInput { field: "question".into() }.error_type(), "missing_input");
    /// ```
    pub fn error_type(&self) -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed(match self {
            Error::Lm(error) => return error.error_type(),
            Error::Parse(_) => "parse",
            Error::InvalidSignature { .. } => "invalid_signature",
            Error::ToolNames { .. } => "tool_names",
            Error::MissingInput { .. } => "missing_input",
            Error::InvalidMedia { .. } => "invalid_media",
            Error::InputType { .. } => "input_type",
            Error::OutputType { .. } => "output_type",
            Error::TooManyToolTurns { .. } => "too_many_tool_turns",
            Error::LmCallLimit { .. } => "lm_call_limit",
            Error::Budget(_) => "budget_exceeded",
            Error::Blocking(_) => "blocking",
            Error::Unsupported { .. } => "unsupported",
            Error::Resume(_) => "resume",
            Error::Embed(_) => "embed",
            Error::Completions { .. } => "completions",
            Error::Checks(_) => "checks_failed",
        })
    }

    /// Whether trying the same call again may succeed: a transient LM or embedder failure (rate
    /// limit, server error, timeout, connection). Clients that retry have usually retried already.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Lm(error) => error.is_transient(),
            Error::Embed(error) => error.is_transient(),
            _ => false,
        }
    }

    /// The LM's error, when the LM call is what failed.
    pub fn lm_error(&self) -> Option<&LmError> {
        match self {
            Error::Lm(error) => Some(error),
            _ => None,
        }
    }
}

/// A serde_json error, shared so that [`Error`] stays `Clone`; two are equal when they say the same.
#[derive(Debug, Clone)]
pub struct JsonError(Arc<serde_json::Error>);

impl JsonError {
    /// The serde_json error.
    pub fn inner(&self) -> &serde_json::Error {
        &self.0
    }
}

impl From<serde_json::Error> for JsonError {
    fn from(error: serde_json::Error) -> Self {
        JsonError(Arc::new(error))
    }
}

impl PartialEq for JsonError {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl std::fmt::Display for JsonError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0.as_ref())
    }
}

/// Why a suspended run could not be resumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The agent's signature, tools or settings differ from those the run was suspended on.
    #[error(
        "the suspended run was made by a different agent (fingerprint {found}, this agent's is \
         {expected}): its signature, tools or settings changed"
    )]
    StaleState {
        /// This agent's fingerprint.
        expected: String,
        /// The state's.
        found: String,
    },
    /// The state was written by another version of its layout.
    #[error("the suspended run has state format {found}; this version reads format {expected}")]
    Format {
        /// [`STATE_FORMAT`](crate::module::react::STATE_FORMAT).
        expected: u32,
        /// The state's.
        found: u32,
    },
    /// The state lacks the conversation a [`ReActMode::History`](crate::module::ReActMode::History) run needs to go on.
    #[error(
        "the suspended run has no conversation history, which a history-mode agent needs to \
         resume it"
    )]
    MissingHistory,
    /// A pending call got no decision.
    #[error("no decision for pending call `{id}` ({tool})")]
    MissingDecision {
        /// The call's id.
        id: String,
        /// Its tool.
        tool: String,
    },
    /// A decision names a call that is not pending.
    #[error("a decision names call `{id}`, which is not pending (pending: {pending})")]
    UnknownCall {
        /// The id given.
        id: String,
        /// The pending ids, comma-separated.
        pending: String,
    },
    /// The state contradicts itself or this agent (a pending call of a tool the agent lacks,
    /// two calls with one id, a turn number out of range, ..): it was not written by an agent as
    /// it stands.
    #[error("the suspended run is not a valid state: {reason}")]
    Invalid {
        /// What is wrong.
        reason: String,
    },
    /// The agent has a [state key](crate::module::DynReAct::with_state_key) and the state carries no seal.
    #[error(
        "the suspended run is not sealed, and this agent resumes only states sealed with its \
         state key"
    )]
    Unsealed,
    /// The state's seal does not match its content under the agent's state key: the state was
    /// changed after it was sealed, or sealed with another key.
    #[error(
        "the suspended run's seal does not match its content: the state was changed after it \
         was sealed, or sealed with another key"
    )]
    BadSeal,
}
