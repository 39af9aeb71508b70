//! ReAct in history mode (DSPy's `dspy.ReActV2`): several tool calls in one turn, every turn kept
//! as chat history, the typed answer given through the built-in `submit` tool.
//!
//! Runs offline with a scripted model: `cargo run --example react_v2`.

use signet::module::ReActMode;
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer the question using the tools.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: i64,
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Multiply two integers.
#[tool]
fn multiply(a: i64, b: i64) -> i64 {
    a * b
}

fn turn(thought: &str, calls: &str) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## tool_calls ## ]]\n{calls}\n\n[[ ## completed ## ]]"
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A scripted model, so the example runs anywhere; any `Lm` works here.
    let lm = ScriptedLm::texts([
        turn(
            "Both parts at once.",
            r#"{"tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}, {"name": "multiply", "args": {"a": 4, "b": 5}}]}"#,
        ),
        turn(
            "5 + 20 = 25.",
            r#"{"tool_calls": [{"name": "submit", "args": {"answer": 25}}]}"#,
        ),
    ]);
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .tool(MultiplyTool)
        .with_mode(ReActMode::History)
        .with_lm(lm);
    let out = agent
        .call(AskInput {
            question: "What is (2 + 3) + (4 * 5)?".into(),
        })
        .await?;
    for event in &out.trajectory.history {
        println!("{}", serde_json::to_string(event)?);
    }
    println!("answer: {}", out.output.answer);
    Ok(())
}
