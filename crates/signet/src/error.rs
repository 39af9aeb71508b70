//! Why a prediction failed: [`Error`], shared by every adapted call, `Predict`, `ChainOfThought`
//! and each step of a ReAct run (whose own failures are [`ReActError`](crate::module::ReActError)).

use std::sync::Arc;

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
    /// An input field of the signature was not given.
    #[error("input field `{field}` is missing")]
    MissingInput {
        /// The field's name.
        field: String,
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
    Resume(#[from] crate::module::ResumeError),
}

impl Error {
    /// Whether trying the same call again may succeed: a transient LM failure (rate limit, server
    /// error, timeout, connection). Clients that retry have usually retried already.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Lm(error) if error.is_transient())
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
