//! A real Arize Phoenix server (the LLM tracing server) for the integration tests: start one per
//! test, export OpenTelemetry spans to it over OTLP/HTTP or OTLP/gRPC, read them back through its
//! REST API.
//!
//! ```ignore
//! let phoenix = Phoenix::start().await; // ~8 s: migrations of a fresh SQLite database
//! // ... export with `with_endpoint(phoenix.otlp_http_endpoint())` (or `otlp_grpc_endpoint()`)
//! // and the resource attribute `openinference.project.name` = "my-project" ...
//! let spans = phoenix.wait_for_spans("my-project", 2, Duration::from_secs(30)).await;
//! assert_eq!(attr(span_named(&spans, "chat"), "gen_ai.request.model"), Some(&json!("m")));
//! ```
//!
//! # Installation
//!
//! `scripts/phoenix.sh` installs the pinned `arize-phoenix` into a venv under
//! `${SIGNET_CACHE:-$HOME/.cache/signet}/phoenix` and writes `phoenix.env` there
//! (`SIGNET_PHOENIX_BIN=<venv>/bin/phoenix`); `SIGNET_PHOENIX_ENV` may name another such file.
//! When the file or the binary is missing, the first [`Phoenix::start`] of a test process runs
//! the script itself (about a minute, once), so `cargo test` works on a fresh machine; when that
//! fails the test panics with the command to run.
//!
//! # The server
//!
//! `phoenix serve` with `PHOENIX_HOST=127.0.0.1`, free ports for `PHOENIX_PORT` (HTTP: UI, REST
//! API, OTLP/HTTP at `/v1/traces`) and `PHOENIX_GRPC_PORT` (OTLP/gRPC), a fresh temporary
//! `PHOENIX_WORKING_DIR` (its SQLite database `phoenix.db` and our `phoenix.log`),
//! `PHOENIX_TELEMETRY_ENABLED=false` (no FullStory/Scarf pixels),
//! `PHOENIX_ALLOW_EXTERNAL_RESOURCES=false` (no internet requests of its own) and
//! `PHOENIX_LOG_MIGRATIONS=false`; every other `PHOENIX_*` and `OTEL_*` variable of the caller is
//! removed. It is ready when `GET /healthz` answers 200 and the gRPC port accepts connections
//! (about 8 s on this machine, 2 CPUs; it then holds ~450 MB of memory).
//!
//! # Projects
//!
//! Phoenix files each span under the project named by the **resource** attribute
//! `openinference.project.name` (a string; the first one of the resource), else under
//! `"default"`. Over OTLP/HTTP an `x-project-name` request header, when present, wins over the
//! resource attribute (read in Phoenix's source; gRPC has no such header). A project exists from
//! its first span on; [`Phoenix::spans`] of a project that does not exist is empty (the API
//! answers 404). Resource attributes are not returned with the spans.
//!
//! # The spans as the REST API returns them
//!
//! `GET /v1/projects/{name or id}/spans?limit=1000&sort=id&order=asc[&cursor=...]` answers
//! `{"data": [span...], "next_cursor": "..." | null}`; [`Phoenix::spans`] follows every cursor.
//! A span (abridged from a real one, exported by `opentelemetry-otlp` 0.33):
//!
//! ```json
//! {
//!   "id": "U3Bhbjox",                          // Phoenix's own id (base64 "Span:1"), not OTel's
//!   "name": "child",
//!   "context": {"trace_id": "9d120393b1fd48f6736bc8790120e0cf", "span_id": "d2811c7a2832334b"},
//!   "span_kind": "LLM",                        // OpenInference's kind, see below
//!   "parent_id": "f7946be7ab69b57d",           // null for a root span
//!   "start_time": "2026-11-28T05:04:05.601808+00:00",
//!   "end_time": "2026-11-28T05:04:05.601812+00:00",
//!   "status_code": "ERROR",                    // "UNSET", "OK" or "ERROR"
//!   "status_message": "boom",                  // "" when none
//!   "attributes": {
//!     "gen_ai.request.model": "m1",            // flat, under the dotted key that was sent
//!     "gen_ai.usage.input_tokens": 42,         // int: a JSON integer
//!     "gen_ai.request.temperature": 0.5,       // double: a JSON float
//!     "flag": true,                            // bool
//!     "gen_ai.response.finish_reasons": ["stop", "length"],   // string array: a JSON array
//!     "ints": [1, 2, 3],                       // int array too
//!     "llm.model_name": "m1",                  // added by Phoenix from gen_ai.* (below)
//!     "llm.token_count.prompt": 42,
//!     "llm.invocation_parameters": "{\"temperature\": 0.5}"
//!   },
//!   "events": [{"name": "gen_ai.choice", "timestamp": "2026-11-28T05:04:05.601810+00:00",
//!               "attributes": {"gen_ai.choice.index": 0, "msg": "hi"}}]
//! }
//! ```
//!
//! Ids are lowercase hex (32 and 16 digits), as `TraceId`/`SpanId` display. Times are ISO 8601
//! with microseconds. Spans are readable about 100 ms after the export returned (Phoenix queues
//! them and its bulk inserter writes every 100 ms), hence [`Phoenix::wait_for_spans`].
//!
//! ## Attributes
//!
//! Phoenix stores attributes nested (`{"gen_ai": {"request": {"model": ...}}}`) but this endpoint
//! flattens them again, so a key comes back as the dotted string that was sent, even when a
//! shorter key was sent too (`"coll": "scalar"` and `"coll.inner": "nested"` both come back).
//! Ints, doubles, bools and arrays keep their JSON types. Exceptions seen:
//!
//! - `openinference.span.kind` is removed from the attributes and becomes `span_kind`; without it
//!   the kind is inferred from `gen_ai.*` (`gen_ai.operation.name` `chat`/`text_completion`/
//!   `generate_content` → `LLM`, `embeddings` → `EMBEDDING`, `execute_tool` → `TOOL`,
//!   `retrieval` → `RETRIEVER`, `invoke_agent`/`create_agent` → `AGENT`; without an operation, a
//!   `gen_ai.request.model` or `gen_ai.input.messages` makes `LLM`, `gen_ai.tool.name` `TOOL`),
//!   else `UNKNOWN`. OpenTelemetry's span kind (Server, Client...) is not returned at all.
//! - A span with any `gen_ai.*` attribute also gets the OpenInference attributes Phoenix derives
//!   from them (unless the span has them already): `llm.model_name`, `llm.provider`,
//!   `llm.system`, `llm.token_count.prompt`/`completion`/`total`, `llm.invocation_parameters`
//!   (a JSON string), `llm.finish_reason`, and `llm.input_messages.N.message.role`/`content`
//!   and `llm.output_messages.N.message.*` parsed from the JSON strings of
//!   `gen_ai.input.messages`/`gen_ai.output.messages` (which stay as they were sent).
//! - A string attribute whose key ends in `metadata` (also `tool.parameters`,
//!   `llm.prompt_template.variables`) is parsed as JSON when it is, and comes back flattened:
//!   `metadata` = `{"user": "u1", "n": 3}` returns `metadata.user` = "u1", `metadata.n` = 3.
//! - Event attributes are returned as sent (flat, typed).
//!
//! [`attr`] finds an attribute by its dotted key whether it is flat (as this version returns
//! them) or nested (as Phoenix stores them), and works on events too.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long [`Phoenix::start`] waits for the server to answer.
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `phoenix` executable that `scripts/phoenix.sh` installed, installing it first when it is
/// missing (once per test process); panics with the install command when that fails.
pub fn phoenix_bin() -> &'static Path {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    match BIN.get_or_init(|| find_bin().or_else(install)) {
        Ok(bin) => bin,
        Err(message) => panic!(
            "{message}\nArize Phoenix is missing: install it with `bash scripts/phoenix.sh`."
        ),
    }
}

