//! A model server process: spawned, waited for until it answers, stopped on drop.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

use crate::LocalError;

/// How many of the server's last output lines are kept for error messages.
const LOG_LINES: usize = 40;

/// How to start an OpenAI-compatible model server: the program, its arguments and environment,
/// the port it will listen on, and how long to wait for it.
///
/// ```
/// use std::time::Duration;
/// use signet_local::ServerCommand;
///
/// let command = ServerCommand::new("llama-server")
///     .args(["--model", "model.gguf", "--port", "8080"])
///     .port(8080)
///     .ready_timeout(Duration::from_secs(60));
/// assert_eq!(command.base_url(), "http://127.0.0.1:8080/v1");
/// ```
///
/// `Debug` shows the environment's names but never its values (API keys are often passed this
/// way): each value is shown as `[redacted]`.
#[derive(Clone)]
pub struct ServerCommand {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    port: u16,
    ready_timeout: Duration,
    expect_model: Option<String>,
}

impl std::fmt::Debug for ServerCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<(&str, Redacted)> = self
            .env
            .iter()
            .map(|(name, _)| (name.as_str(), Redacted))
            .collect();
        f.debug_struct("ServerCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env)
            .field("port", &self.port)
            .field("ready_timeout", &self.ready_timeout)
            .field("expect_model", &self.expect_model)
            .finish()
    }
}

