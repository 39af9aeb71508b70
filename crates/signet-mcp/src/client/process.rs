//! Starting, watching and stopping a stdio MCP server's process.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use crate::Error;

/// How many of the server's last stderr lines are kept for error messages.
const STDERR_TAIL: usize = 20;

/// How many bytes of one stderr line are kept; the rest of a longer line is counted and dropped,
/// so a server that writes endlessly without a newline cannot grow the client's memory.
const STDERR_LINE_BYTES: usize = 4096;

/// A stdio MCP server to start: a program, its arguments, and **exactly** the environment it gets.
///
/// The child starts with an empty environment: only the variables set with [`env`](Self::env) and
/// those copied from this process with [`inherit_env`](Self::inherit_env) reach it. Nothing leaks
/// by default (API keys in your shell stay yours); a server that needs `PATH` or `HOME` (many
/// `node`/`npx` and Python servers do) must be given them explicitly. The program itself is looked
/// up on this process's `PATH`.
///
/// ```
/// use signet_mcp::StdioCommand;
///
/// let server = StdioCommand::new("npx")
///     .args(["-y", "@modelcontextprotocol/server-memory"])
///     .env("MEMORY_FILE_PATH", "/tmp/memory.jsonl")
///     .inherit_env(["PATH", "HOME"]);
/// assert_eq!(server.program(), "npx");
/// ```
///
/// `Debug` shows the program, its arguments and the variables' names, never their values (API
/// keys are often passed this way): each value is shown as `[redacted]`.
#[derive(Clone)]
pub struct StdioCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    inherit: Vec<OsString>,
    current_dir: Option<PathBuf>,
}

impl std::fmt::Debug for StdioCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<(&OsString, super::Redacted)> = self
            .env
            .iter()
            .map(|(name, _)| (name, super::Redacted))
            .collect();
        f.debug_struct("StdioCommand")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env", &env)
            .field("inherit", &self.inherit)
            .field("current_dir", &self.current_dir)
            .finish()
    }
}

impl StdioCommand {
    /// A server started by running `program` (a path, or a name looked up on `PATH`).
    pub fn new(program: impl AsRef<OsStr>) -> StdioCommand {
        StdioCommand {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            inherit: Vec::new(),
            current_dir: None,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> StdioCommand {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> StdioCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable for the server (later calls for the same name win).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> StdioCommand {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Sets several environment variables.
    pub fn envs<I, K, V>(mut self, vars: I) -> StdioCommand
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        for (k, v) in vars {
            self = self.env(k, v);
        }
        self
    }

    /// Copies these variables from this process's environment, when set (for example
    /// `["PATH", "HOME"]`). Variables set with [`env`](Self::env) win.
    pub fn inherit_env<I, S>(mut self, names: I) -> StdioCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.inherit
            .extend(names.into_iter().map(|n| n.as_ref().to_owned()));
        self
    }

    /// Runs the server in `dir`.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> StdioCommand {
        self.current_dir = Some(dir.as_ref().to_owned());
        self
    }

    /// The program.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// A short name for the server: the file name of the script when the program is an
    /// interpreter (`python server.py` -> `server`), the program's file name otherwise.
    pub(crate) fn label(&self) -> String {
        let stem = |s: &OsStr| {
            Path::new(s)
                .file_stem()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| s.to_string_lossy().into_owned())
        };
        let program = stem(&self.program);
        let interpreter = ["python", "python3", "node", "uv", "npx", "bun", "deno"]
            .iter()
            .any(|i| program == *i);
        match self
            .args
            .iter()
            .find(|a| !a.to_string_lossy().starts_with('-'))
        {
            Some(script) if interpreter => stem(script),
            _ => program,
        }
    }

