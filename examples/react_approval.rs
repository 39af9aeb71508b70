//! A ReAct agent behind HTTP whose risky tool waits for a person: the run that reaches it is parked
//! as JSON, and a second request — minutes later, from another process — approves, denies or edits
//! the call and the run goes on.
//!
//! `cargo run --example react_approval`, then
//!
//! ```text
//! curl -N -X POST localhost:3000/runs -H 'content-type: application/json' -d '{"request": "pay bob 20"}'
//! # ... event: suspended  data: {"run_id": "run-..", "pending": [{"id": "step_0", "tool": "transfer", ..}]}
//! curl -N -X POST localhost:3000/runs/run-../decisions -H 'content-type: application/json' \
//!      -d '{"step_0": {"decision": "approve"}}'
//! ```
//!
//! Both answers are Server-Sent Events, one per [`signet::module::ReActEvent`]. Parked runs are
//! files in a directory (`SIGNET_RUNS`, default a temporary one), so any server process that
//! builds the same agent can resume them. The model here is a small rule-following stand-in;
//! give the agent any `Lm`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use serde_json::json;
use signet::lm::{Completion, Lm, LmError, LmRequest};
use signet::module::{Decision, ReActEvent, RunFailure, SuspendedRun};
use signet::prelude::*;

/// Carry out the customer's payment request with the tools and report what was done.
#[derive(Signature)]
pub struct Payment {
    #[input]
    pub request: String,
    #[output]
    pub receipt: String,
}

/// Send money from the shop's account.
#[tool(confirm)]
pub fn transfer(
    /// Who receives the money.
    to: String,
    /// How many euros.
    amount: u32,
) -> String {
    format!("sent {amount} EUR to {to}")
}

/// The agent every request builds: text mode, the transfer tool, `lm` as its model.
pub fn agent(lm: impl Lm + 'static) -> ReAct<Payment> {
    ReAct::<Payment>::new()
        .tool(TransferTool)
        .with_mode(ReActMode::Text)
        .with_lm(lm)
}

/// Where parked runs wait: one JSON file per run.
pub struct RunStore {
    dir: PathBuf,
    next: AtomicU64,
}

impl RunStore {
    /// A store in `dir` (created when missing).
    pub fn new(dir: PathBuf) -> std::io::Result<RunStore> {
        std::fs::create_dir_all(&dir)?;
        Ok(RunStore {
            dir,
            next: AtomicU64::new(0),
        })
    }

    /// Parks `state` under a new id.
    fn save(&self, state: &SuspendedRun) -> std::io::Result<String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let id = format!("run-{nanos}-{}", self.next.fetch_add(1, Ordering::SeqCst));
        self.put(&id, state)?;
        Ok(id)
    }

    /// Parks `state` under `id`.
    fn put(&self, id: &str, state: &SuspendedRun) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
        std::fs::write(self.dir.join(format!("{id}.json")), json)
    }

    /// The parked run `id`, removed from the store (a run is resumed once); `None` when there
    /// is no such run.
    fn take(&self, id: &str) -> Option<SuspendedRun> {
        if !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return None;
        }
        let path = self.dir.join(format!("{id}.json"));
        let text = std::fs::read_to_string(&path).ok()?;
        std::fs::remove_file(&path).ok()?;
        serde_json::from_str(&text).ok()
    }
}

/// What the handlers share: the agent and the store.
pub struct App {
    pub agent: ReAct<Payment>,
    pub store: RunStore,
}

#[derive(serde::Deserialize)]
struct NewRun {
    request: String,
}

/// `POST /runs` starts a run; `POST /runs/{id}/decisions` resumes a parked one with a decision
/// per pending call id (`{"step_0": {"decision": "approve"}}`; `deny` with an optional reason as
/// `value`, `edit` with new arguments, `respond` with a result).
pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/runs", post(start))
        .route("/runs/{id}/decisions", post(decide))
        .with_state(app)
}

async fn start(State(app): State<Arc<App>>, Json(run): Json<NewRun>) -> Response {
    let input = PaymentInput {
        request: run.request,
    };
    stream_events(app, None, move |app| app.agent.stream_start(input)).into_response()
}

