//! Retrieval: passages embedded into a `VectorIndex`, searched directly, then given to a ReAct
//! agent as a `search` tool.
//!
//! Runs offline (no key, no model server): the embedder is a small bag-of-words hashing function
//! written below (`FnEmbedder`), the agent's model is scripted. `cargo run --example retrieval`.
//! For real embeddings use `OpenAiEmbedder` (OpenAI, vLLM, Ollama) or the local model's
//! (`signet_local::LlamaCpp::smollm2().embeddings(true)`; see docs/howto-retrieval.md).

use std::sync::Arc;

use signet::embed::{FnEmbedder, RetrievalTool, VectorIndex};
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer the question from the documents.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Each lowercased word of at least four letters (shorter ones are mostly "the", "for", ..) counts in one of 256 buckets (FNV-1a hash):
/// texts that share words get similar vectors. Deterministic, no model.
fn hashing_embedder() -> FnEmbedder {
    FnEmbedder::new("bag-of-words-256", |texts: &[String]| {
        Ok::<_, String>(
            texts
                .iter()
                .map(|text| {
                    let mut vector = vec![0.0f32; 256];
                    for word in text
                        .to_lowercase()
                        .split(|c: char| !c.is_alphanumeric())
                        .filter(|w| w.chars().count() >= 4)
                    {
                        let hash = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                        });
                        vector[(hash % 256) as usize] += 1.0;
                    }
                    vector
                })
                .collect(),
        )
    })
}

const PASSAGES: [&str; 6] = [
    "Bergen is one of the rainiest cities in Europe: it rains on about 240 days a year.",
    "The Flåm Railway climbs 863 metres in 20 km from the Aurlandsfjord to Myrdal.",
    "Henrik Ibsen wrote Peer Gynt in 1867; Grieg wrote its incidental music in 1875.",
    "The Norwegian krone (NOK) is divided into 100 øre; coins below 1 krone were withdrawn.",
    "Tromsø has the midnight sun from late May to late July.",
    "Oslo's Munch Museum holds more than half of Edvard Munch's paintings.",
];

fn step(thought: &str, tool: &str, args: &str) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
         [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut index = VectorIndex::new(hashing_embedder());
    index.add(PASSAGES).await?;
    println!(
        "indexed {} passages ({} dimensions)",
        index.len(),
        index.dimension().unwrap_or(0)
    );

    // Searching the index directly: the passages nearest the query, with their scores.
    for hit in index
        .search("Who wrote the music for Peer Gynt?", 2)
        .await?
    {
        println!("  {:.3}  [{}] {}", hit.score, hit.index, hit.text);
    }

    // The same index as a tool: `search`, taking {"query": string}, returning the top 2 passages.
    let search = RetrievalTool::new(Arc::new(index), 2);
    let lm = ScriptedLm::texts([
        step(
            "I should look up when it rains in Bergen.",
            "search",
            r#"{"query": "How many days a year does it rain in Bergen?"}"#,
        ),
        step(
            "The first passage answers it.",
            "finish",
            r#"{"answer": "About 240 days a year."}"#,
        ),
    ]);
    let agent = ReAct::<Ask>::new().tools(vec![search]).with_lm(lm);
    let out = agent
        .call(AskInput {
            question: "How often does it rain in Bergen?".into(),
        })
        .await?;
    for step in &out.trajectory.steps {
        println!(
            "step: {} -> {}({})\n  observed: {}",
            step.thought,
            step.tool_name,
            step.tool_args,
            step.observation.as_text()
        );
    }
    println!("answer: {}", out.output.answer);
    Ok(())
}
