//! Compile the travel agent of `react_agent` on SmolLM2-135M against a metric that judges its
//! **answers**: evaluate it on held-out questions, compile it on training questions, evaluate
//! the compiled agent, and save it where `react_agent` loads it.
//!
//! ```text
//! cargo run --release --example optimize_travel -- --test          # the shipped agent
//! cargo run --release --example optimize_travel -- --k 3 --save /tmp/agent.json
//! cargo run --release --example optimize_travel -- --optimizer bootstrap --save /tmp/agent.json
//! cargo run --release --example optimize_travel -- --optimizer gepa --budget 100
//! cargo run --release --example optimize_travel -- --optimizer copro --breadth 3 --depth 2
//! ```
//!
//! The questions (`examples/data/travel_{train,dev,test}.jsonl`: 66 to compile from, 30
//! held-out to choose settings with, 28 looked at only to report the chosen agent with `--test`)
//! are of five kinds: the forecast and a conversion, the forecast only, a conversion only, a city
//! the forecast tool does not know, and a question the tools cannot answer. A run is *right* when
//! a user would call its answer right (`examples/shared/travel_metric.rs`): it used exactly the
//! tools the question needs, and its answer states what they returned and nothing false. The
//! tables also give the tool calls alone (right tools, right arguments, no others, finished).
//!
//! Every optimizer starts from **labeled** training questions: the calls a person would make (run
//! through the agent's tools, so the results are the tools' own) and an answer that says their
//! results. Optimizers (`--optimizer`):
//!
//! - `knn` (the default, `KnnFewShot`): every labeled question is a demo, and each question is
//!   shown the `--k N` (6) most like it, the nearest last (`--nearest-first`: DSPy's order),
//!   compared by character 3-grams and number shapes (`--char-ngrams N`; 0: whole words).
//! - `labeled` (`LabeledFewShot`): the first `--labeled N` (5) labeled questions, for every
//!   question.
//! - `bootstrap` (`BootstrapFewShot`): the teacher is the agent with `--labeled N` labeled demos;
//!   up to `--demos N` (5) of its runs the metric accepts become the demos (`--keep-labeled`
//!   keeps the labeled ones too).
//! - `gepa`: instructions rewritten by a reflection LM from the metric's feedback, `--budget N`
//!   metric calls (100); `--tool-descriptions` lets it rewrite the tools' descriptions too.
//! - `mipro` (MIPROv2): `--candidates N` (3) instructions and demo sets searched for `--trials N`
//!   (6) trials.
//! - `copro` (COPRO): each predictor's instruction searched by coordinate ascent, `--breadth N`
//!   (3) proposals a round for `--depth N` (2) rounds, scored on the training questions (each
//!   scoring runs all of them: breadth 3 and depth 2 score the agent 18 times).
//! - `none`: the agent as it is.
//!
//! GEPA's reflection and MIPROv2's and COPRO's proposals come from the API model named by `OPENAI_MODEL`
//! when `OPENAI_API_KEY` is set, else from the local model itself.
//!
//! The agent's settings can be varied to see what moves the model: `--max-iters N` (2),
//! `--no-finish-last` (the last turn need not call `finish`), `--repeat-penalty X`,
//! `--frequency-penalty X`, `--presence-penalty X`, `--max-tokens N` (400),
//! `--one-call-a-reply` (`parallel_tool_calls: false`, and labeled demos with one call a turn),
//! `--auto-tool-choice` (the model may answer without a tool call). `--per-kind K` instead
//! evaluates each kind of held-out question with `K` labeled demos of its own kind only (an
//! upper bound for demo selection). Also `--slots N` (2 concurrent runs), `--skip-baseline`,
//! `--limit N` (the first N held-out questions), `--save PATH` (`examples/travel_agent.json` for
//! `knn`, `labeled` and `bootstrap`, under `target/` for the others), `--show` (every run's calls
//! and answer, and what was wrong).

use std::sync::Arc;

use serde_json::json;
use signet::adapter::Adapter;
use signet::data::Dataset;
use signet::evaluate::{Evaluate, Report};
use signet::module::{Predictors, ReActOutput, react::TOOL_TURNS};
use signet::optimize::{
    BootstrapFewShot, Copro, Gepa, GepaBudget, KnnFewShot, LabeledFewShot, MiproBudget, MiproV2,
};
use signet::prelude::*;

#[path = "shared/api_model.rs"]
mod api_model;
use api_model::reflection_lm;

#[path = "shared/travel.rs"]
mod travel;
use travel::{Notes, Travel, TravelOutput};

#[path = "shared/travel_model.rs"]
#[allow(dead_code)]
mod travel_model;

#[path = "shared/travel_metric.rs"]
#[allow(dead_code)]
mod travel_metric;
use travel_metric::{Case, Kind, right_answer, right_calls};

