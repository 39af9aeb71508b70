//! Compile the travel agent of `react_agent` on SmolLM2-135M: evaluate it on held-out questions,
//! bootstrap demos from its own successful runs on training questions (other cities, other
//! amounts), evaluate the compiled agent, and save it where `react_agent` loads it.
//!
//! ```text
//! cargo run --release --example optimize_travel
//! cargo run --release --example optimize_travel -- --labeled 0 --rounds 6 --save /tmp/agent.json
//! cargo run --release --example optimize_travel -- --optimizer gepa --budget 100
//! cargo run --release --example optimize_travel -- --optimizer gepa --budget 100 --tool-descriptions
//! cargo run --release --example optimize_travel -- --optimizer mipro --trials 6
//! ```
//!
//! Flags: `--demos N` (bootstrapped demos kept, 3), `--labeled N` (labeled demos the teacher
//! sees, 3), `--rounds N` (teacher runs per question, 1), `--slots N` (concurrent runs, 2),
//! `--auto-tool-choice` (the model may answer without a tool call), `--keep-labeled` (the
//! compiled agent keeps the labeled demos too), `--skip-baseline`, `--save PATH`
//! (`examples/travel_agent.json`; `target/travel_agent_gepa.json` with GEPA).
//!
//! `--optimizer gepa` optimizes the agent's instructions with GEPA instead (no demos): the
//! metric's feedback says what a run missed ("no forecast for Oslo; no conversion of 250"), the
//! reflection LM rewrites the step's or the extractor's instruction, `--budget N` metric calls
//! (100) on the training questions; `--tool-descriptions` lets it rewrite the descriptions of the
//! agent's tools too (`eur_to_nok`, `forecast`, `remember`), each its own component. The
//! reflection LM is the API model named by `OPENAI_MODEL` when `OPENAI_API_KEY` is set (any
//! OpenAI-compatible `OPENAI_BASE_URL`), otherwise the local model itself, whose proposals are
//! weak.
//!
//! `--optimizer mipro` runs MIPROv2: `--candidates N` (3) instructions (the agent's own and
//! proposals from the same prompt model as GEPA's) and demo sets (none, labeled, bootstrapped
//! with `--demos` / `--labeled`), searched jointly for `--trials N` (6) trials, each scored on
//! every training question (`target/travel_agent_mipro.json`).
//!
//! A run *completes* a task when the agent called `forecast` for the question's city and
//! `eur_to_nok` with its amount (both calls succeeded) and then finished by itself. The
//! training and held-out questions are in `examples/data/travel_{train,dev}.jsonl`.
//!
//! How the demos are found (DSPy's BootstrapFewShot): the teacher is the agent itself with a few
//! labeled demos — training questions with the calls a person would make (run through the tools
//! to record their results) and an answer built from those results. The teacher runs on each
//! training question (never with that question among its demos); every run the metric accepts
//! becomes a demo of the compiled agent: the question, the tool calls of each turn with their
//! results, the final answer — the model's own work, shown to it as an earlier conversation.

use std::sync::Arc;

use serde_json::json;
use signet::data::{Dataset, Example};
use signet::evaluate::{Evaluate, Report, Score};
use signet::module::{Predictors, ReActOutput, TOOL_TURNS, Trajectory};
use signet::optimize::{BootstrapFewShot, Gepa, GepaBudget, MiproBudget, MiproV2};
use signet::prelude::*;

#[path = "shared/api_model.rs"]
mod api_model;
use api_model::reflection_lm;

#[path = "shared/travel.rs"]
mod travel;
use travel::{Notes, Travel, TravelOutput};

/// Where the compiled agent is saved (and where `react_agent` loads it from).
const SAVED: &str = "examples/travel_agent.json";

/// The agent as `react_agent` builds it: native tool calls (every turn calls a tool; the answer
/// is `finish`), at most 5 turns, greedy decoding.
fn agent(lm: Arc<dyn Lm>) -> ReAct<Travel> {
    ReAct::<Travel>::new()
        .tools(travel::tools(&Arc::new(Notes::default())))
        .with_required_tool_calls(!std::env::args().any(|a| a == "--auto-tool-choice"))
        .with_lm(lm)
        .with_adapter(JsonAdapter::constrained())
        .with_limits(Limits::default().max_iters(5))
        .with_options(LmOptions::new().temperature(0.0).max_tokens(400))
}

/// Whether the run called `tool` with `arg` = `want` and got a result.
fn called(trajectory: &Trajectory, tool: &str, arg: &str, want: &serde_json::Value) -> bool {
    trajectory.steps.iter().any(|s| {
        s.tool_name == tool
            && matches!(s.observation, Observation::Output(_))
            && match (s.tool_args[arg].as_f64(), want.as_f64()) {
                (Some(got), Some(want)) => (got - want).abs() < 1e-9,
                _ => s.tool_args[arg]
                    .as_str()
                    .zip(want.as_str())
                    .is_some_and(|(got, want)| got.trim().eq_ignore_ascii_case(want)),
            }
    })
}

