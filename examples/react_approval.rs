//! A ReAct agent behind HTTP whose risky tool waits for a person: the run that reaches it is parked
//! as JSON, and a second request — minutes later, from another process — approves, denies or edits
//! the call and the run goes on.
//!
//! `APPROVAL_TOKEN=<a secret> cargo run --example react_approval` (without `APPROVAL_TOKEN` it
//! makes up a random token and prints it), then
//!
//! ```text
//! curl -N -X POST localhost:3000/runs -H "authorization: Bearer $APPROVAL_TOKEN" \
//!      -H 'content-type: application/json' -d '{"request": "pay bob 20"}'
//! # ... event: suspended  data: {"run_id": "<32 hex digits>", "pending": [{"id": "step_0", "tool": "transfer", ..}]}
//! curl -N -X POST localhost:3000/runs/<run id>/decisions -H "authorization: Bearer $APPROVAL_TOKEN" \
//!      -H 'content-type: application/json' -d '{"step_0": {"decision": "approve"}}'
//! ```
//!
//! Every request needs the bearer token (else 401) and a `Host` header naming the address the
//! server is bound to (`localhost:3000` or `127.0.0.1:3000`; else 403): a web page open in a
//! browser on this machine can neither start a payment nor approve one, even through DNS
//! rebinding. Run ids are 128 random bits, so one run's id says nothing about another's.
//!
//! Both answers are Server-Sent Events, one per [`signet::module::ReActEvent`]. Parked runs are
//! files in a private directory (`0700`: `SIGNET_RUNS`, default a fresh temporary one), so any
//! server process of this user that builds the same agent can resume them. Each parked run is
//! **sealed** (an HMAC under a key kept in the directory, `0600`): a parked file rewritten between
//! "park" and "approve" — another transfer, another amount — is refused, never run. The model
//! here is a small rule-following stand-in; give the agent any `Lm`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use serde_json::json;
use signet::lm::{Completion, Lm, LmError, LmRequest};
use signet::module::{Decision, ReActEvent, SuspendedRun, react::RunFailure};
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
/// The agent; `state_key` seals the runs it parks and is required to resume them
/// ([`RunStore::state_key`]).
pub fn agent(lm: impl Lm + 'static, state_key: &[u8]) -> ReAct<Payment> {
    ReAct::<Payment>::new()
        .tool(TransferTool)
        .with_mode(ReActMode::Text)
        .with_state_key(state_key)
        .with_lm(lm)
}

