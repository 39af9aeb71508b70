//! One MCP server tool as a Signet [`Tool`].

use std::sync::{Arc, Weak};

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{CallToolResult, ToolAnnotations};
use serde_json::{Map, Value};
use signet::tool::{ToolFuture, ToolSpec};
use signet::{Tool, ToolError};

use crate::content::{error_text, result_value};

/// What a listed tool needs of the session that listed it: the session's state implements it.
pub(super) trait Session: Send + Sync + 'static {
    /// The server's name in messages.
    fn label(&self) -> &str;
    /// The latest listing of the server's tool `remote`, if it is still listed.
    fn current_tool(&self, remote: &str) -> Option<Arc<McpTool>>;
    /// One `tools/call` of the server's tool `remote`.
    fn call_tool(
        self: Arc<Self>,
        remote: String,
        args: Value,
    ) -> BoxFuture<'static, Result<CallToolResult, crate::Error>>;
}

/// A tool served by an MCP server, usable wherever a Signet [`Tool`] is (ReAct, native function
/// calling, [`Tool::call_blocking`]).
///
/// Its [`ToolSpec`] is built from the server's `inputSchema`, kept as the server wrote it (`$ref`s
/// into `$defs` inlined, `anyOf [T, null]`, enums, nested objects and `format` kept), so arguments
/// are validated locally before the call and the model gets Signet's precise argument errors. A
/// schema that the local validator cannot compile is left to the server to enforce.
///
/// A call returns the result converted as described in [`content`](crate::content); an `isError`
/// result becomes [`ToolError::Failed`] with the server's message; a protocol error (such as an
/// unknown tool), a dead server, a timeout or a closed session become [`ToolError::Remote`] or
/// [`ToolError::Timeout`]. ReAct shows each to the model as an observation.
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
/// let client = signet_mcp::McpClient::builder().tool_prefix("calc_").connect(http.url()).await?;
/// let add = client.tool("calc_add").unwrap();
/// let err = add.call(serde_json::json!({"a": "one", "b": 2})).await.unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid arguments for tool `calc_add`: argument `a`: expected integer, got string \"one\""
/// );
/// assert_eq!(add.call(serde_json::json!({"a": 1, "b": 2})).await.unwrap(), "3");
/// # Ok::<(), signet_mcp::Error>(())
/// # }).unwrap();
/// ```
pub struct McpTool {
    spec: ToolSpec,
    remote: String,
    title: Option<String>,
    annotations: Option<ToolAnnotations>,
    output_schema: Option<Value>,
    server: String,
    client: Weak<dyn Session>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name())
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    pub(super) fn new(tool: rmcp::model::Tool, prefix: &str, client: Weak<dyn Session>) -> McpTool {
        let server = client
            .upgrade()
            .map(|c| c.label().to_owned())
            .unwrap_or_default();
        let description = tool
            .description
            .as_deref()
            .or(tool.title.as_deref())
            .unwrap_or_default()
            .to_owned();
        let schema = Value::Object(tool.input_schema.as_ref().clone());
        McpTool {
            spec: ToolSpec::new(format!("{prefix}{}", tool.name), description, schema),
            remote: tool.name.into_owned(),
            title: tool.title,
            annotations: tool.annotations,
            output_schema: tool
                .output_schema
                .map(|s| Value::Object(s.as_ref().clone())),
            server,
            client,
        }
    }

    /// The tool's name on the server (without the client's [prefix](super::McpClientBuilder::tool_prefix)).
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    /// The label of the server that serves the tool.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The tool's human-readable title, if the server gave one.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The server's hints about the tool (read-only, destructive, idempotent, open-world).
    pub fn annotations(&self) -> Option<&ToolAnnotations> {
        self.annotations.as_ref()
    }

    /// Checks `args` against the latest listing of this tool's schema.
    fn validate(&self, client: &dyn Session, args: &Value) -> Result<(), ToolError> {
        let latest = client.current_tool(&self.remote);
        let spec = latest.as_ref().map_or(&self.spec, |t| &t.spec);
        match spec.validate(args) {
            Ok(()) => Ok(()),
            Err(ToolError::InvalidSchema { message, .. }) => {
                tracing::debug!(
                    tool = self.spec.name(),
                    %message,
                    "the server's input schema does not compile here; leaving validation to the server"
                );
                Ok(())
            }
            Err(ToolError::InvalidArguments { errors, .. }) => Err(ToolError::InvalidArguments {
                tool: self.spec.name().to_owned(),
                errors,
            }),
            Err(other) => Err(other),
        }
    }
}

impl Tool for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// The JSON schema of the tool's `structuredContent`, if the server declared one.
    fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// An MCP server's tool: `extension` in traces.
    fn tool_type(&self) -> signet::tool::ToolType {
        signet::tool::ToolType::Extension
    }

    fn call(&self, args: Value) -> ToolFuture<'_> {
        async move {
            let name = self.spec.name();
            let Some(client) = self.client.upgrade() else {
                return Err(dropped_client(name, &self.server));
            };
            let args = if args.is_null() {
                Value::Object(Map::new())
            } else {
                args
            };
            self.validate(client.as_ref(), &args)?;
            let result = client
                .call_tool(self.remote.clone(), args)
                .await
                .map_err(|e| e.into_tool_error(name))?;
            if result.is_error == Some(true) {
                let mut message = error_text(&result);
                // rmcp's tool listing drops `execution.taskSupport`, so a task-only tool is only
                // recognised by the server's refusal.
                if message.contains("taskSupport") || message.contains("task augmentation") {
                    message = format!(
                        "this tool runs only as an MCP task, which Signet's MCP client does not \
                         drive ({message})"
                    );
                }
                return Err(ToolError::Failed {
                    tool: name.to_owned(),
                    message,
                });
            }
            Ok(result_value(&result))
        }
        .boxed()
    }
}

/// The error of a tool whose session has ended (no client or tool held it any more).
pub(super) fn dropped_client(tool: &str, server: &str) -> ToolError {
    ToolError::Remote {
        tool: tool.to_owned(),
        message: format!("the MCP session with `{server}` has ended"),
    }
}

/// A tool as a client hands it out: it holds the client's session, so it keeps working after
/// the [`McpClient`](super::McpClient) is dropped, and the session ends only when the client and
/// every such tool are gone.
pub(super) struct Owned<T> {
    pub(super) tool: Arc<T>,
    /// The session's owner, held only to keep it open.
    pub(super) session: Arc<dyn std::any::Any + Send + Sync>,
}

impl<T: Tool> Tool for Owned<T> {
    fn spec(&self) -> &ToolSpec {
        self.tool.spec()
    }

    fn output_schema(&self) -> Option<&Value> {
        self.tool.output_schema()
    }

    fn requires_confirmation(&self) -> bool {
        self.tool.requires_confirmation()
    }

    fn tool_type(&self) -> signet::tool::ToolType {
        self.tool.tool_type()
    }

    fn call(&self, args: Value) -> ToolFuture<'_> {
        // The session is held for the whole call: `self` is borrowed until it ends.
        let _ = &self.session;
        self.tool.call(args)
    }
}
