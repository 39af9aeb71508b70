//! One MCP session and what keeps it usable: connecting (spawn or HTTP), the tool list, calls with
//! their time limit, noticing a dead server, restarting it, and shutting it down.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tracing::Instrument;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, CallToolResult,
    CancelledNotificationParam, ClientRequest, PaginatedRequestParams, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, ServiceExt};
use serde_json::{Map, Value};
use signet::Tool;
use signet::tool::ProgressSink;
use tokio::sync::{broadcast, watch};

use super::handler::ClientSide;
use super::lock;
use super::process::{ChildProcess, ExitOutcome};
use super::progress::ProgressRoutes;
use super::{McpClientBuilder, McpTool, Root, StdioCommand};
use crate::Error;

/// How long a stopping server gets at each step (stdin closed, `SIGTERM`, `SIGKILL`).
pub(super) const STOP_GRACE: Duration = Duration::from_secs(2);

pub(super) enum Target {
    Stdio(StdioCommand),
    /// A streamable-HTTP endpoint, and the HTTP client every connection to it uses.
    Http {
        url: String,
        http: super::http::HttpClient,
    },
}

/// One connection (one server process, for stdio): replaced on restart.
pub(super) struct Connection {
    pub(super) generation: u64,
    pub(super) peer: Peer<RoleClient>,
    pub(super) process: Option<Arc<ChildProcess>>,
    broken: AtomicBool,
}

impl Connection {
    pub(super) fn is_dead(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
            || self.peer.is_transport_closed()
            || self
                .process
                .as_ref()
                .is_some_and(|p| p.exit_status().is_some())
    }

    pub(super) fn stderr(&self) -> Vec<String> {
        self.process
            .as_ref()
            .map(|p| p.stderr_tail())
            .unwrap_or_default()
    }

    /// What is known about the death of this connection's server.
    async fn death(&self, transport_error: Option<&str>) -> String {
        let status = match &self.process {
            Some(process) => process.wait_exit(Duration::from_secs(1)).await,
            None => None,
        };
        match (status, transport_error) {
            (Some(status), _) => format!("its process ended ({status})"),
            (None, Some(error)) => format!("its connection failed ({error})"),
            (None, None) => "its connection closed".to_owned(),
        }
    }
}

/// The owner of a session: the client and every tool it hands out hold one, so a tool keeps
/// working after its [`McpClient`](super::McpClient) is dropped; when the last goes, the session
/// ends and the server is stopped. (The tools kept in the listing hold the session weakly, or
/// the session would own itself.)
pub(crate) struct SessionOwner(pub(crate) Arc<Inner>);

impl Drop for SessionOwner {
    fn drop(&mut self) {
        self.0.shutdown_now();
    }
}

#[derive(Default)]
/// The latest tool listing; `ticket` orders listings that race.
pub(super) struct ToolSet {
    ticket: u64,
    pub(super) tools: Vec<Arc<McpTool>>,
}

/// The most times a `tools/call` is sent while the server answers that it is busy (within
/// the call's timeout).
const MAX_BUSY_ATTEMPTS: u32 = 16;

/// The least time a retry of a shed call must have left to be worth starting.
const MIN_TRY_TIME: std::time::Duration = std::time::Duration::from_millis(20);

/// The state shared by an [`McpClient`](super::McpClient) and its tools (through a
/// [`SessionOwner`]).
pub(crate) struct Inner {
    pub(super) label: String,
    target: Target,
    pub(super) options: McpClientBuilder,
    conn: RwLock<Option<Arc<Connection>>>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ClientSide>>>,
    reconnect: tokio::sync::Mutex<()>,
    generation: AtomicU64,
    pub(super) restarts: AtomicU32,
    closed: AtomicBool,
    pub(super) tools: RwLock<ToolSet>,
    list_ticket: AtomicU64,
    pub(super) changes: watch::Sender<u64>,
    /// The URIs of subscribed resources the server says changed.
    pub(super) updates: broadcast::Sender<String>,
    /// The roots declared to the server (`None`: the capability is not declared).
    pub(super) roots: RwLock<Option<Vec<Root>>>,
    /// Tokens spent answering the server's sampling requests.
    pub(super) sampled: super::sampling::SamplingSpend,
    /// Where the server's progress notifications go, by the token of the call they belong to.
    pub(super) progress: ProgressRoutes,
    /// The re-listing that `tools/list_changed` notifications ask for, coalesced.
    relist: Mutex<Relist>,
}

