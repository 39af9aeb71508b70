//! The XML adapter: lists and maps are written and read as nested XML.
//!
//! Runs offline with a scripted reply: `cargo run --example xml_adapter`.

use std::collections::BTreeMap;
use std::sync::Arc;

use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Tag the text and score each tag.
#[derive(Signature)]
struct Tagging {
    #[input]
    text: String,
    #[output]
    tags: Vec<String>,
    #[output]
    scores: BTreeMap<String, f64>,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reply = "<tags><item>rust</item><item>llm</item></tags>\n\n\
                 <scores><rust>0.9</rust><llm>0.7</llm></scores>";
    let lm = Arc::new(ScriptedLm::texts([reply]));
    let tagging = Predict::<Tagging>::new()
        .with_lm(lm.clone())
        .with_adapter(XmlAdapter::new());

    let out = tagging
        .call(TaggingInput {
            text: "Signet: typed LM programs in Rust".into(),
        })
        .await?;
    let request = &lm.requests()[0];
    println!(
        "user message:\n{}",
        request
            .messages
            .last()
            .map(|m| m.content.as_str())
            .unwrap_or("")
    );
    println!(
        "\nparsed tags: {:?}\nparsed scores: {:?}",
        out.tags, out.scores
    );
    Ok(())
}
