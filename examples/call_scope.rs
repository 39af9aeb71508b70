//! Per-call settings for a whole program: one program (a draft step and a check step, neither with
//! an LM of its own) serves two tenants, each with its own model, by running each call in a
//! `CallConfig::scope` — DSPy's `with dspy.context(lm=...)`. The scopes run concurrently and do
//! not see each other.
//!
//! Runs offline with two scripted models: `cargo run --example call_scope`. In a server, build the
//! tenant's `OpenAiLm` (or take it from a map) and scope the request's call with it.

use signet::module::{CallConfig, Module};
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer the question in a few words.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Draft an answer, then check it.
#[derive(Module)]
struct DraftThenCheck {
    draft: Predict<Ask>,
    check: ChainOfThought<Ask>,
}

impl Module for DraftThenCheck {
    type Input = AskInput;
    type Output = AskOutput;
    type Error = signet::Error;

    async fn call(&self, input: AskInput) -> Result<AskOutput, signet::Error> {
        let draft = self.draft.call(input).await?;
        let question = format!(
            "Is \"{}\" right? Answer with the corrected answer.",
            draft.answer
        );
        Ok(self.check.call(AskInput { question }).await?.output)
    }
}

fn tenant_model(draft: &str, checked: &str) -> ScriptedLm {
    ScriptedLm::texts([
        format!("[[ ## answer ## ]]\n{draft}\n\n[[ ## completed ## ]]"),
        format!(
            "[[ ## reasoning ## ]]\nChecked.\n\n[[ ## answer ## ]]\n{checked}\n\n[[ ## completed ## ]]"
        ),
    ])
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let program = DraftThenCheck {
        draft: Predict::new(),
        check: ChainOfThought::new(),
    };
    let question = || AskInput {
        question: "What is the capital of Australia?".into(),
    };

    let acme = CallConfig::new().with_lm(tenant_model("Sydney", "Canberra"));
    let globex = CallConfig::new().with_lm(tenant_model("Canberra", "Canberra"));
    let (a, b) = tokio::join!(
        acme.scope(program.call(question())),
        globex.scope(program.call(question()))
    );
    println!("acme:   {}", a?.answer);
    println!("globex: {}", b?.answer);

    // Outside a scope the program has no model: a typed error, not a panic.
    if let Err(error) = program.call(question()).await {
        println!("no scope: {error}");
    }
    Ok(())
}
