//! Streaming a module of your own: a two-pass program (draft, then polish with reasoning) whose
//! predictors' fields are printed as the model writes them, each labelled with its predictor,
//! then the typed output. Printed as the Server-Sent Events a web endpoint would send.
//!
//! `cargo run --example module_stream` (a scripted model that streams word by word; give the
//! predictors any `Lm`).

use futures::StreamExt;
use signet::module::{ModuleEvent, PredictorEvent, streamify};
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Draft a short answer.
#[derive(Signature)]
struct Draft {
    #[input]
    question: String,
    #[output]
    draft: String,
}

/// Improve the draft: correct it and make it one sentence.
#[derive(Signature)]
struct Polish {
    #[input]
    question: String,
    #[input]
    draft: String,
    #[output]
    answer: String,
}

/// Drafts, then polishes.
#[derive(Module)]
struct TwoPass {
    write: Predict<Draft>,
    polish: ChainOfThought<Polish>,
}

/// The question.
#[derive(serde::Serialize, serde::Deserialize)]
struct Question {
    question: String,
}

impl Module for TwoPass {
    type Input = Question;
    type Output = String;
    type Error = signet::Error;

    async fn call(&self, input: Question) -> Result<String, signet::Error> {
        let draft = self
            .write
            .call(DraftInput {
                question: input.question.clone(),
            })
            .await?;
        let polished = self
            .polish
            .call(PolishInput {
                question: input.question,
                draft: draft.draft,
            })
            .await?;
        Ok(polished.output.answer)
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let lm = std::sync::Arc::new(ScriptedLm::texts([
        "[[ ## draft ## ]]\nthe eiffel tower is in paris, built 1889\n\n[[ ## completed ## ]]",
        "[[ ## reasoning ## ]]\nThe draft is right but not a sentence.\n\n[[ ## answer ## ]]\n\
         The Eiffel Tower, in Paris, was built in 1889.\n\n[[ ## completed ## ]]",
    ]));
    let program = TwoPass {
        write: Predict::new().with_lm(lm.clone()),
        polish: ChainOfThought::new().with_lm(lm),
    };
    let mut events = streamify(
        &program,
        Question {
            question: "Where and when was the Eiffel Tower built?".into(),
        },
    );
    while let Some(event) = events.next().await {
        if let ModuleEvent::Predictor { event, .. } = &event
            && let Some(status) = event.status_message()
        {
            eprintln!("status: {status}");
        }
        if let ModuleEvent::Predictor {
            event: PredictorEvent::Started,
            predictor,
        } = &event
        {
            eprintln!("-- {predictor}");
        }
        // What an SSE endpoint sends: the event's type, then its JSON.
        let json = serde_json::to_value(&event)?;
        println!(
            "event: {}\ndata: {json}\n",
            json["type"].as_str().unwrap_or("event")
        );
        if let ModuleEvent::Failed { error, .. } = event {
            return Err(error.to_string().into());
        }
    }
    Ok(())
}
