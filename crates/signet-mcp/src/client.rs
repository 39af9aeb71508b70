//! The client side: an MCP server's tools as ordinary Signet tools.
//!
//! [`McpClient::spawn`] starts a stdio server, [`McpClient::connect`] connects to a streamable-HTTP
//! one; either way you get a handle that owns the session and whose [`tools`](McpClient::tools)
//! are `Arc<dyn Tool>`s to hand to ReAct next to your `#[tool]` functions.

mod busy;
mod elicitation;
mod handler;
mod http;
mod process;
mod progress;
mod resource_tools;
mod resources;
mod roots;
mod sampling;
mod session;
mod session_roles;
mod tool;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::model::{CallToolResult, ServerPeerInfo};
use serde_json::Value;
use signet::Tool;

use crate::Error;
use elicitation::ElicitationHandler;
pub use elicitation::{Elicitation, ElicitationAnswer, ElicitationKind};
use process::ExitOutcome;
pub use process::StdioCommand;
pub use roots::Root;
pub use sampling::{Sampling, SamplingRequest};
use session::{Inner, SessionOwner, Target};
pub use tool::McpTool;
use tool::Owned;

/// A live session with one MCP server, and that server's tools as Signet tools.
///
/// The handle and the tools it hands out own the session: [`close`](Self::close) ends it
/// gracefully (stdin closed, then `SIGTERM`, then `SIGKILL`, two seconds apart), and it ends too
/// when the handle and every tool taken from it are dropped (`SIGTERM` at once, `SIGKILL` two
/// seconds later). A tool keeps working after its client is dropped; one used after `close`
/// returns a clear [`ToolError`](signet::ToolError) instead of hanging.
///
/// ```no_run
/// use signet_mcp::{McpClient, StdioCommand};
///
/// # async fn run() -> Result<(), signet_mcp::Error> {
/// let memory = McpClient::spawn(
///     StdioCommand::new("npx")
///         .args(["-y", "@modelcontextprotocol/server-memory"])
///         .inherit_env(["PATH", "HOME"]),
/// )
/// .await?;
/// for tool in memory.tools() {
///     println!("{}: {}", tool.name(), tool.description());
/// }
/// memory.close().await?;
/// # Ok(()) }
/// ```
pub struct McpClient {
    inner: Arc<Inner>,
    /// Shared with the tools handed out: the session lives while any of them does.
    owner: Arc<SessionOwner>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.inner.label)
            .field("tools", &self.tool_names())
            .field("restarts", &self.restarts())
            .finish_non_exhaustive()
    }
}

/// Options for an [`McpClient`]: a label, time limits, automatic restarts, a tool-name prefix.
///
/// ```
/// use std::time::Duration;
/// let builder = signet_mcp::McpClient::builder()
///     .name("files")
///     .call_timeout(Some(Duration::from_secs(10)))
///     .max_restarts(2)
///     .tool_prefix("fs_");
/// # let _ = builder;
/// ```
///
/// `Debug` shows every option but never the bearer token (it is shown as `[redacted]`).
#[derive(Clone)]
pub struct McpClientBuilder {
    name: Option<String>,
    call_timeout: Option<Duration>,
    startup_timeout: Duration,
    max_restarts: u32,
    tool_prefix: String,
    bearer_token: Option<String>,
    roots: Option<Vec<Root>>,
    sampling: Option<Sampling>,
    elicitation: Option<ElicitationHandler>,
    max_list_pages: usize,
    max_tools: usize,
    max_list_items: usize,
    relist_debounce: Duration,
}

impl std::fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClientBuilder")
            .field("name", &self.name)
            .field("call_timeout", &self.call_timeout)
            .field("startup_timeout", &self.startup_timeout)
            .field("max_restarts", &self.max_restarts)
            .field("tool_prefix", &self.tool_prefix)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| Redacted),
            )
            .field("roots", &self.roots)
            .field("sampling", &self.sampling)
            .field("elicitation", &self.elicitation)
            .field("max_list_pages", &self.max_list_pages)
            .field("max_tools", &self.max_tools)
            .field("max_list_items", &self.max_list_items)
            .field("relist_debounce", &self.relist_debounce)
            .finish()
    }
}

