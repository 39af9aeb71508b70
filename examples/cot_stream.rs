//! ChainOfThought, streamed: the reasoning and then the answer are printed as the model writes
//! them, then the typed output.
//!
//! Runs offline with a scripted model that streams its reply word by word:
//! `cargo run --example cot_stream`. With a real model, give it an `OpenAiLm`: its replies stream
//! over server-sent events.

use futures::StreamExt;
use signet::module::ReActEvent;
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer the question with a number.
#[derive(Signature)]
struct Arithmetic {
    #[input]
    question: String,
    #[output]
    answer: i64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let lm = ScriptedLm::texts([
        "[[ ## reasoning ## ]]\nA dozen is 12, and half of it is 6; 12 + 6 = 18.\n\n\
         [[ ## answer ## ]]\n18\n\n[[ ## completed ## ]]",
    ]);
    let cot = ChainOfThought::<Arithmetic>::new().with_lm(lm);
    let mut events = cot.stream(ArithmeticInput {
        question: "What is a dozen plus half a dozen?".into(),
    });
    let mut current: Option<String> = None;
    while let Some(event) = events.next().await {
        match event {
            ReActEvent::AnswerDelta { field, text } => {
                if field != current {
                    println!("\n[{}]", field.as_deref().unwrap_or("?"));
                    current = field;
                }
                print!("{text}");
            }
            ReActEvent::Done { output, .. } => println!("\n\ntyped answer: {}", output.answer),
            ReActEvent::Failed { error } => return Err(error.to_string().into()),
            _ => {}
        }
    }
    Ok(())
}
