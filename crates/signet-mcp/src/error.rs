//! The crate's error type.

use std::time::Duration;

use serde_json::Value;

/// Why starting, using or serving an MCP session failed.
///
/// Every variant names the server (the label given with
/// [`McpClientBuilder::name`](crate::McpClientBuilder::name), or the program's or URL's name), so
/// an agent that talks to several servers can tell them apart. When a Signet tool call fails, the
/// error becomes a [`signet::ToolError`] (see [`Error::into_tool_error`]) that ReAct shows the model
/// as an observation.
///
/// ```
/// let err = signet_mcp::Error::Closed { server: "files".into() };
/// assert_eq!(err.to_string(), "the MCP session with `files` was closed");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server's program could not be started (not found, not executable, ...).
    #[error("could not start MCP server `{server}` (program `{program}`): {source}")]
    Spawn {
        /// The server's label.
        server: String,
        /// The program that was run.
        program: String,
        /// What the operating system reported.
        #[source]
        source: std::io::Error,
    },
    /// The server started but the MCP handshake (`initialize`, then `tools/list`) failed.
    #[error(
        "MCP server `{server}` did not complete the handshake: {message}{}",
        stderr_note(stderr)
    )]
    Handshake {
        /// The server's label.
        server: String,
        /// What went wrong.
        message: String,
        /// The last lines the server wrote to stderr (stdio servers), oldest first.
        stderr: Vec<String>,
    },
    /// The server did not answer in time.
    #[error("MCP server `{server}` did not answer {what} within {timeout:?}")]
    Timeout {
        /// The server's label.
        server: String,
        /// What was waited for (`"the handshake"`, `"tools/call `echo`"`).
        what: String,
        /// The time limit.
        timeout: Duration,
    },
    /// The server is gone: its process exited or was killed, or its connection broke.
    #[error(
        "MCP server `{server}` is not running: {reason}{}",
        stderr_note(stderr)
    )]
    ServerExited {
        /// The server's label.
        server: String,
        /// What is known about the end (`exited with signal: 9 (SIGKILL)`, the transport's error),
        /// and whether it was restarted.
        reason: String,
        /// The last lines the server wrote to stderr (stdio servers), oldest first.
        stderr: Vec<String>,
    },
    /// The server answered with a JSON-RPC error (for example `-32602` for an unknown tool on an
    /// rmcp server).
    #[error("MCP server `{server}` rejected the request: {message} (JSON-RPC error {code})")]
    Protocol {
        /// The server's label.
        server: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The error message.
        message: String,
        /// The error's `data`, if any.
        data: Option<Value>,
    },
    /// The server refused a `tools/call` as busy (Signet's server: the JSON-RPC error `-32000`
    /// with `retry_after_ms`; any HTTP server: `429` or `503`) on every try the call's timeout
    /// allowed; the client tried it again after each hint, backing off with jitter. A refused
    /// call did not run.
    #[error(
        "MCP server `{server}` is busy: {message} (tried {attempts} times; it asked to wait {} ms)",
        retry_after.as_millis()
    )]
    Busy {
        /// The server's label.
        server: String,
        /// What the last refusal said.
        message: String,
        /// How long the last refusal asked to wait.
        retry_after: Duration,
        /// How many times the call was sent.
        attempts: u32,
    },
    /// The server answered in a way this client does not drive (a task-only tool, a request for
    /// user input, a reply of the wrong type).
    #[error("MCP server `{server}`: {message}")]
    Unsupported {
        /// The server's label.
        server: String,
        /// What was not supported.
        message: String,
    },
    /// The session was closed with [`McpClient::close`](crate::McpClient::close), or the
    /// [`McpClient`](crate::McpClient) owning it was dropped.
    #[error("the MCP session with `{server}` was closed")]
    Closed {
        /// The server's label.
        server: String,
    },
    /// The server kept answering `tools/list` with a next page past the client's limit
    /// ([`McpClientBuilder::max_list_pages`](crate::McpClientBuilder::max_list_pages)); the
    /// listing was dropped.
    #[error(
        "MCP server `{server}` kept paging {what} past {limit} pages \
         (McpClientBuilder::max_list_pages); the listing was dropped"
    )]
    TooManyPages {
        /// The server's label.
        server: String,
        /// The listing: `tools/list`, `prompts/list`, `resources/list` or
        /// `resources/templates/list`.
        what: String,
        /// The page limit.
        limit: usize,
    },
    /// The server listed more tools than the client's limit
    /// ([`McpClientBuilder::max_tools`](crate::McpClientBuilder::max_tools)); the listing was
    /// dropped.
    #[error(
        "MCP server `{server}` listed more than {limit} tools (McpClientBuilder::max_tools); \
         the listing was dropped"
    )]
    TooManyTools {
        /// The server's label.
        server: String,
        /// The tool limit.
        limit: usize,
    },
    /// A listing of prompts, resources or resource templates held more items than the client's
    /// limit ([`McpClientBuilder::max_list_items`](crate::McpClientBuilder::max_list_items)); the
    /// listing was dropped.
    #[error(
        "MCP server `{server}` listed more than {limit} items in {what} \
         (McpClientBuilder::max_list_items); the listing was dropped"
    )]
    TooManyItems {
        /// The server's label.
        server: String,
        /// The listing: `prompts/list`, `resources/list` or `resources/templates/list`.
        what: String,
        /// The item limit.
        limit: usize,
    },
    /// A transport failure that is not one of the above.
    #[error("MCP transport error with `{server}`: {message}")]
    Transport {
        /// The server's label.
        server: String,
        /// What the transport reported.
        message: String,
    },
    /// A Signet MCP server could not listen on the address.
    #[error("could not serve MCP over HTTP on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// What the operating system reported.
        #[source]
        source: std::io::Error,
    },
    /// A Signet MCP server was asked to listen on a non-loopback address with no authentication.
    #[error(
        "refusing to serve MCP over HTTP on {addr} without authentication: it is reachable from \
         other machines; set McpServer::with_bearer_auth, or allow_unauthenticated_remote when a \
         proxy in front authenticates"
    )]
    Unprotected {
        /// The address it would have listened on.
        addr: std::net::SocketAddr,
    },
    /// A Signet MCP server's session ended with an error.
    #[error("the MCP server session failed: {message}")]
    Serve {
        /// What went wrong.
        message: String,
    },
}