/// Where the compiled agent is saved (and where `react_agent` loads it from).
const SAVED: &str = "examples/travel_agent.json";

/// The agent `react_agent` runs, before compiling, with the settings the flags change.
fn agent(lm: Arc<dyn Lm>) -> ReAct<Travel> {
    let mut adapter = JsonAdapter::constrained();
    if has("--one-call-a-reply") {
        adapter = adapter.with_parallel_tool_calls(false);
    }
    let adapter: Arc<dyn Adapter> = Arc::new(adapter);
    let mut options = LmOptions::new()
        .temperature(0.0)
        .max_tokens(flag("--max-tokens", 400.0) as u32);
    options.repeat_penalty = flag_value("--repeat-penalty").and_then(|v| v.parse().ok());
    options.frequency_penalty = flag_value("--frequency-penalty").and_then(|v| v.parse().ok());
    options.presence_penalty = flag_value("--presence-penalty").and_then(|v| v.parse().ok());
    let mut agent = travel_model::agent(lm, adapter, true, &Arc::new(Notes::default()))
        .with_required_tool_calls(!has("--auto-tool-choice"))
        .with_finish_on_last_turn(!has("--no-finish-last"))
        .with_options(options);
    if let Some(n) = flag_value("--max-iters").and_then(|v| v.parse().ok()) {
        agent = agent.with_limits(Limits::default().max_iters(n));
    }
    agent
}

/// The training questions with what a person would do: the calls the question needs (run
/// through the agent's tools, so the results are the tools' own) and an answer written from
/// their results.
async fn labeled(agent: &ReAct<Travel>, train: &Dataset) -> Dataset {
    let mut labeled = Vec::new();
    for example in train.iter() {
        let case = Case::of(example).expect("a valid training question");
        // The conversion first, the forecast last; the answer says the latest result first (a
        // small model copies the result it just read best), then the earlier one, whose opening
        // words ("200 EUR is") appear nowhere else.
        let mut calls = Vec::new();
        if let Some(amount) = case.amount {
            // The amount as the question writes it ("1,500", "12.99").
            let question = example
                .get("question")
                .and_then(|q| q.as_str())
                .unwrap_or_default();
            let written = travel_metric::written_amount(question, amount)
                .unwrap_or_else(|| amount.to_string());
            calls.push(("eur_to_nok", json!({ "amount": written })));
        }
        if let Some(city) = &case.city {
            calls.push(("forecast", json!({ "city": city })));
        }
        let turns = if calls.is_empty() {
            json!([])
        } else if has("--one-call-a-reply") {
            agent
                .demo_turns(calls.into_iter().map(|call| vec![call]))
                .await
        } else {
            agent.demo_turns([calls]).await
        };
        let results: Vec<String> = turns
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|turn| turn.as_array().into_iter().flatten())
            .map(|call| {
                if case.kind == Kind::UnknownCity && call["name"] == "forecast" {
                    // The first sentence of the forecast's error.
                    let city = case.city.as_deref().unwrap_or_default();
                    return format!("There is no forecast for {city}.");
                }
                match &call["observation"] {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                }
            })
            .collect();
        let answer = match case.kind {
            Kind::OffTopic => "Sorry, I can only help with tomorrow's weather and euro to kroner \
                               conversions."
                .to_owned(),
            _ => results.into_iter().rev().collect::<Vec<_>>().join(" "),
        };
        labeled.push(
            example
                .clone()
                .with_label(TOOL_TURNS, turns)
                .with_label("answer", answer),
        );
    }
    labeled.into_iter().collect()
}

/// Right answers and right calls per question kind, and in all.
fn table(rows: &[(&str, &Report<ReActOutput<TravelOutput>>)]) -> String {
    let mut text = String::from("| agent | question kind | right answers | right tool calls |\n");
    text.push_str("|---|---|---:|---:|\n");
    for (name, report) in rows {
        let of_kind = |kind: Option<Kind>| {
            let results: Vec<_> = report
                .results
                .iter()
                .filter(|r| kind.is_none_or(|k| Case::of(&r.example).is_ok_and(|c| c.kind == k)))
                .collect();
            let answers = results.iter().filter(|r| r.score.value > 0.0).count();
            let calls = results
                .iter()
                .filter(|r| {
                    r.output
                        .as_ref()
                        .is_some_and(|out| right_calls(&r.example, out).value > 0.0)
                })
                .count();
            let n = results.len();
            let percent = |k: usize| 100.0 * k as f64 / n.max(1) as f64;
            format!(
                "{answers}/{n} ({:.0} %) | {calls}/{n} ({:.0} %)",
                percent(answers),
                percent(calls)
            )
        };
        let asked = |kind: Kind| {
            report
                .results
                .iter()
                .any(|r| Case::of(&r.example).is_ok_and(|c| c.kind == kind))
        };
        for kind in Kind::ALL.into_iter().filter(|k| asked(*k)) {
            text.push_str(&format!(
                "| {name} | {} | {} |\n",
                kind.name(),
                of_kind(Some(kind))
            ));
        }
        text.push_str(&format!("| {name} | **all** | {} |\n", of_kind(None)));
    }
    text
}

