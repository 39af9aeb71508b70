//! A Signet MCP server over HTTP with bearer tokens: requests without a valid token are refused
//! with 401 before they reach a session; a client with the token works; a server reachable from
//! other machines refuses to start without authentication.

use serde_json::json;
use signet_mcp::{BearerAuth, Error, McpClient, McpServer};

use crate::AddTool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The status line of a raw MCP `initialize` POST to `url`, with this `Authorization` header.
async fn status_of(url: &str, authorization: Option<&str>) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}
    })
    .to_string();
    let auth = authorization.map_or(String::new(), |value| format!("Authorization: {value}\r\n"));
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    // The status line and headers are enough (an accepted request's SSE body stays open).
    while !reply.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&reply);
    let mut lines = text.lines();
    let status = lines.next().unwrap_or_default().to_owned();
    if status.contains("401") {
        assert!(
            lines.any(|l| l.eq_ignore_ascii_case("www-authenticate: Bearer")),
            "{text}"
        );
    }
    status
}

#[tokio::test]
async fn requests_without_a_valid_token_are_refused_with_401() {
    let http = McpServer::new()
        .tool(AddTool)
        .with_bearer_auth(BearerAuth::tokens(["s3cret", "other"]))
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = http.url();
    assert!(status_of(&url, None).await.contains("401"));
    assert!(status_of(&url, Some("Bearer guess")).await.contains("401"));
    assert!(status_of(&url, Some("Basic s3cret")).await.contains("401"));
    assert!(status_of(&url, Some("Bearer ")).await.contains("401"));
    assert!(status_of(&url, Some("Bearer s3cret")).await.contains("200"));
    assert!(status_of(&url, Some("bearer other")).await.contains("200"));

    let refused = McpClient::connect(url.clone()).await.unwrap_err();
    assert!(
        refused.to_string().contains("authorization required"),
        "{refused}"
    );

    let client = McpClient::builder()
        .bearer_token("s3cret")
        .connect(url)
        .await
        .unwrap();
    let add = client.tool("add").unwrap();
    assert_eq!(add.call(json!({"a": 2, "b": 3})).await.unwrap(), json!("5"));
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_validator_decides_which_tokens_pass() {
    let http = McpServer::new()
        .tool(AddTool)
        .with_bearer_auth(BearerAuth::validator(|token| token.starts_with("team-")))
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    assert!(
        status_of(&http.url(), Some("Bearer team-7"))
            .await
            .contains("200")
    );
    assert!(
        status_of(&http.url(), Some("Bearer solo"))
            .await
            .contains("401")
    );
}

#[tokio::test]
async fn a_server_reachable_from_other_machines_needs_authentication() {
    let error = McpServer::new().serve_http("0.0.0.0:0").await.unwrap_err();
    assert!(matches!(error, Error::Unprotected { .. }), "{error}");
    assert!(
        error.to_string().contains("without authentication"),
        "{error}"
    );

    let protected = McpServer::new()
        .with_bearer_auth(BearerAuth::tokens(["s3cret"]))
        .serve_http("0.0.0.0:0")
        .await
        .unwrap();
    protected.shutdown().await.unwrap();
    let proxied = McpServer::new()
        .allow_unauthenticated_remote()
        .serve_http("0.0.0.0:0")
        .await
        .unwrap();
    proxied.shutdown().await.unwrap();
}

#[tokio::test]
async fn http_router_checks_tokens_where_it_is_mounted() {
    let mcp = McpServer::new()
        .tool(AddTool)
        .with_bearer_auth(BearerAuth::tokens(["s3cret"]))
        .http_router("/mcp");
    let app = axum::Router::new().nest("/tools", mcp);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/tools/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    assert!(status_of(&url, None).await.contains("401"));
    let client = McpClient::builder()
        .bearer_token("s3cret")
        .connect(url)
        .await
        .unwrap();
    assert_eq!(client.tools().len(), 1);
}
