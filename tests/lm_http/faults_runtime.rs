//! Unbounded work from hostile or huge inputs meets a bound, and a typed error or an observation
//! naming it: thousands of tool calls in one reply, a tool output of megabytes, a history of huge
//! calls, endpoint-reported counts near `u64::MAX`, a sync tool that hangs and is called again and
//! again, and HTTP replies that trickle, never end, are too large or are not UTF-8.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use signet::lm::{
    CallHistory, Capabilities, Completion, Lm, LmError, LmRequest, Message, OpenAiLm, StreamEvent,
    ToolCall, Usage,
};
use signet::module::{Limits, Observation, ReAct, ReActMode};
use signet::testing::ScriptedLm;
use signet::tool::FnTool;
use signet::{Tool, ToolError};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::raw_http;
use crate::support;
use raw_http::read_request;
use support::*;

fn native_lm(replies: Vec<Completion>) -> Arc<ScriptedLm> {
    Arc::new(
        ScriptedLm::new(replies)
            .with_capabilities(Capabilities::default().with_function_calling(true)),
    )
}

fn answer(text: &str) -> Completion {
    Completion::text(format!(
        "[[ ## answer ## ]]\n{text}\n\n[[ ## completed ## ]]"
    ))
}

#[tokio::test]
async fn five_thousand_calls_in_one_reply_run_at_most_the_limit() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = runs.clone();
    let ping = FnTool::builder("ping")
        .description("Ping.")
        .schema(json!({"type": "object", "properties": {}}))
        .sync_fn(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>("pong")
        });
    let calls: Vec<ToolCall> = (0..5_000)
        .map(|i| ToolCall::new(format!("c{i}"), "ping", "{}"))
        .collect();
    let lm = native_lm(vec![Completion::tool_calls(calls), answer("done")]);
    let agent = ReAct::<Ask>::new()
        .tool(ping)
        .with_mode(ReActMode::Native)
        .with_lm(lm.clone());
    assert_eq!(Limits::default().max_tool_calls_per_turn, 16);

    let run = agent.call(ask()).await.unwrap();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        16,
        "only the first 16 calls ran"
    );
    let steps = &run.trajectory.steps;
    assert_eq!(steps.len(), 5_000, "every call has a result");
    assert!(matches!(&steps[15].observation, Observation::Output(v) if v == "pong"));
    for step in &steps[16..] {
        match &step.observation {
            Observation::Error(text) => {
                assert!(text.contains("max_tool_calls_per_turn"), "{text}");
                assert!(text.contains("5000 tool calls"), "{text}");
            }
            other => panic!("a call beyond the limit ran: {other:?}"),
        }
    }
    // The model reads a result for every call of its reply, so the conversation stays valid.
    let second = &lm.requests()[1];
    let results = second
        .messages
        .iter()
        .filter(|m| m.tool_call_id.is_some())
        .count();
    assert_eq!(results, 5_000);
}

#[tokio::test]
async fn a_huge_tool_output_is_kept_only_up_to_its_byte_limit() {
    let big = FnTool::builder("dump")
        .description("Dump.")
        .schema(json!({"type": "object", "properties": {}}))
        .sync_fn(|_| Ok::<_, String>("y".repeat(3 << 20)));
    let lm = native_lm(vec![
        Completion::tool_calls(vec![ToolCall::new("c1", "dump", "{}")]),
        answer("done"),
    ]);
    let agent = ReAct::<Ask>::new()
        .tool(big)
        .with_mode(ReActMode::Native)
        .with_lm(lm);
    assert_eq!(Limits::default().max_kept_observation_bytes, 1 << 20);
    let run = agent.call(ask()).await.unwrap();
    let Observation::Truncated { shown, full } = &run.trajectory.steps[0].observation else {
        panic!("expected a truncated observation")
    };
    assert!(shown.len() < 30_000);
    let full = full.as_str().unwrap();
    assert!(full.len() < (1 << 20) + 200, "kept {} bytes", full.len());
    assert!(full.starts_with("yyyy"));
    assert!(
        full.ends_with(&format!(
            "[... {} more bytes of {} were not kept (Limits::max_kept_observation_bytes)]",
            (3 << 20) - (1 << 20),
            3 << 20
        )),
        "{}",
        &full[full.len() - 120..]
    );

    // A smaller limit, and a JSON output (kept as its text).
    let json_output = Observation::Output(json!({"rows": vec!["é"; 1000]}))
        .limited_to(10)
        .kept_within(101);
    let Observation::Truncated { full, .. } = json_output else {
        panic!("expected a truncated observation")
    };
    let full = full.as_str().unwrap();
    assert!(full.contains("were not kept"), "{full}");
    assert!(full.split('\n').next().unwrap().len() <= 101);
}

