//! BestOfN: ask up to three times and keep the answer a reward function likes best — here, an
//! answer of one word. Each attempt runs at temperature 1.0 with its own rollout id; the run stops
//! at the first answer that reaches the threshold and reports every attempt.
//!
//! Runs offline with a scripted model: `cargo run --example best_of_n`. With a real model, give
//! the predictor an `OpenAiLm` (or `signet::module::configure(lm)`): the attempts then differ
//! because they are sampled at temperature 1.0.

use signet::module::{BestOfN, Predict};
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer the question in one word.
#[derive(Signature)]
struct QA {
    #[input]
    question: String,
    #[output]
    answer: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reply = |answer: &str| format!("[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]");
    let lm = ScriptedLm::texts([
        reply("The capital of Belgium is Brussels."),
        reply("Brussels"),
        reply("Bruxelles / Brussel"),
    ]);

    // 1.0 for one word, less for each word more.
    let one_word =
        |_: &QAInput, out: &QAOutput| 1.0 / out.answer.split_whitespace().count().max(1) as f64;
    let best = BestOfN::new(Predict::<QA>::new().with_lm(lm), 3, one_word, 1.0);

    let run = best
        .call_full(QAInput {
            question: "What is the capital of Belgium?".into(),
        })
        .await?;
    for (i, attempt) in run.attempts.iter().enumerate() {
        match &attempt.reward {
            Ok(reward) => println!(
                "attempt {i} (rollout {}): reward {reward:.2}",
                attempt.rollout_id
            ),
            Err(error) => println!(
                "attempt {i} (rollout {}): failed: {error}",
                attempt.rollout_id
            ),
        }
    }
    println!(
        "answer: {} (attempt {}, reward {:.2}; {} LM calls)",
        run.output.answer, run.chosen, run.reward, run.usage.lm_calls
    );
    Ok(())
}