async fn decide(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Json(decisions): Json<HashMap<String, Decision>>,
) -> Response {
    let Some(state) = app.store.take(&id) else {
        let error = json!({"error": format!("no parked run `{id}`")});
        return (StatusCode::NOT_FOUND, Json(error)).into_response();
    };
    let parked = Some((id, state.clone()));
    stream_events(app, parked, move |app| {
        app.agent.stream_resume(state, decisions)
    })
    .into_response()
}

/// Streams a run's events as SSE; a suspended run is saved and announced with its id and the
/// calls that wait. A resumed run (`parked`) whose decisions do not fit it is parked again, so
/// the person can send them anew. A client that disconnects cancels the run.
fn stream_events<F>(
    app: Arc<App>,
    parked: Option<(String, SuspendedRun)>,
    run: F,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>>
where
    F: for<'a> FnOnce(&'a App) -> futures::stream::BoxStream<'a, ReActEvent<PaymentOutput>>
        + Send
        + 'static,
{
    let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut events = run(&app);
        while let Some(event) = events.next().await {
            let (kind, data) = match &event {
                ReActEvent::Suspended { state } => match app.store.save(state) {
                    Ok(run_id) => (
                        "suspended".to_owned(),
                        json!({"run_id": run_id, "pending": state.pending}),
                    ),
                    Err(error) => {
                        let message = format!("the run could not be parked: {error}");
                        (
                            "failed".to_owned(),
                            json!({"type": "failed", "error": message}),
                        )
                    }
                },
                ReActEvent::Failed { error } if matches!(error.reason, RunFailure::Resume(_)) => {
                    if let Some((id, state)) = &parked
                        && let Err(put) = app.store.put(id, state)
                    {
                        eprintln!("run {id} could not be put back: {put}");
                    }
                    (
                        "failed".to_owned(),
                        json!({"type": "failed", "error": error.to_string()}),
                    )
                }
                other => {
                    let json = serde_json::to_value(other).unwrap_or_default();
                    (json["type"].as_str().unwrap_or("event").to_owned(), json)
                }
            };
            if sender
                .send(Event::default().event(kind).data(data.to_string()))
                .is_err()
            {
                break;
            }
        }
    });
    let stream = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx));
    Sse::new(stream.map(Ok))
}

/// A stand-in model that follows the text format: it asks for the transfer the request names,
/// then finishes with the transfer's result as the receipt.
pub struct Teller;

impl Lm for Teller {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        let prompt = request
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        Box::pin(async move {
            let reply = match observation(&prompt) {
                None => "[[ ## next_thought ## ]]\nThe customer asks me to pay Bob 20 euros.\n\n\
                         [[ ## next_tool_name ## ]]\ntransfer\n\n\
                         [[ ## next_tool_args ## ]]\n{\"to\": \"bob\", \"amount\": 20}\n\n\
                         [[ ## completed ## ]]"
                    .to_owned(),
                Some(result) => format!(
                    "[[ ## next_thought ## ]]\nReport the outcome.\n\n\
                     [[ ## next_tool_name ## ]]\nfinish\n\n[[ ## next_tool_args ## ]]\n{}\n\n\
                     [[ ## completed ## ]]",
                    json!({"receipt": result})
                ),
            };
            Ok(Completion::text(reply))
        })
    }

    fn model(&self) -> &str {
        "teller"
    }
}

/// The first observation in a step prompt's trajectory, if any.
fn observation(prompt: &str) -> Option<String> {
    let start = prompt.find("[[ ## observation_0 ## ]]\n")? + "[[ ## observation_0 ## ]]\n".len();
    let rest = &prompt[start..];
    Some(rest[..rest.find("\n\n").unwrap_or(rest.len())].to_owned())
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::var_os("SIGNET_RUNS")
        .map_or_else(|| std::env::temp_dir().join("signet-runs"), PathBuf::from);
    let app = Arc::new(App {
        agent: agent(Teller),
        store: RunStore::new(dir.clone())?,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!(
        "listening on http://{}/runs (parked runs in {})",
        listener.local_addr()?,
        dir.display()
    );
    axum::serve(listener, router(app)).await?;
    Ok(())
}
