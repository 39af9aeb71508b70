//! Evaluate: scores, the concurrency bound, failures scored 0 and kept, panics caught,
//! cancellation keeping what finished, JSONL output.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use signet::data::Example;
use signet::evaluate::{Evaluate, EvaluateError, ExampleError, Progress, exact_match};
use signet::prelude::*;
use support::{Ask, AskInput, AskOutput, RuleLm, answers, operand, sums};

#[tokio::test]
async fn scores_are_averaged_and_each_result_is_kept_in_order() {
    let lm = RuleLm::new(answers(|i| i % 2 == 0));
    let program = Predict::<Ask>::new().with_lm(lm.clone());
    let devset = sums(10);
    let report = Evaluate::new(&devset, exact_match("answer"))
        .with_progress(Progress::Off)
        .run(&program)
        .await
        .unwrap();
    assert_eq!(report.score, 50.0);
    assert_eq!(report.passed(), 5);
    assert_eq!(report.usage.lm_calls, 10);
    let order: Vec<usize> = report.results.iter().map(|r| r.index).collect();
    assert_eq!(order, (0..10).collect::<Vec<_>>());
    assert_eq!(report.results[3].output.as_ref().unwrap().answer, "7");
    assert_eq!(report.results[3].score.value, 0.0);
    assert!(
        report
            .to_string()
            .starts_with("score 50.00% over 10 examples (5 passed)")
    );
}

#[tokio::test]
async fn at_most_the_concurrency_bound_runs_at_once() {
    let lm = RuleLm::with_delay(answers(|_| true), Duration::from_millis(30));
    let program = Predict::<Ask>::new().with_lm(lm.clone());
    let devset = sums(12);
    let report = Evaluate::new(&devset, exact_match("answer"))
        .with_concurrency(3)
        .with_progress(Progress::Off)
        .run(&program)
        .await
        .unwrap();
    assert_eq!(report.score, 100.0);
    assert_eq!(lm.max_in_flight(), 3);
}

#[tokio::test]
async fn failed_examples_score_zero_keep_their_error_and_do_not_stop_the_batch() {
    // Operand 2 hits a server error; the example with no inputs marked cannot run at all.
    let lm = RuleLm::new(|m: &str| {
        (operand(m) != Some(2))
            .then(|| answers(|_| true)(m))
            .flatten()
    });
    let program = Predict::<Ask>::new().with_lm(lm);
    let mut devset: Vec<Example> = sums(4).to_vec();
    devset.push(Example::new(json!({"question": "5 + 5?", "answer": "10"})));
    let report = Evaluate::new(&devset, exact_match("answer"))
        .with_progress(Progress::Off)
        .run(&program)
        .await
        .unwrap();
    assert_eq!(report.score, 60.0);
    let errors: Vec<(usize, &ExampleError)> = report.errors().map(|(r, e)| (r.index, e)).collect();
    assert_eq!(errors.len(), 2);
    assert!(matches!(errors[0], (2, ExampleError::Program { .. })));
    let program_error = match errors[0].1 {
        ExampleError::Program { source, .. } => source.downcast_ref::<signet::Error>(),
        _ => None,
    };
    assert!(matches!(program_error, Some(signet::Error::Lm(_))));
    assert!(
        matches!(errors[1], (4, ExampleError::Input { message }) if message.contains("with_inputs"))
    );
    assert!(
        report.to_string().contains("2 failed; first error:"),
        "{report}"
    );
}

#[tokio::test]
async fn too_many_errors_stop_early_with_what_finished() {
    let lm = RuleLm::new(|_: &str| None);
    let program = Predict::<Ask>::new().with_lm(lm);
    let devset = sums(20);
    let err = Evaluate::new(&devset, exact_match("answer"))
        .with_concurrency(1)
        .with_max_errors(3)
        .with_progress(Progress::Off)
        .run(&program)
        .await
        .unwrap_err();
    let EvaluateError::TooManyErrors {
        errors,
        report,
        first,
        ..
    } = err
    else {
        panic!("expected TooManyErrors");
    };
    assert_eq!(errors, 4);
    assert_eq!(report.results.len(), 4);
    assert!(first.contains("scripted outage"), "{first}");
}

