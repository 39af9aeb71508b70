//! A local Restate server for tests and examples: the npm package's binary, on free ports, in a
//! directory of its own, stopped when dropped.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

use crate::ingress::Ingress;

/// The server version [`install`] installs (the npm package `@restatedev/restate-server`).
pub const SERVER_VERSION: &str = "1.7.12";

/// Why the local server could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// No server binary where `SIGNET_RESTATE_SERVER` says it is.
    #[error(
        "no restate-server binary at {path} (from SIGNET_RESTATE_SERVER); unset it to have the \
         npm package @restatedev/restate-server@{SERVER_VERSION} installed into the cache"
    )]
    NotInstalled {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Installing the server failed.
    #[error("could not install the Restate server ({step}): {detail}")]
    Install {
        /// The step that failed.
        step: String,
        /// What went wrong, and what to do about it.
        detail: String,
    },
    /// Starting it, or a file it needs, failed.
    #[error("could not start the Restate server: {0}")]
    Io(#[from] std::io::Error),
    /// It did not answer in time.
    #[error("the Restate server did not become ready within {0:?} (its log: {1})")]
    NotReady(Duration, PathBuf),
    /// The admin API refused the deployment.
    #[error("Restate did not register {uri}: {message}")]
    Register {
        /// The deployment's URL.
        uri: String,
        /// What the admin API answered.
        message: String,
    },
}

/// A Restate server running on this machine, for tests and examples: the npm package's binary on
/// free ports, in a directory of its own, stopped (and its directory removed) when dropped.
pub struct RestateServer {
    child: Child,
    dir: PathBuf,
    identity: crate::IdentityKeys,
    ingress: String,
    admin: String,
    http: reqwest::Client,
}

impl std::fmt::Debug for RestateServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestateServer")
            .field("ingress", &self.ingress)
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

/// A port nothing listens on now.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Where the server binary is: `SIGNET_RESTATE_SERVER`, else where [`install`] puts it under
/// `SIGNET_CACHE` (`~/.cache/signet`).
pub fn server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("SIGNET_RESTATE_SERVER") {
        return PathBuf::from(path);
    }
    install_dir().join("node_modules/@restatedev/restate-server-linux-x64/bin/restate-server")
}

/// The cache directory of this version's install.
fn install_dir() -> PathBuf {
    let cache = std::env::var_os("SIGNET_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/signet")
        });
    cache.join(format!("restate/server-{SERVER_VERSION}"))
}

/// Installs the Restate server (the npm package `@restatedev/restate-server`, pinned to
/// [`SERVER_VERSION`], a linux-x64 binary inside) into the cache when it is not there yet, and
/// returns the binary's path; says what it does on stderr. Needs Node.js's `npm`. Idempotent
/// and safe from several processes at once (a lock file serialises installs); an install that
/// was interrupted is redone. With `SIGNET_RESTATE_SERVER` set, only checks that file.
/// [`RestateServer::start`] calls it.
///
/// ```no_run
/// # async fn run() -> Result<(), signet_restate::ServerError> {
/// let binary = signet_restate::install().await?;
/// println!("restate-server at {}", binary.display());
/// # Ok(()) }
/// ```
pub async fn install() -> Result<PathBuf, ServerError> {
    tokio::task::spawn_blocking(install_blocking)
        .await
        .map_err(|e| ServerError::Install {
            step: "install".into(),
            detail: format!("the install task failed: {e}"),
        })?
}

