//! The server side: any set of Signet tools served as an MCP server, over stdio or streamable HTTP.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{MaybeSendFuture, Peer, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Map, Value};
use signet::module::{Module, ModuleTool};
use signet::{Signature, Tool};
use tokio::io::{AsyncRead, AsyncWrite};
use tracing::Instrument;

use crate::{BearerAuth, Error};

mod admission;
mod gate;
pub(crate) mod http;

use admission::{Admission, Line};

/// Signet tools served as an MCP server: each tool's name, description and generated argument
/// schema go out in `tools/list`; `tools/call` validates and runs the tool. A tool error (invalid
/// arguments, `Err`, panic, timeout) becomes an `isError` result whose text is the error's message;
/// an unknown tool name is the protocol error `-32602`, as MCP specifies.
///
/// Results: a string is sent as one text item; an object as its JSON text plus
/// `structuredContent`; `null` as no content; other values as their JSON text. A value that is MCP
/// content (`{"type": "image", "data": .., "mimeType": ..}`, or a list holding some) is sent as
/// that content, so tools taken from another MCP server can be served again unchanged.
///
/// A whole module — `Predict`, `ChainOfThought`, a ReAct agent, a compiled program — is served as
/// one tool with [`module`](Self::module). While a call runs, every
/// [progress report](signet::tool::report_progress) made inside it (a ReAct run reports each
/// turn, tool call and result) goes to the client as `notifications/progress`, when the client
/// asked for progress; a client's `notifications/cancelled` drops the call, and with it the run
/// and the LM and tool calls in flight.
///
/// Tools that need a person's approval (`#[tool(confirm)]`) are left out unless
/// [`serve_confirm_tools`](Self::serve_confirm_tools) says otherwise: an MCP client is not bound to
/// ask anyone.
///
/// ```
/// use signet::prelude::*;
/// use signet_mcp::McpServer;
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// let server = McpServer::new().tool(AddTool).with_name("calculator", "1.0.0");
/// assert_eq!(server.served_tools()[0].name(), "add");
/// // In a binary: server.serve_stdio().await?
/// ```
#[derive(Clone)]
pub struct McpServer {
    tools: Arc<[Arc<dyn Tool>]>,
    all_tools: Vec<Arc<dyn Tool>>,
    serve_confirm: bool,
    info: Implementation,
    instructions: Option<String>,
    allowed_hosts: Option<Vec<String>>,
    allowed_origins: Option<Vec<String>>,
    auth: Option<BearerAuth>,
    allow_remote: bool,
    http_mode: HttpMode,
    /// Admits the `tools/call`s that may run at once, the rest waiting in line; shared by every
    /// copy of this server.
    calls: Admission,
    /// Admits the stateless HTTP requests served at once (each is a session of its own).
    requests: Admission,
    /// Whether the HTTP router in front admits each request (stateless), so that a copy serving
    /// one needs no session slot.
    router_admits: bool,
    /// Counts the HTTP sessions open at once; shared by every copy of this server.
    sessions: Arc<AtomicUsize>,
    max_sessions: usize,
    /// The session slot a copy serving one HTTP session holds, given back when it is dropped.
    slot: Option<Arc<SessionSlot>>,
}

/// The default of [`McpServer::max_concurrent_calls`].
const DEFAULT_MAX_CALLS: usize = 32;

/// How busy a served [`McpServer`] is ([`McpServer::load`]): what runs, what waits, and what was
/// shed since it was made, for its `tools/call`s and its stateless HTTP requests.
///
/// ```
/// let server = signet_mcp::McpServer::new();
/// let load = server.load();
/// assert_eq!((load.calls_running, load.calls_waiting, load.calls_shed), (0, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLoad {
    /// `tools/call`s running now (at most [`McpServer::max_concurrent_calls`]).
    pub calls_running: usize,
    /// `tools/call`s waiting for a place (at most [`McpServer::max_waiting`]).
    pub calls_waiting: usize,
    /// `tools/call`s refused as busy since the server was made.
    pub calls_shed: u64,
    /// Stateless HTTP requests being served now (at most [`McpServer::max_sessions`]).
    pub requests_running: usize,
    /// Stateless HTTP requests waiting for a place.
    pub requests_waiting: usize,
    /// Stateless HTTP requests answered `503` since the server was made.
    pub requests_shed: u64,
}