/// 1.0 when the task was completed, with feedback naming what was missed otherwise.
fn completed(example: &Example, out: &ReActOutput<TravelOutput>) -> Score {
    let t = &out.trajectory;
    let city = example.get("city").cloned().unwrap_or_default();
    let amount = example.get("amount").cloned().unwrap_or_default();
    let mut missed = Vec::new();
    if !called(t, "forecast", "city", &city) {
        missed.push(format!("no forecast for {city}"));
    }
    if !called(t, "eur_to_nok", "amount", &amount) {
        missed.push(format!("no conversion of {amount}"));
    }
    if let Some(reason) = &t.stopped_early {
        missed.push(format!("did not finish: {reason}"));
    }
    if missed.is_empty() {
        Score::new(1.0)
    } else {
        Score::new(0.0).with_feedback(missed.join("; "))
    }
}

/// Whether the answer states the kroner amount (not part of completing the task: a 135M model
/// often garbles the numbers it was given).
fn states_kroner(example: &Example, out: &ReActOutput<TravelOutput>) -> bool {
    let amount = example
        .get("amount")
        .and_then(|a| a.as_f64())
        .unwrap_or_default();
    let kroner = travel::eur_to_nok(amount);
    out.output.answer.contains(&format!("{kroner}"))
        || out.output.answer.contains(&format!("{kroner:.1}"))
}

fn summary(name: &str, report: &Report<ReActOutput<TravelOutput>>) -> String {
    let n = report.results.len();
    let kroner = report
        .results
        .iter()
        .filter(|r| {
            r.output
                .as_ref()
                .is_some_and(|out| states_kroner(&r.example, out))
        })
        .count();
    format!(
        "| {name} | {}/{n} ({:.0} %) | {kroner}/{n} | {} | {:.1} | {} |",
        report.passed(),
        report.score,
        report.errors().count(),
        report.elapsed.as_secs_f64() / n.max(1) as f64,
        report.usage.lm_calls,
    )
}

fn show_runs(report: &Report<ReActOutput<TravelOutput>>) {
    for result in &report.results {
        let calls = result.output.as_ref().map_or_else(
            || {
                result
                    .error
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            },
            |out| {
                out.trajectory
                    .steps
                    .iter()
                    .map(|s| format!("{}({})", s.tool_name, s.tool_args))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        );
        eprintln!(
            "  {} {} | {calls}{}",
            if result.score.value > 0.0 {
                "ok  "
            } else {
                "miss"
            },
            result
                .example
                .get("question")
                .and_then(|q| q.as_str())
                .unwrap_or_default(),
            result
                .score
                .feedback
                .as_deref()
                .map(|f| format!(" | {f}"))
                .unwrap_or_default(),
        );
    }
}

/// The training questions with what a person would do: forecast, convert, then answer with both
/// results. The calls run through the agent's tools, so the results are the tools' own.
async fn labeled_trajectories(agent: &ReAct<Travel>, train: &Dataset) -> Dataset {
    let mut labeled = Vec::new();
    for example in train.iter() {
        let city = example
            .get("city")
            .and_then(|c| c.as_str())
            .unwrap_or_default();
        let amount = example.get("amount").cloned().unwrap_or_default();
        let turns = agent
            .demo_turns([vec![
                ("forecast", json!({ "city": city })),
                ("eur_to_nok", json!({ "amount": amount })),
            ]])
            .await;
        let forecast = &turns[0][0]["observation"];
        let nok = &turns[0][1]["observation"];
        let answer = format!(
            "Tomorrow in {city}: {}. {amount} EUR is {nok} NOK.",
            forecast.as_str().unwrap_or_default()
        );
        labeled.push(
            example
                .clone()
                .with_label(TOOL_TURNS, turns)
                .with_label("answer", answer),
        );
    }
    labeled.into_iter().collect()
}

/// GEPA on the agent's instructions: minibatches and candidates from the training questions.
async fn gepa(
    student: &ReAct<Travel>,
    lm: &Arc<dyn Lm>,
    train: &Dataset,
    slots: usize,
) -> Result<ReAct<Travel>, Box<dyn std::error::Error>> {
    let compiled = Gepa::new(completed, reflection_lm(lm)?)
        .with_reflection_options(LmOptions::new().max_tokens(600))
        .with_budget(GepaBudget::MetricCalls(flag("--budget", 100)))
        .with_tool_descriptions(std::env::args().any(|a| a == "--tool-descriptions"))
        .with_concurrency(slots)
        .compile(student, train, train)
        .await?;
    let report = &compiled.report;
    eprintln!("gepa: {report}");
    for (name, text) in &report.candidates[report.best].instructions {
        eprintln!("  {name}: {text:?}");
    }
    Ok(compiled.program)
}

/// MIPROv2 on the agent's instructions and demos: demo sets bootstrapped from the labeled
/// training questions, trials scored on the training questions.
async fn mipro(
    student: &ReAct<Travel>,
    lm: &Arc<dyn Lm>,
    labeled: &Dataset,
    train: &Dataset,
    slots: usize,
) -> Result<ReAct<Travel>, Box<dyn std::error::Error>> {
    let compiled = MiproV2::new(completed, reflection_lm(lm)?)
        .with_prompt_options(LmOptions::new().max_tokens(600))
        .with_budget(MiproBudget::Manual {
            candidates: flag("--candidates", 3),
            trials: flag("--trials", 6),
        })
        .with_max_bootstrapped_demos(flag("--demos", 3))
        .with_max_labeled_demos(flag("--labeled", 3))
        .with_minibatch(false)
        .with_concurrency(slots)
        .compile(student, labeled, train)
        .await?;
    let report = &compiled.report;
    eprintln!("mipro: {report}");
    for (p, name) in report.predictors.iter().enumerate() {
        let choice = report.trials[report.best].choices[p];
        eprintln!(
            "  {name}: instruction {} of {}, demo set {:?}",
            choice.instruction,
            report.instructions[p].len(),
            choice.demos
        );
    }
    Ok(compiled.program)
}

/// The value after `--name` on the command line.
fn flag_value(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).cloned()
}