/// Stands for a secret (a token, an environment variable's value) in `Debug` output.
struct Redacted;

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Default for McpClientBuilder {
    fn default() -> Self {
        McpClientBuilder {
            name: None,
            call_timeout: Some(Duration::from_secs(60)),
            startup_timeout: Duration::from_secs(30),
            max_restarts: 0,
            tool_prefix: String::new(),
            bearer_token: None,
            roots: None,
            sampling: None,
            elicitation: None,
            max_list_pages: DEFAULT_MAX_LIST_PAGES,
            max_tools: DEFAULT_MAX_TOOLS,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
            relist_debounce: DEFAULT_RELIST_DEBOUNCE,
        }
    }
}

/// The default of [`McpClientBuilder::max_list_pages`].
const DEFAULT_MAX_LIST_PAGES: usize = 100;

/// The default of [`McpClientBuilder::max_tools`].
const DEFAULT_MAX_TOOLS: usize = 10_000;

/// The default of [`McpClientBuilder::max_list_items`].
const DEFAULT_MAX_LIST_ITEMS: usize = 10_000;

/// The default of [`McpClientBuilder::relist_debounce`].
const DEFAULT_RELIST_DEBOUNCE: Duration = Duration::from_millis(250);

impl McpClientBuilder {
    /// The server's label in errors and logs (default: the script's or program's file name, or the
    /// URL's host).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The time limit of one request: a tool call, a resource read, a prompt (default 60 s; `None`
    /// waits as long as the server takes). A tool call over the limit is cancelled on the server
    /// and fails with [`ToolError::Timeout`](signet::ToolError::Timeout); the time the client
    /// spends answering the server's sampling or elicitation requests during the call counts.
    pub fn call_timeout(mut self, limit: Option<Duration>) -> Self {
        self.call_timeout = limit;
        self
    }

    /// The time limit for starting: spawning or connecting, the handshake and the first
    /// `tools/list` (default 30 s).
    pub fn startup_timeout(mut self, limit: Duration) -> Self {
        self.startup_timeout = limit;
        self
    }

    /// Restart the server (or reconnect, for HTTP) when it has died, up to `max` times over the
    /// client's life (default 0: a dead server stays dead and every call says so). The call that
    /// found the server dead still fails — it may have run — and says the server was restarted, so
    /// the model can try again; later calls go to the new server.
    pub fn max_restarts(mut self, max: u32) -> Self {
        self.max_restarts = max;
        self
    }