/// The default of [`McpServer::max_sessions`].
const DEFAULT_MAX_SESSIONS: usize = 64;

/// One open HTTP session's place under [`McpServer::max_sessions`].
struct SessionSlot(Arc<AtomicUsize>);

impl SessionSlot {
    /// A place, or `None` when `max` sessions are open.
    fn take(open: &Arc<AtomicUsize>, max: usize) -> Option<SessionSlot> {
        open.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()?;
        Some(SessionSlot(open.clone()))
    }
}

impl Drop for SessionSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("McpServer")
            .field("name", &self.info.name)
            .field("tools", &tools)
            .finish_non_exhaustive()
    }
}

impl Default for McpServer {
    fn default() -> Self {
        McpServer::new()
    }
}

impl McpServer {
    /// A server with no tools yet, named `signet-mcp` until [`with_name`](Self::with_name); add
    /// tools with [`tool`](Self::tool) and [`tools`](Self::tools).
    pub fn new() -> McpServer {
        McpServer {
            tools: Arc::from([]),
            all_tools: Vec::new(),
            serve_confirm: false,
            info: Implementation::new("signet-mcp", env!("CARGO_PKG_VERSION")),
            instructions: None,
            allowed_hosts: None,
            allowed_origins: None,
            auth: None,
            allow_remote: false,
            http_mode: HttpMode::default(),
            calls: Admission::new(DEFAULT_MAX_CALLS, Line::default()),
            requests: Admission::new(DEFAULT_MAX_SESSIONS, Line::default()),
            router_admits: false,
            sessions: Arc::new(AtomicUsize::new(0)),
            max_sessions: DEFAULT_MAX_SESSIONS,
            slot: None,
        }
    }

    /// Serves `tool`: any [`Tool`] — a `#[tool]` type, an `Arc<dyn Tool>` (from a `ToolBox`, or
    /// another MCP server's client), a closure tool.
    pub fn tool(self, tool: impl Tool + 'static) -> McpServer {
        self.tools([tool])
    }

    /// Serves each of `tools` (see [`tool`](Self::tool)).
    pub fn tools(mut self, tools: impl IntoIterator<Item = impl Tool + 'static>) -> McpServer {
        self.all_tools
            .extend(tools.into_iter().map(signet::tool::share));
        self.choose_served();
        self
    }

    /// Serves `module` as the tool `name`: its arguments are the input fields of the signature
    /// `S`, its result the output fields, sent as `structuredContent` and as JSON text and
    /// declared as the tool's `outputSchema` (see [`ModuleTool`], which this wraps; use
    /// [`tool`](Self::tool) with a `ModuleTool` to set the description). A ReAct run sends its
    /// steps as progress; a cancelled call stops the run.
    ///
    /// ```
    /// use signet::prelude::*;
    /// use signet_mcp::McpServer;
    ///
    /// /// Answer the question with the tools.
    /// #[derive(Signature)]
    /// struct Ask { #[input] question: String, #[output] answer: String }
    ///
    /// let agent = ReAct::<Ask>::new(); // with tools, an LM, a compiled state ...
    /// let server = McpServer::new().module::<Ask>("ask", agent);
    /// let tool = &server.served_tools()[0];
    /// assert_eq!(tool.description(), "Answer the question with the tools.");
    /// assert_eq!(tool.args_schema()["required"], serde_json::json!(["question"]));
    /// assert!(tool.output_schema().is_some());
    /// ```
    pub fn module<S: Signature>(
        self,
        name: impl Into<String>,
        module: impl Module<Input = S::Input> + 'static,
    ) -> McpServer {
        self.tool(ModuleTool::new::<S>(name, module))
    }

    /// The served set: every tool, less those that need approval unless they are allowed.
    fn choose_served(&mut self) {
        let serve_confirm = self.serve_confirm;
        self.tools = self
            .all_tools
            .iter()
            .filter(|tool| {
                let keep = serve_confirm || !tool.requires_confirmation();
                if !keep {
                    tracing::warn!(
                        tool = tool.name(),
                        "not serving a tool that needs a person's approval over MCP \
                         (McpServer::serve_confirm_tools)"
                    );
                }
                keep
            })
            .cloned()
            .collect();
    }

