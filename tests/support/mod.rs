//! What the test files share: the `Ask` signature, an `add` tool, replies in the Chat adapter's
//! format, and the request bodies a mock server received. Each test file uses part of it.
#![allow(dead_code)]

use signet::{Signature, tool};

/// Answer the question using the tools.
#[derive(Signature)]
pub struct Ask {
    #[input]
    pub question: String,
    #[output]
    pub answer: String,
}

/// Add two integers.
#[tool]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A ReAct step reply: a thought, a tool name and its arguments.
pub fn step(thought: &str, tool: &str, args: serde_json::Value) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n[[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

/// An extractor reply with the reasoning `done`.
pub fn extract(answer: &str) -> String {
    format!("[[ ## reasoning ## ]]\ndone\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
}

/// The input `question: "q"`.
pub fn ask() -> AskInput {
    AskInput {
        question: "q".into(),
    }
}

/// The JSON bodies of the requests `server` received, in order.
pub async fn bodies(server: &wiremock::MockServer) -> Vec<serde_json::Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("a JSON request body"))
        .collect()
}
