//! Serving an [`McpServer`] over streamable HTTP: a router or a tower service to mount, or a
//! listener of its own, with the gate in front (who may call, and whether there is room) and
//! rmcp's streamable-HTTP service behind it.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::{HttpMode, McpServer, SessionSlot, admission, gate};
use crate::Error;

/// The browser origins an HTTP endpoint accepts unless [`McpServer::with_allowed_origins`] says
/// otherwise: pages served from this machine.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// The host names an HTTP endpoint answers to unless [`McpServer::with_allowed_hosts`] says
/// otherwise (rmcp's default).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl McpServer {
    /// The streamable-HTTP endpoint as a tower service, to mount in your own axum (or hyper)
    /// router; each session (without sessions, each request) gets its own copy of this server,
    /// answering as [`with_http_mode`](Self::with_http_mode) says. It does not check
    /// [bearer tokens](Self::with_bearer_auth): put your own authentication in front of it, or
    /// mount [`http_router`](Self::http_router), which does. Unless a bearer check is set or
    /// [`allow_unauthenticated_remote`](Self::allow_unauthenticated_remote) says your
    /// authentication is in front, it answers only to loopback host names. Like every way of
    /// serving, it refuses browser origins not [allowed](Self::with_allowed_origins) and keeps
    /// to [`max_sessions`](Self::max_sessions) and
    /// [`max_concurrent_calls`](Self::max_concurrent_calls).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let mcp = signet_mcp::McpServer::new().http_service();
    /// let app = axum::Router::new().route_service("/tools/mcp", mcp);
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    /// let url = format!("http://{}/tools/mcp", listener.local_addr().unwrap());
    /// tokio::spawn(async move { axum::serve(listener, app).await });
    /// let client = signet_mcp::McpClient::connect(url).await.unwrap();
    /// assert!(client.tools().is_empty());
    /// # });
    /// ```
    pub fn http_service(self) -> StreamableHttpService<McpServer, LocalSessionManager> {
        self.http_service_with(CancellationToken::new())
    }

    /// An axum router serving the endpoint at `path`, behind the
    /// [bearer-token check](Self::with_bearer_auth) when one is set; merge or nest it in your app.
    /// Without a bearer check (and without
    /// [`allow_unauthenticated_remote`](Self::allow_unauthenticated_remote)) it serves only this
    /// machine, and must then be served with `into_make_service_with_connect_info::<SocketAddr>()`
    /// so that it knows who connects: a request from another machine's address, from an unknown
    /// address (served without connect info), or for a host name other than loopback gets
    /// `403 Forbidden`.
    ///
    /// ```
    /// use signet_mcp::{BearerAuth, McpServer};
    /// let mcp = McpServer::new().with_bearer_auth(BearerAuth::tokens(["s3cret"])).http_router("/mcp");
    /// let app = axum::Router::new().nest("/tools", mcp);
    /// # let _ = app;
    /// ```
    pub fn http_router(self, path: &str) -> axum::Router {
        self.router_with(path, CancellationToken::new())
    }

    fn router_with(mut self, path: &str, cancel: CancellationToken) -> axum::Router {
        let auth = self.auth.clone();
        let local_only = self.local_only();
        let stateless = self.http_mode == HttpMode::Stateless;
        self.router_admits = stateless;
        let requests = self.requests.clone();
        let (open, max) = (self.sessions.clone(), self.max_sessions);
        let gate = gate::Gate {
            guard: match auth {
                Some(auth) => gate::Guard::Bearer(auth),
                None if local_only => gate::Guard::LocalOnly,
                None => gate::Guard::Open,
            },
            // Stateless, every request waits for a place; with sessions, a new session is
            // refused while the server is full (a session may last minutes).
            entry: if stateless {
                gate::Entry::Line(requests)
            } else {
                gate::Entry::Sessions { open, max }
            },
        };
        gate.around(axum::Router::new().route_service(path, self.http_service_with(cancel)))
    }

    /// Whether the endpoint may serve only this machine: no authentication, and no
    /// [`allow_unauthenticated_remote`](Self::allow_unauthenticated_remote).
    fn local_only(&self) -> bool {
        self.auth.is_none() && !self.allow_remote
    }

    /// The host names the endpoint answers to: the ones given, less those other than loopback
    /// when the endpoint may serve only this machine.
    fn effective_hosts(&self) -> Vec<String> {
        let given = self
            .allowed_hosts
            .clone()
            .unwrap_or_else(|| LOOPBACK_HOSTS.map(String::from).to_vec());
        if !self.local_only() {
            return given;
        }
        let (local, remote): (Vec<String>, Vec<String>) = given
            .into_iter()
            .partition(|host| gate::is_loopback_host(host));
        if !remote.is_empty() || local.is_empty() {
            tracing::warn!(
                ignored = ?remote,
                "an MCP endpoint without authentication answers only to loopback host names \
                 (McpServer::with_bearer_auth, or allow_unauthenticated_remote when a proxy in \
                 front authenticates)"
            );
        }
        if local.is_empty() {
            // rmcp reads an empty list as "any host".
            return LOOPBACK_HOSTS.map(String::from).to_vec();
        }
        local
    }

    fn http_service_with(
        self,
        cancel: CancellationToken,
    ) -> StreamableHttpService<McpServer, LocalSessionManager> {
        let stateless = self.http_mode == HttpMode::Stateless;
        let origins = self
            .allowed_origins
            .clone()
            .unwrap_or_else(|| LOOPBACK_ORIGINS.map(String::from).to_vec());
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(cancel)
            .with_legacy_session_mode(!stateless)
            .with_json_response(stateless)
            .with_allowed_hosts(self.effective_hosts())
            .with_allowed_origins(origins)
            .enforce_origin_validation();
        StreamableHttpService::new(
            move || {
                // Each session (stateless: each request) is served by a copy holding a slot,
                // unless the router in front admitted the request.
                let mut copy = self.clone();
                if !self.router_admits {
                    let slot =
                        SessionSlot::take(&self.sessions, self.max_sessions).ok_or_else(|| {
                            std::io::Error::other(admission::sessions_full(self.max_sessions))
                        })?;
                    copy.slot = Some(Arc::new(slot));
                }
                Ok(copy)
            },
            Arc::new(LocalSessionManager::default()),
            config,
        )
    }

    /// Serves streamable HTTP at `http://{addr}/mcp` in the background (port 0 picks a free
    /// port). The returned handle gives the URL and stops the server when dropped or
    /// [shut down](HttpServer::shutdown). A non-loopback address needs
    /// [authentication](Self::with_bearer_auth) (or
    /// [`allow_unauthenticated_remote`](Self::allow_unauthenticated_remote)): otherwise
    /// [`Error::Unprotected`], and nothing listens.
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let http = signet_mcp::McpServer::new().serve_http("127.0.0.1:0").await.unwrap();
    /// assert!(http.url().starts_with("http://127.0.0.1:"));
    /// http.shutdown().await.unwrap();
    /// # });
    /// ```
    pub async fn serve_http(
        self,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> Result<HttpServer, Error> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind {
                addr: "the given address".to_owned(),
                source,
            })?;
        let local = listener.local_addr().map_err(|source| Error::Bind {
            addr: "the given address".to_owned(),
            source,
        })?;
        if !local.ip().is_loopback() && self.local_only() {
            return Err(Error::Unprotected { addr: local });
        }
        let cancel = CancellationToken::new();
        let router = self.router_with("/mcp", cancel.clone());
        let shutdown = cancel.clone();
        let task = tokio::spawn(async move {
            // Nagle's algorithm would hold back the end of an event stream until the client's
            // delayed ACK (40 ms on Linux) on a kept-alive connection.
            let listener = listener.tap_io(|tcp| {
                if let Err(error) = tcp.set_nodelay(true) {
                    tracing::debug!(%error, "could not set TCP_NODELAY");
                }
            });
            // The peer's address lets an endpoint without authentication refuse other machines.
            let app = router.into_make_service_with_connect_info::<SocketAddr>();
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await;
            if let Err(e) = served {
                tracing::warn!(error = %e, "the MCP HTTP server stopped with an error");
            }
        });
        tracing::debug!(%local, "serving MCP over streamable HTTP");
        Ok(HttpServer {
            addr: local,
            cancel,
            task: Some(task),
        })
    }
}

/// A running streamable-HTTP MCP server (from [`McpServer::serve_http`]); stops when dropped.
#[derive(Debug)]
pub struct HttpServer {
    addr: SocketAddr,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl HttpServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint, `http://{addr}/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stops accepting requests, ends the sessions and waits for the server task to finish; an
    /// error if that task had failed (panicked).
    pub async fn shutdown(mut self) -> Result<(), Error> {
        self.cancel.cancel();
        match self.task.take() {
            Some(task) => task.await.map_err(|error| Error::Serve {
                message: format!("the HTTP server task failed: {error}"),
            }),
            None => Ok(()),
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}
