//! Runs model-written JavaScript for Signet in an embedded QuickJS engine ([`Sandbox`]): the
//! sandbox under program-of-thought and code-acting modules.
//!
//! - No file, network, process or environment access: the engine has the language's own
//!   objects and nothing of the host's. The code reaches the host only through functions
//!   [granted](Sandbox::grant) by name (a tool, say), and `console.log`.
//! - Each run has a memory limit, a time limit, a stack limit and a step limit ([`Limits`]);
//!   past one, the run ends in its own [`SandboxError`] and the process and the next run go on.
//! - The code's last value comes back as a JSON value ([`Execution`]), with what it printed.
//!
//! ```
//! use signet_sandbox::Sandbox;
//! let run = Sandbox::new().run("[1, 2, 3].map(x => x * x).reduce((a, b) => a + b)")?;
//! assert_eq!(run.value, serde_json::json!(14));
//! # Ok::<(), signet_sandbox::SandboxError>(())
//! ```

mod error;
mod host;
mod limits;
mod sandbox;

pub use error::SandboxError;
pub use limits::Limits;
pub use sandbox::{Execution, Sandbox};
