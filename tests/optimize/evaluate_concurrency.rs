//! How many examples `Evaluate` runs at once: the concurrency given, else as many as the
//! program's LM says it decodes at once (a local server's slots), else 8.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use signet::data::Example;
use signet::evaluate::{Evaluate, Progress, exact_match};
use signet::lm::{Capabilities, Completion, Lm, LmError, LmRequest};
use signet::prelude::*;

/// Answer with one word.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// An LM that takes a while to answer and counts how many requests it serves at once.
struct Slow {
    capabilities: Capabilities,
    in_flight: AtomicUsize,
    most: AtomicUsize,
}

impl Slow {
    fn new(capabilities: Capabilities) -> Arc<Slow> {
        Arc::new(Slow {
            capabilities,
            in_flight: AtomicUsize::new(0),
            most: AtomicUsize::new(0),
        })
    }
}

impl Lm for Slow {
    fn complete<'a>(
        &'a self,
        _request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        Box::pin(async move {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(30)).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            Ok(Completion::text("[[ ## answer ## ]]\nyes"))
        })
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn model(&self) -> &str {
        "slow"
    }
}

fn examples(n: usize) -> Vec<Example> {
    (0..n)
        .map(|i| {
            Example::new(serde_json::json!({"question": format!("{i}?"), "answer": "yes"}))
                .with_inputs(["question"])
        })
        .collect()
}

/// The most requests `lm` served at once while `evaluate` ran a program on it.
async fn most_at_once(
    lm: Arc<Slow>,
    evaluate: Evaluate<'_, impl signet::evaluate::Metric<AskOutput>>,
) -> usize {
    let program = Predict::<Ask>::new().with_lm(lm.clone());
    let report = evaluate.run(&program).await.unwrap();
    assert_eq!(report.score, 100.0);
    lm.most.load(Ordering::SeqCst)
}

#[tokio::test]
async fn without_a_concurrency_evaluate_runs_as_many_examples_as_the_lm_has_slots() {
    let devset = examples(12);
    let two_slots = Slow::new(Capabilities::llama_cpp().with_parallel_requests(2));
    let evaluate = Evaluate::new(&devset, exact_match("answer")).with_progress(Progress::Off);
    assert_eq!(most_at_once(two_slots, evaluate).await, 2);
}

#[tokio::test]
async fn an_lm_that_does_not_say_gets_eight_at_once() {
    let devset = examples(12);
    let unknown = Slow::new(Capabilities::default());
    let evaluate = Evaluate::new(&devset, exact_match("answer")).with_progress(Progress::Off);
    assert_eq!(most_at_once(unknown, evaluate).await, 8);
}

#[tokio::test]
async fn a_concurrency_given_wins_over_the_lm_slots() {
    let devset = examples(12);
    let two_slots = Slow::new(Capabilities::llama_cpp().with_parallel_requests(2));
    let evaluate = Evaluate::new(&devset, exact_match("answer"))
        .with_progress(Progress::Off)
        .with_concurrency(5);
    assert_eq!(most_at_once(two_slots, evaluate).await, 5);
}

#[tokio::test]
async fn the_report_shows_the_tokens_generated_per_second() {
    let devset = examples(2);
    let lm = Slow::new(Capabilities::default());
    let program = Predict::<Ask>::new().with_lm(lm);
    let report = Evaluate::new(&devset, exact_match("answer"))
        .with_progress(Progress::Off)
        .run(&program)
        .await
        .unwrap();
    // This LM reports no tokens: 0 per second, said in the summary.
    assert_eq!(report.tokens_per_second(), 0.0);
    assert!(
        report.to_string().ends_with(", 0.0 completion tokens/s"),
        "{report}"
    );
}

#[test]
fn an_evaluation_can_run_on_any_thread() {
    // Its future is `Send` (a worker pool of the caller's can poll it), like a module call's.
    fn send<T: Send>(_: &T) {}
    let devset = examples(2);
    let program = Predict::<Ask>::new().with_lm(Slow::new(Capabilities::default()));
    let evaluate = Evaluate::new(&devset, exact_match("answer"));
    let run = evaluate.run(&program);
    send(&run);
    let until = evaluate.run_until(&program, std::future::pending::<()>());
    send(&until);
}