    /// Prefixes every tool's name as the model sees it (`"fs_"` makes `read_file` `fs_read_file`),
    /// to keep several servers' tools apart. Calls use the server's own name.
    pub fn tool_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.tool_prefix = prefix.into();
        self
    }

    /// Sends `Authorization: Bearer <token>` with every HTTP request (streamable-HTTP servers only).
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Declares roots (see [`Root`]): the server may ask for them (`roots/list`), and
    /// [`McpClient::set_roots`] changes them later. Without this call the client declares no roots
    /// capability; an empty list declares it with no roots yet.
    ///
    /// ```
    /// use signet_mcp::{McpClient, Root};
    /// let builder = McpClient::builder().roots([Root::directory("/srv/data").unwrap()]);
    /// # let _ = builder;
    /// ```
    pub fn roots(mut self, roots: impl IntoIterator<Item = Root>) -> Self {
        self.roots = Some(roots.into_iter().collect());
        self
    }

    /// Lets the server sample from the client's model (`sampling/createMessage`), within the
    /// limits of `sampling` (see [`Sampling`]). Off by default: a client without it declares no
    /// sampling capability and refuses such requests.
    pub fn sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = Some(sampling);
        self
    }

    /// Answers the server's questions to the user (`elicitation/create`, form and URL modes) with
    /// `handler`: it gets an [`Elicitation`] and returns an [`ElicitationAnswer`]. A form answer
    /// is checked against the requested schema before it is sent (a mismatch reaches the server as
    /// an error saying what was wrong). Without a handler the client declares no elicitation
    /// capability and declines such requests.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet_mcp::{ElicitationAnswer, ElicitationKind, McpClient};
    ///
    /// let builder = McpClient::builder().elicitation(|question| async move {
    ///     println!("{} asks: {}", question.server, question.message);
    ///     match question.kind {
    ///         ElicitationKind::Form { .. } => ElicitationAnswer::Accept(json!({"name": "Ada"})),
    ///         _ => ElicitationAnswer::Decline,
    ///     }
    /// });
    /// # let _ = builder;
    /// ```
    pub fn elicitation<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Elicitation) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ElicitationAnswer> + Send + 'static,
    {
        self.elicitation = Some(ElicitationHandler::new(handler));
        self
    }

    /// The most pages one listing — tools, prompts, resources or resource templates — may take
    /// (default 100): a server that keeps answering with a next cursor past it fails the listing
    /// with [`Error::TooManyPages`] (for tools at connect, connecting fails) instead of being
    /// paged forever.
    ///
    /// ```
    /// let builder = signet_mcp::McpClient::builder().max_list_pages(10).max_tools(500);
    /// # let _ = builder;
    /// ```
    pub fn max_list_pages(mut self, max: usize) -> Self {
        self.max_list_pages = max.max(1);
        self
    }

    /// The most tools one listing may hold, over all its pages (default 10,000): past it the
    /// listing fails with [`Error::TooManyTools`].
    pub fn max_tools(mut self, max: usize) -> Self {
        self.max_tools = max;
        self
    }

    /// The most prompts, resources or resource templates one listing may hold, over all its
    /// pages (default 10,000): past it the listing fails with [`Error::TooManyItems`] and what
    /// was read of it is dropped.
    ///
    /// ```
    /// let builder = signet_mcp::McpClient::builder().max_list_items(1_000);
    /// # let _ = builder;
    /// ```
    pub fn max_list_items(mut self, max: usize) -> Self {
        self.max_list_items = max;
        self
    }

    /// How long the client waits after a `notifications/tools/list_changed` before listing the
    /// tools again (default 250 ms). Notifications that arrive in that time, or while a listing
    /// runs, are answered by one more listing, not one each: a server flooding the notification
    /// gets at most one `tools/list` per interval.
    ///
    /// ```
    /// use std::time::Duration;
    /// let builder = signet_mcp::McpClient::builder().relist_debounce(Duration::from_secs(1));
    /// # let _ = builder;
    /// ```
    pub fn relist_debounce(mut self, wait: Duration) -> Self {
        self.relist_debounce = wait;
        self
    }

    /// Starts `command` as a stdio MCP server, completes the handshake and lists its tools.
    pub async fn spawn(self, command: StdioCommand) -> Result<McpClient, Error> {
        let label = self.name.clone().unwrap_or_else(|| command.label());
        self.start(label, Target::Stdio(command)).await
    }

    /// Connects to the streamable-HTTP MCP server at `url` (such as `http://127.0.0.1:8000/mcp`),
    /// completes the handshake and lists its tools.
    pub async fn connect(self, url: impl Into<String>) -> Result<McpClient, Error> {
        let url = url.into();
        let label = self.name.clone().unwrap_or_else(|| url_label(&url));
        let http = http::HttpClient::new().map_err(|error| Error::Handshake {
            server: label.clone(),
            message: format!("could not set up an HTTP client: {error}"),
            stderr: Vec::new(),
        })?;
        self.start(label, Target::Http { url, http }).await
    }

    async fn start(self, label: String, target: Target) -> Result<McpClient, Error> {
        let inner = Inner::start(label, target, self).await?;
        let owner = Arc::new(SessionOwner(inner.clone()));
        Ok(McpClient { inner, owner })
    }
}

impl McpClient {
    /// Options; finish with [`spawn`](McpClientBuilder::spawn) or
    /// [`connect`](McpClientBuilder::connect).
    pub fn builder() -> McpClientBuilder {
        McpClientBuilder::default()
    }

    /// Starts `command` as a stdio MCP server with the default options (see [`StdioCommand`] for
    /// the environment it gets).
    pub async fn spawn(command: StdioCommand) -> Result<McpClient, Error> {
        McpClient::builder().spawn(command).await
    }

