//! Test doubles: language models that answer from a script or a function, so that programs,
//! agents and optimizers can be tested without a model, deterministically.
//!
//! * [`ScriptedLm`]: replies from a script and records every request (DSPy's `DummyLM`).
//! * [`ScriptedReply`]: a reply written as an action (call a tool, finish, answer) and rendered at
//!   call time in whatever format the request asks for, so one script serves every adapter.
//! * [`FnLm`]: replies computed from each request.
//!
//! They sit above the adapters and modules whose formats they write.
//!
//! ```
//! use signet::lm::{Completion, Lm, LmRequest, Message};
//! use signet::testing::ScriptedLm;
//!
//! let lm = ScriptedLm::new([Completion::text("[[ ## answer ## ]]\nParis")]);
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let reply = lm.complete(&LmRequest::new(vec![Message::user("Capital of France?")])).await.unwrap();
//! assert_eq!(reply.text.as_deref(), Some("[[ ## answer ## ]]\nParis"));
//! # });
//! ```

mod fn_lm;
mod scripted;
mod scripted_reply;

pub use fn_lm::FnLm;
pub use scripted::ScriptedLm;
pub use scripted_reply::ScriptedReply;