#[test]
fn the_call_history_is_bounded_by_bytes_not_only_by_count() {
    let history = CallHistory::new().with_max_bytes(100_000);
    assert_eq!(CallHistory::new().max_bytes(), 64 << 20);
    for i in 0..100 {
        let request = LmRequest::new(vec![Message::user(format!("{i}{}", "x".repeat(10_000)))]);
        history.record("m", &request, &Completion::text("ok"));
    }
    assert!(history.bytes() <= 100_000, "{} bytes kept", history.bytes());
    assert!(history.len() < 10, "{} calls kept", history.len());
    assert!(!history.is_empty(), "the newest calls are kept");
    let newest = history.last(1);
    assert!(newest[0].messages[0].content.starts_with("99"));

    // A call larger than the whole budget is not kept.
    let huge = LmRequest::new(vec![Message::user("z".repeat(200_000))]);
    history.record("m", &huge, &Completion::text("ok"));
    assert!(history.bytes() <= 100_000);
    assert!(history.last(1)[0].messages[0].content.starts_with("99"));
}

#[test]
fn usage_counts_near_the_top_of_u64_saturate() {
    let mut total = Usage {
        prompt_tokens: u64::MAX - 1,
        completion_tokens: u64::MAX,
        lm_calls: u64::MAX,
        cache_hits: 1,
        adapter_fallbacks: 0,
        retries: u64::MAX,
        cached_prompt_tokens: u64::MAX,
        cost_nanousd: u64::MAX - 3,
        reasks: u64::MAX,
        stopped_replies: 4,
        fallbacks: u64::MAX,
        cache_write_prompt_tokens: u64::MAX,
    };
    total += Usage {
        prompt_tokens: 5,
        completion_tokens: u64::MAX,
        lm_calls: 1,
        cache_hits: 1,
        adapter_fallbacks: 1,
        retries: 7,
        cached_prompt_tokens: 2,
        cost_nanousd: 10,
        reasks: 1,
        stopped_replies: 1,
        fallbacks: 1,
        cache_write_prompt_tokens: 1,
    };
    assert_eq!(total.prompt_tokens, u64::MAX);
    assert_eq!(total.completion_tokens, u64::MAX);
    assert_eq!(total.lm_calls, u64::MAX);
    assert_eq!((total.cache_hits, total.adapter_fallbacks), (2, 1));
    assert_eq!(total.retries, u64::MAX);
    assert_eq!((total.reasks, total.stopped_replies), (u64::MAX, 5));
    assert_eq!(total.fallbacks, u64::MAX);
    assert_eq!(total.cache_write_prompt_tokens, u64::MAX);
    assert_eq!(
        (total.cached_prompt_tokens, total.cost_nanousd),
        (u64::MAX, u64::MAX)
    );
    assert_eq!(total.total_tokens(), u64::MAX);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_sync_tool_cannot_take_every_blocking_thread() {
    static RELEASE: AtomicBool = AtomicBool::new(false);
    let hangs = FnTool::builder("hangs_until_released")
        .description("Hangs.")
        .schema(json!({"type": "object", "properties": {}}))
        .sync_fn(|_| {
            while !RELEASE.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok::<_, String>("released")
        });
    let limit = signet::tool::max_blocking_calls_per_tool();
    assert_eq!(limit, signet::tool::DEFAULT_MAX_BLOCKING_CALLS_PER_TOOL);
    assert_eq!(limit, 16);
    // Each call times out, and its thread goes on running the body.
    for _ in 0..limit {
        let call = tokio::time::timeout(Duration::from_millis(20), hangs.call(json!({})));
        assert!(call.await.is_err(), "the call timed out");
    }
    // Without the bound this call would hang as the others did.
    let busy = tokio::time::timeout(Duration::from_secs(2), hangs.call(json!({})))
        .await
        .expect("the call fails at once")
        .unwrap_err();
    assert_eq!(
        busy,
        ToolError::Busy {
            tool: "hangs_until_released".into(),
            limit: 16
        }
    );
    assert!(busy.to_string().contains("still running"), "{busy}");

    // Calls that are awaited are not limited: many at once of another tool all run.
    let quick = FnTool::builder("quick")
        .description("Quick.")
        .schema(json!({"type": "object", "properties": {}}))
        .sync_fn(|_| {
            std::thread::sleep(Duration::from_millis(20));
            Ok::<_, String>("ok")
        });
    let all = futures::future::join_all((0..40).map(|_| quick.call(json!({})))).await;
    assert!(all.iter().all(Result::is_ok), "{all:?}");

    // Once the bodies return, the tool runs again.
    RELEASE.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match hangs.call(json!({})).await {
            Ok(value) => {
                assert_eq!(value, json!("released"));
                break;
            }
            Err(ToolError::Busy { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(other) => panic!("{other}"),
        }
    }
}

// --- HTTP: a raw server that misbehaves -------------------------------------------------------

/// Serves one connection: reads the request, then runs `reply` on the socket.
async fn raw_server<F, Fut>(reply: F) -> String
where
    F: FnOnce(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        read_request(&mut socket).await;
        reply(socket).await;
    });
    format!("http://{address}/v1")
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn text_chunk(text: &str) -> String {
    let chunk = json!({
        "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]
    });
    format!("data: {chunk}\n\n")
}

fn client(base_url: &str) -> signet::lm::OpenAiLmBuilder {
    OpenAiLm::builder("m")
        .base_url(base_url)
        .api_key("sk-test")
        .timeout(Duration::from_secs(5))
        .max_retries(0)
}

fn hi() -> LmRequest {
    LmRequest::new(vec![Message::user("hi")])
}

/// The stream's events, failing the test if it does not end within `within`.
async fn events_within(lm: &OpenAiLm, within: Duration) -> Vec<Result<StreamEvent, LmError>> {
    tokio::time::timeout(within, lm.stream(&hi()).collect::<Vec<_>>())
        .await
        .expect("the stream must end")
}

#[tokio::test]
async fn a_trickling_stream_ends_at_its_deadline() {
    // One byte every 100 ms: each wait is far below the 5 s timeout, the whole never ends.
    let url = raw_server(|mut socket| async move {
        let _ = socket.write_all(SSE_HEAD).await;
        let chunk = text_chunk("slow");
        for byte in chunk.bytes().cycle() {
            if socket.write_all(&[byte]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let lm = client(&url)
        .stream_deadline(Duration::from_millis(1_500))
        .build()
        .unwrap();
    let started = Instant::now();
    let events = events_within(&lm, Duration::from_secs(10)).await;
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(
        events.last(),
        Some(&Err(LmError::Timeout {
            after: Duration::from_millis(1_500)
        })),
        "{events:?}"
    );
}

#[tokio::test]
async fn an_endless_stream_stops_at_the_byte_limit() {
    let url = raw_server(|mut socket| async move {
        let _ = socket.write_all(SSE_HEAD).await;
        let chunk = text_chunk("more");
        while socket.write_all(chunk.as_bytes()).await.is_ok() {}
    })
    .await;
    let lm = client(&url).max_response_bytes(64 << 10).build().unwrap();
    let events = events_within(&lm, Duration::from_secs(20)).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Ok(StreamEvent::TextDelta(_))))
    );
    let last = events.last().unwrap().clone().unwrap_err();
    assert_eq!(last, LmError::ResponseTooLarge { limit: 64 << 10 });
    assert!(!last.is_transient());
    assert!(last.to_string().contains("65536 bytes"), "{last}");
}

#[tokio::test]
async fn an_oversized_body_is_refused_with_its_limit() {
    let body = json!({
        "id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "z".repeat(2 << 20)},
                     "finish_reason": "stop"}]
    })
    .to_string();
    let url = raw_server(move |mut socket| async move {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n",
            body.len()
        );
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(body.as_bytes()).await;
    })
    .await;
    let lm = client(&url).max_response_bytes(1 << 20).build().unwrap();
    let error = tokio::time::timeout(Duration::from_secs(20), lm.complete(&hi()))
        .await
        .expect("the call must end")
        .unwrap_err();
    assert_eq!(error, LmError::ResponseTooLarge { limit: 1 << 20 });
}

