//! Throughput of the local model server against its number of parallel slots: the same batch of
//! requests, all sent at once, to SmolLM2-135M served with 1, 2 and 4 slots (each slot decodes one
//! request; the rest wait in the server's queue). Prints wall time, requests per second and
//! generated tokens per second for each, side by side in one run.
//!
//! ```text
//! cargo bench --bench local_slots                              # slots 1, 2, 4; 8 requests
//! cargo bench --bench local_slots -- --slots 1,2 --requests 16 --max-tokens 64
//! ```
//!
//! Every request is a short question with its own wording (so no two share a cached prompt),
//! temperature 0 and a token limit; the model is installed on first use (see docs/local-models.md).

use std::time::Instant;

use futures::future::join_all;
use signet::lm::{Lm, LmOptions, LmRequest, Message};
use signet_local::LlamaCpp;

const TOPICS: [&str; 8] = [
    "the sea",
    "a mountain",
    "the moon",
    "a library",
    "rain",
    "a train",
    "coffee",
    "winter",
];

fn list(arg: &str) -> Vec<u32> {
    arg.split(',')
        .map(|n| n.trim().parse().expect("a list of numbers, e.g. 1,2,4"))
        .collect()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut slots = vec![1, 2, 4];
    let mut requests = 8usize;
    let mut max_tokens = 48u32;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--slots" => slots = list(&value()),
            "--requests" => requests = value().parse()?,
            "--max-tokens" => max_tokens = value().parse()?,
            // `cargo bench` passes --bench; nothing else is expected.
            _ => {}
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{requests} requests at once, temperature 0, at most {max_tokens} tokens each, {cores} cores"
    );
    println!("| slots | wall (s) | requests/s | generated tokens | tokens/s |");
    println!("|---|---|---|---|---|");
    for n in slots {
        let model = LlamaCpp::smollm2().slots(n).n_ctx(2048);
        let server = model.serve().await?;
        let lm = model.openai_lm(&server)?;
        let batch: Vec<LmRequest> = (0..requests)
            .map(|i| {
                let topic = TOPICS[i % TOPICS.len()];
                let mut request = LmRequest::new(vec![Message::user(format!(
                    "Write two sentences about {topic} (request {i})."
                ))]);
                request.options = LmOptions {
                    temperature: Some(0.0),
                    max_tokens: Some(max_tokens),
                    ..LmOptions::default()
                };
                request
            })
            .collect();
        // One request first, so that model loading and warm-up are not measured.
        lm.complete(&batch[0]).await?;
        let started = Instant::now();
        let replies = join_all(batch.iter().map(|request| lm.complete(request))).await;
        let wall = started.elapsed().as_secs_f64();
        let mut tokens = 0;
        for reply in replies {
            tokens += reply?.usage.completion_tokens;
        }
        println!(
            "| {n} | {wall:.2} | {:.2} | {tokens} | {:.1} |",
            requests as f64 / wall,
            tokens as f64 / wall
        );
        server.stop().await?;
    }
    Ok(())
}