/// The tool re-listing asked for by `tools/list_changed`: at most one task lists at a time, and
/// the notifications that come while it waits or lists are answered by its next round.
#[derive(Default)]
struct Relist {
    /// The connection of the latest notification not yet answered.
    pending: Option<(Peer<RoleClient>, u64)>,
    /// Whether a task is waiting or listing.
    running: bool,
}

impl Inner {
    /// Connects, completes the handshake and lists the tools.
    pub(super) async fn start(
        label: String,
        target: Target,
        mut options: McpClientBuilder,
    ) -> Result<Arc<Inner>, Error> {
        let inner = Arc::new(Inner {
            label,
            target,
            conn: RwLock::new(None),
            service: tokio::sync::Mutex::new(None),
            reconnect: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
            restarts: AtomicU32::new(0),
            closed: AtomicBool::new(false),
            tools: RwLock::new(ToolSet::default()),
            list_ticket: AtomicU64::new(0),
            changes: watch::channel(0).0,
            updates: broadcast::channel(64).0,
            roots: RwLock::new(options.roots.take()),
            sampled: super::sampling::SamplingSpend::default(),
            progress: ProgressRoutes::default(),
            relist: Mutex::default(),
            options,
        });
        let conn = inner.connect().await?;
        if let Err(e) = inner.refresh_from(&conn.peer, conn.generation).await {
            inner.shutdown(true).await;
            return Err(match e {
                Error::Timeout { .. } | Error::TooManyPages { .. } | Error::TooManyTools { .. } => {
                    e
                }
                other => Error::Handshake {
                    server: inner.label.clone(),
                    message: format!("tools/list failed: {other}"),
                    stderr: conn.stderr(),
                },
            });
        }
        Ok(inner)
    }

    pub(crate) fn label(&self) -> &str {
        &self.label
    }

    /// `text` without the credentials of this session's URL (none over stdio).
    fn scrub(&self, text: String) -> String {
        match &self.target {
            Target::Http { url, .. } => super::scrub_url_secrets(&text, url),
            Target::Stdio(_) => text,
        }
    }

    /// The current connection, dead or alive, or [`Error::Closed`].
    pub(super) fn current(&self) -> Result<Arc<Connection>, Error> {
        self.conn
            .read()
            .ok()
            .and_then(|c| c.clone())
            .ok_or_else(|| Error::Closed {
                server: self.label.clone(),
            })
    }

    /// A live connection: the current one, or a restarted one when it died and restarts are left.
    pub(super) async fn live(self: &Arc<Self>) -> Result<Arc<Connection>, Error> {
        let conn = self.current()?;
        if !conn.is_dead() {
            return Ok(conn);
        }
        let reason = conn.death(None).await;
        match self.revive(&conn).await {
            Ok(Some(fresh)) => Ok(fresh),
            Ok(None) => Err(Error::ServerExited {
                server: self.label.clone(),
                reason: self.no_restart_note(reason),
                stderr: conn.stderr(),
            }),
            Err(e) => Err(e),
        }
    }

    fn no_restart_note(&self, reason: String) -> String {
        match self.options.max_restarts {
            0 => format!("{reason}; automatic restart is off (McpClientBuilder::max_restarts)"),
            max => format!("{reason}; its {max} automatic restart(s) are used up"),
        }
    }