#[tokio::test]
async fn an_oversized_error_body_is_cut_not_read_whole() {
    let url = raw_server(|mut socket| async move {
        let head = "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\n\
                    connection: close\r\n\r\n";
        let _ = socket.write_all(head.as_bytes()).await;
        let junk = vec![b'e'; 64 << 10];
        // Endless: the client must stop reading at its limit.
        while socket.write_all(&junk).await.is_ok() {}
    })
    .await;
    let lm = client(&url).max_response_bytes(256 << 10).build().unwrap();
    let error = tokio::time::timeout(Duration::from_secs(20), lm.complete(&hi()))
        .await
        .expect("the call must end")
        .unwrap_err();
    assert!(
        matches!(error, LmError::Server { status: 500, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn invalid_utf8_in_the_event_stream_is_a_typed_error() {
    let url = raw_server(|mut socket| async move {
        let _ = socket.write_all(SSE_HEAD).await;
        let _ = socket.write_all(text_chunk("fine").as_bytes()).await;
        let _ = socket
            .write_all(b"data: {\"choices\": [\xff\xfe\xfd]}\n\n")
            .await;
        let _ = socket.shutdown().await;
    })
    .await;
    let lm = client(&url).build().unwrap();
    let events = events_within(&lm, Duration::from_secs(10)).await;
    let error = events
        .iter()
        .find_map(|e| e.as_ref().err())
        .unwrap_or_else(|| panic!("expected an error: {events:?}"));
    assert!(
        matches!(error, LmError::InvalidResponse { .. }),
        "{error:?}"
    );
    assert!(!events.iter().any(|e| matches!(e, Ok(StreamEvent::Done(_)))));
}