    /// The name and version sent to clients in the handshake.
    pub fn with_name(mut self, name: impl Into<String>, version: impl Into<String>) -> McpServer {
        self.info = Implementation::new(name, version);
        self
    }

    /// Instructions sent to clients in the handshake (how to use the tools together).
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> McpServer {
        self.instructions = Some(instructions.into());
        self
    }

    /// Serve `#[tool(confirm)]` tools too: the MCP client (and whoever runs it) takes on asking a
    /// person before each call.
    pub fn serve_confirm_tools(mut self) -> McpServer {
        self.serve_confirm = true;
        self.choose_served();
        self
    }

    /// Host names (or `host:port`) the HTTP server answers to; the default is the loopback names
    /// only (`localhost`, `127.0.0.1`, `::1`), which protects a local server from DNS rebinding.
    /// Names other than loopback take effect only with [authentication](Self::with_bearer_auth)
    /// or [`allow_unauthenticated_remote`](Self::allow_unauthenticated_remote): an endpoint
    /// reachable under them is reachable from other machines.
    pub fn with_allowed_hosts<I, S>(mut self, hosts: I) -> McpServer
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Browser origins allowed to call the HTTP endpoint (`"https://app.example.com:443"`,
    /// `"http://localhost:*"` for any port, `"null"`): a request carrying an `Origin` header not
    /// in the list is refused with `403 Forbidden`, so a web page the user visits cannot drive the
    /// server from their browser. Requests without `Origin` (every non-browser client) are not
    /// affected. The default allows pages served from this machine only (`http` and `https` on
    /// `localhost`, `127.0.0.1` and `[::1]`, any port); an empty list refuses every request that
    /// carries an `Origin`.
    ///
    /// ```
    /// let server = signet_mcp::McpServer::new().with_allowed_origins(["https://app.example.com:443"]);
    /// # let _ = server;
    /// ```
    pub fn with_allowed_origins<I, S>(mut self, origins: I) -> McpServer
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// The most `tools/call`s that may run at once over every session and transport of this
    /// server and its copies (default 32; at least 1): each can be a whole ReAct run. A call over
    /// the limit waits for a place, first come first served, as [`max_waiting`](Self::max_waiting)
    /// and [`max_wait`](Self::max_wait) allow; past them it is shed: the JSON-RPC error `-32000`
    /// saying the server is busy, with `retry_after_ms` in its `data` (over stateless HTTP, a
    /// `503` with `Retry-After` carrying that error). Signet's client tries a shed call again
    /// after the hint, with jitter, within its call timeout.
    ///
    /// ```
    /// let server = signet_mcp::McpServer::new().max_concurrent_calls(4).max_sessions(8);
    /// # let _ = server;
    /// ```
    pub fn max_concurrent_calls(mut self, max: usize) -> McpServer {
        self.calls = Admission::new(max, self.calls.line);
        self
    }

    /// The most `tools/call`s (and, apart, stateless HTTP requests) that may wait for a place at
    /// once (default 1,024); one more is shed at once. See
    /// [`max_concurrent_calls`](Self::max_concurrent_calls).
    ///
    /// ```
    /// use std::time::Duration;
    /// let server = signet_mcp::McpServer::new().max_waiting(64).max_wait(Duration::from_secs(2));
    /// # let _ = server;
    /// ```
    pub fn max_waiting(mut self, max: usize) -> McpServer {
        let line = Line {
            max_waiting: max,
            ..self.calls.line
        };
        self.set_line(line);
        self
    }

    /// How long a `tools/call` (or a stateless HTTP request) may wait for a place (default 10 s)
    /// before it is shed; the retry hint it gets is a quarter of this, between 50 ms and 1 s. See
    /// [`max_concurrent_calls`](Self::max_concurrent_calls).
    pub fn max_wait(mut self, wait: std::time::Duration) -> McpServer {
        let line = Line {
            max_wait: wait,
            ..self.calls.line
        };
        self.set_line(line);
        self
    }

    fn set_line(&mut self, line: Line) {
        self.calls = Admission::new(self.calls.limit(), line);
        self.requests = Admission::new(self.requests.limit(), line);
    }

    /// How busy this server and its copies are now: see [`ServerLoad`].
    pub fn load(&self) -> ServerLoad {
        ServerLoad {
            calls_running: self.calls.running(),
            calls_waiting: self.calls.waiting(),
            calls_shed: self.calls.shed_count(),
            requests_running: self.requests.running(),
            requests_waiting: self.requests.waiting(),
            requests_shed: self.requests.shed_count(),
        }
    }

    /// The most HTTP sessions open at once (default 64; at least 1). With
    /// [`HttpMode::Sessions`] a session lasts until its client ends it or it sits idle for 5
    /// minutes, and a new session over the limit is refused at once with `503` and `Retry-After`.
    /// [Stateless](HttpMode::Stateless), each request is a session of its own: a request over the
    /// limit waits in line as [`max_waiting`](Self::max_waiting) and [`max_wait`](Self::max_wait)
    /// allow (when served by [`serve_http`](Self::serve_http) or
    /// [`http_router`](Self::http_router); the bare [`http_service`](Self::http_service) can only
    /// refuse it, with `500`), and is shed with `503` and `Retry-After` past them.
    pub fn max_sessions(mut self, max: usize) -> McpServer {
        self.max_sessions = max.max(1);
        self.sessions = Arc::new(AtomicUsize::new(0));
        self.requests = Admission::new(self.max_sessions, self.requests.line);
        self
    }

    /// Requires `Authorization: Bearer <token>` on every HTTP request ([`serve_http`](Self::serve_http)
    /// and [`http_router`](Self::http_router)); others get `401 Unauthorized`. A client sends it
    /// with [`McpClientBuilder::bearer_token`](crate::McpClientBuilder::bearer_token).
    ///
    /// ```
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// use signet_mcp::{BearerAuth, McpClient, McpServer};
    /// let http = McpServer::new()
    ///     .with_bearer_auth(BearerAuth::tokens(["s3cret"]))
    ///     .serve_http("127.0.0.1:0")
    ///     .await
    ///     .unwrap();
    /// assert!(McpClient::connect(http.url()).await.is_err());
    /// let client = McpClient::builder().bearer_token("s3cret").connect(http.url()).await.unwrap();
    /// assert!(client.tools().is_empty());
    /// # });
    /// ```
    pub fn with_bearer_auth(mut self, auth: BearerAuth) -> McpServer {
        self.auth = Some(auth);
        self
    }

    /// Lets the HTTP endpoint be reached from other machines without
    /// [authentication](Self::with_bearer_auth) — for a server behind a proxy that
    /// authenticates, or an [`http_service`](Self::http_service) mounted behind your own
    /// authentication. Without this, an unauthenticated endpoint serves only this machine:
    /// [`serve_http`](Self::serve_http) on an address other than loopback fails with
    /// [`Error::Unprotected`]; every way of serving answers only to loopback host names (see
    /// [`with_allowed_hosts`](Self::with_allowed_hosts)); and [`serve_http`](Self::serve_http)
    /// and [`http_router`](Self::http_router) refuse requests from other machines' addresses, or
    /// from an address they do not know (a router served without connect info), with
    /// `403 Forbidden`. [`http_service`](Self::http_service) checks host names only: it is a
    /// building block to put behind authentication of your own.
    pub fn allow_unauthenticated_remote(mut self) -> McpServer {
        self.allow_remote = true;
        self
    }

    /// Whether the HTTP endpoint keeps client sessions; [stateless](HttpMode::Stateless) unless
    /// set (see [`HttpMode`]).
    pub fn with_http_mode(mut self, mode: HttpMode) -> McpServer {
        self.http_mode = mode;
        self
    }

    /// The tools this server serves.
    pub fn served_tools(&self) -> &[Arc<dyn Tool>] {
        &self.tools
    }

    /// Serves on this process's stdin and stdout until the client disconnects. Log to stderr
    /// only: stdout carries the protocol.
    pub async fn serve_stdio(self) -> Result<(), Error> {
        self.serve_io(rmcp::transport::stdio_pipes()).await
    }

    /// Serves one session over any byte stream pair `(read, write)` until the client disconnects.
    pub async fn serve_io<R, W>(self, (read, write): (R, W)) -> Result<(), Error>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let service = self.serve((read, write)).await.map_err(|e| Error::Serve {
            message: e.to_string(),
        })?;
        service.waiting().await.map_err(|e| Error::Serve {
            message: e.to_string(),
        })?;
        Ok(())
    }

