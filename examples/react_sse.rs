//! A ReAct agent behind an HTTP endpoint that streams its events as Server-Sent Events, for a UI to
//! show thoughts, tool calls and the answer as they happen.
//!
//! `cargo run --example react_sse`, then `curl -N 'http://127.0.0.1:3000/ask?question=2%2B3'`.
//! `cargo run --example react_sse history` serves the same agent in history mode (DSPy's
//! `ReActV2`: several tool calls per turn, the answer given through `submit`). The agent runs on a
//! scripted model here; give it any `Lm`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Query, State};
use axum::response::sse::{Event, Sse};
use axum::routing::get;
use futures::{Stream, StreamExt};
use signet::prelude::*;
use signet::testing::ScriptedLm;

/// Answer arithmetic questions using the tools.
#[derive(Signature)]
pub struct Ask {
    #[input]
    pub question: String,
    #[output]
    pub answer: String,
}

/// Add two integers.
#[tool]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[derive(serde::Deserialize)]
struct AskQuery {
    question: String,
}

/// The router: `GET /ask?question=..` streams one SSE event per [`signet::module::ReActEvent`]
/// (`event:` is the event type, `data:` its JSON). A client that disconnects cancels the run.
pub fn router(agent: Arc<ReAct<Ask>>) -> Router {
    Router::new().route("/ask", get(ask)).with_state(agent)
}

async fn ask(
    State(agent): State<Arc<ReAct<Ask>>>,
    Query(query): Query<AskQuery>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut events = agent.stream(AskInput {
            question: query.question,
        });
        while let Some(event) = events.next().await {
            let json = serde_json::to_value(&event).unwrap_or_default();
            let kind = json["type"].as_str().unwrap_or("event").to_owned();
            // When the client has gone, stop: dropping `events` cancels the run.
            if sender
                .send(Event::default().event(kind).data(json.to_string()))
                .is_err()
            {
                break;
            }
        }
    });
    let mut receiver = receiver;
    let stream = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx));
    Sse::new(stream.map(Ok))
}

/// The scripted model used by the example and its test, in history mode: both additions in one
/// turn, then `submit`.
pub fn scripted_history_lm() -> ScriptedLm {
    ScriptedLm::texts([
        "[[ ## next_thought ## ]]\nAdd both pairs at once.\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"add\", \"args\": {\"a\": 2, \"b\": 3}}, {\"name\": \"add\", \"args\": {\"a\": 4, \"b\": 5}}]}\n\n[[ ## completed ## ]]",
        "[[ ## next_thought ## ]]\nDone.\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": [{\"name\": \"submit\", \"args\": {\"answer\": \"5 and 9\"}}]}\n\n[[ ## completed ## ]]",
    ])
}

/// The scripted model used by the example and its test.
pub fn scripted_lm() -> ScriptedLm {
    ScriptedLm::texts([
        "[[ ## next_thought ## ]]\nAdd the numbers.\n\n[[ ## next_tool_name ## ]]\nadd\n\n[[ ## next_tool_args ## ]]\n{\"a\": 2, \"b\": 3}",
        "[[ ## next_thought ## ]]\nDone.\n\n[[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{\"answer\": \"5\"}",
    ])
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = ReAct::<Ask>::new().tool(AddTool);
    let agent = Arc::new(match std::env::args().nth(1).as_deref() {
        Some("history") => agent
            .with_lm(scripted_history_lm())
            .with_mode(ReActMode::History),
        _ => agent.with_lm(scripted_lm()).with_mode(ReActMode::Text),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!(
        "listening on http://{}/ask?question=...",
        listener.local_addr()?
    );
    axum::serve(listener, router(agent)).await?;
    Ok(())
}