#[tokio::test]
async fn panics_in_metrics_are_caught_and_reported() {
    let lm = RuleLm::new(answers(|_| true));
    let program = Predict::<Ask>::new().with_lm(lm);
    let devset = sums(3);
    let metric = |example: &Example, output: &AskOutput| {
        if example.get("answer") == Some(&json!("2")) {
            panic!("metric bug on {}", output.answer);
        }
        true
    };
    let report = Evaluate::new(&devset, metric)
        .with_progress(Progress::Off)
        .run(&program)
        .await
        .unwrap();
    assert_eq!(report.passed(), 2);
    let (result, error) = report.errors().next().unwrap();
    assert_eq!(result.index, 1);
    assert!(
        error
            .to_string()
            .contains("metric panicked: metric bug on 2"),
        "{error}"
    );
}

/// A program whose `call` panics for one input.
#[derive(Module)]
struct Fragile {
    inner: Predict<Ask>,
}

impl Module for Fragile {
    type Input = AskInput;
    type Output = AskOutput;
    type Error = signet::Error;

    async fn call(&self, input: AskInput) -> Result<AskOutput, signet::Error> {
        assert!(
            !input.question.starts_with('1'),
            "cannot handle {}",
            input.question
        );
        self.inner.call(input).await
    }
}

#[tokio::test]
async fn a_panicking_program_fails_one_example() {
    let program = Fragile {
        inner: Predict::new().with_lm(RuleLm::new(answers(|_| true))),
    };
    let devset = sums(3);
    // At once, and one at a time (the example after the panic runs in the box it left).
    for concurrency in [8, 1] {
        let report = Evaluate::new(&devset, exact_match("answer"))
            .with_progress(Progress::Off)
            .with_concurrency(concurrency)
            .run(&program)
            .await
            .unwrap();
        assert_eq!(report.passed(), 2);
        assert!(matches!(
            report.results[1].error,
            Some(ExampleError::Panicked { ref message }) if message.contains("cannot handle 1 + 1?")
        ));
    }
}

#[tokio::test]
async fn cancelling_keeps_the_finished_examples() {
    let lm = RuleLm::with_delay(answers(|_| true), Duration::from_millis(40));
    let program = Predict::<Ask>::new().with_lm(lm);
    let devset = sums(30);
    let report = Evaluate::new(&devset, exact_match("answer"))
        .with_concurrency(2)
        .with_progress(Progress::Off)
        .run_until(&program, tokio::time::sleep(Duration::from_millis(130)))
        .await
        .unwrap();
    assert!(report.cancelled);
    assert!(
        !report.results.is_empty() && report.results.len() < 30,
        "{}",
        report.results.len()
    );
    assert_eq!(report.total, 30);
    assert_eq!(report.score, 100.0);
    assert!(report.to_string().contains("cancelled after"), "{report}");
}

#[tokio::test]
async fn results_are_written_as_json_lines_and_a_table() {
    let program = Predict::<Ask>::new().with_lm(RuleLm::new(answers(|i| i == 0)));
    let devset = sums(2);
    let report = Evaluate::new(&devset, exact_match("answer"))
        .with_progress(Progress::Off)
        .run(&program)
        .await
        .unwrap();
    let mut out = Vec::new();
    report.write_jsonl(&mut out).unwrap();
    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["inputs"], json!({"question": "1 + 1?"}));
    assert_eq!(lines[1]["labels"], json!({"answer": "2"}));
    assert_eq!(lines[1]["outputs"], json!({"answer": "3"}));
    assert_eq!(lines[1]["score"], 0.0);
    assert_eq!(lines[1]["usage"]["lm_calls"], 1);
    let table = report.table(10);
    assert!(
        table.contains("| 1 | question: 1 + 1? | answer: 2 | answer: 3 | 0 |"),
        "{table}"
    );
}

#[test]
fn evaluation_runs_from_sync_code() {
    let program = Predict::<Ask>::new().with_lm(RuleLm::new(answers(|_| true)));
    let devset = sums(2);
    let report = Evaluate::new(&devset, exact_match("answer"))
        .with_progress(Progress::Off)
        .run_blocking(&program)
        .unwrap();
    assert_eq!(report.score, 100.0);
}
