//! Load on a served endpoint: a burst any client can make is served whole; work past the line is
//! shed with a retry hint (HTTP `503` with `Retry-After`, the JSON-RPC error `-32000` with
//! `retry_after_ms`), and Signet's client comes back after it, within its call timeout.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use signet::tool::FnTool;
use signet_mcp::{Error, McpClient, McpServer};

use crate::AddTool;

/// A tool that runs until the test lets it finish, counting the calls that started.
fn gated() -> (FnTool, Arc<AtomicUsize>, Arc<tokio::sync::Semaphore>) {
    let started = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let (counter, gate) = (started.clone(), release.clone());
    let tool = FnTool::builder("wait")
        .description("Wait until the test lets it finish.")
        .schema(json!({"type": "object", "properties": {}}))
        .async_fn(move |_args| {
            let (counter, gate) = (counter.clone(), gate.clone());
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                let _ = gate.acquire().await.map(|p| p.forget());
                Ok::<_, String>("done")
            }
        });
    (tool, started, release)
}

async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn a_call_over_the_limit_waits_for_a_place_instead_of_being_refused() {
    let (wait, started, release) = gated();
    let server = McpServer::new().tool(wait).max_concurrent_calls(1);
    let http = server.clone().serve_http("127.0.0.1:0").await.unwrap();
    let client = Arc::new(McpClient::connect(http.url()).await.unwrap());
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.call_tool("wait", json!({})).await })
        })
        .collect();
    until("one call runs and one waits", || {
        let load = server.load();
        load.calls_running == 1 && load.calls_waiting == 1
    })
    .await;
    assert_eq!(started.load(Ordering::SeqCst), 1, "the second call waits");
    release.add_permits(2);
    for call in calls {
        call.await.unwrap().unwrap();
    }
    assert_eq!(started.load(Ordering::SeqCst), 2);
    assert_eq!(server.load().calls_shed, 0);
}

#[tokio::test]
async fn a_call_past_the_line_is_shed_with_a_hint_and_the_client_gives_up_at_its_timeout() {
    let (wait, _started, release) = gated();
    let server = McpServer::new()
        .tool(wait)
        .max_concurrent_calls(1)
        .max_waiting(0)
        .max_wait(Duration::from_millis(200));
    let http = server.clone().serve_http("127.0.0.1:0").await.unwrap();
    let client = Arc::new(
        McpClient::builder()
            .call_timeout(Some(Duration::from_millis(800)))
            .connect(http.url())
            .await
            .unwrap(),
    );
    let running = tokio::spawn({
        let client = McpClient::connect(http.url()).await.unwrap();
        async move { client.call_tool("wait", json!({})).await }
    });
    until("the first call runs", || server.load().calls_running == 1).await;

    let started = Instant::now();
    let error = client.call_tool("wait", json!({})).await.unwrap_err();
    match &error {
        Error::Busy {
            message,
            retry_after,
            attempts,
            ..
        } => {
            assert!(message.contains("busy"), "{message}");
            assert!(message.contains("max_concurrent_calls"), "{message}");
            assert_eq!(
                *retry_after,
                Duration::from_millis(50),
                "a quarter of 200 ms"
            );
            assert!(*attempts >= 2, "the client came back: {error}");
        }
        other => panic!("expected Error::Busy, got {other}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "within its timeout"
    );
    assert!(server.load().calls_shed >= 2);

    // On the wire, stateless: 503 with Retry-After, and the JSON-RPC error as the body.
    let reply = reqwest::Client::new()
        .post(http.url())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "wait", "arguments": {}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 503);
    assert_eq!(reply.headers()["retry-after"], "1");
    let body: serde_json::Value = reply.json().await.unwrap();
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["code"], -32000);
    assert_eq!(body["error"]["data"]["retry_after_ms"], 50);

    release.add_permits(1);
    running.await.unwrap().unwrap();
}

/// `clients` clients each making `calls` calls of `tool` at once; every answer, and how long the
/// burst took.
async fn burst(
    url: &str,
    clients: usize,
    calls: usize,
    tool: &'static str,
) -> (Vec<Result<serde_json::Value, Error>>, Duration) {
    let mut connected = Vec::new();
    for _ in 0..clients {
        connected.push(Arc::new(McpClient::connect(url).await.unwrap()));
    }
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, client) in connected.iter().enumerate() {
        for i in 0..calls {
            let client = client.clone();
            let (a, b) = (c as i64, i as i64);
            tasks.push(tokio::spawn(async move {
                client
                    .call_tool(tool, json!({"a": a, "b": b}))
                    .await
                    .map(|r| r.structured_content.unwrap_or_else(|| json!(r.content)))
            }));
        }
    }
    let mut answers = Vec::new();
    for task in tasks {
        answers.push(task.await.unwrap());
    }
    (answers, started.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_1000_calls_from_20_clients_is_served_whole_with_the_defaults() {
    let server = McpServer::new().tool(AddTool);
    let http = server.clone().serve_http("127.0.0.1:0").await.unwrap();
    let (answers, took) = burst(&http.url(), 20, 50, "add").await;
    let failed: Vec<String> = answers
        .iter()
        .filter_map(|a| a.as_ref().err().map(ToString::to_string))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of 1000 calls failed in {took:?}, the first: {}",
        failed.len(),
        failed[0]
    );
    let load = server.load();
    assert_eq!(
        (load.calls_shed, load.requests_shed),
        (0, 0),
        "nothing shed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_tool_sheds_and_every_client_recovers_within_its_timeout() {
    let slow = FnTool::builder("add")
        .description("Add two integers, slowly.")
        .schema(json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}))
        .async_fn(|args: serde_json::Value| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            Ok::<_, String>(json!({"sum": args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0)}))
        });
    // Two calls at once, two waiting, 50 ms of waiting: 50 calls at once cannot all wait.
    let server = McpServer::new()
        .tool(slow)
        .max_concurrent_calls(2)
        .max_waiting(2)
        .max_wait(Duration::from_millis(50));
    let http = server.clone().serve_http("127.0.0.1:0").await.unwrap();
    let (answers, took) = burst(&http.url(), 10, 5, "add").await;
    for (i, answer) in answers.iter().enumerate() {
        let (c, n) = ((i / 5) as i64, (i % 5) as i64);
        match answer {
            Ok(value) => assert_eq!(value["sum"], c + n, "call {i}"),
            Err(error) => panic!("call {i} did not recover in {took:?}: {error}"),
        }
    }
    assert!(
        server.load().calls_shed > 0,
        "the burst was meant to be shed: {:?}",
        server.load()
    );
}

/// A call's future is moved whole by every layer that awaits it (the caller's own futures, a
/// `tokio::spawn`, `join_all`); unoptimized builds copy it byte by byte each time. Signet's client
/// boxes the large parts (the retrying request, the traced call): the future was 10,368 bytes in
/// a test build before, 592 after, and a call's instructions in the client fell by three fifths
/// (docs/performance.md, "Sequential calls, measured again").
#[tokio::test]
async fn a_tool_calls_future_stays_small_enough_to_move_cheaply() {
    let http = McpServer::new()
        .tool(AddTool)
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let client = McpClient::connect(http.url()).await.unwrap();
    let call = client.call_tool("add", json!({"a": 1, "b": 2}));
    let size = std::mem::size_of_val(&call);
    assert!(
        size <= 1024,
        "McpClient::call_tool's future is {size} bytes"
    );
    drop(call);
}
