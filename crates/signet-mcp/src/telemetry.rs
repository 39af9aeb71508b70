//! MCP spans after the OpenTelemetry conventions for MCP (`semantic-conventions-genai` v0.1.0):
//! a `tools/call {tool}` client span around each call an [`McpClient`](crate::McpClient) makes,
//! a server span around each call an [`McpServer`](crate::McpServer) serves, and the trace
//! context carried between them in the request's `params._meta` (`traceparent`, `tracestate`,
//! `baggage`), so that one trace spans the agent, its tools and the MCP servers behind them.

use rmcp::model::{CallToolResult, MetaObject, RequestMetaObject};
use tracing::Span;
use tracing::field::Empty;

/// The `tracing` target of the MCP spans.
pub(crate) const TARGET: &str = "signet_mcp::telemetry";

/// How a client reaches its server, for `network.transport` and `server.address`/`server.port`.
pub(crate) enum Peer<'a> {
    /// A server process spoken to over its stdin and stdout.
    Stdio,
    /// A streamable-HTTP endpoint.
    Http(&'a str),
}

/// The client span of one `tools/call` of `tool`.
pub(crate) fn client_span(tool: &str, peer: Peer<'_>) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp_client",
        "otel.name" = %format_args!("tools/call {tool}"),
        "otel.kind" = "client",
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "mcp.method.name" = "tools/call",
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = tool,
        "network.transport" = Empty,
        "network.protocol.name" = Empty,
        "server.address" = Empty,
        "server.port" = Empty,
        "error.type" = Empty,
        "rpc.response.status_code" = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    match peer {
        Peer::Stdio => {
            span.record("network.transport", "pipe");
        }
        Peer::Http(url) => {
            span.record("network.transport", "tcp");
            span.record("network.protocol.name", "http");
            if let Ok(parsed) = reqwest::Url::parse(url) {
                if let Some(host) = parsed.host_str() {
                    span.record(
                        "server.address",
                        host.trim_start_matches('[').trim_end_matches(']'),
                    );
                }
                if let Some(port) = parsed.port_or_known_default() {
                    span.record("server.port", i64::from(port));
                }
            }
        }
    }
    span
}

/// The trace context of `span` for a request's `_meta` (`None` without a propagator).
pub(crate) fn request_meta(span: &Span) -> Option<RequestMetaObject> {
    let entries = signet::telemetry::inject_context(span);
    if entries.is_empty() {
        return None;
    }
    let mut meta = MetaObject::new();
    for (key, value) in entries {
        meta.0.insert(key, serde_json::Value::String(value));
    }
    Some(RequestMetaObject(meta))
}

/// Records a call's outcome on its client span: a tool that answered with `isError` is
/// `error.type = tool_error`.
pub(crate) fn record_result(span: &Span, result: &Result<CallToolResult, crate::Error>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(result) if result.is_error == Some(true) => {
            signet::telemetry::record_error(span, "tool_error", &"the tool answered with an error");
        }
        Ok(_) => {}
        Err(error) => {
            let kind = match error {
                crate::Error::Protocol { code, .. } => {
                    span.record("rpc.response.status_code", code.to_string());
                    code.to_string()
                }
                other => other.kind().to_owned(),
            };
            signet::telemetry::record_error(span, &kind, error);
        }
    }
}

/// The server span of one `tools/call` of `tool` (request `id`), a child of the client's span
/// when the request's `_meta` carries its trace context.
pub(crate) fn server_span(
    tool: &str,
    id: &dyn std::fmt::Display,
    meta: &RequestMetaObject,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "mcp_server",
        "otel.name" = %format_args!("tools/call {tool}"),
        "otel.kind" = "server",
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "mcp.method.name" = "tools/call",
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = tool,
        "jsonrpc.request.id" = %id,
        "error.type" = Empty,
    );
    let carried = |key: &str| {
        (meta.0)
            .0
            .get(key)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    signet::telemetry::set_remote_parent(&span, &carried);
    span
}

/// Marks a served call failed (`tool_error` when the tool returned an error).
pub(crate) fn server_error(span: &Span, message: &dyn std::fmt::Display) {
    signet::telemetry::record_error(span, "tool_error", message);
}
