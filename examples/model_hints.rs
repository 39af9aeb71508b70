//! Per-step model choice: a ReAct agent whose steps (choosing tools) run on a small, fast model
//! and whose answer is written by a strong one. The program names model *hints*; which LM serves
//! each hint is registered where the models are set up — globally with
//! `signet::module::configure_model`, or per call with `CallConfig::with_model`.
//!
//! Runs offline with two scripted models: `cargo run --example model_hints`. With real models,
//! register clients instead, e.g.
//! `configure_model("fast", OpenAiLm::builder("gpt-4o-mini").build()?)` and
//! `configure_model("strong", OpenAiLm::builder("gpt-4o").build()?)`.

use std::sync::Arc;

use signet::module::{CallConfig, ReAct};
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer the question with the help of the tools.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: f64,
}

/// The population of a city, in millions.
#[tool]
fn population(city: String) -> Result<f64, String> {
    match city.as_str() {
        "Oslo" => Ok(0.72),
        "Bergen" => Ok(0.29),
        other => Err(format!("unknown city {other}")),
    }
}

fn step(thought: &str, tool: &str, args: &str) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
         [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The fast model writes the steps; the strong one reads the trajectory and answers.
    let fast = Arc::new(ScriptedLm::texts([
        step("Look up Oslo.", "population", r#"{"city": "Oslo"}"#),
        step("Look up Bergen.", "population", r#"{"city": "Bergen"}"#),
        step("I have both.", "finish", "{}"),
    ]));
    let strong = Arc::new(ScriptedLm::texts([
        "[[ ## reasoning ## ]]\n0.72 + 0.29 = 1.01\n\n[[ ## answer ## ]]\n1.01\n\n[[ ## completed ## ]]",
    ]));

    let agent = ReAct::<Ask>::new()
        .tool(PopulationTool)
        .with_step_model_hint("fast")
        .with_extractor_model_hint("strong");
    let models = CallConfig::new()
        .with_model("fast", fast.clone())
        .with_model("strong", strong.clone());

    let question = "How many people live in Oslo and Bergen together, in millions?";
    let run = agent
        .call_with(
            AskInput {
                question: question.into(),
            },
            &models,
        )
        .await?;
    println!("answer: {}", run.output.answer);
    println!(
        "LM calls: {} on `fast` (steps), {} on `strong` (answer)",
        fast.requests().len(),
        strong.requests().len()
    );

    // A hint no model is registered under is a typed error before any LM call.
    let unregistered = CallConfig::new().with_model("fast", fast.clone());
    if let Err(error) = agent
        .call_with(
            AskInput {
                question: question.into(),
            },
            &unregistered,
        )
        .await
    {
        println!("without `strong`: {error}");
    }
    Ok(())
}
