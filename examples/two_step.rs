//! TwoStepAdapter: a model answers in its own words, a second model reads the typed outputs out
//! of that answer.
//!
//! `cargo run --example two_step` runs offline with scripted models and prints both steps. With
//! `OPENAI_API_KEY` set, the main model is `OPENAI_MODEL` (default `gpt-4o-mini`; a reasoning
//! model such as `o4-mini` is where this pays off) and the extraction model is
//! `OPENAI_EXTRACTION_MODEL` (default `gpt-4o-mini`).

use std::sync::Arc;

use signet::adapter::TwoStepAdapter;
use signet::lm::{CallHistory, HistoryLm};
use signet::prelude::*;
use signet::testing::ScriptedLm;

#[path = "shared/api_model.rs"]
#[allow(dead_code)] // the reflection model is not used here
mod api_model;

/// Plan the trip the traveller asks for.
#[derive(Signature)]
struct Trip {
    /// what the traveller wants
    #[input]
    request: String,
    #[input]
    budget_eur: u32,
    /// where to go
    #[output]
    city: String,
    #[output]
    nights: u8,
    /// one sentence on why
    #[output]
    why: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (main_lm, extraction_lm): (Arc<dyn Lm>, Arc<dyn Lm>) =
        if std::env::var_os("OPENAI_API_KEY").is_some() {
            let extraction =
                std::env::var("OPENAI_EXTRACTION_MODEL").unwrap_or_else(|_| "gpt-4o-mini".into());
            (
                api_model::api_lm()?.0,
                Arc::new(OpenAiLm::builder(extraction).build()?),
            )
        } else {
            (
                Arc::new(ScriptedLm::texts([
                    "Lisbon is the pick: sunny in spring, cheap to eat out, and three nights \
                     with a mid-range hotel come to about 600 EUR, well inside the budget.",
                ])),
                Arc::new(ScriptedLm::texts([
                    "[[ ## city ## ]]\nLisbon\n\n[[ ## nights ## ]]\n3\n\n[[ ## why ## ]]\n\
                     Sunny, cheap to eat out, and three nights fit the budget.\n\n\
                     [[ ## completed ## ]]",
                ])),
            )
        };
    let history = Arc::new(CallHistory::new());
    let plan = Predict::<Trip>::new()
        .with_lm(HistoryLm::new(main_lm, history.clone()))
        .with_adapter(TwoStepAdapter::new(HistoryLm::new(
            extraction_lm,
            history.clone(),
        )));
    let out = plan
        .call(TripInput {
            request: "A sunny city break in spring".into(),
            budget_eur: 900,
        })
        .await?;
    println!("{}", history.render(2));
    println!(
        "city: {}\nnights: {}\nwhy: {}",
        out.city, out.nights, out.why
    );
    Ok(())
}