/// Every run: right or not, the calls, the answer, and what was wrong.
fn show_runs(report: &Report<ReActOutput<TravelOutput>>) {
    for result in &report.results {
        let question = result.example.get("question").and_then(|q| q.as_str());
        let run = match (&result.output, &result.error) {
            (Some(out), _) => {
                let calls: Vec<String> = out
                    .trajectory
                    .steps
                    .iter()
                    .filter(|s| s.tool_name != "finish")
                    .map(|s| format!("{}({})", s.tool_name, s.tool_args))
                    .collect();
                format!("{} -> {:?}", calls.join(", "), out.output.answer)
            }
            (None, Some(error)) => format!("error: {error}"),
            (None, None) => String::new(),
        };
        let verdict = if result.score.value > 0.0 {
            "right"
        } else {
            "wrong"
        };
        let why = result.score.feedback.as_deref().unwrap_or_default();
        eprintln!(
            "  {verdict} {:?}\n        {run}\n        {why}",
            question.unwrap_or_default()
        );
    }
}

/// The value after `--name` on the command line.
fn flag_value(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let at = args.iter().position(|a| a == name)?;
    args.get(at + 1).cloned()
}

fn flag(name: &str, default: f64) -> f64 {
    flag_value(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn has(name: &str) -> bool {
    std::env::args().any(|a| a == name)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let slots = flag("--slots", 2.0) as usize;
    let demos = flag("--demos", 5.0) as usize;
    let labeled_demos = flag("--labeled", 5.0) as usize;
    let optimizer = flag_value("--optimizer").unwrap_or_else(|| "knn".into());

    let train = Dataset::from_jsonl("examples/data/travel_train.jsonl", &["question"])?;
    let mut dev = Dataset::from_jsonl("examples/data/travel_dev.jsonl", &["question"])?;
    if let Some(limit) = flag_value("--limit").and_then(|v| v.parse().ok()) {
        dev = dev.split_at(limit).0;
    }
    eprintln!(
        "{} training questions, {} held-out questions",
        train.len(),
        dev.len()
    );

    let local = signet_local::LlamaCpp::smollm2().slots(slots as u32);
    let server = local.serve().await?;
    let lm = local.lm(&server)?;
    let student = agent(lm.clone());
    let labeled = labeled(&student, &train).await;

    let evaluate = Evaluate::new(&dev, right_answer).with_concurrency(slots);
    let before = if has("--skip-baseline") {
        None
    } else {
        let before = evaluate.run(&student).await?;
        eprintln!("zero-shot: {before}");
        if has("--show") {
            show_runs(&before);
        }
        Some(before)
    };

    if let Some(k) = flag_value("--per-kind").and_then(|v| v.parse::<usize>().ok()) {
        // Experiment: each kind's questions with k labeled demos of that kind only.
        let mut rows = Vec::new();
        for kind in Kind::ALL {
            let of_kind = |data: &Dataset| -> Dataset {
                data.iter()
                    .filter(|e| Case::of(e).is_ok_and(|c| c.kind == kind))
                    .cloned()
                    .collect()
            };
            let program = LabeledFewShot::new(k)
                .without_sampling()
                .compile(&student, &of_kind(&labeled))
                .await?
                .program;
            let dev_kind = of_kind(&dev);
            let report = Evaluate::new(&dev_kind, right_answer)
                .with_concurrency(slots)
                .run(&program)
                .await?;
            if has("--show") {
                show_runs(&report);
            }
            rows.push(report);
        }
        for report in &rows {
            println!("{}", table(&[("per kind", report)]));
        }
        server.stop().await?;
        return Ok(());
    }
    let compiled = match optimizer.as_str() {
        "none" => student.clone(),
        "knn" => {
            let mut knn = KnnFewShot::new(flag("--k", 6.0) as usize)
                .most_similar_last(!has("--nearest-first"));
            let ngrams = flag("--char-ngrams", 3.0) as usize;
            if ngrams > 0 {
                knn = knn.with_char_ngrams(ngrams);
            }
            let compiled = knn.compile(&student, &labeled).await?;
            eprintln!("knn: {}", compiled.report);
            compiled.program
        }
        "labeled" => {
            LabeledFewShot::new(labeled_demos)
                .without_sampling()
                .compile(&student, &labeled)
                .await?
                .program
        }
        "gepa" => {
            let compiled = Gepa::new(right_answer, reflection_lm(&lm)?)
                .with_reflection_options(LmOptions::new().max_tokens(600))
                .with_budget(GepaBudget::MetricCalls(flag("--budget", 100.0) as usize))
                .with_tool_descriptions(has("--tool-descriptions"))
                .with_concurrency(slots)
                .compile(&student, &train, &train)
                .await?;
            eprintln!("gepa: {}", compiled.report);
            compiled.program
        }
        "copro" => {
            let compiled = Copro::new(right_answer)
                .with_prompt_lm(reflection_lm(&lm)?)
                .with_prompt_options(LmOptions::new().max_tokens(600))
                .with_breadth(flag("--breadth", 3.0) as usize)
                .with_depth(flag("--depth", 2.0) as usize)
                .with_concurrency(slots)
                .compile(&student, &train, &[])
                .await?;
            eprintln!("copro: {}", compiled.report);
            compiled.program
        }
        "mipro" => {
            let compiled = MiproV2::new(right_answer, reflection_lm(&lm)?)
                .with_prompt_options(LmOptions::new().max_tokens(600))
                .with_budget(MiproBudget::Manual {
                    candidates: flag("--candidates", 3.0) as usize,
                    trials: flag("--trials", 6.0) as usize,
                })
                .with_max_bootstrapped_demos(demos)
                .with_max_labeled_demos(labeled_demos)
                .with_minibatch(false)
                .with_concurrency(slots)
                .compile(&student, &labeled, &train)
                .await?;
            eprintln!("mipro: {}", compiled.report);
            compiled.program
        }
        "bootstrap" => {
            let compiled = BootstrapFewShot::new(right_answer)
                .with_max_bootstrapped_demos(demos)
                .with_max_labeled_demos(labeled_demos)
                .with_max_errors(labeled.len())
                .with_concurrency(slots)
                .compile(&student, &labeled)
                .await?;
            eprintln!(
                "bootstrap: {} demos from {} questions in {} runs ({} failed)",
                compiled.report.bootstrapped,
                compiled.report.examples_tried,
                compiled.report.attempts,
                compiled.report.errors.len()
            );
            let mut compiled = compiled.program;
            if !has("--keep-labeled") {
                // Keep only the model's own runs: the labeled demos taught the teacher.
                for (_, predictor) in compiled.named_predictors_mut() {
                    let own: Vec<_> = predictor
                        .demos()
                        .iter()
                        .filter(|d| d.get("augmented").is_some())
                        .cloned()
                        .collect();
                    predictor.set_demos(own);
                }
            }
            compiled
        }
        other => return Err(format!("unknown optimizer `{other}` (see the example's doc)").into()),
    };
    let after = evaluate.run(&compiled).await?;
    eprintln!("compiled: {after}");
    if has("--show") {
        show_runs(&after);
    }
    // The test questions, looked at only to report the chosen agent's score.
    let test = if has("--test") {
        let test = Dataset::from_jsonl("examples/data/travel_test.jsonl", &["question"])?;
        let report = Evaluate::new(&test, right_answer)
            .with_concurrency(slots)
            .run(&compiled)
            .await?;
        eprintln!("test: {report}");
        if has("--show") {
            show_runs(&report);
        }
        Some(report)
    } else {
        None
    };
    server.stop().await?;

    let default_save = match optimizer.as_str() {
        "knn" | "bootstrap" | "labeled" => SAVED.to_owned(),
        other => format!("target/travel_agent_{other}.json"),
    };
    let saved = flag_value("--save").unwrap_or(default_save);
    compiled.save(&saved)?;
    // The step predictor's demos (the extractor, which this agent never calls, holds the same).
    let shown = compiled.named_predictors()[0].1.demos().len();
    let label = match optimizer.as_str() {
        "knn" => format!(
            "knn ({} demos, {} a question)",
            labeled.len(),
            flag("--k", 6.0) as usize
        ),
        _ => format!("{optimizer} ({shown} demos)"),
    };
    let mut rows = Vec::new();
    if let Some(before) = &before {
        rows.push(("zero-shot", before));
    }
    rows.push((label.as_str(), &after));
    println!("held-out (dev) questions:\n\n{}", table(&rows));
    if let Some(test) = &test {
        println!("test questions:\n\n{}", table(&[(label.as_str(), test)]));
    }
    println!(
        "held-out: {:.1} s a question, {} LM calls, {} prompt + {} completion tokens (compiled)",
        after.elapsed.as_secs_f64() / after.results.len().max(1) as f64,
        after.usage.lm_calls,
        after.usage.prompt_tokens,
        after.usage.completion_tokens
    );
    println!("saved to {saved}");
    Ok(())
}
