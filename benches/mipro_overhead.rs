//! MIPROv2's own overhead: the optimizer and the framework around it, with zero-latency scripted
//! LMs, on two of the runs recorded from DSPy 3.4.1 that `tests/optimize/mipro.rs` replays:
//! `reference` (one predictor, 10 + 10 examples, 3 candidates, 5 trials on minibatches of 4) and
//! `tpe` (20 + 20 examples, 6 candidates, 40 trials on minibatches of 8, 32 of them sampled by the
//! TPE estimator). One example at a time, no progress display.
//!
//! ```text
//! cargo bench --bench mipro_overhead -- [--seconds S]
//! ```
//!
//! Each workload is compiled from scratch again and again for `S` seconds (3 by default, at least
//! 5 runs) and the median run is printed as one JSON line per workload. Every run is checked
//! against DSPy's outcome (evaluations, metric calls, best score); a different one exits
//! non-zero. `benches/compare/mipro.sh` runs this beside `benches/compare/dspy_mipro.py`. Without
//! `--bench` (which `cargo bench` adds; `cargo test --benches` does not) each workload runs once,
//! checked, untimed.

use std::sync::{Arc, Mutex};

use serde_json::json;
use signet::data::Example;
use signet::evaluate::Progress;
use signet::optimize::{MiproBudget, MiproReport, MiproV2};
use signet::prelude::*;

#[path = "../tests/support/mipro_task.rs"]
mod mipro_task;
#[path = "support/repeat.rs"]
mod repeat;
use mipro_task::{AskOutput, Prog, Task, examples, metric, prompt_lm, task_lm};

/// One workload and the outcome DSPy 3.4.1 reaches on it.
struct Workload {
    name: &'static str,
    examples: usize,
    task: Task,
    candidates: usize,
    trials: usize,
    minibatch_size: usize,
    full_eval_steps: usize,
    max_bootstrapped_demos: usize,
    evaluations: usize,
    metric_calls: usize,
    best_score: f64,
}

const WORKLOADS: [Workload; 2] = [
    Workload {
        name: "reference",
        examples: 20,
        task: Task::Fn1,
        candidates: 3,
        trials: 5,
        minibatch_size: 4,
        full_eval_steps: 2,
        max_bootstrapped_demos: 2,
        evaluations: 9,
        metric_calls: 63,
        best_score: 70.0,
    },
    Workload {
        name: "tpe",
        examples: 40,
        task: Task::Fn2,
        candidates: 6,
        trials: 40,
        minibatch_size: 8,
        full_eval_steps: 5,
        max_bootstrapped_demos: 3,
        evaluations: 49,
        metric_calls: 512,
        best_score: 100.0,
    },
];

/// One full MIPROv2 run from scratch: fresh LMs, program and optimizer, as DSPy's side does.
async fn run(workload: &Workload, train: &[Example], val: &[Example]) -> MiproReport {
    let program = Prog {
        pred: Predict::new().with_lm(task_lm(workload.task)),
    };
    MiproV2::new(
        |e: &Example, out: &AskOutput| metric(e, &out.answer),
        prompt_lm(Arc::new(Mutex::new(Vec::new()))),
    )
    .with_budget(MiproBudget::Manual {
        candidates: workload.candidates,
        trials: workload.trials,
    })
    .with_minibatch_size(workload.minibatch_size)
    .with_minibatch_full_eval_steps(workload.full_eval_steps)
    .with_max_bootstrapped_demos(workload.max_bootstrapped_demos)
    .with_max_labeled_demos(2)
    .with_seed(0)
    .with_concurrency(1)
    .with_progress(Progress::Off)
    .compile(&program, train, val)
    .await
    .expect("MIPROv2 run")
    .report
}

/// Exits non-zero unless the run reached DSPy's outcome.
fn check(workload: &Workload, report: &MiproReport) {
    let outcome = (report.trials.len(), report.metric_calls, report.best_score);
    let expected = (
        workload.evaluations,
        workload.metric_calls,
        workload.best_score,
    );
    if outcome != expected {
        eprintln!(
            "mipro_overhead: {}: (evaluations, metric calls, best score) {outcome:?}, expected \
             {expected:?}",
            workload.name
        );
        std::process::exit(1);
    }
}

fn main() {
    let (budget, timed) = repeat::args();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");

    for workload in &WORKLOADS {
        let data = examples(workload.examples);
        let (train, val) = data.split_at(workload.examples / 2);
        // A first run, untimed: checks the outcome and warms up.
        let report = runtime.block_on(run(workload, train, val));
        check(workload, &report);
        if !timed {
            println!(
                "mipro_overhead: {}: DSPy's outcome (timings: cargo bench --bench mipro_overhead)",
                workload.name
            );
            continue;
        }
        // Whole runs, one after another, for the time given (at least 5); each one checked.
        let (runs, median) = repeat::median(budget, || {
            check(workload, &runtime.block_on(run(workload, train, val)));
        });
        println!(
            "{}",
            json!({
                "workload": workload.name,
                "runs": runs,
                "median_ms": (median.as_secs_f64() * 1e6).round() / 1e3,
                "metric_calls": report.metric_calls,
                "evaluations": report.trials.len(),
            })
        );
    }
}
