//! `Predict` with a tool, streamed: the model calls the tool, reads its result and answers; the
//! stream shows each tool call and the answer as it is written, then the typed output.
//!
//! Runs offline with a scripted model: `cargo run --example predict_tools`. With a real model, give
//! the predictor an `OpenAiLm` whose server declares native function calling.

use futures::StreamExt;
use signet::lm::{Capabilities, Completion, ToolCall};
use signet::module::ReActEvent;
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer the question with the help of the tools.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A scripted model that declares native function calling; any `Lm` that does works here.
    let lm = ScriptedLm::new([
        Completion::tool_calls(vec![
            ToolCall::new("a", "population", r#"{"city": "Oslo"}"#),
            ToolCall::new("b", "population", r#"{"city": "Bergen"}"#),
        ]),
        Completion::text(
            "[[ ## answer ## ]]\nOslo (0.72 million) has about 2.5 times Bergen's 0.29 million.\
             \n\n[[ ## completed ## ]]",
        ),
    ])
    .with_capabilities(Capabilities::default().with_function_calling(true));
    let ask = Predict::<Ask>::new().with_lm(lm).tool(PopulationTool);

    let mut events = ask.stream(AskInput {
        question: "How much larger is Oslo than Bergen?".into(),
    });
    while let Some(event) = events.next().await {
        match event {
            ReActEvent::ToolCallStarted { name, args, .. } => println!("-> {name}({args})"),
            ReActEvent::ToolCallFinished { observation, .. } => {
                println!("<- {}", observation.as_text());
            }
            ReActEvent::AnswerDelta { text, .. } => print!("{text}"),
            ReActEvent::Done { output, usage, .. } => {
                println!(
                    "\n\nanswer: {} ({} LM calls)",
                    output.answer, usage.lm_calls
                );
            }
            ReActEvent::Failed { error } => return Err(error.into()),
            _ => {}
        }
    }
    Ok(())
}
