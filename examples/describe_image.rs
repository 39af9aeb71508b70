//! An image as a typed input: the model is asked about a picture given inline (a data URI) and
//! one given by URL, and answers with a typed output.
//!
//! `cargo run --example describe_image` runs offline with a scripted model and prints what would be
//! sent: the user message as content parts, the images where DSPy puts them. With
//! `OPENAI_API_KEY` set it asks a vision model (`OPENAI_MODEL`, default `gpt-4o-mini`) instead.

use std::sync::Arc;

use signet::lm::{CallHistory, HistoryLm};
use signet::media::ContentPart;
use signet::prelude::*;
use signet::testing::ScriptedLm;

#[path = "shared/api_model.rs"]
#[allow(dead_code)] // the reflection model is not used here
mod api_model;

/// Compare the two pictures.
#[derive(Signature)]
struct Compare {
    /// a small picture, sent inline
    #[input]
    first: Image,
    /// a picture on the web, fetched by the provider
    #[input]
    second: Image,
    #[input]
    question: String,
    #[output]
    answer: String,
    /// the dominant colour of the first picture, in one word
    #[output]
    colour: String,
}

/// A 1×1 red PNG.
const RED_PIXEL: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (lm, name): (Arc<dyn Lm>, String) = if std::env::var_os("OPENAI_API_KEY").is_some() {
        api_model::api_lm()?
    } else {
        let reply = "[[ ## answer ## ]]\nThe first is a single red pixel; the second is a photo \
                     of a cat.\n\n[[ ## colour ## ]]\nred\n\n[[ ## completed ## ]]";
        (Arc::new(ScriptedLm::texts([reply])), "scripted".into())
    };
    let history = Arc::new(CallHistory::new());
    let compare = Predict::<Compare>::new().with_lm(Arc::new(HistoryLm::new(lm, history.clone())));

    let out = compare
        .call(CompareInput {
            first: Image::from_url(RED_PIXEL)?,
            second: Image::from_url(
                "https://upload.wikimedia.org/wikipedia/commons/3/3a/Cat03.jpg",
            )?,
            question: "How do the two pictures differ?".into(),
        })
        .await?;

    println!("model: {name}\n\nthe user message, part by part:");
    let sent = &history.entries()[0].messages;
    for part in sent
        .last()
        .map(|m| m.content.parts())
        .unwrap_or_default()
        .iter()
    {
        match part {
            ContentPart::Text(text) => println!("  text   {text:?}"),
            ContentPart::Image(image) => {
                let url = image.url();
                let shown: String = url.chars().take(60).collect();
                let more = if url.len() > 60 { "..." } else { "" };
                println!("  image  {shown}{more}");
            }
            other => println!("  {other:?}"),
        }
    }
    println!("\nanswer: {}\ncolour: {}", out.answer, out.colour);
    Ok(())
}
