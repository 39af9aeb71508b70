//! Language models: the [`Lm`] trait, the data it exchanges, and implementations.
//!
//! * [`ScriptedLm`]: replies from a script and records every request, for tests (DSPy's `DummyLM`).
//!
//! ```
//! use signet::lm::{Completion, Lm, LmRequest, Message, ScriptedLm};
//!
//! let lm = ScriptedLm::new([Completion::text("[[ ## answer ## ]]\nParis")]);
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let reply = lm.complete(&LmRequest::new(vec![Message::user("Capital of France?")])).await.unwrap();
//! assert_eq!(reply.text.as_deref(), Some("[[ ## answer ## ]]\nParis"));
//! assert_eq!(lm.requests()[0].messages[0].content, "Capital of France?");
//! # });
//! ```

mod scripted;
mod types;

use futures::future::BoxFuture;

pub use scripted::ScriptedLm;
pub use types::{
    Capabilities, Completion, FinishReason, LmError, LmOptions, LmRequest, Message, ResponseFormat,
    Role, ToolCall, ToolChoice, Usage,
};

/// A language model: messages and options in, a completion out.
///
/// Implementations: [`ScriptedLm`] for tests. Wrap any `Lm` in an `Arc<dyn Lm>` to share it between
/// modules.
pub trait Lm: Send + Sync {
    /// Sends one request and waits for the whole completion.
    fn complete<'a>(&'a self, request: &'a LmRequest)
    -> BoxFuture<'a, Result<Completion, LmError>>;

    /// What this LM supports (native tools, structured outputs, ..).
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// The model's name, for logs and history.
    fn model(&self) -> &str;
}
