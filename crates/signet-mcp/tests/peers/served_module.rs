//! Modules served as MCP tools (`McpServer::module`), called by the official Python SDK's client
//! (`scripts/mcp/python_client.py`) and by signet-mcp's own: typed results, a ReAct run's steps as
//! progress notifications, and a client's cancellation stopping the run — over HTTP without
//! sessions (the default) and with them.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use signet::prelude::*;
use signet::testing::{ScriptedLm, ScriptedReply};
use signet::tool::{FnTool, ProgressLog, with_progress};
use signet_mcp::{HttpMode, HttpServer, McpClient, McpServer};

/// Translate the text into French.
#[derive(Signature)]
struct Translate {
    /// The English text.
    #[input]
    text: String,
    #[output]
    french: String,
}

/// Count to the target with the tick tool.
#[derive(Signature)]
struct Count {
    /// Where to stop.
    #[input]
    target: u32,
    #[output]
    total: u32,
}

/// How often `tick` began, ended, and was dropped before it ended.
#[derive(Default)]
struct Ticks {
    started: AtomicUsize,
    finished: AtomicUsize,
    dropped: AtomicUsize,
}

/// Counts a tick as dropped unless the tick got to its end.
struct DropWatch(Arc<Ticks>, bool);

impl Drop for DropWatch {
    fn drop(&mut self) {
        if !self.1 {
            self.0.dropped.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A tool that takes `delay` and counts its calls.
fn tick(ticks: &Arc<Ticks>, delay: Duration) -> FnTool {
    let ticks = ticks.clone();
    FnTool::builder("tick")
        .description("Count one.")
        .schema(json!({"type": "object", "properties": {}}))
        .async_fn(move |_args| {
            let ticks = ticks.clone();
            async move {
                ticks.started.fetch_add(1, Ordering::SeqCst);
                let mut watch = DropWatch(ticks.clone(), false);
                tokio::time::sleep(delay).await;
                watch.1 = true;
                Ok::<_, String>(ticks.finished.fetch_add(1, Ordering::SeqCst) + 1)
            }
        })
}

/// A counting agent whose model calls `tick` `ticks_before_finish` times, then finishes.
fn counter(ticks: &Arc<Ticks>, delay: Duration, calls: usize) -> (ReAct<Count>, Arc<ScriptedLm>) {
    let mut replies: Vec<ScriptedReply> = (0..calls)
        .map(|_| ScriptedReply::tool("tick", json!({})).thought("Count once more."))
        .collect();
    replies.push(ScriptedReply::finish(json!({"total": calls})));
    let lm = Arc::new(ScriptedLm::replies(replies));
    let agent = ReAct::<Count>::new()
        .tool(tick(ticks, delay))
        .with_lm(lm.clone())
        .with_limits(Limits::default().max_iters(calls + 1));
    (agent, lm)
}

struct Served {
    http: HttpServer,
    slow_ticks: Arc<Ticks>,
    slow_lm: Arc<ScriptedLm>,
}

/// `translate` (a Predict), `count` and `count_again` (ReAct agents with one tick) and `count_slowly` (one whose 40
/// ticks take 200 ms each), over streamable HTTP in `mode`.
async fn serve(mode: HttpMode) -> Served {
    let translator = Predict::<Translate>::new().with_lm(ScriptedLm::replies([
        ScriptedReply::answer(json!({"french": "Bonjour"})),
        ScriptedReply::answer(json!({"french": "Bonjour"})),
    ]));
    let (quick, _) = counter(&Arc::default(), Duration::ZERO, 1);
    // Its tick takes a while, so the first messages surely arrive while the call waits.
    let (quick_again, _) = counter(&Arc::default(), Duration::from_millis(100), 1);
    let slow_ticks = Arc::new(Ticks::default());
    let (slow, slow_lm) = counter(&slow_ticks, Duration::from_millis(200), 40);
    let http = McpServer::new()
        .module::<Translate>("translate", translator)
        .module::<Count>("count", quick)
        .module::<Count>("count_again", quick_again)
        .module::<Count>("count_slowly", slow)
        .with_http_mode(mode)
        .serve_http("127.0.0.1:0")
        .await
        .expect("serve");
    Served {
        http,
        slow_ticks,
        slow_lm,
    }
}

fn tool_listing<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {}", report["tools"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_client_calls_served_modules_follows_progress_and_cancels_a_run() {
    python_client_calls_follows_and_cancels(HttpMode::Stateless).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_over_http_sessions() {
    python_client_calls_follows_and_cancels(HttpMode::Sessions).await;
}

async fn python_client_calls_follows_and_cancels(mode: HttpMode) {
    let served = serve(mode).await;
    let plan = json!({"calls": [
        {"name": "translate", "arguments": {"text": "Hello"}},
        {"name": "translate", "arguments": {"txt": "Hello"}},
        {"name": "count", "arguments": {"target": 1}, "progress": true},
        {"name": "count_slowly", "arguments": {"target": 40}, "cancel_after_progress": 4,
         "wait_after": 1.5}
    ]});
    let report = common::python_client(&["--http", &served.http.url()], &plan).await;

    // The listing: inputs as arguments, outputs as the output schema.
    let translate = tool_listing(&report, "translate");
    assert_eq!(translate["description"], "Translate the text into French.");
    assert_eq!(
        translate["inputSchema"]["properties"]["text"],
        json!({"type": "string", "description": "The English text."})
    );
    assert_eq!(translate["inputSchema"]["required"], json!(["text"]));
    assert_eq!(
        translate["outputSchema"],
        json!({"type": "object", "properties": {"french": {"type": "string"}}, "required": ["french"]})
    );

    let results = report["results"].as_array().unwrap();
    // A typed result: structured content, and the same object as text.
    assert_eq!(
        results[0]["structuredContent"],
        json!({"french": "Bonjour"})
    );
    assert_eq!(
        results[0]["content"],
        json!([{"type": "text", "text": "{\"french\":\"Bonjour\"}"}])
    );
    // Arguments that do not fit the inputs: a tool error naming the problem, no LM call.
    assert_eq!(results[1]["isError"], true, "{}", results[1]);
    let message = results[1]["content"][0]["text"].as_str().unwrap();
    assert!(
        message.contains("missing required argument `text`"),
        "{message}"
    );

    // The ReAct run: its answer, and each step as a numbered progress message.
    assert_eq!(
        results[2]["structuredContent"],
        json!({"total": 1}),
        "{}",
        results[2]
    );
    let progress = results[2]["progress"].as_array().unwrap();
    let numbers: Vec<f64> = progress.iter().map(|p| p[0].as_f64().unwrap()).collect();
    let expected: Vec<f64> = (1..=numbers.len()).map(|n| n as f64).collect();
    assert_eq!(numbers, expected, "{progress:?}");
    let messages: Vec<&str> = progress.iter().map(|p| p[1].as_str().unwrap()).collect();
    assert_eq!(
        messages[..3],
        ["turn 1", "thought: Count once more.", "calling tick {}"]
    );
    assert!(
        messages[3].starts_with("tick returned after "),
        "{messages:?}"
    );
    assert!(messages.contains(&"turn 2"), "{messages:?}");

    // The cancelled run: the client stopped waiting after four progress messages ...
    let cancelled = &results[3];
    assert_eq!(cancelled["cancelled"], true, "{cancelled}");
    assert!(cancelled["progress"].as_array().unwrap().len() >= 4);
    // ... and the server stopped the run while the session stayed open (the client waited 1.5 s
    // before leaving, time for 7 more ticks): no tick starts any more, the model is asked no
    // more, and the tick in flight, if any, was dropped.
    let started = served.slow_ticks.started.load(Ordering::SeqCst);
    let remaining = served.slow_lm.remaining();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(served.slow_ticks.started.load(Ordering::SeqCst), started);
    assert_eq!(served.slow_lm.remaining(), remaining);
    assert!(
        started <= 3,
        "{started} ticks began: the run went on after the cancellation"
    );
    let finished = served.slow_ticks.finished.load(Ordering::SeqCst);
    let dropped = served.slow_ticks.dropped.load(Ordering::SeqCst);
    assert_eq!(
        finished + dropped,
        started,
        "every tick ended or was dropped"
    );
    served.http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signet_s_own_client_reads_a_served_module_s_typed_result() {
    signet_client_reads_typed_results(HttpMode::Stateless).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signet_s_own_client_reads_the_same_over_http_sessions() {
    signet_client_reads_typed_results(HttpMode::Sessions).await;
}

async fn signet_client_reads_typed_results(mode: HttpMode) {
    let served = serve(mode).await;
    let client = McpClient::connect(served.http.url()).await.unwrap();
    let count = client.tool("count").unwrap();
    assert_eq!(
        count.output_schema().unwrap()["properties"]["total"]["type"],
        "integer"
    );
    let result = client
        .call_tool("count", json!({"target": 1}))
        .await
        .unwrap();
    assert_eq!(result.structured_content, Some(json!({"total": 1})));
    // A caller that follows progress gets the server's messages through the client's tool.
    let log = ProgressLog::new();
    let count_again = client.tool("count_again").unwrap();
    let counted = with_progress(log.sink(), count_again.call(json!({"target": 1})))
        .await
        .unwrap();
    assert_eq!(counted, json!({"total": 1}));
    // rmcp handles notifications concurrently: messages sent close together may arrive swapped,
    // and those that arrive after the reply are not passed on.
    let seen = log.lines();
    for message in ["turn 1", "thought: Count once more.", "calling tick {}"] {
        assert!(seen.iter().any(|m| m == message), "{message} in {seen:?}");
    }
    // As a Signet tool the result is the object itself.
    let translated = common::call(&client, "translate", json!({"text": "Hello"}))
        .await
        .unwrap();
    assert_eq!(translated, json!({"french": "Bonjour"}));
    client.close().await.unwrap();
    served.http.shutdown().await.unwrap();
}