fn flag(name: &str, default: usize) -> usize {
    flag_value(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rounds = flag("--rounds", 1);
    let demos = flag("--demos", 3);
    let labeled = flag("--labeled", 3);
    let slots = flag("--slots", 2);

    let train = Dataset::from_jsonl("examples/data/travel_train.jsonl", &["question"])?;
    let dev = Dataset::from_jsonl("examples/data/travel_dev.jsonl", &["question"])?;
    eprintln!(
        "{} training questions, {} held-out questions",
        train.len(),
        dev.len()
    );

    let local = signet_local::LlamaCpp::smollm2().slots(slots as u32);
    let server = local.serve().await?;
    let lm = local.lm(&server)?;
    let student = agent(lm.clone());
    let metric = completed;
    let unlabeled = train.clone();
    let train = labeled_trajectories(&student, &train).await;

    let evaluate = Evaluate::new(&dev, metric).with_concurrency(slots);
    let before = if std::env::args().any(|a| a == "--skip-baseline") {
        None
    } else {
        let before = evaluate.run(&student).await?;
        eprintln!("zero-shot: {before}");
        show_runs(&before);
        Some(before)
    };

    let optimizer = flag_value("--optimizer").unwrap_or_else(|| "bootstrap".into());
    let compiled = if optimizer == "gepa" {
        gepa(&student, &lm, &unlabeled, slots).await?
    } else if optimizer == "mipro" {
        mipro(&student, &lm, &train, &unlabeled, slots).await?
    } else {
        // The teacher: the agent with `labeled` labeled demos; up to `demos` accepted runs become
        // the compiled agent's demos (the labeled ones are only the teacher's).
        let compiled = BootstrapFewShot::new(metric)
            .with_max_bootstrapped_demos(demos)
            .with_max_labeled_demos(labeled)
            .with_max_rounds(rounds)
            .with_max_errors(train.len())
            .with_concurrency(slots)
            .compile(&student, &train)
            .await?;
        eprintln!(
            "bootstrap: {} demos from {} questions in {} runs ({} failed)",
            compiled.report.bootstrapped,
            compiled.report.examples_tried,
            compiled.report.attempts,
            compiled.report.errors.len()
        );
        let mut compiled = compiled.program;
        // Keep only the model's own runs: labeled demos taught the teacher.
        let keep_labeled = std::env::args().any(|a| a == "--keep-labeled");
        for (_, predictor) in compiled
            .named_predictors_mut()
            .into_iter()
            .filter(|_| !keep_labeled)
        {
            let own: Vec<_> = predictor
                .demos()
                .iter()
                .filter(|d| d.get("augmented").is_some())
                .cloned()
                .collect();
            predictor.set_demos(own);
        }
        compiled
    };
    let after = evaluate.run(&compiled).await?;
    eprintln!("compiled: {after}");
    show_runs(&after);
    server.stop().await?;

    let default_save = match optimizer.as_str() {
        "gepa" => "target/travel_agent_gepa.json",
        "mipro" => "target/travel_agent_mipro.json",
        _ => SAVED,
    };
    let saved = flag_value("--save").unwrap_or_else(|| default_save.to_owned());
    compiled.save(&saved)?;
    let shown: usize = compiled
        .named_predictors()
        .iter()
        .map(|(_, p)| p.demos().len())
        .sum();
    println!(
        "| agent | held-out tasks completed | answer states the kroner | failed runs | s/run | LM calls |"
    );
    println!("|---|---|---|---|---|---|");
    if let Some(before) = &before {
        println!("{}", summary("zero-shot", before));
    }
    let label = match optimizer.as_str() {
        "gepa" => "GEPA instructions".to_owned(),
        "mipro" => format!("MIPROv2 ({shown} demos)"),
        _ => format!("compiled ({shown} demos)"),
    };
    println!("{}", summary(&label, &after));
    println!("\nsaved to {saved}");
    Ok(())
}
