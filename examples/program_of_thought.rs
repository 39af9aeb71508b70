//! Does writing a program help a model with arithmetic? `ChainOfThought` and `ProgramOfThought`
//! (JavaScript run in `signet-sandbox`) on the same 20 arithmetic questions, on SmolLM2-135M
//! served locally. Prints the table in docs/sandbox.md.
//!
//! ```text
//! cargo run --release --example program_of_thought
//! ```
//!
//! The questions were written before any run, worded as a person would ask them. An answer is
//! right when the first number in it is the question's result (within 0.01).

use std::time::Instant;

use serde_json::json;
use signet::data::Example;
use signet::evaluate::{Evaluate, Metric};
use signet::module::{ProgramOfThought, Reasoned};
use signet::prelude::*;

/// Answer the arithmetic question with a number.
#[derive(Signature)]
struct Arithmetic {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// The questions and their results.
const QUESTIONS: [(&str, f64); 20] = [
    ("What is 17 times 23?", 391.0),
    ("How much is 1234 plus 5678?", 6912.0),
    ("What do you get when you subtract 387 from 1000?", 613.0),
    ("A box holds 24 eggs. How many eggs are in 15 boxes?", 360.0),
    ("What is 144 divided by 12?", 12.0),
    ("If a ticket costs 37 euros, what do 8 tickets cost?", 296.0),
    ("What is 2 to the power of 10?", 1024.0),
    ("What is 15% of 240?", 36.0),
    ("Add 19, 28 and 47.", 94.0),
    ("How many minutes are there in 7 hours?", 420.0),
    ("What is 999 times 3?", 2997.0),
    (
        "A train travels 85 km per hour for 6 hours. How far does it go?",
        510.0,
    ),
    ("What is the square root of 729?", 27.0),
    ("How much is 56 minus 89?", -33.0),
    ("What is 3.5 multiplied by 4?", 14.0),
    (
        "Split 1000 euros equally among 8 people. How much does each get?",
        125.0,
    ),
    ("What is 13 squared?", 169.0),
    ("How many seconds are in one day?", 86400.0),
    ("What is 7 factorial?", 5040.0),
    ("What is 250 plus 17 percent of 250?", 292.5),
];

/// The first number in `text`.
fn first_number(text: &str) -> Option<f64> {
    let start = text.find(|c: char| c.is_ascii_digit() || c == '-')?;
    let number: String = text[start..]
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-' || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    number.trim_end_matches('.').parse().ok()
}

fn right(example: &Example, answer: &ArithmeticOutput) -> bool {
    let want = example.get("result").and_then(|v| v.as_f64());
    matches!((first_number(&answer.answer), want), (Some(got), Some(want)) if (got - want).abs() < 0.01)
}

/// Evaluates `program` on `devset` and prints its row of the table.
async fn row<P: Module>(
    name: &str,
    program: &P,
    devset: &[Example],
    metric: impl Metric<P::Output>,
) -> Result<(), Box<dyn std::error::Error>>
where
    P::Output: std::fmt::Debug,
{
    let started = Instant::now();
    let report = Evaluate::new(devset, metric)
        .with_concurrency(2)
        .run(program)
        .await?;
    let right = report
        .results
        .iter()
        .filter(|r| r.score.value > 0.0)
        .count();
    println!(
        "| {name} | {right} | {:.1} | {} |",
        started.elapsed().as_secs_f64() / devset.len() as f64,
        report.usage.lm_calls
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let devset: Vec<Example> = QUESTIONS
        .iter()
        .map(|(question, result)| {
            Example::new(json!({"question": question, "result": result})).with_inputs(["question"])
        })
        .collect();
    let local = signet_local::LlamaCpp::smollm2();
    let server = local.serve().await?;
    let lm = local.lm(&server)?;
    let options = LmOptions::new().temperature(0.0).max_tokens(300);

    let cot = ChainOfThought::<Arithmetic>::new()
        .with_lm(lm.clone())
        .with_options(options.clone());
    let pot = ProgramOfThought::<Arithmetic>::new()
        .with_lm(lm.clone())
        .with_options(options);

    println!("| module | right (of 20) | s/question | LM calls |");
    println!("|---|---|---|---|");
    row(
        "ChainOfThought",
        &cot,
        &devset,
        |e: &Example, o: &Reasoned<ArithmeticOutput>| right(e, &o.output),
    )
    .await?;
    row("ProgramOfThought", &pot, &devset, right).await?;
    server.stop().await?;
    Ok(())
}
