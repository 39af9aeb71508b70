//! Running a model's tool calls in a loop of your own (DSPy's `ToolCall.execute`): a
//! `ToolExecutor` finds each tool by name, checks its arguments, asks a person before a
//! `#[tool(confirm)]` tool runs, and says what went wrong as a typed `ToolCallError`.
//!
//! `cargo run --example tool_executor`

use serde_json::json;
use signet::adapter::{ToolCallRecord, ToolCalls};
use signet::module::{Approval, ToolCallError, ToolExecutor};
use signet::{Tool, ToolError, tool};

/// Convert an amount between two currencies.
#[tool]
fn convert(amount: f64, from: String, to: String) -> Result<f64, String> {
    match (from.as_str(), to.as_str()) {
        ("EUR", "NOK") => Ok(amount * 11.7),
        ("NOK", "EUR") => Ok(amount / 11.7),
        _ => Err(format!("no rate from {from} to {to}")),
    }
}

/// Pay someone.
#[tool(confirm)]
fn pay(to: String, amount: f64) -> String {
    format!("paid {amount} to {to}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // As a model wrote them.
    let calls: ToolCalls = serde_json::from_value(json!([
        {"name": "convert", "args": {"amount": 100, "from": "EUR", "to": "NOK"}},
        {"name": "convert", "args": {"amount": "a lot", "from": "EUR", "to": "NOK"}},
        {"name": "convert", "args": {"amount": 5, "from": "EUR", "to": "JPY"}},
        {"name": "exchange", "args": {}},
        {"name": "pay", "args": {"to": "bob", "amount": 20}},
    ]))?;
    // The person here approves payments under 50.
    let executor = ToolExecutor::new([
        signet::tool::share(ConvertTool),
        signet::tool::share(PayTool),
    ])?
    .with_approver(|request| async move {
        match request.args["amount"].as_f64() {
            Some(amount) if amount < 50.0 => Approval::Approve,
            _ => Approval::Deny(Some("over the limit".into())),
        }
    });
    for call in &calls.tool_calls {
        match executor.try_execute(call).await {
            Ok(observation) => println!("{}: {}", call.name, observation.as_text()),
            Err(ToolCallError::UnknownTool { name, available }) => {
                println!("{name}: no such tool (the tools: {})", available.join(", "))
            }
            Err(ToolCallError::Tool(ToolError::InvalidArguments { errors, .. })) => {
                println!(
                    "{}: {} bad argument(s): {}",
                    call.name,
                    errors.len(),
                    errors[0]
                )
            }
            Err(other) => println!("{}: {other}", call.name),
        }
    }
    // Called directly, a tool that needs approval refuses; inside `approved` it runs.
    let direct = PayTool.call(json!({"to": "ann", "amount": 5})).await;
    println!("direct call: {}", direct.unwrap_err());
    let approved =
        signet::tool::approved("pay", PayTool.call(json!({"to": "ann", "amount": 5}))).await?;
    println!("approved call: {approved}");
    // What a model is shown for a failed call, in DSPy's words.
    let unknown = ToolCallRecord {
        id: None,
        name: "exchange".into(),
        args: json!({}),
    };
    println!(
        "the model reads: {}",
        executor.execute(&unknown).await.as_text()
    );
    Ok(())
}