    /// Spawns or connects, and completes the handshake. Does not list tools.
    pub(super) async fn connect(self: &Arc<Self>) -> Result<Arc<Connection>, Error> {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        // A new connection numbers its progress tokens afresh: messages kept from the last one
        // must not reach a new call with the same token.
        self.progress.forget_early();
        let handler = ClientSide::new(self, generation);
        let limit = self.options.startup_timeout;
        let timeout = || Error::Timeout {
            server: self.label.clone(),
            what: "the handshake".to_owned(),
            timeout: limit,
        };
        let (service, process) = match &self.target {
            Target::Stdio(command) => {
                let process = Arc::new(command.spawn(&self.label)?);
                let Some(pipes) = process.take_stdio() else {
                    return Err(Error::Transport {
                        server: self.label.clone(),
                        message: "the server's pipes were already taken".to_owned(),
                    });
                };
                match tokio::time::timeout(limit, handler.serve(pipes)).await {
                    Ok(Ok(service)) => (service, Some(process)),
                    Ok(Err(e)) => {
                        let status = process.wait_exit(Duration::from_millis(500)).await;
                        process.signal(true);
                        let ended = status
                            .map(|s| format!(" (the process ended: {s})"))
                            .unwrap_or_default();
                        return Err(Error::Handshake {
                            server: self.label.clone(),
                            message: format!("{}{ended}", describe_init_error(&e)),
                            stderr: process.stderr_tail(),
                        });
                    }
                    Err(_) => {
                        process.signal(true);
                        return Err(timeout());
                    }
                }
            }
            Target::Http { url, http } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                if let Some(token) = &self.options.bearer_token {
                    config = config.auth_header(token.clone());
                }
                let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
                match tokio::time::timeout(limit, handler.serve(transport)).await {
                    Ok(Ok(service)) => (service, None),
                    Ok(Err(e)) => {
                        return Err(Error::Handshake {
                            server: self.label.clone(),
                            message: super::scrub_url_secrets(
                                &format!("{} (at {url})", describe_init_error(&e)),
                                url,
                            ),
                            stderr: Vec::new(),
                        });
                    }
                    Err(_) => return Err(timeout()),
                }
            }
        };
        let conn = Arc::new(Connection {
            generation,
            peer: service.peer().clone(),
            process,
            broken: AtomicBool::new(false),
        });
        if let Ok(mut slot) = self.conn.write() {
            *slot = Some(conn.clone());
        }
        let old = self.service.lock().await.replace(service);
        drop(old);
        tracing::debug!(server = %self.label, generation, "MCP session started");
        Ok(conn)
    }

    /// Restarts a dead connection if restarts are left. `Ok(None)`: none left.
    async fn revive(
        self: &Arc<Self>,
        dead: &Arc<Connection>,
    ) -> Result<Option<Arc<Connection>>, Error> {
        let _one_at_a_time = self.reconnect.lock().await;
        let current = self.current()?;
        if current.generation != dead.generation {
            return Ok(Some(current)); // someone else restarted it already
        }
        let used = self.restarts.load(Ordering::SeqCst);
        if used >= self.options.max_restarts {
            return Ok(None);
        }
        self.restarts.store(used + 1, Ordering::SeqCst);
        tracing::warn!(
            server = %self.label,
            restart = used + 1,
            max = self.options.max_restarts,
            "MCP server died; restarting it"
        );
        if let Some(process) = &dead.process {
            process.signal(true);
        }
        let fresh = self.connect().await?;
        if self.closed.load(Ordering::SeqCst) {
            self.shutdown(false).await;
            return Err(Error::Closed {
                server: self.label.clone(),
            });
        }
        self.refresh_from(&fresh.peer, fresh.generation).await?;
        Ok(Some(fresh))
    }

    /// Lists the tools through `peer` and installs them, unless a newer listing already landed.
    pub(super) async fn refresh_from(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
        generation: u64,
    ) -> Result<(), Error> {
        let ticket = self.list_ticket.fetch_add(1, Ordering::SeqCst) + 1;
        let limit = self.options.startup_timeout;
        let listed = tokio::time::timeout(limit, self.list_all_tools(peer))
            .await
            .map_err(|_| Error::Timeout {
                server: self.label.clone(),
                what: "tools/list".to_owned(),
                timeout: limit,
            })??;
        if generation != self.generation.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut tools: Vec<Arc<McpTool>> = Vec::with_capacity(listed.len());
        let session: std::sync::Weak<dyn super::tool::Session> =
            Arc::downgrade(self) as std::sync::Weak<Inner>;
        for tool in listed {
            let tool = McpTool::new(tool, &self.options.tool_prefix, session.clone());
            if tools.iter().any(|t| t.name() == tool.name()) {
                tracing::warn!(server = %self.label, tool = tool.name(), "duplicate MCP tool name; keeping the first");
                continue;
            }
            tools.push(Arc::new(tool));
        }
        let Ok(mut set) = self.tools.write() else {
            return Ok(());
        };
        if ticket > set.ticket {
            tracing::debug!(server = %self.label, tools = tools.len(), "MCP tools listed");
            set.ticket = ticket;
            set.tools = tools;
            drop(set);
            self.changes.send_modify(|n| *n += 1);
        }
        Ok(())
    }

    /// Answers a `tools/list_changed` from connection `generation`: lists the tools again after
    /// [`McpClientBuilder::relist_debounce`], once for all the notifications that arrive until
    /// the listing starts, and once more after it for those that arrive while it runs.
    pub(super) fn relist_tools(self: &Arc<Self>, peer: Peer<RoleClient>, generation: u64) {
        let mut relist = lock(&self.relist);
        relist.pending = Some((peer, generation));
        if relist.running {
            return;
        }
        relist.running = true;
        drop(relist);
        let weak = Arc::downgrade(self);
        let wait = self.options.relist_debounce;
        // Listing is a request on the same session: do it off the session's message loop.
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(wait).await;
                let Some(inner) = weak.upgrade() else {
                    return;
                };
                let next = {
                    let mut relist = lock(&inner.relist);
                    match relist.pending.take() {
                        Some(next) => next,
                        None => {
                            relist.running = false;
                            return;
                        }
                    }
                };
                let (peer, generation) = next;
                tracing::debug!(server = %inner.label(), "tools/list_changed: listing the tools again");
                if let Err(e) = inner.refresh_from(&peer, generation).await {
                    tracing::warn!(server = %inner.label(), error = %e, "re-listing MCP tools failed");
                }
            }
        });
    }

    /// Every page of `tools/list`, within the client's page and tool limits
    /// ([`McpClientBuilder::max_list_pages`], [`McpClientBuilder::max_tools`]).
    async fn list_all_tools(
        &self,
        peer: &Peer<RoleClient>,
    ) -> Result<Vec<rmcp::model::Tool>, Error> {
        let too_many = || Error::TooManyTools {
            server: self.label.clone(),
            limit: self.options.max_tools,
        };
        self.page_through(
            "tools/list",
            self.options.max_tools,
            too_many,
            |cursor| async move {
                let params = PaginatedRequestParams::default().with_cursor(cursor);
                let page = peer
                    .list_tools(Some(params))
                    .await
                    .map_err(|e| self.service_error(e))?;
                Ok((page.tools, page.next_cursor))
            },
        )
        .await
    }

    /// Every page of a listing other than tools (`what`: `prompts/list`, `resources/list`, ..),
    /// each page a request of its own within the call timeout, at most
    /// [`McpClientBuilder::max_list_pages`] pages and [`McpClientBuilder::max_list_items`] items.
    pub(super) async fn list_pages<T, F, Fut>(
        self: &Arc<Self>,
        what: &str,
        fetch: F,
    ) -> Result<Vec<T>, Error>
    where
        F: Fn(Peer<RoleClient>, Option<PaginatedRequestParams>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
    {
        let too_many = || Error::TooManyItems {
            server: self.label.clone(),
            what: what.to_owned(),
            limit: self.options.max_list_items,
        };
        let fetch = &fetch;
        self.page_through(what, self.options.max_list_items, too_many, |cursor| {
            let params = cursor.map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            self.request(what, move |peer| fetch(peer, params))
        })
        .await
    }

    /// Pages through the listing `what`: `fetch` gets each page from the cursor the page before
    /// gave (none for the first), at most [`McpClientBuilder::max_list_pages`] pages
    /// ([`Error::TooManyPages`]); past `max_items` items the listing fails with `too_many()`.
    async fn page_through<T, F, Fut>(
        &self,
        what: &str,
        max_items: usize,
        too_many: impl Fn() -> Error,
        mut fetch: F,
    ) -> Result<Vec<T>, Error>
    where
        F: FnMut(Option<String>) -> Fut,
        Fut: Future<Output = Result<(Vec<T>, Option<String>), Error>>,
    {
        let mut items = Vec::new();
        let mut cursor = None;
        for _ in 0..self.options.max_list_pages {
            let (page, next) = fetch(cursor.take()).await?;
            if items.len().saturating_add(page.len()) > max_items {
                return Err(too_many());
            }
            items.extend(page);
            match next {
                Some(next) => cursor = Some(next),
                None => return Ok(items),
            }
        }
        Err(Error::TooManyPages {
            server: self.label.clone(),
            what: what.to_owned(),
            limit: self.options.max_list_pages,
        })
    }

    /// The latest listing of the tool the server calls `remote`.
    pub(crate) fn current_tool(&self, remote: &str) -> Option<Arc<McpTool>> {
        let set = self.tools.read().ok()?;
        set.tools
            .iter()
            .find(|t| t.remote_name() == remote)
            .cloned()
    }

    /// One request to the server through `send`, with the per-call time limit, dead-server
    /// detection and restart; `what` names it in errors.
    pub(super) async fn request<T, F, Fut>(
        self: &Arc<Self>,
        what: &str,
        send: F,
    ) -> Result<T, Error>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        self.request_within(what, self.options.call_timeout, send)
            .await
    }

    /// [`request`](Self::request) with its own time limit. A server that refuses the request as
    /// busy gives [`Error::Busy`] (one attempt); the connection is not broken by it.
    async fn request_within<T, F, Fut>(
        self: &Arc<Self>,
        what: &str,
        limit: Option<Duration>,
        send: F,
    ) -> Result<T, Error>
    where
        F: FnOnce(Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let conn = self.live().await?;
        let request = send(conn.peer.clone());
        let outcome = match limit {
            Some(limit) => match tokio::time::timeout(limit, request).await {
                Ok(outcome) => outcome,
                Err(_) => {
                    return Err(Error::Timeout {
                        server: self.label.clone(),
                        what: what.to_owned(),
                        timeout: self.options.call_timeout.unwrap_or(limit),
                    });
                }
            },
            None => request.await,
        };
        if let Some(busy) = outcome.as_ref().err().and_then(super::busy::busy) {
            return Err(Error::Busy {
                server: self.label.clone(),
                message: busy.message,
                retry_after: busy.retry_after,
                attempts: 1,
            });
        }
        match outcome {
            Ok(value) => Ok(value),
            Err(ServiceError::TransportClosed) => {
                Err(self.died_during_call(&conn, "the connection closed").await)
            }
            Err(ServiceError::TransportSend(e)) => Err(self
                .died_during_call(&conn, &self.scrub(root_cause(&e)))
                .await),
            Err(e) => Err(self.service_error(e)),
        }
    }

    /// One `tools/call`, with the per-call time limit, dead-server detection and restart.
    pub(crate) async fn call(
        self: &Arc<Self>,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, Error> {
        let arguments = match arguments {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(Error::Unsupported {
                    server: self.label.clone(),
                    message: format!("tool arguments must be a JSON object, got {other}"),
                });
            }
        };
        let span = crate::telemetry::client_span(
            name,
            match &self.target {
                Target::Stdio(_) => crate::telemetry::Peer::Stdio,
                Target::Http { url, .. } => crate::telemetry::Peer::Http(url),
            },
        );
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        params.meta = crate::telemetry::request_meta(&span);
        // Boxed: the call's future is large, and every future that holds it inline is copied
        // whole each time it moves (most costly in unoptimized builds).
        let result = Box::pin(self.call_with(name, params))
            .instrument(span.clone())
            .await;
        crate::telemetry::record_result(&span, &result);
        result
    }

    /// [`call`](Self::call) once its span is open.
    async fn call_with(
        self: &Arc<Self>,
        name: &str,
        params: CallToolRequestParams,
    ) -> Result<CallToolResult, Error> {
        // A caller that follows progress (`signet::tool::with_progress`, or a served tool whose
        // own client asked for it) gets the server's progress messages for this call.
        let sink = signet::tool::progress_sink();
        let what = format!("tools/call `{name}`");
        let deadline = self
            .options
            .call_timeout
            .map(|limit| tokio::time::Instant::now() + limit);
        let mut attempts = 1;
        let response = loop {
            let (params, sink) = (params.clone(), sink.clone());
            let left = deadline.map(|d| d.saturating_duration_since(tokio::time::Instant::now()));
            let sent = Box::pin(self.request_within(&what, left, |peer| async move {
                match sink {
                    Some(sink) => self.call_following_progress(peer, params, sink).await,
                    None => peer.call_tool_once(params).await,
                }
            }));
            let began = tokio::time::Instant::now();
            match sent.await {
                // A shed call did not run: try again after the hint, within the deadline, when
                // the try would have time to be answered (twice what this one took, at least
                // 20 ms): a try started at the deadline's edge would only time out in flight,
                // and the caller would learn less than that the server was busy.
                Err(Error::Busy {
                    server,
                    message,
                    retry_after,
                    ..
                }) => {
                    let wait = super::busy::backoff(retry_after, attempts);
                    let answer = (began.elapsed() * 2).max(MIN_TRY_TIME);
                    let in_time =
                        deadline.is_none_or(|d| tokio::time::Instant::now() + wait + answer < d);
                    if !in_time || attempts >= MAX_BUSY_ATTEMPTS {
                        return Err(Error::Busy {
                            server,
                            message,
                            retry_after,
                            attempts,
                        });
                    }
                    tracing::debug!(
                        tool = name,
                        attempts,
                        wait_ms = wait.as_millis() as u64,
                        "the server is busy; trying the call again"
                    );
                    tokio::time::sleep(wait).await;
                    attempts += 1;
                }
                other => break other?,
            }
        };
        match response {
            CallToolResponse::Complete(result) => Ok(result),
            CallToolResponse::Task(_) => Err(Error::Unsupported {
                server: self.label.clone(),
                message: format!(
                    "tool `{name}` answered with an MCP task (it runs only as a task), which \
                     Signet's MCP client does not poll; call a tool that answers directly"
                ),
            }),
            CallToolResponse::InputRequired(_) => Err(Error::Unsupported {
                server: self.label.clone(),
                message: format!(
                    "tool `{name}` asked the client for user input in a later round \
                     (input_required), which Signet's MCP client does not drive; it answers \
                     elicitation requests sent during the call"
                ),
            }),
            _ => Err(Error::Unsupported {
                server: self.label.clone(),
                message: format!("tool `{name}` answered with a result of an unknown kind"),
            }),
        }
    }

    /// `tools/call` with the server's progress notifications sent to `sink`. rmcp gives every
    /// request its own progress token, known once the request is sent, so the route opens then;
    /// like `call_tool_once`, a call dropped before its reply is cancelled on the server.
    async fn call_following_progress(
        &self,
        peer: Peer<RoleClient>,
        params: CallToolRequestParams,
        sink: ProgressSink,
    ) -> Result<CallToolResponse, ServiceError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        let _route = self.progress.open(handle.progress_token.clone(), sink);
        let mut abandoned = CancelIfAbandoned(Some((peer, handle.id.clone())));
        let reply = handle.await_response().await;
        abandoned.0 = None;
        match reply? {
            ServerResult::CallToolResult(result) => Ok(CallToolResponse::Complete(result)),
            ServerResult::InputRequiredResult(result) => {
                Ok(CallToolResponse::InputRequired(result))
            }
            ServerResult::CreateTaskResult(task) => Ok(CallToolResponse::Task(task)),
            // A reply without `content` decodes as an empty result.
            ServerResult::EmptyResult(_) => {
                Ok(CallToolResponse::Complete(CallToolResult::default()))
            }
            _ => Err(ServiceError::UnexpectedResponse),
        }
    }

    /// The error for a call whose server died under it; restarts the server when allowed.
    async fn died_during_call(
        self: &Arc<Self>,
        conn: &Arc<Connection>,
        transport_error: &str,
    ) -> Error {
        conn.broken.store(true, Ordering::SeqCst);
        let reason = conn.death(Some(transport_error)).await;
        let stderr = conn.stderr();
        let reason = match self.revive(conn).await {
            Ok(Some(_)) => format!(
                "{reason} before answering the call; it was restarted (restart {} of {}), so the \
                 call can be tried again",
                self.restarts.load(Ordering::SeqCst),
                self.options.max_restarts
            ),
            Ok(None) => self.no_restart_note(format!("{reason} before answering the call")),
            Err(e) => format!(
                "{reason} before answering the call, and restart {} of {} failed: {e}",
                self.restarts.load(Ordering::SeqCst),
                self.options.max_restarts
            ),
        };
        Error::ServerExited {
            server: self.label.clone(),
            reason,
            stderr,
        }
    }

    fn service_error(&self, error: ServiceError) -> Error {
        match error {
            ServiceError::McpError(e) => Error::Protocol {
                server: self.label.clone(),
                code: e.code.0,
                message: e.message.into_owned(),
                data: e.data,
            },
            ServiceError::Timeout { timeout } => Error::Timeout {
                server: self.label.clone(),
                what: "a request".to_owned(),
                timeout,
            },
            ServiceError::TransportClosed => Error::ServerExited {
                server: self.label.clone(),
                reason: "its connection closed".to_owned(),
                stderr: Vec::new(),
            },
            other => Error::Transport {
                server: self.label.clone(),
                message: self.scrub(other.to_string()),
            },
        }
    }

    /// Ends the session; `graceful` waits for the server to exit (see [`McpClient::close`]).
    pub(super) async fn shutdown(&self, graceful: bool) -> Option<ExitOutcome> {
        self.closed.store(true, Ordering::SeqCst);
        let conn = self.conn.write().ok().and_then(|mut c| c.take());
        let service = self.service.lock().await.take();
        if let Some(mut service) = service {
            // Cancelling the session closes the transport: the server's stdin reaches EOF.
            let _ = service.close_with_timeout(STOP_GRACE).await;
        }
        self.changes.send_modify(|n| *n += 1);
        let process = conn.and_then(|c| c.process.clone())?;
        if graceful {
            let outcome = process.stop(STOP_GRACE).await;
            if let Some(outcome) = &outcome {
                tracing::debug!(server = %self.label, "MCP server {}", outcome.describe());
            }
            outcome
        } else {
            process.signal(true);
            None
        }
    }

    /// The synchronous part of dropping the client: cancel the session, `SIGTERM` the server now,
    /// and `SIGKILL` it two seconds later if it is still there.
    pub(super) fn shutdown_now(&self) {
        if self.closed.swap(true, Ordering::SeqCst) {
            return;
        }
        let conn = self.conn.write().ok().and_then(|mut c| c.take());
        if let Ok(mut service) = self.service.try_lock() {
            drop(service.take()); // its drop guard cancels the session
        }
        self.changes.send_modify(|n| *n += 1);
        let Some(process) = conn.and_then(|c| c.process.clone()) else {
            return;
        };
        process.signal(false);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if process.wait_exit(STOP_GRACE).await.is_none() {
                    process.signal(true);
                }
            });
        }
    }
}

/// A handshake error in words: the transport's root cause rather than rmcp's wrapper types.
fn describe_init_error(error: &rmcp::service::ClientInitializeError) -> String {
    use rmcp::service::ClientInitializeError as E;
    match error {
        E::TransportError { error, context } => format!("{} ({context})", root_cause(error)),
        E::ConnectionClosed(awaited) => {
            format!("the server closed the connection before the {awaited}")
        }
        other => other.to_string(),
    }
}

/// The innermost error's message (rmcp's transport errors wrap it in their type names).
pub(super) fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// Tells the server a request was given up (`notifications/cancelled`) when dropped armed.
struct CancelIfAbandoned(Option<(Peer<RoleClient>, RequestId)>);

impl Drop for CancelIfAbandoned {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let reason = Some("the caller gave up the call".to_owned());
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                    .await;
            });
        }
    }
}