/// 128 bits from the operating system's random source, as 32 hex digits (run ids, tokens).
pub fn random_hex() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if from_os.is_err() {
        // No /dev/urandom: SipHash under the standard library's per-process random keys.
        use std::hash::{BuildHasher, Hasher};
        for half in bytes.chunks_mut(8) {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            half.copy_from_slice(&hasher.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Who may call the service: requests must carry `Authorization: Bearer <token>` and a `Host`
/// header that is one of `hosts` (the names of the address the server is bound to).
#[derive(Debug, Clone)]
pub struct Access {
    pub token: String,
    pub hosts: Vec<String>,
}

impl Access {
    /// `token`, and the loopback names of `address` (`127.0.0.1:3000` and `localhost:3000`).
    pub fn local(token: impl Into<String>, address: std::net::SocketAddr) -> Access {
        let port = address.port();
        let mut hosts = vec![address.to_string(), format!("localhost:{port}")];
        if address.ip().is_unspecified() {
            hosts.push(format!("127.0.0.1:{port}"));
        }
        Access {
            token: token.into(),
            hosts,
        }
    }
}

/// Refuses a request whose `Host` is not one of the server's own names (403) or whose bearer
/// token is missing or wrong (401).
async fn guard(State(access): State<Arc<Access>>, request: Request, next: Next) -> Response {
    let refuse =
        |status: StatusCode, error: &str| (status, Json(json!({"error": error}))).into_response();
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default();
    if !access.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return refuse(
            StatusCode::FORBIDDEN,
            "this server answers only to its own address",
        );
    }
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map_or("", |(_, token)| token.trim());
    // An empty token (none configured) lets no one in.
    if access.token.is_empty() || !same(token.as_bytes(), access.token.as_bytes()) {
        let mut response = refuse(StatusCode::UNAUTHORIZED, "a valid bearer token is needed");
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, "Bearer".parse().unwrap());
        return response;
    }
    next.run(request).await
}

/// `router` open only to requests with `access`'s bearer token and one of its `Host` names (the
/// service as `main` serves it; [`router`] alone is for mounting behind your own checks).
pub fn protect(router: Router, access: Access) -> Router {
    router.layer(axum::middleware::from_fn_with_state(
        Arc::new(access),
        guard,
    ))
}

/// Whether `a` and `b` are equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// Where parked runs wait: one JSON file per run.
pub struct RunStore {
    dir: PathBuf,
}

impl RunStore {
    /// A store in `dir`, created `0700` when missing; a directory other users may write to is
    /// refused (they could replace a parked run, or the key that seals it).
    pub fn new(dir: PathBuf) -> std::io::Result<RunStore> {
        signet::fs_atomic::create_private_dir_all(&dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&dir)?.permissions().mode();
            if mode & 0o022 != 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "{} can be written by other users (mode {:o}); keep parked runs in a \
                         private directory",
                        dir.display(),
                        mode & 0o777
                    ),
                ));
            }
        }
        Ok(RunStore { dir })
    }

    /// The key that seals this store's runs: `SIGNET_RUNS_KEY` when set, else 128 random bits
    /// kept in the store (`.state-key`, `0600`), made by the first server to use it.
    pub fn state_key(&self) -> std::io::Result<Vec<u8>> {
        if let Some(key) = std::env::var_os("SIGNET_RUNS_KEY").filter(|k| !k.is_empty()) {
            return Ok(key.into_encoded_bytes());
        }
        let path = self.dir.join(".state-key");
        match std::fs::read(&path) {
            Ok(key) if !key.is_empty() => Ok(key),
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
            _ => {
                signet::fs_atomic::write_private(&path, random_hex().as_bytes())?;
                std::fs::read(&path)
            }
        }
    }

    /// Parks `state` under a new id: 32 random hex digits.
    fn save(&self, state: &SuspendedRun) -> std::io::Result<String> {
        let id = random_hex();
        self.put(&id, state)?;
        Ok(id)
    }

    /// Parks `state` under `id`, atomically ([`signet::fs_atomic::write_atomic`]: a temporary
    /// file in the store's directory, synced and renamed over `{id}.json`), so a crash or a full
    /// disk never leaves half a run (a reader sees the whole old file, the whole new one, or none).
    fn put(&self, id: &str, state: &SuspendedRun) -> std::io::Result<()> {
        let json = serde_json::to_vec_pretty(state).map_err(std::io::Error::other)?;
        signet::fs_atomic::write_atomic(&self.dir.join(format!("{id}.json")), &json)
    }

    /// The parked run `id`, removed from the store (a run is resumed once); `None` when there
    /// is no such run. The file is deleted only once it has been read and parsed: a file that
    /// cannot be read stays for a person to look at. Of two requests taking the same run at
    /// once, only the one whose delete succeeds gets it.
    fn take(&self, id: &str) -> Option<SuspendedRun> {
        if !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return None;
        }
        let path = self.dir.join(format!("{id}.json"));
        let text = std::fs::read_to_string(&path).ok()?;
        let state = match serde_json::from_str(&text) {
            Ok(state) => state,
            Err(error) => {
                eprintln!("parked run {} cannot be read: {error}", path.display());
                return None;
            }
        };
        std::fs::remove_file(&path).ok()?;
        Some(state)
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
    let dir = match std::env::var_os("SIGNET_RUNS") {
        Some(dir) => PathBuf::from(dir),
        None => tempfile::Builder::new()
            .prefix("signet-runs-")
            .tempdir()?
            .keep(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    let token = match std::env::var("APPROVAL_TOKEN") {
        Ok(token) if !token.is_empty() => token,
        _ => {
            let token = random_hex();
            println!("APPROVAL_TOKEN is not set; this run's token is {token}");
            token
        }
    };
    let address = listener.local_addr()?;
    let store = RunStore::new(dir.clone())?;
    let app = Arc::new(App {
        agent: agent(Teller, &store.state_key()?),
        store,
    });
    println!(
        "listening on http://{address}/runs (parked runs in {}); send `Authorization: Bearer \
         <token>`",
        dir.display()
    );
    let service = protect(router(app), Access::local(token, address));
    axum::serve(listener, service).await?;
    Ok(())
}