    /// The environment the child gets, in the order it is applied.
    fn environment(&self) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = self
            .inherit
            .iter()
            .filter_map(|name| std::env::var_os(name).map(|v| (name.clone(), v)))
            .collect();
        vars.extend(self.env.iter().cloned());
        vars
    }

    /// Starts the process with piped stdio, in its own process group (so stopping it also stops
    /// what it started).
    pub(crate) fn spawn(&self, label: &str) -> Result<ChildProcess, Error> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.environment())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(dir) = &self.current_dir {
            command.current_dir(dir);
        }
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|source| Error::Spawn {
            server: label.to_owned(),
            program: self.program.to_string_lossy().into_owned(),
            source,
        })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(Error::Spawn {
                server: label.to_owned(),
                program: self.program.to_string_lossy().into_owned(),
                source: std::io::Error::other("the child's stdio pipes were not available"),
            });
        };
        tracing::debug!(server = label, pid, "started MCP server process");

        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let lines = tail.clone();
        let server = label.to_owned();
        let drained = tokio::spawn(async move {
            let mut stderr = stderr;
            let mut splitter = LineSplitter::default();
            let mut chunk = vec![0u8; 8192];
            loop {
                let read = match stderr.read(&mut chunk).await {
                    Ok(0) | Err(_) => 0,
                    Ok(n) => n,
                };
                let done = read == 0;
                let mut complete = splitter.feed(&chunk[..read]);
                if done {
                    complete.extend(splitter.finish());
                }
                for line in complete {
                    tracing::debug!(target: "signet_mcp::server_stderr", server = %server, "{line}");
                    if let Ok(mut lines) = lines.lock() {
                        if lines.len() == STDERR_TAIL {
                            lines.pop_front();
                        }
                        lines.push_back(line);
                    }
                }
                if done {
                    break;
                }
            }
        });

        let (exit_tx, exit_rx) = watch::channel(None);
        let server = label.to_owned();
        tokio::spawn(async move {
            // Owning the child here means it is killed (kill_on_drop) if the runtime goes away.
            let status = child.wait().await;
            // The exit is told once stderr is read to its end, so the tail that goes with it is
            // whole; a grandchild holding stderr open delays this by one second at most.
            let _ = tokio::time::timeout(Duration::from_secs(1), drained).await;
            let status = match status {
                Ok(status) => status.to_string(),
                Err(e) => format!("could not be waited for: {e}"),
            };
            tracing::debug!(server = %server, %status, "MCP server process ended");
            let _ = exit_tx.send(Some(status));
        });

        Ok(ChildProcess {
            pid,
            stdio: Mutex::new(Some((stdout, stdin))),
            exit: exit_rx,
            stderr: tail,
        })
    }
}

/// Splits a byte stream into lines of at most [`STDERR_LINE_BYTES`] kept bytes each; what a line
/// has beyond that is counted and named at its end (`… (N more bytes)`), not kept.
#[derive(Default)]
struct LineSplitter {
    line: Vec<u8>,
    dropped: usize,
}

impl LineSplitter {
    /// Takes the next bytes; returns the lines they complete.
    fn feed(&mut self, mut bytes: &[u8]) -> Vec<String> {
        let mut complete = Vec::new();
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&b| b == b'\n');
            let part = &bytes[..end.unwrap_or(bytes.len())];
            let room = STDERR_LINE_BYTES - self.line.len();
            self.line.extend_from_slice(&part[..part.len().min(room)]);
            self.dropped += part.len().saturating_sub(room);
            match end {
                Some(at) => {
                    complete.push(self.take());
                    bytes = &bytes[at + 1..];
                }
                None => break,
            }
        }
        complete
    }

    /// The last line, if the stream ended without a newline.
    fn finish(&mut self) -> Option<String> {
        (!self.line.is_empty() || self.dropped > 0).then(|| self.take())
    }

    fn take(&mut self) -> String {
        let mut line = String::from_utf8_lossy(&self.line)
            .trim_end_matches('\r')
            .to_owned();
        if self.dropped > 0 {
            line.push_str(&format!(" … ({} more bytes)", self.dropped));
        }
        self.line.clear();
        self.dropped = 0;
        line
    }
}