/// Runs `scripts/phoenix.sh` (idempotent, locked) so that `cargo test` works on a fresh machine;
/// not when `SIGNET_PHOENIX_ENV` names a file of its own.
fn install(missing: String) -> Result<PathBuf, String> {
    if std::env::var_os("SIGNET_PHOENIX_ENV").is_some() {
        return Err(missing);
    }
    eprintln!("Arize Phoenix not found ({missing}); installing it with scripts/phoenix.sh");
    // The other first-use installs start beside this one (scripts/test-deps.sh).
    let _ = std::process::Command::new("bash")
        .arg(repo_root().join("scripts/test-deps.sh"))
        .status();
    let status = std::process::Command::new("bash")
        .arg(repo_root().join("scripts/phoenix.sh"))
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("{missing}; could not run scripts/phoenix.sh: {e}"))?;
    if !status.success() {
        return Err(format!("{missing}; scripts/phoenix.sh failed ({status})"));
    }
    find_bin()
}

/// `SIGNET_PHOENIX_BIN` from `phoenix.env` (`SIGNET_PHOENIX_ENV`, else
/// `${SIGNET_CACHE:-$HOME/.cache/signet}/phoenix/phoenix.env`).
fn find_bin() -> Result<PathBuf, String> {
    let file = match std::env::var_os("SIGNET_PHOENIX_ENV") {
        Some(path) => PathBuf::from(path),
        None => {
            let cache = std::env::var_os("SIGNET_CACHE")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/signet")))
                .ok_or("neither SIGNET_CACHE nor HOME is set")?;
            cache.join("phoenix/phoenix.env")
        }
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let bin = text
        .lines()
        .find_map(|line| line.strip_prefix("SIGNET_PHOENIX_BIN="))
        .map(|value| PathBuf::from(value.trim()))
        .ok_or_else(|| format!("{} has no SIGNET_PHOENIX_BIN", file.display()))?;
    if bin.exists() {
        Ok(bin)
    } else {
        Err(format!(
            "SIGNET_PHOENIX_BIN={} (from {}) does not exist",
            bin.display(),
            file.display()
        ))
    }
}

/// Two distinct free TCP ports on 127.0.0.1 (both listeners are held until both are known).
fn free_ports() -> (u16, u16) {
    let bind = || std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let (a, b) = (bind(), bind());
    let port = |l: &std::net::TcpListener| l.local_addr().expect("a bound address").port();
    (port(&a), port(&b))
}

/// The last `lines` lines of a file, or why it cannot be read, without the access-log lines of
/// our own polling (`GET /healthz`, `GET /v1/projects/...`).
fn tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text
                .lines()
                .filter(|line| {
                    !line.contains("\"GET /healthz") && !line.contains("\"GET /v1/projects/")
                })
                .collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}

