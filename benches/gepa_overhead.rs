//! GEPA's own overhead: the optimizer and the framework around it, with zero-latency scripted LMs,
//! on the reference workload of `tests/optimize/gepa.rs` (DSPy 3.4.1's reference GEPA run): the
//! program `HintThenAnswer` (a hint, then an answer given the hint), 8 training and 8 validation
//! examples, per-predictor feedback, one example at a time, no progress display.
//!
//! ```text
//! cargo bench --bench gepa_overhead -- [--seconds S]
//! ```
//!
//! Two workloads: `reference` (budget 150 metric calls) and `merges` (other task tables, budget
//! 300, two merges accepted). Each is compiled from scratch again and again for `S` seconds (3 by
//! default, at least 5 runs) and the median run is printed as one JSON line per workload. Every run
//! is checked against DSPy's outcome (candidates, their parents, metric calls); a different one
//! exits non-zero. `benches/compare/gepa.sh` runs this beside `benches/compare/dspy_gepa.py`.
//! Without `--bench` (which `cargo bench` adds; `cargo test --benches` does not) each workload runs
//! once, checked, untimed.

use std::sync::{Arc, Mutex};

use serde_json::json;
use signet::data::Example;
use signet::evaluate::Progress;
use signet::optimize::{Gepa, GepaBudget, GepaReport, Optimizer};

#[path = "../tests/support/gepa_task.rs"]
mod gepa_task;
#[path = "support/repeat.rs"]
mod repeat;
use gepa_task::{
    GOOD1, GOOD2, MERGE1, MERGE2, Table, examples, feedback, program, reflection_lm, right,
};

/// One workload and the outcome DSPy 3.4.1 reaches on it.
struct Workload {
    name: &'static str,
    good1: Table,
    good2: Table,
    budget: usize,
    parents: &'static [&'static [usize]],
    metric_calls: usize,
}

const WORKLOADS: [Workload; 2] = [
    Workload {
        name: "reference",
        good1: GOOD1,
        good2: GOOD2,
        budget: 150,
        parents: &[&[], &[0], &[1], &[1]],
        metric_calls: 152,
    },
    Workload {
        name: "merges",
        good1: MERGE1,
        good2: MERGE2,
        budget: 300,
        parents: &[&[], &[0], &[1], &[0], &[1, 3], &[3], &[2, 5]],
        metric_calls: 300,
    },
];

/// One full GEPA run from scratch: fresh LMs, program and optimizer, as DSPy's side does.
async fn run(workload: &Workload, train: &[Example], val: &[Example]) -> GepaReport {
    let program = program(workload.good1, workload.good2);
    Gepa::new(right, reflection_lm(Arc::new(Mutex::new(Vec::new()))))
        .with_feedback(feedback)
        .with_budget(GepaBudget::MetricCalls(workload.budget))
        .with_concurrency(1)
        .with_progress(Progress::Off)
        .compile(&program, train, val)
        .await
        .expect("GEPA run")
        .report
}

/// Exits non-zero unless the run reached DSPy's outcome.
fn check(workload: &Workload, report: &GepaReport) {
    let parents: Vec<&[usize]> = report
        .candidates
        .iter()
        .map(|c| c.parents.as_slice())
        .collect();
    if parents != workload.parents || report.metric_calls != workload.metric_calls {
        eprintln!(
            "gepa_overhead: {}: parents {parents:?} and {} metric calls, expected {:?} and {}",
            workload.name, report.metric_calls, workload.parents, workload.metric_calls
        );
        std::process::exit(1);
    }
}

fn main() {
    let (budget, timed) = repeat::args();
    let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
    let (train, val) = (examples(0..8), examples(8..16));

    for workload in &WORKLOADS {
        // A first run, untimed: checks the outcome and warms up.
        let report = runtime.block_on(run(workload, &train, &val));
        check(workload, &report);
        if !timed {
            println!(
                "gepa_overhead: {}: DSPy's outcome (timings: cargo bench --bench gepa_overhead)",
                workload.name
            );
            continue;
        }
        // Whole runs, one after another, for the time given (at least 5); each one checked.
        let (runs, median) = repeat::median(budget, || {
            check(workload, &runtime.block_on(run(workload, &train, &val)));
        });
        println!(
            "{}",
            json!({
                "workload": workload.name,
                "runs": runs,
                "median_ms": (median.as_secs_f64() * 1e6).round() / 1e3,
                "metric_calls": report.metric_calls,
                "candidates": report.candidates.len(),
            })
        );
    }
}
