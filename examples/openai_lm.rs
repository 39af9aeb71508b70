//! Talk to a real OpenAI-compatible endpoint with `OpenAiLm`: one completion, one streamed reply,
//! four questions at once with at most two requests in flight (`max_concurrent_requests`), then
//! the call history printed like `dspy.inspect_history`.
//!
//! Configure it with environment variables:
//! * `OPENAI_BASE_URL`: the endpoint, e.g. `http://127.0.0.1:8080/v1` for a local llama.cpp server
//!   (default: `https://api.openai.com/v1`);
//! * `OPENAI_API_KEY`: the key (not needed by local servers);
//! * `OPENAI_MODEL`: the model name, e.g. `gpt-4o-mini` or `smollm2`.
//!
//! Run with `OPENAI_MODEL=gpt-4o-mini OPENAI_API_KEY=sk-... cargo run --example openai_lm`.
//! Without a configuration it explains what to set and exits successfully.

use std::io::Write as _;
use std::time::Duration;

use futures::StreamExt;
use signet::lm::{LmRequest, Message, StreamEvent};
use signet::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let (base_url, api_key, model) = (
        var("OPENAI_BASE_URL"),
        var("OPENAI_API_KEY"),
        var("OPENAI_MODEL"),
    );
    let Some(model) = model.filter(|_| base_url.is_some() || api_key.is_some()) else {
        println!(
            "Nothing to talk to: set OPENAI_MODEL and either OPENAI_API_KEY (OpenAI) or \
             OPENAI_BASE_URL (a local server), for example\n\
             \n  OPENAI_MODEL=gpt-4o-mini OPENAI_API_KEY=sk-... cargo run --example openai_lm\n\
             \n  OPENAI_MODEL=smollm2 OPENAI_BASE_URL=http://127.0.0.1:8080/v1 cargo run --example openai_lm"
        );
        return Ok(());
    };

    // The builder reads OPENAI_BASE_URL and OPENAI_API_KEY itself. At most two requests go out
    // at once; the others wait their turn before their request is written (and untimed).
    let lm = OpenAiLm::builder(model)
        .timeout(Duration::from_secs(120))
        .memory_cache()
        .max_concurrent_requests(2)
        .build()?;
    println!("Using {lm:?}\n");

    let mut request = LmRequest::new(vec![
        Message::system("You answer in one short sentence."),
        Message::user("What is the capital of France?"),
    ]);
    request.options.temperature = Some(0.0);
    request.options.max_tokens = Some(64);

    let reply = lm.complete(&request).await?;
    println!("Reply: {}", reply.text.as_deref().unwrap_or("(no text)"));
    println!("Usage: {:?}", reply.usage);

    // The same request again: answered from the cache, no HTTP request.
    let again = lm.complete(&request).await?;
    println!(
        "Again, from the cache: cache_hits = {}\n",
        again.usage.cache_hits
    );

    // A streamed reply.
    let streamed = LmRequest {
        messages: vec![Message::user("Count from 1 to 5, separated by spaces.")],
        ..request.clone()
    };
    print!("Streaming: ");
    let mut events = lm.stream(&streamed);
    while let Some(event) = events.next().await {
        match event? {
            StreamEvent::TextDelta(text) => {
                print!("{text}");
                std::io::stdout().flush()?;
            }
            StreamEvent::Done(done) => println!("\n(finish reason: {:?})", done.finish_reason),
            _ => {}
        }
    }

    // Four questions at once: two are sent, two wait for a turn.
    let questions = ["Spain", "Italy", "Japan", "Peru"].map(|country| LmRequest {
        messages: vec![Message::user(format!(
            "The capital of {country}, in one word?"
        ))],
        ..request.clone()
    });
    let replies = futures::future::join_all(questions.iter().map(|q| lm.complete(q))).await;
    for (question, reply) in questions.iter().zip(replies) {
        let text = reply?.text.unwrap_or_default();
        println!("{} -> {}", question.messages[0].content, text.trim());
    }
    println!();

    lm.inspect_history(2);
    Ok(())
}