/// A Phoenix server of this test alone: its own ports, its own working directory (and so its
/// own SQLite database). Dropping it kills the server and deletes the directory, unless the
/// thread is panicking: then the directory (with `phoenix.log` and `phoenix.db`) is kept and
/// its path printed.
pub struct Phoenix {
    child: tokio::process::Child,
    http_port: u16,
    grpc_port: u16,
    working_dir: PathBuf,
    log: PathBuf,
    client: reqwest::Client,
    startup: Duration,
    /// Keep the working directory on drop (a failed start names its log).
    keep: bool,
}

/// Why one attempt to start the server failed.
struct StartFailure {
    message: String,
    /// Another process took one of the ports between our probe and Phoenix's bind.
    port_taken: bool,
}

impl Phoenix {
    /// Starts `phoenix serve` on free ports of 127.0.0.1 and waits (up to [`START_TIMEOUT`])
    /// until its HTTP API answers `/healthz` and its gRPC port accepts connections.
    ///
    /// Async because it polls the server with `reqwest`; call it from a Tokio runtime (the
    /// server is a `tokio::process::Child` with `kill_on_drop`). Panics, with the tail of the
    /// server's log, when the server exits or does not come up in time. Retries on fresh ports
    /// (three attempts) when a port was taken before Phoenix could bind it.
    pub async fn start() -> Phoenix {
        let bin = phoenix_bin();
        let mut attempt = 1;
        loop {
            match Phoenix::try_start(bin).await {
                Ok(phoenix) => return phoenix,
                Err(failure) if failure.port_taken && attempt < 3 => {
                    eprintln!("{}; retrying on other ports", failure.message);
                    attempt += 1;
                }
                Err(failure) => panic!("{}", failure.message),
            }
        }
    }

