//! The Signet side of `benches/compare/overhead.sh`: times the Predict and ReAct workloads of
//! `benches/workloads`, and Evaluate over 100 Predict examples, with a zero-latency scripted LM, with the same method as
//! `dspy_overhead.py` uses for Python DSPy, and prints one JSON line per workload.
//!
//! ```text
//! cargo bench --bench compare -- [--prompts PATH] [--seconds S]
//! cargo bench --bench compare -- --profile predict|react|evaluate [--iterations N]
//! ```
//!
//! `--prompts PATH` also writes the messages of one Predict call and one ReAct run to `PATH` (JSON),
//! so the Python side can check it sends DSPy exactly the same prompts. `--profile` only runs one
//! workload `N` times (default 10,000), untimed: a steady loop to run under `perf` or `callgrind`.
//! Without `--bench` (which `cargo bench` adds; `cargo test --benches` does not) it only checks that
//! both workloads give the expected answers.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use signet::data::Example;
use signet::evaluate::{Evaluate, Progress, exact_match};
use signet::lm::Lm;
use signet::testing::ScriptedLm;

// Each bench binary uses part of the shared workloads.
#[allow(dead_code)]
#[path = "../workloads/mod.rs"]
mod workloads;

use workloads::{
    CyclingLm, PREDICT_ANSWER, PREDICT_QUESTION, PREDICT_REPLY, REACT_ANSWER, REACT_LM_CALLS,
    predict, predict_input, react, react_input, react_replies,
};

/// Timing: warm up, pick a batch size so one sample takes about `SAMPLE`, take samples for the
/// time given, report the median (and the fastest) time per call. `dspy_overhead.py` does the same.
const SAMPLE: Duration = Duration::from_millis(50);

fn main() {
    let mut prompts = None;
    let mut seconds = 2.0_f64;
    let mut profile = None;
    let mut iterations = 10_000_u64;
    let mut timed = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--prompts" => prompts = args.next(),
            "--seconds" => {
                seconds = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--seconds takes a number")
            }
            "--profile" => profile = args.next(),
            "--iterations" => {
                iterations = args
                    .next()
                    .and_then(|s| s.parse().ok())
                    .expect("--iterations takes a number")
            }
            // Added by `cargo bench`; `cargo test --benches` runs the binary without it.
            "--bench" => timed = true,
            other => panic!("unknown argument {other:?}"),
        }
    }
    let budget = Duration::from_secs_f64(seconds);
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");

    if let Some(workload) = profile {
        runtime.block_on(run_untimed(&workload, iterations));
        return;
    }
    if let Some(path) = prompts {
        runtime.block_on(write_prompts(&path));
    }

    let predictor = predict(CyclingLm::new(&[PREDICT_REPLY]));
    let output = runtime.block_on(predictor.call(predict_input())).unwrap();
    assert_eq!(output.answer, PREDICT_ANSWER);
    let agent = react(CyclingLm::new(&react_replies()));
    let output = runtime.block_on(agent.call(react_input())).unwrap();
    assert_eq!(output.output.answer, REACT_ANSWER);
    assert_eq!(output.usage.lm_calls, REACT_LM_CALLS as u64);
    if !timed {
        println!(
            "compare: both workloads give the expected answers (timings: cargo bench --bench compare)"
        );
        return;
    }

    let timing = time_calls(&runtime, budget, || async {
        predictor.call(predict_input()).await.unwrap();
    });
    report("predict", 1, timing);

    let timing = time_calls(&runtime, budget, || async {
        agent.call(react_input()).await.unwrap();
    });
    report("react", REACT_LM_CALLS, timing);

    // Evaluate over EVAL_EXAMPLES copies of the Predict workload, defaults as a user gets them
    // (8 at a time) without a progress display, DSPy's exact-match metric; timed per example.
    let devset = eval_devset();
    let evaluate = Evaluate::new(&devset, exact_match("answer")).with_progress(Progress::Off);
    let timing = time_calls(&runtime, budget, || async {
        let report = evaluate.run(&predictor).await.unwrap();
        assert_eq!(report.score, 100.0);
    });
    report(
        "evaluate",
        1,
        Timing {
            median: timing.median / EVAL_EXAMPLES as u32,
            fastest: timing.fastest / EVAL_EXAMPLES as u32,
            calls: timing.calls * EVAL_EXAMPLES as u64,
        },
    );
}