    fn find(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }
}

/// How a Signet server answers over streamable HTTP ([`McpServer::with_http_mode`]).
///
/// Both modes serve every tool, send a call's [progress](signet::tool::report_progress) and stop a
/// call its client abandons. They differ in what the server keeps between requests.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use signet_mcp::{HttpMode, McpClient, McpServer};
/// let http = McpServer::new()
///     .with_http_mode(HttpMode::Sessions)
///     .serve_http("127.0.0.1:0")
///     .await
///     .unwrap();
/// let client = McpClient::connect(http.url()).await.unwrap();
/// assert!(client.tools().is_empty());
/// # });
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HttpMode {
    /// The default: every POST is answered on its own, with no `Mcp-Session-Id` and nothing kept
    /// between requests. A call that sends nothing before its result is answered as one
    /// `application/json` body; one that sends progress gets an event stream. A client that
    /// closes the connection stops its call. Several server processes can share one address
    /// behind a load balancer, since no request depends on an earlier one.
    #[default]
    Stateless,
    /// A session per client, named by the `Mcp-Session-Id` header and kept until the client
    /// ends it (`DELETE`), it sits idle for 5 minutes (rmcp's default) or the server stops;
    /// every response is an event stream, a client may
    /// hold a `GET` stream open, and `notifications/cancelled` reaches the call it names. Slower
    /// per call (see `docs/performance.md`), and a session's state lives in this one process.
    Sessions,
}

