//! Parallel: many calls, a bounded number at a time, results in input order with each failure
//! kept; a time limit per call; past the allowed failures no more calls start and the run is a
//! typed error that still holds every result.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use signet::Error;
use signet::evaluate::{ItemError, Parallel, ParallelError};
use signet::lm::{Completion, Lm, LmError, LmRequest};
use signet::module::{CallConfig, Predict};
use signet::testing::FnLm;

use crate::support;
use support::*;

fn question(q: &str) -> AskInput {
    AskInput {
        question: q.to_owned(),
    }
}

/// The question line of a Chat prompt.
fn asked(request: &LmRequest) -> String {
    request.messages[1]
        .content
        .lines()
        .nth(1)
        .unwrap_or_default()
        .to_owned()
}

/// Answers after `delay` (longer for the question "slow"), fails for "fail", and counts the calls
/// in flight.
struct Echo {
    in_flight: AtomicUsize,
    most: AtomicUsize,
}

impl Lm for Echo {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> futures::future::BoxFuture<'a, Result<Completion, LmError>> {
        Box::pin(async move {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            let question = asked(request);
            let delay = if question == "slow" { 5_000 } else { 20 };
            tokio::time::sleep(Duration::from_millis(delay)).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            if question == "fail" {
                return Err(LmError::Server {
                    status: 500,
                    message: "boom".into(),
                });
            }
            let mut completion = Completion::text(answer_reply(&question));
            completion.usage.lm_calls = 1;
            Ok(completion)
        })
    }

    fn model(&self) -> &str {
        "echo"
    }
}

fn echo() -> Arc<Echo> {
    Arc::new(Echo {
        in_flight: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
    })
}

#[tokio::test]
async fn results_keep_the_input_order_failures_sit_beside_successes_and_concurrency_is_bounded() {
    let lm = echo();
    let qa = Predict::<Ask>::new().with_lm(lm.clone());
    let questions = ["a", "fail", "c", "d", "e", "f"].map(question);
    let run = Parallel::new()
        .with_concurrency(2)
        .run(&qa, questions)
        .await
        .unwrap();
    let shown: Vec<String> = run
        .results
        .iter()
        .map(|r| match r {
            Ok(out) => out.answer.clone(),
            Err(ItemError::Module(Error::Lm(LmError::Server { status, .. }))) => {
                format!("error {status}")
            }
            Err(other) => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(shown, ["a", "error 500", "c", "d", "e", "f"]);
    assert_eq!(run.failures(), 1);
    assert_eq!(lm.most.load(Ordering::SeqCst), 2);
    assert_eq!(run.usage.lm_calls, 5);
}

#[tokio::test]
async fn a_call_past_the_time_limit_is_timed_out_and_the_others_finish() {
    let qa = Predict::<Ask>::new().with_lm(echo());
    let run = Parallel::new()
        .with_timeout(Some(Duration::from_millis(200)))
        .run(&qa, ["a", "slow", "c"].map(question))
        .await
        .unwrap();
    assert!(
        matches!(run.results[1], Err(ItemError::TimedOut(limit)) if limit == Duration::from_millis(200))
    );
    assert_eq!(run.results[2].as_ref().unwrap().answer, "c");
}

#[tokio::test]
async fn past_the_allowed_failures_no_more_calls_start_and_every_result_is_kept() {
    let lm = echo();
    let qa = Predict::<Ask>::new().with_lm(lm.clone());
    let mut questions = vec![question("a"), question("fail"), question("fail")];
    questions.extend((0..20).map(|i| question(&format!("q{i}"))));
    let error = Parallel::new()
        .with_concurrency(1)
        .with_max_errors(1)
        .run(&qa, questions)
        .await
        .unwrap_err();
    let ParallelError::TooManyErrors { max_errors, run } = error else {
        panic!("expected TooManyErrors, got {error:?}");
    };
    assert_eq!(max_errors, 1);
    assert_eq!(run.results.len(), 23);
    assert_eq!(run.results[0].as_ref().unwrap().answer, "a");
    assert!(matches!(run.results[2], Err(ItemError::Module(_))));
    assert!(
        run.results[3..]
            .iter()
            .all(|r| matches!(r, Err(ItemError::Stopped)))
    );
    assert_eq!(run.failures(), 2);
}

#[tokio::test]
async fn a_panicking_module_is_one_failed_call_and_pairs_may_use_different_modules() {
    let calm = Predict::<Ask>::new().with_lm(FnLm::new(|r: &LmRequest| answer_reply(&asked(r))));
    let panicky =
        Predict::<Ask>::new().with_lm(FnLm::new(|_: &LmRequest| -> String { panic!("model bug") }));
    let run = Parallel::new()
        .run_pairs([(&calm, question("a")), (&panicky, question("b"))])
        .await
        .unwrap();
    assert_eq!(run.results[0].as_ref().unwrap().answer, "a");
    assert!(
        matches!(&run.results[1], Err(ItemError::Panicked(message)) if message.contains("model bug"))
    );
}

#[tokio::test]
async fn calls_run_on_the_callers_task_so_a_scope_applies_to_each() {
    let qa = Predict::<Ask>::new();
    let scope = CallConfig::new().with_lm(FnLm::new(|r: &LmRequest| answer_reply(&asked(r))));
    let run = scope
        .scope(Parallel::new().run(&qa, ["x", "y"].map(question)))
        .await
        .unwrap();
    assert_eq!(run.results[1].as_ref().unwrap().answer, "y");
}

#[tokio::test]
async fn a_recorded_trace_holds_every_call_in_the_order_of_the_inputs() {
    let lm = echo();
    let qa = Predict::<Ask>::new().with_lm(lm);
    let (run, record) = signet::trace::recorded(
        Parallel::new()
            .with_concurrency(3)
            .with_timeout(Some(Duration::from_millis(200)))
            .run(&qa, ["a", "slow", "c", "d"].map(question)),
    )
    .await;
    let run = run.unwrap();
    assert!(matches!(run.results[1], Err(ItemError::TimedOut(_))));
    let answers: Vec<_> = record
        .trace
        .iter()
        .map(|entry| entry.outputs["answer"].clone())
        .collect();
    assert_eq!(answers, ["a", "c", "d"]);
    assert_eq!(record.usage.lm_calls, 3);
}
