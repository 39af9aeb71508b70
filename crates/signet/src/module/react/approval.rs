//! What a person is asked about a tool call and what they answer: approval requests and the
//! approver that answers them inline, and the decisions on calls a suspended run waits for.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A request to run a tool that needs a person's approval (`#[tool(confirm)]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    /// The tool.
    pub tool: String,
    /// The arguments the model gave.
    pub args: Value,
    /// The model's reasoning for the call.
    pub thought: String,
}

/// The answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run the tool.
    Approve,
    /// Run the tool, and run the same call (the same tool with the same arguments) again
    /// without asking for the rest of this run (udspy's remembered approval). A call with other
    /// arguments is asked about as usual; a run resumed from a saved state asks again.
    ApproveSame,
    /// Do not run it; the reason (if any) is shown to the model.
    Deny(Option<String>),
}

/// An async callback that approves or denies tool calls.
pub type Approver =
    Arc<dyn Fn(ApprovalRequest) -> futures::future::BoxFuture<'static, Approval> + Send + Sync>;

/// What a pending call waits for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Waiting {
    /// Approval to run a `#[tool(confirm)]` tool.
    Approval,
    /// An answer to the tool's question ([`ToolError::NeedsInput`](crate::ToolError::NeedsInput)).
    Answer {
        /// The question.
        question: String,
    },
}

/// A person's decision on a [`PendingCall`](super::PendingCall).
///
/// ```
/// use serde_json::json;
/// use signet::module::Decision;
/// let decision: Decision = serde_json::from_value(json!({"decision": "edit", "value": {"amount": 10}})).unwrap();
/// assert_eq!(decision, Decision::Edit(json!({"amount": 10})));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", content = "value", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call as the model wrote it.
    Approve,
    /// Do not run it; the reason (if any) is shown to the model, worded as an inline denial.
    Deny(Option<String>),
    /// Run it with these arguments instead. The trajectory (and what the model sees of its own
    /// call) shows the arguments that ran.
    Edit(Value),
    /// Do not run it: this value is its result (a person's answer to
    /// [`Waiting::Answer`], or a result supplied by hand).
    Respond(Value),
}

impl Decision {
    /// The decision's name as it serializes (`approve`, `deny`, `edit`, `respond`).
    ///
    /// ```
    /// assert_eq!(signet::module::Decision::Approve.kind(), "approve");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Deny(_) => "deny",
            Decision::Edit(_) => "edit",
            Decision::Respond(_) => "respond",
        }
    }
}
