//! The Chat adapter (DSPy's default format) with few-shot demos and chain of thought: prints the
//! exact messages sent and the typed result parsed from the reply.
//!
//! Runs offline with a scripted reply: `cargo run --example chat_adapter`.

use std::sync::Arc;

use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer questions with short factoid answers.
#[derive(Signature, Clone)]
struct QA {
    #[input]
    question: String,
    /// Often between 1 and 5 words.
    #[output]
    answer: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reply = "[[ ## reasoning ## ]]\nThe Louvre is in Paris.\n\n[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]";
    let lm = Arc::new(ScriptedLm::texts([reply]));
    let mut cot = ChainOfThought::<QA>::new()
        .with_lm(lm.clone())
        .with_adapter(ChatAdapter::new());
    cot = cot.with_demos([QA {
        question: "Where is the Colosseum?".into(),
        answer: "Rome".into(),
    }])?;

    let out = cot
        .call(QAInput {
            question: "Which city is the Louvre in?".into(),
        })
        .await?;
    for message in &lm.requests()[0].messages {
        println!("----- {:?}\n{}", message.role, message.content);
    }
    println!(
        "=====\nreasoning: {}\nanswer: {}",
        out.reasoning, out.output.answer
    );
    Ok(())
}
