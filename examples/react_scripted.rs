//! A ReAct agent with three `#[tool]`s — a sync function, an async function, and a method on shared
//! state — printing each step of its trajectory and the typed answer.
//!
//! Runs offline with a scripted model: `cargo run --example react_scripted`. The same agent on a
//! real model: `cargo run --example react_agent`.

use std::sync::Arc;

use signet::testing::ScriptedLm;

#[path = "shared/travel.rs"]
mod travel;
use signet::prelude::*;
use travel::{Notes, Travel, TravelInput};

fn step(thought: &str, tool: &str, args: &str) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
         [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let notes = Arc::new(Notes::default());
    let tools = travel::tools(&notes);

    // A scripted model, so the example runs anywhere; any `Lm` works here.
    let lm = ScriptedLm::texts([
        step(
            "I need tomorrow's weather in Oslo.",
            "forecast",
            r#"{"city": "Oslo"}"#,
        ),
        step("Convert the budget.", "eur_to_nok", r#"{"amount": "200"}"#),
        step(
            "Save it for later.",
            "remember",
            r#"{"key": "oslo", "text": "rain, 2340 NOK"}"#,
        ),
        step(
            "I have everything.",
            "finish",
            r#"{"answer": "Tomorrow Oslo has 4 °C and light rain; 200 EUR is 2340 NOK."}"#,
        ),
    ]);
    let agent = ReAct::<Travel>::new().tools(tools).with_lm(lm);
    let out = agent
        .call(TravelInput {
            question: "Weather in Oslo tomorrow, and 200 EUR in NOK?".into(),
        })
        .await?;

    for step in &out.trajectory.steps {
        let observation = match &step.observation {
            Observation::Output(value) => value.to_string(),
            Observation::Error(text) => format!("error: {text}"),
            truncated => truncated.as_text(),
        };
        println!(
            "[{}] {}\n    {}({}) -> {}",
            step.index, step.thought, step.tool_name, step.tool_args, observation
        );
    }
    println!("\nanswer: {}", out.output.answer);
    println!(
        "LM calls: {} (finish carried the answer, so no extractor call)",
        out.usage.lm_calls
    );
    Ok(())
}
