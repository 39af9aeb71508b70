//! The approval a `#[tool(confirm)]` tool runs under: the agent loops (ReAct, `Predict` with
//! tools, [`ToolExecutor`](crate::module::ToolExecutor)) and `McpServer` run such a tool only after
//! a person approved the call, and mark the call approved; a direct [`Tool::call`](super::Tool::call)
//! or [`call_blocking`](super::Tool::call_blocking) outside that mark is refused with
//! [`ToolError::NeedsApproval`], so no call slips past the person silently.

use std::future::Future;

use super::ToolError;

tokio::task_local! {
    /// The name of the tool whose call a person approved, while that call runs.
    static APPROVED: String;
}

/// Runs `call` (a call of the tool named `tool`) as approved by a person: a `#[tool(confirm)]`
/// tool of that name runs inside it. Use it where your own code has asked a person; the agent
/// loops do it for you.
///
/// ```
/// use serde_json::json;
/// use signet::{Tool, ToolError, tool};
///
/// /// Delete a file.
/// #[tool(confirm)]
/// fn delete(path: String) -> String { format!("deleted {path}") }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let refused = DeleteTool.call(json!({"path": "a.txt"})).await;
/// assert!(matches!(refused, Err(ToolError::NeedsApproval { .. })));
/// // ... a person said yes:
/// let done = signet::tool::approved("delete", DeleteTool.call(json!({"path": "a.txt"}))).await;
/// assert_eq!(done.unwrap(), "deleted a.txt");
/// # });
/// ```
pub async fn approved<F: Future>(tool: &str, call: F) -> F::Output {
    APPROVED.scope(tool.to_owned(), call).await
}

/// [`approved`] for sync code: runs `call` (for instance `tool.call_blocking(args)`) as approved.
///
/// ```
/// use serde_json::json;
/// use signet::{Tool, tool};
///
/// /// Delete a file.
/// #[tool(confirm)]
/// fn delete(path: String) -> String { format!("deleted {path}") }
///
/// assert!(DeleteTool.call_blocking(json!({"path": "a.txt"})).is_err());
/// let done = signet::tool::approved_blocking("delete", || DeleteTool.call_blocking(json!({"path": "a.txt"})));
/// assert_eq!(done.unwrap(), "deleted a.txt");
/// ```
pub fn approved_blocking<R>(tool: &str, call: impl FnOnce() -> R) -> R {
    APPROVED.sync_scope(tool.to_owned(), call)
}

/// `Ok` inside an approval of `tool` ([`approved`]), else [`ToolError::NeedsApproval`]: what a
/// `#[tool(confirm)]` tool checks before it runs (and what a tool of your own that requires
/// confirmation should check).
///
/// ```
/// assert!(signet::tool::require_approval("delete").is_err());
/// assert!(signet::tool::approved_blocking("delete", || signet::tool::require_approval("delete")).is_ok());
/// assert!(signet::tool::approved_blocking("other", || signet::tool::require_approval("delete")).is_err());
/// ```
pub fn require_approval(tool: &str) -> Result<(), ToolError> {
    match APPROVED.try_with(|approved| approved == tool) {
        Ok(true) => Ok(()),
        _ => Err(ToolError::NeedsApproval {
            tool: tool.to_owned(),
        }),
    }
}
