//! `OpenAiLmBuilder::http2`: the HTTP version a client speaks, against a local server that answers
//! with the version it received (axum, HTTP/1.1 and h2c on one port).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::extract::Request;
use axum::routing::post;
use axum::serve::ListenerExt;
use serde_json::json;
use signet::lm::{Lm, LmError, LmRequest, Message, OpenAiLm};
use tokio::io::AsyncWriteExt;

use crate::raw_http;

/// A server whose every completion is the HTTP version of the request (`HTTP/1.1`, `HTTP/2.0`);
/// returns its base URL and the number of connections it has accepted.
async fn version_server() -> (String, Arc<AtomicUsize>) {
    let app = Router::new().route(
        "/v1/chat/completions",
        post(|request: Request| async move {
            let version = format!("{:?}", request.version());
            axum::Json(json!({
                "choices": [{"message": {"role": "assistant", "content": version}, "finish_reason": "stop"}],
            }))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    let listener = listener.tap_io(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, connections)
}

fn client(url: &str, http2: bool) -> OpenAiLm {
    OpenAiLm::builder("m")
        .base_url(url)
        .api_key("sk-test-key")
        .max_retries(0)
        .http2(http2)
        .build()
        .unwrap()
}

async fn version_of(lm: &OpenAiLm) -> String {
    let completion = lm
        .complete(&LmRequest::new(vec![Message::user("which version?")]))
        .await
        .unwrap();
    completion.text.unwrap()
}

#[tokio::test]
async fn the_default_is_http1_and_http2_is_spoken_when_asked() {
    let (url, _) = version_server().await;
    assert_eq!(version_of(&client(&url, false)).await, "HTTP/1.1");
    assert_eq!(version_of(&client(&url, true)).await, "HTTP/2.0");
}

#[tokio::test]
async fn http2_carries_concurrent_calls_on_one_connection() {
    let (url, connections) = version_server().await;
    let lm = client(&url, true);
    let calls = (0..50).map(|_| version_of(&lm));
    let versions = futures::future::join_all(calls).await;
    assert!(versions.iter().all(|v| v == "HTTP/2.0"), "{versions:?}");
    assert_eq!(connections.load(Ordering::SeqCst), 1);

    // Spread over three connections, in turn.
    let (url, connections) = version_server().await;
    let lm = OpenAiLm::builder("m")
        .base_url(&url)
        .http2(true)
        .http2_connections(3)
        .build()
        .unwrap();
    let calls = (0..30).map(|_| version_of(&lm));
    let versions = futures::future::join_all(calls).await;
    assert!(versions.iter().all(|v| v == "HTTP/2.0"), "{versions:?}");
    assert_eq!(connections.load(Ordering::SeqCst), 3);

    // HTTP/1.1: one connection per call in flight.
    let (url, connections) = version_server().await;
    let lm = client(&url, false);
    let calls = (0..50).map(|_| version_of(&lm));
    futures::future::join_all(calls).await;
    assert!(connections.load(Ordering::SeqCst) > 1);
}

#[tokio::test]
async fn http2_to_a_server_that_speaks_only_http1_is_a_typed_error() {
    // A server that answers anything it receives as HTTP/1.1 would (with a 400), then closes.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                raw_http::read_request(&mut socket).await;
                let _ = socket
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                    .await;
            });
        }
    });
    let error = client(&url, true)
        .complete(&LmRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap_err();
    assert!(matches!(error, LmError::Connect { .. }), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&url), "{message}");
    assert!(message.contains("speaks only HTTP/1.1"), "{message}");
}