fn install_blocking() -> Result<PathBuf, ServerError> {
    let binary = server_binary();
    if std::env::var_os("SIGNET_RESTATE_SERVER").is_some() {
        return match binary.exists() {
            true => Ok(binary),
            false => Err(ServerError::NotInstalled { path: binary }),
        };
    }
    let dir = install_dir();
    let root = dir.parent().unwrap_or(&dir);
    std::fs::create_dir_all(root)?;
    let lock = std::fs::File::create(root.join("install.lock"))?;
    lock.lock()?;
    let done = dir.join(".installed");
    if done.exists() && binary.exists() {
        return Ok(binary);
    }
    eprintln!(
        "[signet-restate] installing the Restate server (npm @restatedev/restate-server@\
         {SERVER_VERSION}) into {}",
        dir.display()
    );
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    std::fs::create_dir_all(&dir)?;
    let status = std::process::Command::new("npm")
        .args(["install", "--silent", "--no-audit", "--no-fund"])
        .arg(format!("@restatedev/restate-server@{SERVER_VERSION}"))
        .current_dir(&dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .status()
        .map_err(|e| ServerError::Install {
            step: "run npm".into(),
            detail: format!("{e}; the Restate server comes from npm, which comes with Node.js"),
        })?;
    if !status.success() {
        return Err(ServerError::Install {
            step: "npm install".into(),
            detail: format!("npm exited with {status} (its output is above)"),
        });
    }
    if !binary.exists() {
        return Err(ServerError::Install {
            step: "npm install".into(),
            detail: format!(
                "the package has no {} (the server is built for linux-x64 only)",
                binary.display()
            ),
        });
    }
    signet::fs_atomic::write_atomic(&done, SERVER_VERSION.as_bytes())?;
    eprintln!("[signet-restate] the Restate server is installed");
    Ok(binary)
}

impl RestateServer {
    /// Starts a server on free ports with a fresh data directory, and waits until it takes
    /// calls; on first use the server is installed into the cache ([`install`]). Failed steps
    /// are retried quickly (every 100 ms, backing off to 1 s), which suits tests: a worker that
    /// died is replaced within a second.
    ///
    /// Its directory (data, log, configuration) is new, unpredictable and private (`0700`) in the
    /// system's temporary directory. It signs every request to workers with a key pair made for
    /// it: give its [`identity_key`](Self::identity_key) to
    /// [`Worker::identity_key`](crate::Worker::identity_key).
    pub async fn start() -> Result<RestateServer, ServerError> {
        let binary = install().await?;
        let (ingress_port, admin_port, node_port) = (free_port()?, free_port()?, free_port()?);
        let dir = tempfile::Builder::new()
            .prefix("signet-restate-")
            .tempdir()?
            .keep();
        let identity = crate::IdentityKeys::generate()?;
        let key_path = dir.join("identity.pem");
        identity.write_private_key(&key_path)?;
        let config = format!(
            "node-name = \"signet\"\nbase-dir = \"{base}\"\nbind-address = \"127.0.0.1:{node_port}\"\n\
             advertised-address = \"http://127.0.0.1:{node_port}/\"\ndefault-num-partitions = 2\n\
             disable-telemetry = true\n\n[default-retry-policy]\ninitial-interval = \"100ms\"\n\
             exponentiation-factor = 2.0\nmax-interval = \"1s\"\nmax-attempts = 10000\n\n\
             [admin]\nbind-address = \"127.0.0.1:{admin_port}\"\n\n\
             [ingress]\nbind-address = \"127.0.0.1:{ingress_port}\"\n\n\
             [worker.invoker]\nrequest-identity-private-key-pem-file = \"{key}\"\n",
            base = dir.join("data").display(),
            key = key_path.display(),
        );
        let config_path = dir.join("restate.toml");
        signet::fs_atomic::write_atomic(&config_path, config.as_bytes())?;
        let scratch = dir.join("tmp");
        std::fs::create_dir_all(&scratch)?;
        let log_path = dir.join("server.log");
        let log = std::fs::File::create(&log_path)?;
        let child = Command::new(&binary)
            .arg("--config-file")
            .arg(&config_path)
            .args(["--no-logo", "--log-disable-ansi-codes", "true"])
            // No secret of this process reaches the server (signet::child_env).
            .env_clear()
            .envs(signet::child_env::allowed(&["RESTATE_"]))
            .env("RESTATE_LOG_FILTER", "warn")
            // Its scratch directories (invoker-*) go with the rest, removed when dropped.
            .env("TMPDIR", &scratch)
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()?;
        let server = RestateServer {
            child,
            dir,
            identity,
            ingress: format!("http://127.0.0.1:{ingress_port}"),
            admin: format!("http://127.0.0.1:{admin_port}"),
            http: reqwest::Client::new(),
        };
        let limit = Duration::from_secs(60);
        let started = Instant::now();
        loop {
            let admin = server.get_ok(&format!("{}/health", server.admin)).await;
            let ingress = server
                .get_ok(&format!("{}/restate/health", server.ingress))
                .await;
            if admin && ingress {
                return Ok(server);
            }
            if started.elapsed() > limit {
                return Err(ServerError::NotReady(limit, log_path));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn get_ok(&self, url: &str) -> bool {
        matches!(self.http.get(url).send().await, Ok(r) if r.status().is_success())
    }

    /// Registers the worker (or load balancer) at `uri` (`http://127.0.0.1:9080`), retrying for
    /// up to 30 s while the server or the worker comes up.
    pub async fn register(&self, uri: &str) -> Result<(), ServerError> {
        let url = format!("{}/deployments", self.admin);
        let body = serde_json::json!({ "uri": uri, "force": true });
        let started = Instant::now();
        loop {
            let message = match self.http.post(&url).json(&body).send().await {
                Ok(response) if response.status().is_success() => return Ok(()),
                Ok(response) => format!(
                    "HTTP {}: {}",
                    response.status(),
                    response.text().await.unwrap_or_default()
                ),
                Err(error) => error.to_string(),
            };
            if started.elapsed() > Duration::from_secs(30) {
                return Err(ServerError::Register {
                    uri: uri.to_owned(),
                    message,
                });
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The ingress, to start and follow runs.
    pub fn ingress(&self) -> Ingress {
        Ingress::new(&self.ingress)
    }

    /// The ingress URL.
    pub fn ingress_url(&self) -> &str {
        &self.ingress
    }

    /// The admin API's URL.
    pub fn admin_url(&self) -> &str {
        &self.admin
    }

    /// The server's data and log directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The public key this server signs its requests to workers with (`publickeyv1_…`), for
    /// [`Worker::identity_key`](crate::Worker::identity_key).
    pub fn identity_key(&self) -> &str {
        self.identity.public_key()
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Starts a TCP load balancer on a free local port in front of the workers listening on
/// `backends` (local ports), and returns its port: each connection goes to the next backend in
/// turn that accepts it, so a dead worker is skipped. Register its URL as the one deployment of
/// a local cluster — Restate then spreads runs over the workers and, when one dies, retries its
/// runs on another. For tests and local clusters; in production use any load balancer that passes
/// HTTP/2 through. Runs until the tokio runtime stops.
pub async fn load_balancer(backends: Vec<u16>) -> std::io::Result<u16> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        let mut next = 0usize;
        while let Ok((mut inbound, _)) = listener.accept().await {
            let first = next;
            next = next.wrapping_add(1);
            let backends = backends.clone();
            tokio::spawn(async move {
                for i in 0..backends.len() {
                    let port = backends[(first + i) % backends.len()];
                    if let Ok(mut outbound) =
                        tokio::net::TcpStream::connect(("127.0.0.1", port)).await
                    {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        return;
                    }
                }
            });
        }
    });
    Ok(port)
}
