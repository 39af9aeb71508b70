//! `OpenAiLmBuilder::max_concurrent_requests`: at most N requests reach the server at once, the
//! others wait their turn (first come, first served) without that wait counting toward their
//! timeout, and an open stream holds its turn until it ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::Response;
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Value, json};
use signet::lm::{Completion, Lm, LmError, LmRequest, Message, OpenAiLm, StreamEvent};

/// What the server saw: requests in flight now, the most at once, and the order they arrived.
#[derive(Default)]
struct Seen {
    now: AtomicUsize,
    most: AtomicUsize,
    order: std::sync::Mutex<Vec<String>>,
}

/// A server that holds each completion `delay` before answering with the request's text; a
/// streamed request gets its answer as one chunk after the same delay.
async fn slow_server(delay: Duration) -> (String, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let app = Router::new()
        .route(
            "/v1/chat/completions",
            post(
                move |State(seen): State<Arc<Seen>>, axum::Json(body): axum::Json<Value>| async move {
                    let text = body["messages"][0]["content"].as_str().unwrap_or("").to_owned();
                    seen.order.lock().unwrap().push(text.clone());
                    let now = seen.now.fetch_add(1, Ordering::SeqCst) + 1;
                    seen.most.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    seen.now.fetch_sub(1, Ordering::SeqCst);
                    if body["stream"] == json!(true) {
                        let chunk = json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": "stop"}]});
                        let sse = format!("data: {chunk}\n\ndata: [DONE]\n\n");
                        return Response::builder()
                            .header(header::CONTENT_TYPE, "text/event-stream")
                            .body(Body::from(sse))
                            .unwrap();
                    }
                    let reply = json!({
                        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    });
                    Response::builder()
                        .header(header::CONTENT_TYPE, "application/json")
                        .body(Body::from(reply.to_string()))
                        .unwrap()
                },
            ),
        )
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

fn limited(url: &str, limit: usize, timeout: Duration) -> OpenAiLm {
    OpenAiLm::builder("m")
        .base_url(url)
        .api_key("sk-test-key")
        .max_retries(0)
        .timeout(timeout)
        .max_concurrent_requests(limit)
        .build()
        .unwrap()
}

fn ask(text: &str) -> LmRequest {
    LmRequest::new(vec![Message::user(text)])
}

/// `n` calls (`call 0`, `call 1`, ..) together, the i-th started `i * apart` after the first.
async fn ask_at_once(lm: &OpenAiLm, n: u32, apart: Duration) -> Vec<Result<Completion, LmError>> {
    let calls = (0..n).map(|i| async move {
        tokio::time::sleep(apart * i).await;
        lm.complete(&ask(&format!("call {i}"))).await
    });
    futures::future::join_all(calls).await
}

#[tokio::test]
async fn no_more_than_the_limit_reach_the_server_at_once() {
    let (url, seen) = slow_server(Duration::from_millis(200)).await;
    let lm = limited(&url, 3, Duration::from_secs(30));
    let replies = ask_at_once(&lm, 12, Duration::ZERO).await;
    for (i, reply) in replies.into_iter().enumerate() {
        assert_eq!(
            reply.unwrap().text.as_deref(),
            Some(format!("call {i}").as_str())
        );
    }
    assert_eq!(seen.most.load(Ordering::SeqCst), 3);

    // Without the limit, the same calls arrive together (each is held long enough for all
    // twelve to be sent on a busy machine).
    let (url, seen) = slow_server(Duration::from_millis(1000)).await;
    let lm = OpenAiLm::builder("m")
        .base_url(&url)
        .api_key("sk-test-key")
        .build()
        .unwrap();
    ask_at_once(&lm, 12, Duration::ZERO).await;
    assert_eq!(seen.most.load(Ordering::SeqCst), 12);
}

#[tokio::test]
async fn calls_take_their_turns_in_order_and_waiting_is_not_timed() {
    // One at a time, 300 ms each: the fourth call waits 900 ms for its turn, more than its
    // 700 ms timeout, and still succeeds, since only the request itself is timed.
    let (url, seen) = slow_server(Duration::from_millis(300)).await;
    let lm = limited(&url, 1, Duration::from_millis(700));
    // Started 10 ms apart: each call is queued before the next one starts.
    let replies = ask_at_once(&lm, 4, Duration::from_millis(10)).await;
    assert!(replies.iter().all(Result::is_ok), "{replies:?}");
    assert_eq!(
        *seen.order.lock().unwrap(),
        ["call 0", "call 1", "call 2", "call 3"]
    );
    assert_eq!(seen.most.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_open_stream_holds_its_turn_until_it_ends() {
    let (url, seen) = slow_server(Duration::from_millis(20)).await;
    let lm = limited(&url, 1, Duration::from_secs(30));
    let request = ask("streamed");
    let mut stream = lm.stream(&request);
    // The stream opens and delivers its text; it has not ended yet.
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        matches!(first, StreamEvent::TextDelta(ref text) if text == "streamed"),
        "{first:?}"
    );
    // A call now must wait for the stream's turn.
    let after = ask("after");
    let waiting = lm.complete(&after);
    let mut waiting = std::pin::pin!(waiting);
    let early = tokio::time::timeout(Duration::from_millis(200), &mut waiting).await;
    assert!(
        early.is_err(),
        "the call was sent while the stream held the only turn"
    );
    assert_eq!(*seen.order.lock().unwrap(), ["streamed"]);
    // Once the stream is dropped, the call goes.
    drop(stream);
    let reply = waiting.await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("after"));
}
