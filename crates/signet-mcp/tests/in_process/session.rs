//! Session lifecycle without external peers: an in-process Signet server over HTTP that goes away
//! and comes back, a closed client, servers that cannot be reached or never answer.

use std::time::{Duration, Instant};

use serde_json::json;
use signet::{Tool, ToolError};
use signet_mcp::{McpClient, McpServer};

use crate::AddTool;

fn server() -> McpServer {
    McpServer::new().tool(AddTool)
}

#[tokio::test]
async fn a_stopped_http_server_is_a_clear_error_not_a_hang() {
    let http = server().serve_http("127.0.0.1:0").await.unwrap();
    let client = McpClient::connect(http.url()).await.unwrap();
    let add = client.tool("add").unwrap();
    assert_eq!(add.call(json!({"a": 1, "b": 2})).await.unwrap(), "3");
    http.shutdown().await.unwrap();

    let started = Instant::now();
    let err = add.call(json!({"a": 1, "b": 2})).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(matches!(err, ToolError::Remote { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains("is not running: its connection failed"),
        "{text}"
    );
    assert!(text.contains("error sending request"), "{text}");
}

#[tokio::test]
async fn an_http_server_that_comes_back_is_used_again() {
    let http = server().serve_http("127.0.0.1:0").await.unwrap();
    let addr = http.local_addr();
    let client = McpClient::connect(http.url()).await.unwrap();
    let add = client.tool("add").unwrap();
    assert_eq!(add.call(json!({"a": 1, "b": 2})).await.unwrap(), "3");
    http.shutdown().await.unwrap();

    // A new server on the same address does not know the old session: the client starts a new
    // one without being asked.
    let http = server().serve_http(addr).await.unwrap();
    assert_eq!(add.call(json!({"a": 2, "b": 2})).await.unwrap(), "4");
    assert_eq!(client.restarts(), 0);
    client.close().await.unwrap();
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_closed_client_answers_tools_with_an_error() {
    let http = server().serve_http("127.0.0.1:0").await.unwrap();
    let client = McpClient::connect(http.url()).await.unwrap();
    let add = client.tool("add").unwrap();
    assert!(client.is_running());
    client.close().await.unwrap();
    let err = add.call(json!({"a": 1, "b": 2})).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "tool `add`: the MCP session with `{}` was closed",
            http.local_addr()
        )
    );
    // A dropped client's tools keep its session: they answer.
    let client = McpClient::connect(http.url()).await.unwrap();
    let add = client.tool("add").unwrap();
    drop(client);
    assert_eq!(add.call(json!({"a": 1, "b": 2})).await.unwrap(), "3");
}

#[tokio::test]
async fn nothing_listens_is_a_handshake_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = McpClient::builder()
        .name("nobody")
        .connect(format!("http://127.0.0.1:{port}/mcp"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, signet_mcp::Error::Handshake { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("MCP server `nobody` did not complete the handshake:"),
        "{err}"
    );
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_at_startup() {
    let started = Instant::now();
    let err = McpClient::builder()
        .startup_timeout(Duration::from_millis(300))
        .spawn(signet_mcp::StdioCommand::new("sleep").arg("30"))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(
        err.to_string(),
        "MCP server `sleep` did not answer the handshake within 300ms"
    );
}