    /// Connects to a streamable-HTTP MCP server with the default options.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use signet::{Tool, tool};
    /// # /// Add two integers.
    /// # #[tool]
    /// # fn add(a: i64, b: i64) -> i64 { a + b }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let http = signet_mcp::McpServer::new().tool(AddTool)
    /// #     .serve_http("127.0.0.1:0").await.unwrap();
    /// let client = signet_mcp::McpClient::connect(http.url()).await?;
    /// assert_eq!(client.tool_names(), ["add"]);
    /// # Ok::<(), signet_mcp::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn connect(url: impl Into<String>) -> Result<McpClient, Error> {
        McpClient::builder().connect(url).await
    }

    /// The server's label, as used in errors.
    pub fn name(&self) -> &str {
        &self.inner.label
    }

    /// The server's tools, as of the last listing (re-listed automatically on
    /// `notifications/tools/list_changed` and after a restart).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use signet::{Tool, tool};
    /// # /// Add two integers.
    /// # #[tool]
    /// # fn add(a: i64, b: i64) -> i64 { a + b }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let http = signet_mcp::McpServer::new().tool(AddTool)
    /// #     .serve_http("127.0.0.1:0").await.unwrap();
    /// let client = signet_mcp::McpClient::connect(http.url()).await?;
    /// let add = &client.tools()[0];
    /// assert_eq!(add.description(), "Add two integers.");
    /// assert_eq!(add.call(serde_json::json!({"a": 1, "b": 2})).await.unwrap(), "3");
    /// # Ok::<(), signet_mcp::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner
            .tools
            .read()
            .map(|set| set.tools.iter().map(|t| self.hand_out(t)).collect())
            .unwrap_or_default()
    }

    /// The tool named `name` (with the prefix, if one was set).
    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.inner.tools.read().ok().and_then(|set| {
            set.tools
                .iter()
                .find(|t| t.name() == name)
                .map(|t| self.hand_out(t))
        })
    }

    /// `tool` as handed to the caller: holding the session, so that it works for as long as the
    /// caller keeps it, the client dropped or not.
    fn hand_out(&self, tool: &Arc<McpTool>) -> Arc<dyn Tool> {
        Arc::new(Owned {
            tool: tool.clone(),
            session: self.owner.clone(),
        })
    }

    /// The tools' names, as the model sees them.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner
            .tools
            .read()
            .map(|set| set.tools.iter().map(|t| t.name().to_owned()).collect())
            .unwrap_or_default()
    }

    /// Lists the tools again now.
    pub async fn refresh_tools(&self) -> Result<Vec<Arc<dyn Tool>>, Error> {
        let conn = self.inner.live().await?;
        self.inner.refresh_from(&conn.peer, conn.generation).await?;
        Ok(self.tools())
    }

    /// Waits until the tool list changes (after a `tools/list_changed` notification or a restart),
    /// or the client is closed.
    pub async fn tools_changed(&self) {
        let mut changes = self.inner.changes.subscribe();
        changes.mark_unchanged();
        let _ = changes.changed().await;
    }

    /// Calls a tool by the server's name for it, returning the raw MCP result (no local
    /// validation, `isError` results included).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use signet::{Tool, tool};
    /// # /// Add two integers.
    /// # #[tool]
    /// # fn add(a: i64, b: i64) -> i64 { a + b }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let http = signet_mcp::McpServer::new().tool(AddTool)
    /// #     .serve_http("127.0.0.1:0").await.unwrap();
    /// let client = signet_mcp::McpClient::connect(http.url()).await?;
    /// let result = client.call_tool("add", serde_json::json!({"a": 1, "b": 2})).await?;
    /// assert_eq!(result.is_error, Some(false));
    /// assert_eq!(signet_mcp::content::result_value(&result), "3");
    /// # Ok::<(), signet_mcp::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        self.inner.call(name, arguments).await
    }

    /// The tokens and LM calls spent answering this session's [sampling](McpClientBuilder::sampling)
    /// requests so far.
    pub fn sampling_usage(&self) -> signet::lm::Usage {
        self.inner.sampled.usage()
    }

    /// What the server said about itself in the handshake.
    pub fn server_info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.inner.current().ok()?.peer.peer_info()
    }

    /// The server process's id (stdio servers).
    pub fn pid(&self) -> Option<u32> {
        self.inner.current().ok()?.process.as_ref()?.pid()
    }

    /// How many times the server was restarted.
    pub fn restarts(&self) -> u32 {
        self.inner.restarts.load(Ordering::Relaxed)
    }

    /// Whether the session is up (not closed, and the server not known to be dead).
    pub fn is_running(&self) -> bool {
        self.inner.current().is_ok_and(|conn| !conn.is_dead())
    }

    /// Ends the session: closes the server's stdin and waits for it to exit, escalating to
    /// `SIGTERM` and `SIGKILL` after two seconds each. Errors only if the server had to be killed.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use signet::{Tool, tool};
    /// # /// Add two integers.
    /// # #[tool]
    /// # fn add(a: i64, b: i64) -> i64 { a + b }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let http = signet_mcp::McpServer::new().tool(AddTool)
    /// #     .serve_http("127.0.0.1:0").await.unwrap();
    /// let client = signet_mcp::McpClient::connect(http.url()).await?;
    /// let add = client.tool("add").unwrap();
    /// client.close().await?;
    /// assert!(add.call(serde_json::json!({"a": 1, "b": 2})).await.is_err());
    /// # Ok::<(), signet_mcp::Error>(())
    /// # }).unwrap();
    /// ```
    pub async fn close(self) -> Result<(), Error> {
        match self.inner.shutdown(true).await {
            Some(ExitOutcome::Killed(status)) => Err(Error::ServerExited {
                server: self.inner.label.clone(),
                reason: format!("it ignored stdin closing and SIGTERM and was killed ({status})"),
                stderr: Vec::new(),
            }),
            _ => Ok(()),
        }
    }
}