/// The `evaluate` workload's examples: EVAL_EXAMPLES copies of the Predict question.
fn eval_devset() -> Vec<Example> {
    (0..EVAL_EXAMPLES)
        .map(|_| {
            Example::new(json!({"question": PREDICT_QUESTION, "answer": PREDICT_ANSWER}))
                .with_inputs(["question"])
        })
        .collect()
}

/// Examples per Evaluate run in the `evaluate` workload (`dspy_overhead.py` uses the same).
const EVAL_EXAMPLES: usize = 100;

struct Timing {
    median: Duration,
    fastest: Duration,
    calls: u64,
}

/// Times `call` (one workload run) on `runtime`: samples of `batch` calls in one `block_on`.
fn time_calls<F, Fut>(runtime: &tokio::runtime::Runtime, budget: Duration, call: F) -> Timing
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let sample = |batch: u64| {
        runtime.block_on(async {
            let started = Instant::now();
            for _ in 0..batch {
                call().await;
            }
            started.elapsed()
        })
    };
    // Warm up for a tenth of the budget, doubling the batch until one takes `SAMPLE`.
    let warm_up = Instant::now();
    let mut batch = 1;
    loop {
        if sample(batch) < SAMPLE {
            batch *= 2;
        } else if warm_up.elapsed() >= budget / 10 {
            break;
        }
    }
    let mut per_call = Vec::new();
    let measuring = Instant::now();
    while measuring.elapsed() < budget || per_call.len() < 5 {
        per_call.push(sample(batch) / batch as u32);
    }
    per_call.sort();
    Timing {
        median: per_call[per_call.len() / 2],
        fastest: per_call[0],
        calls: batch * per_call.len() as u64,
    }
}

fn report(workload: &str, lm_calls: usize, timing: Timing) {
    println!(
        "{}",
        json!({
            "impl": "signet",
            "workload": workload,
            "lm_calls": lm_calls,
            "median_us": timing.median.as_secs_f64() * 1e6,
            "fastest_us": timing.fastest.as_secs_f64() * 1e6,
            "calls": timing.calls,
        })
    );
}

/// Runs `workload` `iterations` times, for a profiler.
async fn run_untimed(workload: &str, iterations: u64) {
    match workload {
        "predict" => {
            let predictor = predict(CyclingLm::new(&[PREDICT_REPLY]));
            for _ in 0..iterations {
                predictor.call(predict_input()).await.unwrap();
            }
        }
        "react" => {
            let agent = react(CyclingLm::new(&react_replies()));
            for _ in 0..iterations {
                agent.call(react_input()).await.unwrap();
            }
        }
        "evaluate" => {
            let predictor = predict(CyclingLm::new(&[PREDICT_REPLY]));
            let devset = eval_devset();
            let evaluate =
                Evaluate::new(&devset, exact_match("answer")).with_progress(Progress::Off);
            for _ in 0..iterations {
                evaluate.run(&predictor).await.unwrap();
            }
        }
        other => panic!("unknown workload {other:?} (predict, react or evaluate)"),
    }
}

/// Writes the messages Signet sends in one Predict call and one ReAct run.
async fn write_prompts(path: &str) {
    let lm = Arc::new(ScriptedLm::texts([PREDICT_REPLY]));
    predict(lm.clone() as Arc<dyn Lm>)
        .call(predict_input())
        .await
        .unwrap();
    let predict_messages: Vec<_> = lm.requests().into_iter().map(|r| r.messages).collect();

    let lm = Arc::new(ScriptedLm::texts(react_replies()));
    react(lm.clone() as Arc<dyn Lm>)
        .call(react_input())
        .await
        .unwrap();
    let react_messages: Vec<_> = lm.requests().into_iter().map(|r| r.messages).collect();

    let prompts = json!({"predict": predict_messages, "react": react_messages});
    std::fs::write(path, serde_json::to_string_pretty(&prompts).unwrap())
        .unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
}