/// Stands for an environment variable's value in `Debug` output.
struct Redacted;

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl ServerCommand {
    /// Runs `program` (with no arguments yet; port 8080, 120 s to get ready).
    pub fn new(program: impl Into<PathBuf>) -> ServerCommand {
        ServerCommand {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            port: 8080,
            ready_timeout: Duration::from_secs(120),
            expect_model: None,
        }
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the server. The server does not inherit this process's
    /// environment (its secrets with it): it gets the variables of [`signet::child_env::allowed`]
    /// (the path, home, locale, temporary directory, thread and device settings) and these.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The port the server listens on (on 127.0.0.1); pass it in [`args`](Self::args) too.
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// How long the server may take to answer its first request.
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Checks that the process answering on the port is the one started: it is ready only when
    /// `GET /v1/models` lists a model named `name` (an id, an alias or a name). Start the server
    /// with a name no other process could know (a random alias): another process that answers
    /// on the port — it was taken between choosing it and the server binding it, or a server
    /// left running — is then [`LocalError::PortTaken`], not a server that seems ready. Without
    /// it, any 200 answer counts.
    pub fn expect_model(mut self, name: impl Into<String>) -> Self {
        self.expect_model = Some(name.into());
        self
    }

    /// The OpenAI-compatible base URL the server will have.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

/// A running model server. It is stopped (killed) when dropped; [`stop`](Self::stop) waits for
/// the process to end.
///
/// ```no_run
/// # async fn demo() -> Result<(), signet_local::LocalError> {
/// use signet_local::{LocalServer, ServerCommand};
///
/// let port = signet_local::free_port()?;
/// let server = LocalServer::spawn(
///     ServerCommand::new("llama-server")
///         .args(["--model", "model.gguf", "--port", &port.to_string()])
///         .port(port),
/// )
/// .await?;
/// println!("serving at {}", server.base_url());
/// server.stop().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LocalServer {
    child: Child,
    base_url: String,
    log: Arc<Mutex<VecDeque<String>>>,
    /// The pid file of a server started from a cache (removed with the handle).
    registration: Option<crate::running::Registration>,
    /// Where [`stop`](Self::stop) saves the evaluated prompt (a llama.cpp server of
    /// [`LlamaCpp::serve`](crate::LlamaCpp::serve)).
    prompt_cache: Option<crate::prompt_cache::PromptCache>,
}

impl LocalServer {
    /// Starts the server and waits until `GET {base_url}/models` answers 200 (listing the
    /// [expected model](ServerCommand::expect_model), when one is set). Fails with
    /// [`LocalError::Exited`] if the process ends first, [`LocalError::NotReady`] (after killing
    /// it) if it does not answer in time, both with the server's last output lines, or
    /// [`LocalError::PortTaken`] (after killing it) if something else answers on its port.
    pub async fn spawn(command: ServerCommand) -> Result<LocalServer, LocalError> {
        let base_url = command.base_url();
        let mut process = Command::new(&command.program);
        process
            .args(&command.args)
            // No secret of this process reaches the server: an allow-list, then its own.
            .env_clear()
            .envs(signet::child_env::allowed(&[]))
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = process.spawn().map_err(|source| LocalError::Spawn {
            program: command.program.display().to_string(),
            source,
        })?;
        let log = Arc::new(Mutex::new(VecDeque::with_capacity(LOG_LINES)));
        if let Some(stdout) = child.stdout.take() {
            tokio::spawn(keep_lines(stdout, log.clone()));
        }
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(keep_lines(stderr, log.clone()));
        }
        let mut server = LocalServer {
            child,
            base_url,
            log,
            registration: None,
            prompt_cache: None,
        };
        server
            .wait_ready(command.ready_timeout, command.expect_model.as_deref())
            .await?;
        tracing::info!(base_url = %server.base_url, "model server ready");
        Ok(server)
    }

    async fn wait_ready(
        &mut self,
        timeout: Duration,
        expect_model: Option<&str>,
    ) -> Result<(), LocalError> {
        let client = reqwest::Client::new();
        let url = format!("{}/models", self.base_url);
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().map_err(|source| LocalError::Io {
                action: "check on the model server".into(),
                source,
            })? {
                // Let the output readers catch up with the last lines.
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Err(LocalError::Exited {
                    status: status.to_string(),
                    log: self.recent_output(),
                });
            }
            let answer = client
                .get(&url)
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .ok()
                .filter(|r| r.status().is_success());
            if let Some(answer) = answer {
                let Some(name) = expect_model else {
                    return Ok(());
                };
                let body = read_capped(answer, MAX_MODELS_BODY).await;
                if lists_model(&body, name) {
                    return Ok(());
                }
                let _ = self.child.kill().await;
                let mut answered = String::from_utf8_lossy(&body).into_owned();
                if crate::notice::cut_at_char(&mut answered, 200) {
                    answered.push_str("...");
                }
                return Err(LocalError::PortTaken {
                    url,
                    answered,
                    log: self.recent_output(),
                });
            }
            if started.elapsed() > timeout {
                let _ = self.child.kill().await;
                return Err(LocalError::NotReady {
                    after: timeout,
                    log: self.recent_output(),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Keeps `registration` (a pid file in the cache) for as long as the server runs.
    pub(crate) fn set_registration(&mut self, registration: crate::running::Registration) {
        self.registration = Some(registration);
    }

    /// The OpenAI-compatible base URL, e.g. `http://127.0.0.1:8080/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// The server's last output lines (stdout and stderr, interleaved), for diagnostics.
    pub fn recent_output(&self) -> String {
        let lines = self.log.lock().unwrap_or_else(|e| e.into_inner());
        lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Saves the server's evaluated prompt there when it is [stopped](Self::stop).
    pub(crate) fn set_prompt_cache(&mut self, cache: crate::prompt_cache::PromptCache) {
        self.prompt_cache = Some(cache);
    }

    /// Stops the server and waits for the process to end. A server of
    /// [`LlamaCpp::serve`](crate::LlamaCpp::serve) first saves its evaluated prompt for the
    /// next server ([`LlamaCpp::prompt_cache`](crate::LlamaCpp::prompt_cache)); a save that
    /// fails is a warning, not an error.
    pub async fn stop(mut self) -> Result<(), LocalError> {
        if let Some(cache) = self.prompt_cache.take() {
            match cache.save(&self.base_url).await {
                Ok(crate::prompt_cache::Outcome::Tokens(tokens)) => tracing::info!(
                    tokens,
                    manifest = %cache.manifest_path().display(),
                    "prompt cache saved"
                ),
                Ok(crate::prompt_cache::Outcome::Nothing) => {}
                Err(error) => crate::notice::warn(&format!("prompt cache: {error}")),
            }
        }
        self.child.kill().await.map_err(|source| LocalError::Io {
            action: "stop the model server".into(),
            source,
        })
    }
}

/// The most of a `/v1/models` answer read (a process that is not the server may send anything).
const MAX_MODELS_BODY: usize = 1 << 20;

/// Up to `limit` bytes of `response`'s body (what arrived, if it breaks off).
async fn read_capped(mut response: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = limit - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == limit {
            break;
        }
    }
    body
}

/// Whether a `/v1/models` answer lists `name`: as a model's `id` or one of its `aliases` (OpenAI's
/// and llama.cpp's `data`), or as a `name` or `model` (llama.cpp's Ollama-style `models`).
fn lists_model(body: &[u8], name: &str) -> bool {
    let Ok(answer) = signet::serde_json::from_slice::<signet::serde_json::Value>(body) else {
        return false;
    };
    let is_name =
        |value: Option<&signet::serde_json::Value>| value.and_then(|v| v.as_str()) == Some(name);
    let listed = |key: &str| {
        answer[key].as_array().into_iter().flatten().any(|model| {
            is_name(model.get("id"))
                || is_name(model.get("name"))
                || is_name(model.get("model"))
                || model["aliases"]
                    .as_array()
                    .is_some_and(|aliases| aliases.iter().any(|a| is_name(Some(a))))
        })
    };
    listed("data") || listed("models")
}

/// The longest line of the server's output kept; the rest of a longer line is read and dropped
/// (a child that writes without line breaks cannot grow the log without bound).
const MAX_LOG_LINE: usize = 4096;

/// Reads `output` line by line, keeping the last [`LOG_LINES`], each cut to [`MAX_LOG_LINE`]
/// bytes (the pipe must be drained so the server never blocks on a full pipe).
async fn keep_lines(output: impl AsyncRead + Unpin, log: Arc<Mutex<VecDeque<String>>>) {
    let mut output = BufReader::new(output);
    let mut line = Vec::new();
    let mut cut = false;
    while let Ok(buffer) = output.fill_buf().await {
        if buffer.is_empty() {
            if !line.is_empty() {
                keep_line(&log, &line, cut);
            }
            break;
        }
        let (piece, ends_line) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (&buffer[..at], true),
            None => (buffer, false),
        };
        let room = MAX_LOG_LINE.saturating_sub(line.len());
        line.extend_from_slice(&piece[..piece.len().min(room)]);
        cut |= piece.len() > room;
        let used = piece.len() + usize::from(ends_line);
        output.consume(used);
        if ends_line {
            keep_line(&log, &line, cut);
            line.clear();
            cut = false;
        }
    }
}

/// Adds one line of output to `log`, dropping the oldest past [`LOG_LINES`].
fn keep_line(log: &Mutex<VecDeque<String>>, line: &[u8], cut: bool) {
    let mut text = String::from_utf8_lossy(line)
        .trim_end_matches('\r')
        .to_owned();
    if cut {
        text.push_str(" [line cut]");
    }
    tracing::trace!(target: "signet_local::server", "{text}");
    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
    if log.len() == LOG_LINES {
        log.pop_front();
    }
    log.push_back(text);
}

/// A TCP port on 127.0.0.1 that is free right now (the OS picks it).
///
/// ```
/// let port = signet_local::free_port().unwrap();
/// assert!(port > 0);
/// ```
pub fn free_port() -> Result<u16, LocalError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|source| LocalError::Io {
            action: "find a free port".into(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_without_end_is_kept_cut_and_the_lines_after_it_whole() {
        let mut output = vec![b'x'; 10 << 20];
        output.extend_from_slice(b"\nready\r\nlast");
        let log = Arc::new(Mutex::new(VecDeque::new()));
        keep_lines(output.as_slice(), log.clone()).await;
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 3);
        assert_eq!(log[0].len(), MAX_LOG_LINE + " [line cut]".len());
        assert!(log[0].ends_with("x [line cut]"));
        assert_eq!(log[1], "ready");
        assert_eq!(log[2], "last");
    }

    #[test]
    fn a_model_is_listed_by_id_alias_or_name() {
        let llama = br#"{"models": [{"name": "a", "model": "a"}],
                         "data": [{"id": "a", "aliases": ["a", "smollm2"]}]}"#;
        for name in ["a", "smollm2"] {
            assert!(lists_model(llama, name), "{name}");
        }
        assert!(lists_model(br#"{"data": [{"id": "gpt"}]}"#, "gpt"));
        for other in [
            &b"{}"[..],
            b"not json",
            br#"{"data": [{"id": "b"}]}"#,
            b"[]",
        ] {
            assert!(!lists_model(other, "a"));
        }
    }

    #[test]
    fn debug_shows_variable_names_but_never_their_values() {
        let command = ServerCommand::new("/opt/llama-server")
            .args(["--port", "8123"])
            .env("HF_TOKEN", "env-SECRET-789")
            .port(8123);
        for shown in [format!("{command:?}"), format!("{command:#?}")] {
            assert!(!shown.contains("SECRET"), "{shown}");
            for kept in [
                "/opt/llama-server",
                "--port",
                "8123",
                "HF_TOKEN",
                "[redacted]",
            ] {
                assert!(shown.contains(kept), "{kept} missing from {shown}");
            }
        }
    }
}