impl Error {
    /// The error's class as traces record it in `error.type`: the variant's name in snake case
    /// (`timeout`, `server_exited`, ..; a JSON-RPC error records its code instead).
    ///
    /// ```
    /// let err = signet_mcp::Error::Closed { server: "files".into() };
    /// assert_eq!(err.kind(), "closed");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Spawn { .. } => "spawn",
            Error::Handshake { .. } => "handshake",
            Error::Timeout { .. } => "timeout",
            Error::ServerExited { .. } => "server_exited",
            Error::Protocol { .. } => "protocol",
            Error::Busy { .. } => "busy",
            Error::Unsupported { .. } => "unsupported",
            Error::Closed { .. } => "closed",
            Error::TooManyPages { .. } => "too_many_pages",
            Error::TooManyTools { .. } => "too_many_tools",
            Error::TooManyItems { .. } => "too_many_items",
            Error::Transport { .. } => "transport",
            Error::Bind { .. } => "bind",
            Error::Unprotected { .. } => "unprotected",
            Error::Serve { .. } => "serve",
        }
    }

    /// The error as the [`signet::ToolError`] a tool call returns: [`ToolError::Timeout`] for a
    /// timeout, [`ToolError::Remote`] for everything else, naming `tool`.
    ///
    /// [`ToolError::Timeout`]: signet::ToolError::Timeout
    /// [`ToolError::Remote`]: signet::ToolError::Remote
    ///
    /// ```
    /// let err = signet_mcp::Error::Closed { server: "files".into() };
    /// assert_eq!(
    ///     err.into_tool_error("read_file").to_string(),
    ///     "tool `read_file`: the MCP session with `files` was closed"
    /// );
    /// ```
    pub fn into_tool_error(self, tool: &str) -> signet::ToolError {
        match self {
            Error::Timeout { timeout, .. } => signet::ToolError::Timeout {
                tool: tool.to_owned(),
                elapsed: timeout,
            },
            other => signet::ToolError::Remote {
                tool: tool.to_owned(),
                message: other.to_string(),
            },
        }
    }
}

fn stderr_note(lines: &[String]) -> String {
    if lines.is_empty() {
        String::new()
    } else {
        format!("; its last stderr lines: {}", lines.join(" | "))
    }
}
