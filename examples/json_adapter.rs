//! The JSON adapter with an LM that supports structured outputs: the output schema (a nested
//! struct) is sent as `response_format`, and the reply is read into typed values.
//!
//! Runs offline with a scripted reply: `cargo run --example json_adapter`.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use signet::lm::Capabilities;
use signet::prelude::*;
use signet::testing::ScriptedLm;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct Person {
    name: String,
    age: u32,
}

/// Extract the people mentioned in the text.
#[derive(Signature)]
struct Extract {
    #[input]
    text: String,
    #[output]
    people: Vec<Person>,
    #[output]
    confident: bool,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reply = r#"{"people": [{"name": "Ada", "age": "36"}, {"name": "Alan", "age": 41}], "confident": "yes"}"#;
    let structured = Capabilities::default().with_response_schema(true);
    let lm = Arc::new(ScriptedLm::texts([reply]).with_capabilities(structured));
    let extract = Predict::<Extract>::new()
        .with_lm(lm.clone())
        .with_adapter(JsonAdapter::new());

    let out = extract
        .call(ExtractInput {
            text: "Ada (36) met Alan (41).".into(),
        })
        .await?;
    let request = &lm.requests()[0];
    println!(
        "response_format sent:\n{}",
        serde_json::to_string_pretty(&request.response_format)?
    );
    println!("\nsystem message:\n{}", request.messages[0].content);
    // "36" and "yes" were read the way pydantic's lax mode reads them.
    println!("\nparsed: {:?} (confident: {})", out.people, out.confident);
    Ok(())
}
