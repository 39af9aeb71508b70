//! Refine: like BestOfN, up to three attempts, but between them the model is shown the program,
//! what it did and the reward it got, and writes advice for each predictor; the next attempt's
//! predictor sees its advice as one more input, `hint_`. The prompts are DSPy's `dspy.Refine`'s.
//!
//! Runs offline with a scripted model: `cargo run --example refine`. With a real model, give the
//! predictor an `OpenAiLm` (and, if you like, a stronger one for the advice: `with_feedback_lm`).

use signet::module::{Predict, Refine};
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
    let lm = ScriptedLm::texts([
        "[[ ## answer ## ]]\nThe capital of Belgium is Brussels.\n\n[[ ## completed ## ]]",
        // The feedback step: who is to blame, and advice per predictor (`self` is a lone Predict).
        "[[ ## discussion ## ]]\nThe module answered with a sentence.\n\n\
         [[ ## advice ## ]]\n{\"self\": \"Answer with the city name only, no sentence.\"}\n\n\
         [[ ## completed ## ]]",
        "[[ ## answer ## ]]\nBrussels\n\n[[ ## completed ## ]]",
    ]);

    let one_word =
        |_: &QAInput, out: &QAOutput| 1.0 / out.answer.split_whitespace().count().max(1) as f64;
    let refine = Refine::new(Predict::<QA>::new().with_lm(lm), 3, one_word, 1.0)
        // What the feedback step is told the reward does (DSPy shows the Python source).
        .with_reward_code("1 divided by the number of words in the answer: one word scores 1.0");

    let run = refine
        .call_full(QAInput {
            question: "What is the capital of Belgium?".into(),
        })
        .await?;
    for feedback in &run.feedback {
        match &feedback.advice {
            Ok(advice) => println!(
                "after attempt {}: {} -> {:?}",
                feedback.after, advice.discussion, advice.per_module
            ),
            Err(error) => println!("after attempt {}: no advice ({error})", feedback.after),
        }
    }
    println!(
        "answer: {} (attempt {} of {}, reward {:.2}; {} LM calls)",
        run.output.answer,
        run.chosen,
        run.attempts.len(),
        run.reward,
        run.usage.lm_calls
    );
    Ok(())
}
