//! A batch with `Parallel` (DSPy's `dspy.Parallel`): eight questions, at most three in flight, one
//! of them failing; every result comes back in input order, the failure beside the successes,
//! with the usage of the whole batch.
//!
//! Runs offline with a model that answers from the prompt: `cargo run --example parallel`.

use signet::evaluate::{Parallel, Progress};
use signet::lm::LmRequest;
use signet::prelude::*;
use signet::testing::FnLm;

/// Answer the arithmetic question with a number.
#[derive(Signature)]
struct Sum {
    #[input]
    question: String,
    #[output]
    answer: i64,
}

/// Adds the two numbers of the question; writes a word for "7 + 7", which does not parse as a
/// number (and the JSON fallback gets the same word).
fn model(request: &LmRequest) -> String {
    let question = request.messages[1]
        .content
        .lines()
        .nth(1)
        .unwrap_or_default();
    let numbers: Vec<i64> = question
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let answer = match numbers.as_slice() {
        [7, 7] => "fourteen".to_owned(),
        numbers => numbers.iter().sum::<i64>().to_string(),
    };
    format!("[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sum = Predict::<Sum>::new().with_lm(FnLm::new(model));
    let questions = (1..=8).map(|i| SumInput {
        question: format!("What is {i} + {i}?"),
    });

    let run = Parallel::new()
        .with_concurrency(3)
        .with_progress(Progress::Lines)
        .run(&sum, questions)
        .await?;
    for (i, result) in run.results.iter().enumerate() {
        match result {
            Ok(out) => println!("{} + {}: {}", i + 1, i + 1, out.answer),
            Err(error) => println!("{} + {}: failed: {error}", i + 1, i + 1),
        }
    }
    println!(
        "{} failed; {} LM calls in {:?}",
        run.failures(),
        run.usage.lm_calls,
        run.elapsed
    );
    Ok(())
}
