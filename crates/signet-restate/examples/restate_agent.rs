//! The travel agent of `react_agent` as a durable run on Restate: a local Restate server, one
//! worker serving the agent, and a run started and followed, call by call as Restate journals
//! it, through Restate's ingress.
//! Every LM call and tool call of the run is a journaled step: had the worker died, Restate would
//! replay the run on another worker without paying for those calls again.
//!
//! ```text
//! cargo run --example restate_agent          # SmolLM2-135M locally (or OPENAI_API_KEY, ...)
//! cargo run --example restate_agent -- "Weather in Bergen?"
//! ```
//!
//! The first run installs the Restate server from npm into `~/.cache/signet` (Node.js's `npm` is
//! needed). docs/scale.md explains the guarantees, approvals, and running several workers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use signet_restate::{Agents, Event, Progress, RestateServer, RunRequest, free_port};

#[path = "../../../examples/shared/travel.rs"]
mod travel;
use travel::Notes;
#[path = "../../../examples/shared/travel_model.rs"]
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

    let server = RestateServer::start().await?;
    eprintln!(
        "restate: ingress {}, admin {}",
        server.ingress_url(),
        server.admin_url()
    );
    let port = free_port()?;
    let agents = Agents::new().agent("travel", agent.core().clone());
    // Only requests this server signed are served.
    let worker = signet_restate::Worker::from(agents).identity_key(server.identity_key());
    let worker = tokio::spawn(signet_restate::serve(
        format!("127.0.0.1:{port}").parse()?,
        worker,
    ));
    server.register(&format!("http://127.0.0.1:{port}")).await?;

    let ingress = server.ingress();
    let request = RunRequest {
        agent: "travel".into(),
        inputs: json!({ "question": question })
            .as_object()
            .cloned()
            .unwrap_or_default(),
        max_iters: None,
    };
    let started = Instant::now();
    // A run id nobody can guess, and the token that alone may decide its approvals.
    let run = ingress.start_run(&request).await?;
    let id = run.id;
    println!("question: {question}\nrun: {id}\n");
    // Follow the run as Restate journals it.
    let mut progress = std::pin::pin!(ingress.watch(&id, Duration::from_millis(100)));
    let mut result = None;
    while let Some(report) = progress.next().await {
        match report? {
            Progress::Event(Event::Lm { model, ok }) => {
                println!("  lm call ({model}){}", if ok { "" } else { " failed" })
            }
            Progress::Event(Event::Tool {
                tool,
                args,
                result,
                ok,
            }) => {
                println!(
                    "  {tool}({args}) -> {}{result}",
                    if ok { "" } else { "error: " }
                )
            }
            Progress::Waiting(pending) => {
                println!("  waiting for a decision on {:?}", pending.calls)
            }
            Progress::Finished(run) => result = Some(run),
        }
    }
    let result = result.ok_or("the run ended without a result")?;
    println!("\nanswer: {}", result.outputs["answer"]);
    println!(
        "{} steps, {} prompt + {} completion tokens, {:.1} s",
        result.trajectory.steps.len(),
        result.usage.prompt_tokens,
        result.usage.completion_tokens,
        started.elapsed().as_secs_f64()
    );

    worker.abort();
    drop(server);
    tokio::time::sleep(Duration::from_millis(100)).await;
    model.stop().await?;
    Ok(())
}
