//! Several reasoning chains, then one answer: a ChainOfThought runs three times at temperature
//! 1.0; `majority` picks the most common answer (DSPy's `dspy.majority`), and
//! `MultiChainComparison` (DSPy's `dspy.MultiChainComparison`) reads all three chains and writes
//! a corrected reasoning and the answer.
//!
//! Runs offline with scripted models: `cargo run --example multi_chain`.

use signet::evaluate::majority;
use signet::lm::LmOptions;
use signet::module::MultiChainComparison;
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer the question with a city.
#[derive(Signature)]
struct QA {
    #[input]
    question: String,
    #[output]
    answer: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chains = [
        ("It is the seat of the federal government.", "Brussels"),
        ("Antwerp is the biggest port, so maybe it.", "Antwerp"),
        ("The EU institutions sit in the capital.", "Brussels"),
    ];
    let cot = ChainOfThought::<QA>::new()
        .with_lm(ScriptedLm::texts(chains.map(|(reasoning, answer)| {
            format!("[[ ## reasoning ## ]]\n{reasoning}\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
        })))
        .with_options(LmOptions::new().temperature(1.0));
    let question = || QAInput {
        question: "What is the capital of Belgium?".into(),
    };

    let mut completions = Vec::new();
    for _ in 0..3 {
        completions.push(cot.call(question()).await?);
    }
    if let Some(most_common) = majority(&completions, None) {
        println!("majority: {}", most_common.output.answer);
    }

    let compare = MultiChainComparison::<QA>::new(3).with_lm(ScriptedLm::texts([
        "[[ ## rationale ## ]]\nTwo chains name Brussels for sound reasons; the third guesses from \
         the port.\n\n[[ ## answer ## ]]\nBrussels\n\n[[ ## completed ## ]]",
    ]));
    let compared = compare.compare(question(), &completions).await?;
    println!(
        "compared: {} ({})",
        compared.output.answer, compared.rationale
    );
    Ok(())
}
