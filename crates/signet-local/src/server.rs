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
#[derive(Debug, Clone)]
pub struct ServerCommand {
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    port: u16,
    ready_timeout: Duration,
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

    /// Sets an environment variable for the server (on top of this process's environment).
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
}

impl LocalServer {
    /// Starts the server and waits until `GET {base_url}/models` answers 200. Fails with
    /// [`LocalError::Exited`] if the process ends first, or [`LocalError::NotReady`] (after killing
    /// it) if it does not answer in time; both carry the server's last output lines.
    pub async fn spawn(command: ServerCommand) -> Result<LocalServer, LocalError> {
        let base_url = command.base_url();
        let mut process = Command::new(&command.program);
        process
            .args(&command.args)
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
        };
        server.wait_ready(command.ready_timeout).await?;
        tracing::info!(base_url = %server.base_url, "model server ready");
        Ok(server)
    }

    async fn wait_ready(&mut self, timeout: Duration) -> Result<(), LocalError> {
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
            let answered = client
                .get(&url)
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if answered {
                return Ok(());
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

    /// Stops the server and waits for the process to end.
    pub async fn stop(mut self) -> Result<(), LocalError> {
        self.child.kill().await.map_err(|source| LocalError::Io {
            action: "stop the model server".into(),
            source,
        })
    }
}

/// Reads `output` line by line, keeping the last [`LOG_LINES`] (the pipe must be drained so the
/// server never blocks on a full pipe).
async fn keep_lines(output: impl AsyncRead + Unpin, log: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = BufReader::new(output).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::trace!(target: "signet_local::server", "{line}");
        let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
        if log.len() == LOG_LINES {
            log.pop_front();
        }
        log.push_back(line);
    }
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