/// A running stdio server: its pid, how it ended (once it has), and the tail of its stderr.
#[derive(Debug)]
pub(crate) struct ChildProcess {
    pid: Option<u32>,
    stdio: Mutex<Option<(ChildStdout, ChildStdin)>>,
    exit: watch::Receiver<Option<String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl ChildProcess {
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The pipes, once (they become the MCP transport).
    pub(crate) fn take_stdio(&self) -> Option<(ChildStdout, ChildStdin)> {
        self.stdio.lock().ok()?.take()
    }

    /// How the process ended (`exit status: 1`, `signal: 9 (SIGKILL)`), or `None` while it runs.
    pub(crate) fn exit_status(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    /// Waits up to `limit` for the process to end; returns how it ended.
    pub(crate) async fn wait_exit(&self, limit: Duration) -> Option<String> {
        let mut exit = self.exit.clone();
        let ended = tokio::time::timeout(limit, exit.wait_for(Option::is_some)).await;
        match ended {
            Ok(Ok(status)) => status.clone(),
            _ => self.exit_status(),
        }
    }

    /// The last lines the server wrote to stderr.
    pub(crate) fn stderr_tail(&self) -> Vec<String> {
        self.stderr
            .lock()
            .map(|lines| lines.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Sends `SIGTERM` (`kill = false`) or `SIGKILL` to the process group, unless it has ended.
    pub(crate) fn signal(&self, kill: bool) {
        if self.exit_status().is_some() {
            return;
        }
        #[cfg(unix)]
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            use rustix::process::{Pid, Signal, kill_process_group};
            let signal = if kill { Signal::KILL } else { Signal::TERM };
            if let Some(pid) = Pid::from_raw(pid)
                && let Err(e) = kill_process_group(pid, signal)
            {
                tracing::debug!(pid = pid.as_raw_nonzero().get(), error = %e, "could not signal the MCP server");
            }
        }
        #[cfg(not(unix))]
        let _ = kill; // The process is killed when its watcher drops it (kill_on_drop).
    }

    /// Stops the process: waits `grace` for it to exit on its own (its stdin is closed by then),
    /// then `SIGTERM`, then `SIGKILL`.
    pub(crate) async fn stop(&self, grace: Duration) -> Option<ExitOutcome> {
        if let Some(status) = self.wait_exit(grace).await {
            return Some(ExitOutcome::OnItsOwn(status));
        }
        self.signal(false);
        if let Some(status) = self.wait_exit(grace).await {
            return Some(ExitOutcome::Terminated(status));
        }
        self.signal(true);
        self.wait_exit(grace).await.map(ExitOutcome::Killed)
    }
}

/// How a stopped server ended (each with its exit status).
#[derive(Debug)]
pub(crate) enum ExitOutcome {
    /// It exited when its stdin closed.
    OnItsOwn(String),
    /// It needed `SIGTERM`.
    Terminated(String),
    /// It needed `SIGKILL`.
    Killed(String),
}

impl ExitOutcome {
    pub(crate) fn describe(&self) -> String {
        match self {
            ExitOutcome::OnItsOwn(s) => format!("exited when its stdin closed ({s})"),
            ExitOutcome::Terminated(s) => format!("stopped by SIGTERM ({s})"),
            ExitOutcome::Killed(s) => format!("killed ({s})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_lines_are_split_across_chunks_and_cut_at_their_limit() {
        let mut lines = LineSplitter::default();
        assert!(lines.feed(b"start").is_empty());
        assert_eq!(lines.feed(b"ing\r\nready\npart"), ["starting", "ready"]);
        let flood = vec![b'x'; 3 * STDERR_LINE_BYTES];
        assert!(lines.feed(&flood).is_empty());
        assert!(lines.feed(&flood).is_empty());
        assert_eq!(lines.line.len(), STDERR_LINE_BYTES, "memory stays bounded");
        let done = lines.feed(b"\nafter");
        assert_eq!(done.len(), 1);
        let dropped = 4 + 6 * STDERR_LINE_BYTES - STDERR_LINE_BYTES;
        assert!(done[0].starts_with("partxxx"), "{}", &done[0][..10]);
        assert!(
            done[0].ends_with(&format!(" … ({dropped} more bytes)")),
            "{}",
            &done[0][done[0].len() - 40..]
        );
        assert_eq!(lines.finish().as_deref(), Some("after"));
        assert_eq!(lines.finish(), None);
    }

    #[test]
    fn label_names_the_script_for_interpreters() {
        assert_eq!(
            StdioCommand::new("/venv/bin/python")
                .args(["-u", "scripts/mcp/python_server.py"])
                .label(),
            "python_server"
        );
        assert_eq!(
            StdioCommand::new("/usr/bin/mcp-fs").arg("/tmp").label(),
            "mcp-fs"
        );
    }

    #[test]
    fn environment_is_only_what_was_asked_for() {
        let env = StdioCommand::new("x")
            .env("A", "1")
            .inherit_env(["SIGNET_MCP_SURELY_UNSET_VARIABLE"])
            .environment();
        assert_eq!(env, vec![(OsString::from("A"), OsString::from("1"))]);
    }

    #[test]
    fn debug_shows_variable_names_but_never_their_values() {
        let command = StdioCommand::new("/usr/bin/mcp-server")
            .args(["--port", "7"])
            .env("OPENAI_API_KEY", "env-SECRET-789")
            .envs([("GITHUB_TOKEN", "env-SECRET-790")])
            .inherit_env(["PATH"])
            .current_dir("/srv");
        for shown in [format!("{command:?}"), format!("{command:#?}")] {
            assert!(!shown.contains("SECRET"), "{shown}");
            for kept in [
                "/usr/bin/mcp-server",
                "--port",
                "OPENAI_API_KEY",
                "GITHUB_TOKEN",
                "PATH",
                "/srv",
                "[redacted]",
            ] {
                assert!(shown.contains(kept), "{kept} missing from {shown}");
            }
        }
    }
}