/// `http://127.0.0.1:8000/mcp` -> `127.0.0.1:8000`; credentials in the URL are left out.
fn url_label(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit('@').next().unwrap_or(authority).to_owned()
}

/// The secrets a URL may carry — its user info (`user:password@`) and its query (`?token=…`) —
/// to keep out of labels, errors, spans and what an agent reads.
pub(crate) fn url_secrets(url: &str) -> Vec<String> {
    let mut secrets = Vec::new();
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    if let Some((user_info, _)) = authority.rsplit_once('@')
        && !user_info.is_empty()
    {
        secrets.push(user_info.to_owned());
    }
    // The whole query, as it stands in the URL: its values may be tokens.
    if let Some((_, query)) = url.split_once('?') {
        let query = query.split('#').next().unwrap_or(query);
        if !query.is_empty() {
            secrets.push(query.to_owned());
        }
    }
    secrets
}

/// `text` with every secret of `url` ([`url_secrets`]) replaced by `[redacted]`.
pub(crate) fn scrub_url_secrets(text: &str, url: &str) -> String {
    url_secrets(url)
        .iter()
        .fold(text.to_owned(), |text, secret| {
            text.replace(secret.as_str(), "[redacted]")
        })
}

/// What `mutex` guards, also after a panic elsewhere left it poisoned: the client's maps and
/// counters stay valid between their updates.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_an_mcp_url_stay_out_of_labels_and_errors() {
        let url = "https://alice:s3cret@mcp.example.com:8443/mcp?token=abc123&team=x";
        assert_eq!(url_label(url), "mcp.example.com:8443");
        assert_eq!(url_label("http://127.0.0.1:8000/mcp"), "127.0.0.1:8000");
        let error = format!("error sending request for url ({url}): connection refused");
        let scrubbed = scrub_url_secrets(&error, url);
        for secret in ["alice", "s3cret", "abc123"] {
            assert!(!scrubbed.contains(secret), "{scrubbed}");
        }
        assert!(
            scrubbed.contains("[redacted]@mcp.example.com:8443/mcp?[redacted])"),
            "{scrubbed}"
        );
        assert_eq!(scrub_url_secrets("plain", "http://h/mcp"), "plain");
    }

    #[test]
    fn builder_debug_shows_every_option_but_never_the_token() {
        let builder = McpClient::builder()
            .name("files")
            .tool_prefix("fs_")
            .max_restarts(2)
            .bearer_token("sk-SECRET-123")
            .roots([Root::directory("/srv/data").unwrap()]);
        let shown = format!("{builder:?}");
        assert!(shown.contains("bearer_token: Some([redacted])"), "{shown}");
        for shown in [shown, format!("{builder:#?}")] {
            assert!(!shown.contains("SECRET"), "{shown}");
            for kept in [
                "[redacted]",
                "\"files\"",
                "\"fs_\"",
                "max_restarts: 2",
                "/srv/data",
            ] {
                assert!(shown.contains(kept), "{kept} missing from {shown}");
            }
        }
        let without = format!("{:?}", McpClient::builder());
        assert!(without.contains("bearer_token: None"), "{without}");
    }
}
