//! Why embedding, indexing or searching failed: [`EmbedError`].

use std::path::PathBuf;
use std::time::Duration;

/// Why an embedder, an index or a retrieval failed. Transient kinds
/// ([`is_transient`](EmbedError::is_transient)) may succeed if tried again.
///
/// ```
/// use std::time::Duration;
/// use signet::embed::EmbedError;
/// let limited = EmbedError::RateLimited { retry_after: Some(Duration::from_secs(2)), message: "slow down".into() };
/// assert!(limited.is_transient());
/// assert_eq!(limited.to_string(), "rate limited by the embeddings provider (retry after 2s): slow down");
/// assert!(!EmbedError::WrongCount { expected: 2, got: 1 }.is_transient());
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// HTTP 429: too many requests.
    #[error("rate limited by the embeddings provider{}: {message}", retry_after.map(|d| format!(" (retry after {d:?})")).unwrap_or_default())]
    RateLimited {
        /// The provider's `Retry-After` (or `retry-after-ms`), when given.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// Any other status that is not a success (4xx, 5xx, an unfollowed redirect).
    #[error("the embeddings endpoint answered HTTP {status}: {message}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The request could not be sent or its reply not read whole (connection refused or reset,
    /// a body cut short).
    #[error("the embeddings request failed: {message}")]
    Transport {
        /// What the HTTP client reported.
        message: String,
    },
    /// The reply did not come within the time limit.
    #[error("the embeddings request timed out after {after:?}")]
    Timeout {
        /// The limit.
        after: Duration,
    },
    /// The reply body is longer than the client's limit (it was not read further).
    #[error("the embeddings reply exceeds the client's limit of {limit} bytes")]
    ResponseTooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The reply is not the expected JSON (`{"data": [{"index": i, "embedding": [..]}, ..]}`).
    #[error("malformed embeddings reply: {message}")]
    Malformed {
        /// What is wrong, and where.
        message: String,
    },
    /// The reply has another number of vectors than texts were sent.
    #[error("the embedder returned {got} vectors for {expected} texts")]
    WrongCount {
        /// The number of texts.
        expected: usize,
        /// The number of vectors.
        got: usize,
    },
    /// A vector has no values.
    #[error("the vector of text {index} is empty")]
    EmptyVector {
        /// The text's position in the call.
        index: usize,
    },
    /// A vector's length differs from the others' (or, in an index, from the index's).
    #[error("the vector of text {index} has {got} dimensions, the others {expected}")]
    UnequalDimensions {
        /// The text's position in the call.
        index: usize,
        /// The length of the others.
        expected: usize,
        /// Its length.
        got: usize,
    },
    /// A value of a vector is not a finite number (NaN, infinite, or not a number at all).
    #[error(
        "the vector of text {index} has a value that is not a finite number at position {position}"
    )]
    NotFinite {
        /// The text's position in the call.
        index: usize,
        /// The value's position in the vector.
        position: usize,
    },
    /// A vector's length differs from the vectors an index already holds (another embedder, or
    /// another `dimensions` setting).
    #[error("the index holds vectors of {index_dimension} dimensions; the embedder returned {got}")]
    IndexDimension {
        /// The length of the index's vectors.
        index_dimension: usize,
        /// The length returned.
        got: usize,
    },
    /// A function embedder ([`FnEmbedder`](super::FnEmbedder)) returned an error.
    #[error("the embedding function failed: {message}")]
    Function {
        /// Its error's text.
        message: String,
    },
    /// A saved index could not be written or read, or does not fit the embedder it is loaded with.
    #[error("saved index {}: {reason}", path.display())]
    Store {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
}

impl EmbedError {
    /// Whether the same call may succeed if tried again: a rate limit, a server error (5xx), a
    /// timeout, a transport failure.
    pub fn is_transient(&self) -> bool {
        match self {
            EmbedError::RateLimited { .. }
            | EmbedError::Timeout { .. }
            | EmbedError::Transport { .. } => true,
            EmbedError::Http { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// The error with the text positions it names moved by `offset` (for a batch that starts
    /// there).
    pub(crate) fn offset_by(self, offset: usize) -> EmbedError {
        match self {
            EmbedError::EmptyVector { index } => EmbedError::EmptyVector {
                index: index + offset,
            },
            EmbedError::UnequalDimensions {
                index,
                expected,
                got,
            } => EmbedError::UnequalDimensions {
                index: index + offset,
                expected,
                got,
            },
            EmbedError::NotFinite { index, position } => EmbedError::NotFinite {
                index: index + offset,
                position,
            },
            other => other,
        }
    }
}
