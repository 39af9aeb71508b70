//! Signet's building blocks, end to end and offline: tools written as plain Rust functions and
//! methods, a typed signature, and what a language model would see and send.
//!
//! Run with `cargo run --example quickstart`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::json;
use signet::DynSignature;
use signet::prelude::*;

/// A unit for temperatures.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// Get the current temperature in a city.
#[tool]
async fn temperature(
    /// City name, e.g. "Paris".
    city: String,
    #[arg(default = Unit::Celsius)] unit: Unit,
) -> Result<f64, String> {
    let celsius = match city.as_str() {
        "Paris" => 18.5,
        "Oslo" => 4.0,
        other => return Err(format!("no weather station in {other}")),
    };
    Ok(match unit {
        Unit::Celsius => celsius,
        Unit::Fahrenheit => celsius * 9.0 / 5.0 + 32.0,
    })
}

/// Notes shared by the tools below (think: a database handle).
#[derive(Default)]
struct Notebook {
    notes: Mutex<HashMap<String, String>>,
}

#[tool]
impl Notebook {
    /// Save a note under a title.
    #[tool]
    fn save_note(&self, title: String, text: String) -> usize {
        let mut notes = self.notes.lock().expect("notebook lock");
        notes.insert(title, text);
        notes.len()
    }

    /// Read the note saved under a title.
    #[tool]
    fn read_note(&self, title: &str) -> Option<String> {
        self.notes
            .lock()
            .expect("notebook lock")
            .get(title)
            .cloned()
    }
}

/// Plan a trip given the weather.
#[derive(Signature)]
struct PlanTrip {
    /// Where the traveller wants to go.
    #[input]
    destination: String,
    /// What to pack, one item per entry.
    #[output]
    packing_list: Vec<String>,
    #[output]
    confidence: f64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let notebook = Arc::new(Notebook::default());
    // Tools of different types in one list: `share` makes each an `Arc<dyn Tool>`.
    let mut tools = vec![signet::tool::share(TemperatureTool)];
    tools.extend(Notebook::tools(&notebook));

    println!("== Tools, as a model sees them (OpenAI function descriptors)");
    for tool in &tools {
        println!("{}", serde_json::to_string(&tool.to_openai_function())?);
    }

    println!("\n== Calls, as a model would make them");
    let calls = [
        ("temperature", json!({"city": "Paris"})),
        ("temperature", json!({"city": "Oslo", "unit": "fahrenheit"})),
        ("save_note", json!({"title": "packing", "text": "umbrella"})),
        ("read_note", json!({"title": "packing"})),
        // Mistakes come back as typed errors a model can act on.
        ("temperature", json!({"city": "Atlantis"})),
        ("temperature", json!({"city": 42, "unit": "kelvin"})),
    ];
    for (name, args) in calls {
        let tool = tools
            .iter()
            .find(|t| t.name() == name)
            .ok_or("unknown tool")?;
        match tool.call(args.clone()).await {
            Ok(value) => println!("{name}({args}) -> {value}"),
            Err(error) => println!("{name}({args}) -> error: {error}"),
        }
    }

    println!("\n== A typed signature");
    let signature = PlanTrip::signature();
    println!("instructions: {}", signature.instructions());
    for field in signature.inputs().iter().chain(signature.outputs()) {
        println!(
            "  {} ({}): {}",
            field.name(),
            field.type_name(),
            field.desc().unwrap_or_default()
        );
    }
    let input = PlanTripInput {
        destination: "Oslo".into(),
    };
    let output: PlanTripOutput =
        serde_json::from_value(json!({"packing_list": ["coat", "scarf"], "confidence": 0.8}))?;
    println!("input:  {}", serde_json::to_string(&input)?);
    println!("output: {output:?}");

    let dynamic = DynSignature::parse("question, context: list[str] -> answer: int")?;
    println!("\n== The same metadata from a string signature");
    println!("instructions: {}", dynamic.instructions());
    for field in dynamic.inputs().iter().chain(dynamic.outputs()) {
        println!(
            "  {} ({}) schema {}",
            field.name(),
            field.type_name(),
            field.schema()
        );
    }
    Ok(())
}