    async fn try_start(bin: &Path) -> Result<Phoenix, StartFailure> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let working_dir = std::env::temp_dir().join(format!(
            "signet-phoenix-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&working_dir);
        std::fs::create_dir_all(&working_dir).expect("create Phoenix's working directory");
        let log = working_dir.join("phoenix.log");
        let log_file = File::create(&log).expect("create phoenix.log");
        let (http_port, grpc_port) = free_ports();

        let mut command = tokio::process::Command::new(bin);
        command.arg("serve");
        // Nothing of the caller's Phoenix or OpenTelemetry setup (a Postgres URL, auth, TLS, a
        // collector endpoint) reaches the server.
        for (key, _) in std::env::vars_os() {
            if let Some(key) = key.to_str()
                && (key.starts_with("PHOENIX_") || key.starts_with("OTEL_"))
            {
                command.env_remove(key);
            }
        }
        command
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", http_port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc_port.to_string())
            .env("PHOENIX_WORKING_DIR", &working_dir)
            // No telemetry pixels, no web fonts or downloads from the internet.
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            // The migrations would log ~4,500 lines of SQL at every start.
            .env("PHOENIX_LOG_MIGRATIONS", "false")
            .env("PYTHONUNBUFFERED", "1")
            .current_dir(&working_dir)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().expect("clone phoenix.log"))
            .stderr(log_file)
            .kill_on_drop(true);
        let started = Instant::now();
        let child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start `{} serve`: {e}; reinstall with `bash scripts/phoenix.sh`",
                bin.display()
            )
        });
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("a reqwest client");
        let mut phoenix = Phoenix {
            child,
            http_port,
            grpc_port,
            working_dir,
            log,
            client,
            startup: Duration::ZERO,
            keep: false,
        };

        let health = format!("{}/healthz", phoenix.base_url());
        loop {
            if let Ok(Some(status)) = phoenix.child.try_wait() {
                let log_tail = phoenix.log_tail(60);
                let port_taken =
                    log_tail.contains("address already in use") || log_tail.contains("Errno 98");
                let message = format!(
                    "Phoenix exited ({status}) before it answered on {health}; log {}:\n{log_tail}",
                    phoenix.log.display()
                );
                // Nothing to keep when the start is retried; the log otherwise.
                if port_taken {
                    phoenix.discard();
                } else {
                    phoenix.keep = true;
                }
                return Err(StartFailure {
                    message,
                    port_taken,
                });
            }
            let healthy = phoenix
                .client
                .get(&health)
                .timeout(Duration::from_secs(5))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if healthy
                && tokio::net::TcpStream::connect(("127.0.0.1", phoenix.grpc_port))
                    .await
                    .is_ok()
            {
                phoenix.startup = started.elapsed();
                eprintln!(
                    "Phoenix up in {:.1} s at {} (gRPC {}; log {})",
                    phoenix.startup.as_secs_f64(),
                    phoenix.base_url(),
                    phoenix.otlp_grpc_endpoint(),
                    phoenix.log.display()
                );
                return Ok(phoenix);
            }
            if started.elapsed() > START_TIMEOUT {
                panic!(
                    "Phoenix did not answer on {health} within {} s; log {}:\n{}",
                    START_TIMEOUT.as_secs(),
                    phoenix.log.display(),
                    phoenix.log_tail(60)
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// `http://127.0.0.1:PORT`, the UI and the REST API (`/v1/...`).
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// The OTLP/HTTP traces endpoint, `http://127.0.0.1:PORT/v1/traces` (protobuf only: Phoenix
    /// answers 415 to `application/json`). Give it to `with_endpoint` as is: the exporter adds
    /// `/v1/traces` only to an endpoint taken from `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn otlp_http_endpoint(&self) -> String {
        format!("{}/v1/traces", self.base_url())
    }

    /// The OTLP/gRPC endpoint, `http://127.0.0.1:GRPCPORT` (plaintext).
    pub fn otlp_grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc_port)
    }

    /// The server's log (stdout and stderr), inside its working directory.
    pub fn log_path(&self) -> &Path {
        &self.log
    }

    /// The last `lines` lines of the server's log (without our polling requests).
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }

    /// How long the server took from spawn to answering.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// All spans of `project` (a name or a project id), oldest first, every page of
    /// `GET /v1/projects/{project}/spans` followed; empty while the project does not exist
    /// (Phoenix creates it with its first span). Panics when the API fails otherwise.
    pub async fn spans(&self, project: &str) -> Vec<Value> {
        match self.try_spans(project).await {
            Ok(spans) => spans,
            Err(e) => panic!(
                "reading the spans of project {project:?} from Phoenix failed: {e}\nlog {}:\n{}",
                self.log.display(),
                self.log_tail(40)
            ),
        }
    }

    async fn try_spans(&self, project: &str) -> Result<Vec<Value>, String> {
        let mut base = reqwest::Url::parse(&self.base_url()).map_err(|e| e.to_string())?;
        base.path_segments_mut()
            .map_err(|()| "a base URL without path")?
            .extend(["v1", "projects", project, "spans"]);
        let mut spans = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = base.clone();
            {
                let mut query = url.query_pairs_mut();
                query
                    .append_pair("limit", "1000")
                    .append_pair("sort", "id")
                    .append_pair("order", "asc");
                if let Some(cursor) = &cursor {
                    query.append_pair("cursor", cursor);
                }
            }
            let response = self
                .client
                .get(url.clone())
                .send()
                .await
                .map_err(|e| format!("GET {url}: {e}"))?;
            let status = response.status();
            let body = response
                .bytes()
                .await
                .map_err(|e| format!("GET {url}: {e}"))?;
            if status == reqwest::StatusCode::NOT_FOUND && cursor.is_none() {
                return Ok(Vec::new());
            }
            if !status.is_success() {
                return Err(format!(
                    "GET {url}: {status}: {}",
                    String::from_utf8_lossy(&body)
                ));
            }
            let mut page: Value = serde_json::from_slice(&body)
                .map_err(|e| format!("GET {url}: {e}: {}", String::from_utf8_lossy(&body)))?;
            match page.get_mut("data").map(Value::take) {
                Some(Value::Array(data)) => spans.extend(data),
                _ => return Err(format!("GET {url}: no `data` array in {page}")),
            }
            match page.get("next_cursor") {
                Some(Value::String(next)) => cursor = Some(next.clone()),
                _ => return Ok(spans),
            }
        }
    }

    /// Polls [`spans`](Self::spans) every 100 ms until `project` has at least `at_least` spans
    /// (Phoenix stores what it receives asynchronously, so an export that returned is not yet
    /// readable), and returns them all. Panics after `timeout` with what was there.
    pub async fn wait_for_spans(
        &self,
        project: &str,
        at_least: usize,
        timeout: Duration,
    ) -> Vec<Value> {
        let awaited = format!("the {at_least} awaited");
        self.wait_until(project, &awaited, timeout, |spans| spans.len() >= at_least)
            .await
    }

    /// The spans of `project` once `ready` holds for them (Phoenix ingests spans in batches, in
    /// no set order: the root span, which ends last, may come after the others); panics with
    /// the span names and Phoenix's log after `timeout`, saying what was `awaited`.
    pub async fn wait_until(
        &self,
        project: &str,
        awaited: &str,
        timeout: Duration,
        ready: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let spans = self.spans(project).await;
            if ready(&spans) {
                return spans;
            }
            if Instant::now() > deadline {
                let names: Vec<&Value> = spans.iter().filter_map(|s| s.get("name")).collect();
                panic!(
                    "project {project:?} has {} spans after {:?}, not {awaited} \
                     (names: {names:?})\nlog {}:\n{}",
                    spans.len(),
                    timeout,
                    self.log.display(),
                    self.log_tail(40)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Kills the server and deletes its directory, whatever the thread is doing.
    fn discard(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.working_dir);
    }

    /// Kills the server and reaps it (up to 5 s), so that SQLite is closed before the working
    /// directory goes.
    fn stop(&mut self) {
        let _ = self.child.start_kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                _ => break,
            }
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        self.stop();
        if self.keep || std::thread::panicking() {
            eprintln!(
                "kept Phoenix's working directory (log, SQLite database): {}",
                self.working_dir.display()
            );
        } else {
            let _ = std::fs::remove_dir_all(&self.working_dir);
        }
    }
}

