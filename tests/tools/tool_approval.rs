//! A tool that needs a person's approval cannot be run past the person: a direct `call` or
//! `call_blocking` is refused with `ToolError::NeedsApproval`; inside `signet::tool::approved`
//! (what the agent loops do once a person said yes) it runs.

use std::sync::Arc;

use serde_json::json;
use signet::adapter::ToolCallRecord;
use signet::module::{Approval, ToolCallError, ToolExecutor};
use signet::tool::{FnTool, approved, approved_blocking};
use signet::{Tool, ToolError, tool};

/// Delete a file.
#[tool(confirm)]
async fn delete(path: String) -> String {
    format!("deleted {path}")
}

/// Send an email.
#[tool(confirm)]
fn send(to: String) -> String {
    format!("sent to {to}")
}

fn refused<T: std::fmt::Debug>(result: Result<T, ToolError>, tool: &str) {
    match result {
        Err(ToolError::NeedsApproval { tool: named }) => assert_eq!(named, tool),
        other => panic!("expected NeedsApproval for {tool}, got {other:?}"),
    }
}

#[tokio::test]
async fn a_direct_call_of_a_confirm_tool_is_refused_and_an_approved_one_runs() {
    refused(DeleteTool.call(json!({"path": "a.txt"})).await, "delete");
    refused(SendTool.call(json!({"to": "ann"})).await, "send");
    // Through a shared handle too.
    let shared: Arc<dyn Tool> = Arc::new(DeleteTool);
    refused(shared.call(json!({"path": "a.txt"})).await, "delete");
    assert_eq!(
        approved("delete", shared.call(json!({"path": "a.txt"})))
            .await
            .unwrap(),
        "deleted a.txt"
    );
    // An approval is for the tool it names.
    refused(
        approved("send", DeleteTool.call(json!({"path": "a.txt"}))).await,
        "delete",
    );
}

#[test]
fn a_blocking_call_is_refused_unless_approved() {
    refused(SendTool.call_blocking(json!({"to": "ann"})), "send");
    refused(DeleteTool.call_blocking(json!({"path": "b"})), "delete");
    assert_eq!(
        approved_blocking("send", || SendTool.call_blocking(json!({"to": "ann"}))).unwrap(),
        "sent to ann"
    );
    assert_eq!(
        approved_blocking("delete", || DeleteTool.call_blocking(json!({"path": "b"}))).unwrap(),
        "deleted b"
    );
}

#[tokio::test]
async fn a_confirm_fn_tool_is_refused_too() {
    let tool = FnTool::builder("wipe")
        .description("Wipe the disk.")
        .confirm(true)
        .sync_fn(|_| Ok::<_, String>(json!("wiped")));
    refused(tool.call(json!({})).await, "wipe");
    assert_eq!(
        approved("wipe", tool.call(json!({}))).await.unwrap(),
        "wiped"
    );
}

#[tokio::test]
async fn an_executor_runs_a_confirm_tool_once_its_approver_approves() {
    let call = ToolCallRecord {
        id: None,
        name: "delete".into(),
        args: json!({"path": "c.txt"}),
    };
    let unattended = ToolExecutor::new([DeleteTool]).unwrap();
    assert!(matches!(
        unattended.try_execute(&call).await,
        Err(ToolCallError::Denied { .. })
    ));
    let approving = ToolExecutor::new([DeleteTool])
        .unwrap()
        .with_approver(|_| async { Approval::Approve });
    assert_eq!(
        approving.try_execute(&call).await.unwrap().as_value(),
        json!("deleted c.txt")
    );
    let denying = ToolExecutor::new([DeleteTool])
        .unwrap()
        .with_approver(|_| async { Approval::Deny(Some("not today".into())) });
    let denied = denying.try_execute(&call).await.unwrap_err();
    assert_eq!(
        denied,
        ToolCallError::Denied {
            reason: Some("not today".into())
        }
    );
    assert_eq!(
        denying.execute(&call).await.as_text(),
        "Execution error in delete: this call needs a person's approval and was denied: not today"
    );
}
