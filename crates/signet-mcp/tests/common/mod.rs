//! Finding the real MCP peers that `scripts/mcp-peers.sh` installs.
//!
//! The script writes `${SIGNET_CACHE:-$HOME/.cache/signet}/mcp/peers.env`; `SIGNET_MCP_PEERS` may
//! point at another such file. A missing peer fails the test with the command that installs it:
//! CI installs them, so a silent skip would hide a broken setup.

#![allow(dead_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use signet_mcp::{McpClient, StdioCommand};

/// Where the peers are.
#[derive(Debug, Clone)]
pub struct Peers {
    /// The venv's python, with `mcp` installed.
    pub python: PathBuf,
    /// `node_modules` holding `@modelcontextprotocol/server-*`.
    pub node_modules: PathBuf,
    /// The `node` binary.
    pub node: PathBuf,
}

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The installed peers; panics with the install command when they are missing.
pub fn peers() -> &'static Peers {
    static PEERS: OnceLock<Result<Peers, String>> = OnceLock::new();
    match PEERS.get_or_init(|| find_peers().or_else(install_peers)) {
        Ok(peers) => peers,
        Err(message) => panic!(
            "{message}\nThe MCP test peers are missing: install them with `bash scripts/mcp-peers.sh` \
             (CI runs it from .ci/run)."
        ),
    }
}

/// Runs `scripts/mcp-peers.sh` (idempotent, locked) when the peers are missing, so that
/// `cargo test --workspace` works on a fresh machine; not when `SIGNET_MCP_PEERS` names a file.
fn install_peers(missing: String) -> Result<Peers, String> {
    if std::env::var_os("SIGNET_MCP_PEERS").is_some() {
        return Err(missing);
    }
    eprintln!("MCP test peers not found ({missing}); installing them with scripts/mcp-peers.sh");
    // The other first-use installs of the test command start now, beside this one
    // (scripts/test-deps.sh), instead of one after another in the tests that need them.
    let _ = std::process::Command::new("bash")
        .arg(repo_root().join("scripts/test-deps.sh"))
        .status();
    let status = std::process::Command::new("bash")
        .arg(repo_root().join("scripts/mcp-peers.sh"))
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("{missing}; could not run scripts/mcp-peers.sh: {e}"))?;
    if !status.success() {
        return Err(format!("{missing}; scripts/mcp-peers.sh failed ({status})"));
    }
    find_peers()
}

fn find_peers() -> Result<Peers, String> {
    let file = match std::env::var_os("SIGNET_MCP_PEERS") {
        Some(path) => PathBuf::from(path),
        None => {
            let cache = std::env::var_os("SIGNET_CACHE")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/signet")))
                .ok_or("neither SIGNET_CACHE nor HOME is set")?;
            cache.join("mcp/peers.env")
        }
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let vars: HashMap<&str, &str> = text
        .lines()
        .filter_map(|line| line.split_once('='))
        .collect();
    let get = |key: &str| -> Result<PathBuf, String> {
        let path = PathBuf::from(
            vars.get(key)
                .ok_or_else(|| format!("{} has no {key}", file.display()))?,
        );
        if path.exists() {
            Ok(path)
        } else {
            Err(format!(
                "{key}={} (from {}) does not exist",
                path.display(),
                file.display()
            ))
        }
    };
    Ok(Peers {
        python: get("SIGNET_MCP_PYTHON")?,
        node_modules: get("SIGNET_MCP_NODE_MODULES")?,
        node: get("SIGNET_MCP_NODE")?,
    })
}

/// Our Python server (`scripts/mcp/python_server.py`) over stdio.
pub fn python_server() -> StdioCommand {
    StdioCommand::new(&peers().python)
        .arg(repo_root().join("scripts/mcp/python_server.py"))
        .env("PYTHONUNBUFFERED", "1")
}

/// The main script of an npm server package (`server-everything`, ...).
pub fn npm_server_script(package: &str) -> PathBuf {
    let script = peers()
        .node_modules
        .join("@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        script.exists(),
        "{} is missing; run `bash scripts/mcp-peers.sh`",
        script.display()
    );
    script
}

/// An npm server over stdio, run with `node` directly.
pub fn npm_server(package: &str) -> StdioCommand {
    StdioCommand::new(&peers().node).arg(npm_server_script(package))
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Connects to an HTTP server that is still starting, retrying for up to 30 s.
pub async fn connect_when_up(url: &str) -> McpClient {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match McpClient::builder()
            .startup_timeout(Duration::from_secs(10))
            .connect(url)
            .await
        {
            Ok(client) => return client,
            Err(e) if tokio::time::Instant::now() > deadline => {
                panic!("the MCP server at {url} did not come up: {e}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// A process started for a test, killed when dropped.
pub struct Background(pub tokio::process::Child);

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.start_kill();
    }
}

/// Starts a program in the background with this process's environment.
pub fn background(program: &Path, args: &[&str], env: &[(&str, &str)]) -> Background {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    Background(command.spawn().expect("start a background server"))
}

/// Whether a process with this pid is still alive (not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits up to `limit` for `pid` to be gone.
pub async fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    !alive(pid)
}

/// Kills a process with SIGKILL.
pub fn kill_9(pid: u32) {
    let status = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -9 {pid} failed");
}

/// A fresh directory under the system temp dir, removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "signet-mcp-{name}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // The filesystem server resolves symlinks (/tmp may be one).
        TempDir(dir.canonicalize().unwrap())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Calls the client's tool `tool` (which must exist) with `args`.
pub async fn call(
    client: &McpClient,
    tool: &str,
    args: serde_json::Value,
) -> Result<serde_json::Value, signet::ToolError> {
    client
        .tool(tool)
        .unwrap_or_else(|| panic!("{tool} in {:?}", client.tool_names()))
        .call(args)
        .await
}

/// Runs `scripts/mcp/python_client.py` (the official Python SDK's client) with `args` and `plan`
/// on its stdin; returns its report (the script's docstring has both formats).
pub async fn python_client(args: &[&str], plan: &serde_json::Value) -> serde_json::Value {
    use tokio::io::AsyncWriteExt;
    let script = repo_root().join("scripts/mcp/python_client.py");
    let mut child = tokio::process::Command::new(&peers().python)
        .arg(script)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the Python client");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(plan.to_string().as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the Python client finishes within 60 s")
        .unwrap();
    assert!(
        output.status.success(),
        "the Python client failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "the Python client printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}