/// The span called `name` among `spans`; panics with the names there are.
pub fn span_named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
        .unwrap_or_else(|| {
            let names: Vec<&Value> = spans.iter().filter_map(|s| s.get("name")).collect();
            panic!("no span named {name:?} among {names:?}")
        })
}

/// The attribute `dotted_key` (`gen_ai.request.model`) of a span, or of an event (anything
/// with an `attributes` object), whether Phoenix keeps the key flat (`{"a.b": 1}`), nested
/// (`{"a": {"b": 1}}`) or partly nested; a numeric part indexes an array (`llm.tools.0.name`).
pub fn attr<'a>(span: &'a Value, dotted_key: &str) -> Option<&'a Value> {
    lookup(span.get("attributes")?, dotted_key)
}

/// A string attribute of `span` (panics naming the span when it is missing or not a string).
pub fn str_attr<'a>(span: &'a Value, key: &str) -> &'a str {
    attr(span, key)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{}: no string `{key}` in {span}", span["name"]))
}

/// An integer attribute of `span` (panics naming the span when it is missing or not an integer).
pub fn int_attr(span: &Value, key: &str) -> i64 {
    attr(span, key)
        .and_then(Value::as_i64)
        .unwrap_or_else(|| panic!("{}: no integer `{key}` in {span}", span["name"]))
}

fn lookup<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => {
            if let Some(found) = map.get(key) {
                return Some(found);
            }
            // The longest prefix first: `{"a.b": {"c": 1}}` and `{"a": {"b.c": 2}}` both work.
            key.match_indices('.').rev().find_map(|(at, _)| {
                map.get(&key[..at])
                    .and_then(|inner| lookup(inner, &key[at + 1..]))
            })
        }
        Value::Array(items) => {
            let (index, rest) = match key.split_once('.') {
                Some((index, rest)) => (index, Some(rest)),
                None => (key, None),
            };
            let item = items.get(index.parse::<usize>().ok()?)?;
            match rest {
                Some(rest) => lookup(item, rest),
                None => Some(item),
            }
        }
        _ => None,
    }
}
