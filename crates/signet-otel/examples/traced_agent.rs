//! The travel agent (the main example's compiled ReAct agent) traced into an OpenTelemetry
//! backend: every run is one trace of `invoke_agent`, `chat` and `execute_tool` spans with token
//! counts, and its `gen_ai.agent.version` names the compiled program it loaded.
//!
//! ```text
//! # any OTLP collector; for example Arize Phoenix (pip install arize-phoenix; phoenix serve):
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:6006 cargo run -p signet-otel --example traced_agent
//! # MLflow (pip install mlflow; mlflow server --port 5000): traces only, into experiment 0
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:5000 OTEL_EXPORTER_OTLP_HEADERS=x-mlflow-experiment-id=0 \
//!   cargo run -p signet-otel --example traced_agent
//! # a collector on the default endpoint (http://localhost:4318), gRPC, prompts recorded:
//! OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4317 \
//!   OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true \
//!   cargo run -p signet-otel --example traced_agent -- "Weather in Bergen?"
//! ```
//!
//! It runs on SmolLM2-135M served locally (installed into `~/.cache/signet` on first use), or on
//! OpenAI with `OPENAI_API_KEY`. With no collector listening, the agent still answers and the
//! export's failure is printed on stderr.

use std::sync::Arc;

use signet::prelude::*;
use signet_otel::OtelConfig;

#[path = "../../../examples/shared/travel.rs"]
mod travel;
use travel::{Notes, TravelInput};
#[path = "../../../examples/shared/travel_model.rs"]
mod travel_model;
use travel_model::Model;

const QUESTION: &str = "What is tomorrow's weather in Oslo, and how much is 200 EUR in NOK?";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| QUESTION.to_owned());
    // Three lines: install, run, shut down. Phoenix files the spans under this project.
    let otel = OtelConfig::new("signet-travel-agent")
        .resource_attribute("openinference.project.name", "signet-travel-agent")
        .install()?;

    let model = Model::from_env().await?;
    let agent = model.travel_agent(&Arc::new(Notes::default()))?;
    println!("question: {question}");
    println!("program version: {}", agent.version());
    let run = agent.call(TravelInput { question }).await?;
    println!("answer: {}", run.output.answer);
    println!(
        "usage: {} LM calls, {} prompt and {} completion tokens",
        run.usage.lm_calls, run.usage.prompt_tokens, run.usage.completion_tokens
    );
    model.stop().await?;

    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
        .unwrap_or_else(|_| "http://localhost:4318".to_owned());
    match otel.shutdown().await {
        Ok(()) => println!("spans sent to {endpoint}: look for the trace of `invoke_agent`"),
        // The agent's work is done; say what the export could not deliver instead of failing.
        Err(error) => eprintln!("the export to {endpoint} did not complete: {error}"),
    }
    Ok(())
}
