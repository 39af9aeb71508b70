//! How often does a ReAct agent on SmolLM2-135M complete a simple two-tool task, with each adapter?
//! Prints the table in docs/local-models.md.
//!
//! ```text
//! cargo run --example local_model_eval            # all adapters, 6 tasks each
//! cargo run --example local_model_eval -- chat constrained
//! ```
//!
//! Each task asks for one city's forecast and one euro amount in kroner; a run *completes* when the
//! agent got the forecast for that city and converted that amount (both tool calls succeeded) and
//! then finished by itself (no step limit, no unreadable step). Temperature 0, at most 5 steps.

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use signet::adapter::Adapter;
use signet::module::{Trajectory, react::StopReason};

#[path = "shared/travel.rs"]
mod travel;
use signet::prelude::*;
use travel::{Notes, Travel, TravelInput};

const CITIES: [&str; 3] = ["Oslo", "Bergen", "Tromsø"];
const AMOUNTS: [f64; 2] = [200.0, 1200.0];

/// What one run did.
#[derive(Default)]
struct Tally {
    runs: usize,
    completed: usize,
    finished: usize,
    steps: usize,
    readable_steps: usize,
    forecast_ok: usize,
    convert_ok: usize,
    errors: usize,
    seconds: f64,
}

fn called_ok(trajectory: &Trajectory, tool: &str, args: serde_json::Value) -> bool {
    trajectory.steps.iter().any(|s| {
        s.tool_name == tool
            && matches!(s.observation, Observation::Output(_))
            && args
                .as_object()
                .is_some_and(|want| want.iter().all(|(k, v)| same(&s.tool_args[k], v)))
    })
}

fn same(got: &serde_json::Value, want: &serde_json::Value) -> bool {
    // An amount given as written ("200") is compared by its value.
    let number = got
        .as_f64()
        .or_else(|| got.as_str().and_then(travel::euros));
    match (number, want.as_f64(), got.as_str(), want.as_str()) {
        (Some(a), Some(b), _, _) => (a - b).abs() < 1e-9,
        (_, _, Some(a), Some(b)) => a.trim().eq_ignore_ascii_case(b),
        _ => false,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let all = ["chat", "json", "constrained", "native"];
    let chosen: Vec<String> = std::env::args().skip(1).collect();
    let adapters: Vec<&str> = all
        .into_iter()
        .filter(|a| chosen.is_empty() || chosen.iter().any(|c| c == a))
        .collect();

    println!(
        "| adapter | completed | finished by itself | readable steps | forecast right | conversion right | errors | s/run |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for name in adapters {
        let local = signet_local::LlamaCpp::smollm2();
        let server = local.serve().await?;
        let lm = local.lm(&server)?;
        let (adapter, mode): (Arc<dyn Adapter>, ReActMode) = match name {
            "chat" => (Arc::new(ChatAdapter::new()), ReActMode::Text),
            "json" => (Arc::new(JsonAdapter::new()), ReActMode::Text),
            "constrained" => (Arc::new(JsonAdapter::constrained()), ReActMode::Text),
            _ => (Arc::new(ChatAdapter::new()), ReActMode::Native),
        };
        let mut tally = Tally::default();
        for city in CITIES {
            for amount in AMOUNTS {
                let notes = Arc::new(Notes::default());
                let agent = ReAct::<Travel>::new()
                    .tools(travel::tools(&notes))
                    .with_lm(lm.clone())
                    .with_adapter(adapter.clone())
                    .with_mode(mode)
                    .with_limits(Limits::default().max_iters(5))
                    .with_options(LmOptions::new().temperature(0.0).max_tokens(400));
                let question = format!(
                    "What is tomorrow's weather in {city}, and how much is {amount} EUR in NOK?"
                );
                let started = Instant::now();
                let result = agent.call(TravelInput { question }).await;
                tally.seconds += started.elapsed().as_secs_f64();
                tally.runs += 1;
                let out = match result {
                    Ok(out) => out,
                    Err(error) => {
                        eprintln!("{name}: {city}/{amount}: error: {error}");
                        tally.errors += 1;
                        continue;
                    }
                };
                let t = &out.trajectory;
                let finished = t.stopped_early.is_none();
                let forecast = called_ok(t, "forecast", json!({ "city": city }));
                let convert = called_ok(t, "eur_to_nok", json!({ "amount": amount }));
                tally.finished += usize::from(finished);
                tally.forecast_ok += usize::from(forecast);
                tally.convert_ok += usize::from(convert);
                tally.completed += usize::from(finished && forecast && convert);
                tally.steps += t.steps.len()
                    + usize::from(matches!(
                        t.stopped_early,
                        Some(
                            StopReason::UnreadableStep { .. } | StopReason::UnreadableAnswer { .. }
                        )
                    ));
                tally.readable_steps += t.steps.len();
                let calls: Vec<String> = t
                    .steps
                    .iter()
                    .map(|s| format!("{}({})", s.tool_name, s.tool_args))
                    .collect();
                eprintln!(
                    "{name}: {city}/{amount}: {} | {}",
                    calls.join(", "),
                    t.stopped_early
                        .as_ref()
                        .map_or("finished".to_owned(), ToString::to_string)
                );
            }
        }
        server.stop().await?;
        let pct = |n: usize, of: usize| {
            if of == 0 {
                "-".to_owned()
            } else {
                format!("{n}/{of} ({:.0} %)", 100.0 * n as f64 / of as f64)
            }
        };
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {:.1} |",
            pct(tally.completed, tally.runs),
            pct(tally.finished, tally.runs),
            pct(tally.readable_steps, tally.steps),
            pct(tally.forecast_ok, tally.runs),
            pct(tally.convert_ok, tally.runs),
            tally.errors,
            tally.seconds / tally.runs.max(1) as f64
        );
    }
    Ok(())
}