/// The MCP description of a Signet tool.
fn mcp_tool(tool: &dyn Tool) -> rmcp::model::Tool {
    let schema = match tool.args_schema() {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    let mut described = rmcp::model::Tool::new(
        tool.name().to_owned(),
        tool.description().to_owned(),
        Arc::new(schema),
    );
    if let Some(Value::Object(output)) = tool.output_schema() {
        described = described.with_raw_output_schema(Arc::new(output.clone()));
    }
    described
}

/// Runs `call`, sending each progress report made inside it to the client as
/// `notifications/progress` for `token`, numbered 1, 2, 3, .. with the report as the message.
/// Reports made before the call returns are all sent before it returns.
async fn sending_progress<F: Future>(
    peer: &Peer<RoleServer>,
    token: ProgressToken,
    call: F,
) -> F::Output {
    let (sender, mut reports) = tokio::sync::mpsc::unbounded_channel::<String>();
    let sink = move |message: String| {
        // A closed channel: the call is over and the report has no one left to reach.
        let _ = sender.send(message);
    };
    let mut call = std::pin::pin!(signet::tool::with_progress(sink, call));
    let mut sent = 0u32;
    let notify = |sent: u32, message: String| {
        let param =
            ProgressNotificationParam::new(token.clone(), f64::from(sent)).with_message(message);
        async move {
            if let Err(error) = peer.notify_progress(param).await {
                tracing::debug!(%error, "a progress notification was not sent");
            }
        }
    };
    loop {
        tokio::select! {
            biased;
            Some(message) = reports.recv() => {
                sent += 1;
                notify(sent, message).await;
            }
            output = &mut call => {
                while let Ok(message) = reports.try_recv() {
                    sent += 1;
                    notify(sent, message).await;
                }
                return output;
            }
        }
    }
}

/// A Signet tool's return value as an MCP result (see [`McpServer`] for the rule).
fn call_result(value: Value) -> CallToolResult {
    if let Some(blocks) = as_content(&value) {
        return CallToolResult::success(blocks);
    }
    match value {
        Value::Null => CallToolResult::success(Vec::new()),
        Value::String(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Value::Object(map) => {
            let text = Value::Object(map.clone()).to_string();
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(Value::Object(map));
            result
        }
        other => CallToolResult::success(vec![ContentBlock::text(other.to_string())]),
    }
}

/// A value that is MCP content: one typed non-text item, or a list of strings and typed items
/// holding at least one typed item.
fn as_content(value: &Value) -> Option<Vec<ContentBlock>> {
    fn typed(value: &Value) -> Option<ContentBlock> {
        let kind = value.get("type")?.as_str()?;
        if !matches!(kind, "image" | "audio" | "resource" | "resource_link") {
            return None;
        }
        serde_json::from_value(value.clone()).ok()
    }
    match value {
        Value::Object(_) => typed(value).map(|b| vec![b]),
        Value::Array(items) if items.iter().any(|i| typed(i).is_some()) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Some(ContentBlock::text(text.clone())),
                other => typed(other),
            })
            .collect(),
        _ => None,
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(self.info.clone());
        match &self.instructions {
            Some(text) => config.with_instructions(text.clone()),
            None => config,
        }
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_ {
        let tools = self.tools.iter().map(|t| mcp_tool(t.as_ref())).collect();
        std::future::ready(Ok(ListToolsResult::with_all_items(tools)))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.find(name).map(|t| mcp_tool(t.as_ref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let Some(tool) = self.find(name) else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`; the tools are: {}", names.join(", ")),
                None,
            ));
        };
        // Each call may be a whole ReAct run: past the limit it waits in line, then is shed.
        let _permit = match self.calls.enter().await {
            Ok(permit) => permit,
            Err(shed) => {
                let limit = self.calls.limit();
                let message = shed.describe("tool calls", limit, "McpServer::max_concurrent_calls");
                tracing::debug!(tool = name, %message, "shed a call: server busy");
                return Err(admission::busy_error(
                    message,
                    limit,
                    self.calls.line.retry_after(),
                ));
            }
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let span = crate::telemetry::server_span(name, &context.id, &context.meta);
        // A tool that needs approval is served only with `serve_confirm_tools`, where the client
        // asks its person: the call runs as approved (the others need no mark).
        let call = tool.call(args);
        let call: signet::tool::ToolFuture<'_> = if tool.requires_confirmation() {
            Box::pin(signet::tool::approved(name, call))
        } else {
            call
        };
        let call = call.instrument(span.clone());
        let run = async {
            match context.meta.get_progress_token() {
                Some(token) => sending_progress(&context.peer, token, call).await,
                None => call.await,
            }
        };
        let outcome = tokio::select! {
            biased;
            // The client gave up (`notifications/cancelled`): dropping the call stops the tool —
            // a ReAct run with its LM and tool calls in flight. The transport drops this reply.
            () = context.ct.cancelled() => {
                tracing::debug!(tool = name, "the client cancelled the call");
                return Err(ErrorData::internal_error("the call was cancelled", None));
            }
            outcome = run => outcome,
        };
        let result = match outcome {
            Ok(value) => call_result(value),
            Err(error) => {
                crate::telemetry::server_error(&span, &error);
                CallToolResult::error(vec![ContentBlock::text(error.to_string())])
            }
        };
        Ok(result.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_become_mcp_results() {
        let text = call_result(json!("hi"));
        assert_eq!(text.content, vec![ContentBlock::text("hi")]);
        assert_eq!(text.structured_content, None);

        let object = call_result(json!({"a": 1}));
        assert_eq!(object.content, vec![ContentBlock::text("{\"a\":1}")]);
        assert_eq!(object.structured_content, Some(json!({"a": 1})));

        let number = call_result(json!(5));
        assert_eq!(number.content, vec![ContentBlock::text("5")]);
        assert!(call_result(Value::Null).content.is_empty());
    }

    #[test]
    fn typed_content_values_are_sent_as_content() {
        let image = json!({"type": "image", "data": "AAAA", "mimeType": "image/png"});
        let result = call_result(json!(["look:", image]));
        assert_eq!(
            result.content,
            vec![
                ContentBlock::text("look:"),
                ContentBlock::image("AAAA", "image/png")
            ]
        );
        // A plain list of strings stays JSON text.
        let list = call_result(json!(["a", "b"]));
        assert_eq!(list.content, vec![ContentBlock::text("[\"a\",\"b\"]")]);
    }
}
