//! The two ways a Signet MCP server answers over HTTP ([`HttpMode`]): stateless (plain JSON
//! responses, no session) and with sessions (an `Mcp-Session-Id`, SSE responses). Both serve the
//! same calls, and in both a client that stops waiting stops the call on the server. Signet's
//! client keeps its connection alive while a server answers with JSON, and opens one per request
//! once it answers with event streams (reusing those can stall 40 ms on Nagle's algorithm).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use signet::tool::FnTool;
use signet_mcp::{Error, HttpMode, HttpServer, McpClient, McpServer};

use crate::AddTool;

/// One raw JSON-RPC POST: the status, the response headers and the body.
async fn post(
    url: &str,
    session: Option<&str>,
    body: Value,
) -> (reqwest::StatusCode, reqwest::header::HeaderMap, String) {
    let mut request = reqwest::Client::new()
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("Mcp-Session-Id", session);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let text = tokio::time::timeout(Duration::from_secs(5), response.text())
        .await
        .expect("the response ended")
        .unwrap();
    (status, headers, text)
}

fn initialize() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}
    })
}

fn call_add() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "add", "arguments": {"a": 2, "b": 3}}})
}

fn content_type(headers: &reqwest::header::HeaderMap) -> &str {
    headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Serves `add` in `mode` and sends it a raw `initialize`: the server, the response headers and
/// body (checked to be a success).
async fn initialize_raw(mode: HttpMode) -> (HttpServer, reqwest::header::HeaderMap, String) {
    let http = McpServer::new()
        .tool(AddTool)
        .with_http_mode(mode)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let (status, headers, body) = post(&http.url(), None, initialize()).await;
    assert_eq!(status, 200, "{body}");
    (http, headers, body)
}

#[tokio::test]
async fn stateless_mode_answers_with_plain_json_and_no_session() {
    let (http, headers, body) = initialize_raw(HttpMode::Stateless).await;
    let url = http.url();
    assert!(headers.get("mcp-session-id").is_none(), "{headers:?}");
    assert_eq!(content_type(&headers), "application/json");
    let init: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(init["result"]["serverInfo"]["name"], "signet-mcp");

    // A call needs no session: each request is answered on its own.
    let (status, headers, body) = post(&url, None, call_add()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type(&headers), "application/json");
    let reply: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["content"][0]["text"], "5", "{reply}");
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn sessions_mode_gives_a_session_id_and_event_streams() {
    let (http, headers, _) = initialize_raw(HttpMode::Sessions).await;
    let url = http.url();
    assert_eq!(content_type(&headers), "text/event-stream");
    let session = headers
        .get("mcp-session-id")
        .expect("a session id")
        .to_str()
        .unwrap()
        .to_owned();

    // Without the session a call is refused; with it, answered on an event stream.
    let (status, _, _) = post(&url, None, call_add()).await;
    assert!(status.is_client_error(), "{status}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(&url, Some(&session), initialized).await;
    assert!(status.is_success(), "{status}");
    let (status, headers, body) = post(&url, Some(&session), call_add()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(content_type(&headers), "text/event-stream");
    assert!(body.contains(r#""text":"5""#), "{body}");
    http.shutdown().await.unwrap();
}

/// A tool that never finishes on its own; counts the calls that began and the ones dropped.
#[derive(Default)]
struct Hang {
    started: AtomicUsize,
    dropped: AtomicUsize,
}

struct CountDrop(Arc<Hang>);

impl Drop for CountDrop {
    fn drop(&mut self) {
        self.0.dropped.fetch_add(1, Ordering::SeqCst);
    }
}

fn hang_tool(hang: Arc<Hang>) -> FnTool {
    FnTool::builder("hang")
        .description("Wait for a long time.")
        .schema(json!({"type": "object", "properties": {}}))
        .async_fn(move |_args| {
            let hang = hang.clone();
            async move {
                hang.started.fetch_add(1, Ordering::SeqCst);
                let _guard = CountDrop(hang);
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok::<_, String>("done")
            }
        })
}

async fn abandoned_call_is_dropped(mode: HttpMode) {
    let hang = Arc::new(Hang::default());
    let http = McpServer::new()
        .tool(AddTool)
        .tool(hang_tool(hang.clone()))
        .with_http_mode(mode)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let client = McpClient::builder()
        .call_timeout(Some(Duration::from_millis(300)))
        .connect(http.url())
        .await
        .unwrap();
    let timed_out = client.call_tool("hang", json!({})).await.unwrap_err();
    assert!(matches!(timed_out, Error::Timeout { .. }), "{timed_out}");
    assert_eq!(hang.started.load(Ordering::SeqCst), 1);
    // The server drops the call soon after the client gave up on it ...
    let mut waited = Duration::ZERO;
    while hang.dropped.load(Ordering::SeqCst) == 0 {
        assert!(
            waited < Duration::from_secs(5),
            "{mode:?}: the server still runs the call the client abandoned"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += Duration::from_millis(20);
    }
    // ... and the client goes on working.
    let result = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(signet_mcp::content::result_value(&result), "3");
    http.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_call_the_client_abandons_is_dropped_without_sessions() {
    abandoned_call_is_dropped(HttpMode::Stateless).await;
}

#[tokio::test]
async fn a_call_the_client_abandons_is_dropped_with_sessions() {
    abandoned_call_is_dropped(HttpMode::Sessions).await;
}

/// Serves `server` over HTTP with `axum::serve` as is (Nagle's algorithm left on, as most rmcp
/// servers run), counting the TCP connections it accepts.
async fn serve_counting(server: McpServer) -> (String, Arc<AtomicUsize>) {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    let listener = listener.tap_io(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let app = server
        .http_router("/mcp")
        .into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, accepted)
}

/// A tool that reports progress before it answers (so the answer comes as an event stream).
fn chatty_tool() -> FnTool {
    FnTool::builder("chatty")
        .description("Report progress, then answer.")
        .schema(json!({"type": "object", "properties": {}}))
        .async_fn(|_args| async {
            signet::tool::report_progress("working");
            Ok::<_, String>("done")
        })
}

async fn add_n_times(client: &McpClient, n: i64) {
    for i in 0..n {
        let result = client
            .call_tool("add", json!({"a": i, "b": 1}))
            .await
            .unwrap();
        assert_eq!(
            signet_mcp::content::result_value(&result),
            (i + 1).to_string()
        );
    }
}

#[tokio::test]
async fn the_client_keeps_its_connection_while_answers_are_json() {
    let server = McpServer::new().tool(AddTool).tool(chatty_tool());
    let (url, accepted) = serve_counting(server.with_http_mode(HttpMode::Stateless)).await;
    let client = McpClient::connect(url).await.unwrap();
    add_n_times(&client, 20).await;
    let kept = accepted.load(Ordering::SeqCst);
    assert!(kept <= 2, "{kept} connections for a handshake and 20 calls");

    // An answer that comes as an event stream (the call reported progress, and the caller
    // follows it) ends the reuse: from then on, one connection per request.
    let log = signet::tool::ProgressLog::new();
    let chatty = client.tool("chatty").unwrap();
    let answer = signet::tool::with_progress(log.sink(), chatty.call(json!({})))
        .await
        .unwrap();
    assert_eq!(answer, "done");
    let before = accepted.load(Ordering::SeqCst);
    add_n_times(&client, 10).await;
    assert_eq!(accepted.load(Ordering::SeqCst) - before, 10);
}

#[tokio::test]
async fn the_client_opens_a_connection_per_request_to_a_server_that_streams() {
    let server = McpServer::new().tool(AddTool);
    let (url, accepted) = serve_counting(server.with_http_mode(HttpMode::Sessions)).await;
    let client = McpClient::connect(url).await.unwrap();
    let before = accepted.load(Ordering::SeqCst);
    add_n_times(&client, 10).await;
    assert_eq!(accepted.load(Ordering::SeqCst) - before, 10);
}
