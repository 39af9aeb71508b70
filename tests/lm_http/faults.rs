//! Fault injection against a raw TCP "server" that misbehaves in ways a mock HTTP framework cannot
//! express: a stream cut off mid-reply, a stream that stalls, a truncated body, a server that goes
//! away between two steps of an agent. Each fault has a typed error, no hang and no panic.
//! (429 bursts, 500s, slow first bytes and malformed bodies are in `lm_http.rs`.)

use std::time::Duration;

use futures::StreamExt;
use signet::lm::{Lm, LmError, LmRequest, Message, OpenAiLm, StreamEvent};
use signet::module::{Error, Observation, ReAct};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::raw_http;
use crate::support;
use raw_http::read_request;
use support::*;

/// What the fake server does with one connection.
#[derive(Clone)]
enum Behaviour {
    /// Send these bytes after the request, then close the connection.
    SendThenClose(Vec<u8>),
    /// Send these bytes, then keep the connection open and silent.
    SendThenStall(Vec<u8>),
}

/// Serves each accepted connection with the next behaviour; after the list, stops listening
/// (later connections are refused).
async fn fake_server(behaviours: Vec<Behaviour>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        for behaviour in behaviours {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(serve(socket, behaviour));
        }
        // Dropping the listener: the port now refuses connections.
    });
    format!("http://{address}/v1")
}

async fn serve(mut socket: TcpStream, behaviour: Behaviour) {
    read_request(&mut socket).await;
    match behaviour {
        Behaviour::SendThenClose(bytes) => {
            let _ = socket.write_all(&bytes).await;
            let _ = socket.shutdown().await;
        }
        Behaviour::SendThenStall(bytes) => {
            let _ = socket.write_all(&bytes).await;
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    }
}

fn sse_head() -> String {
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_owned()
}

fn sse_text(text: &str) -> String {
    let chunk = serde_json::json!({
        "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]
    });
    format!("data: {chunk}\n\n")
}

fn json_response(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn lm(base_url: &str) -> OpenAiLm {
    OpenAiLm::builder("m")
        .base_url(base_url)
        .api_key("sk-test")
        .timeout(Duration::from_millis(800))
        .max_retries(0)
        .build()
        .unwrap()
}

fn ask() -> LmRequest {
    LmRequest::new(vec![Message::user("hi")])
}

#[tokio::test]
async fn a_stream_cut_off_mid_reply_is_an_error_not_a_short_answer() {
    let bytes = format!(
        "{}{}{}",
        sse_head(),
        sse_text("The answer"),
        sse_text(" is")
    );
    let url = fake_server(vec![Behaviour::SendThenClose(bytes.into_bytes())]).await;
    let lm = lm(&url);
    let events: Vec<Result<StreamEvent, LmError>> = lm.stream(&ask()).collect().await;
    let deltas: Vec<&StreamEvent> = events.iter().filter_map(|e| e.as_ref().ok()).collect();
    assert!(
        !deltas.iter().any(|e| matches!(e, StreamEvent::Done(_))),
        "a cut-off stream must not end as a complete reply: {events:?}"
    );
    assert!(
        matches!(events.last(), Some(Err(LmError::InvalidResponse { .. }))),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_stream_that_stalls_times_out() {
    let bytes = format!("{}{}", sse_head(), sse_text("thinking"));
    let url = fake_server(vec![Behaviour::SendThenStall(bytes.into_bytes())]).await;
    let lm = lm(&url);
    let started = std::time::Instant::now();
    let events: Vec<Result<StreamEvent, LmError>> = lm.stream(&ask()).collect().await;
    assert!(
        matches!(events.first(), Some(Ok(StreamEvent::TextDelta(t))) if t == "thinking"),
        "{events:?}"
    );
    assert!(
        matches!(events.last(), Some(Err(LmError::Timeout { .. }))),
        "{events:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "no hang");
}

#[tokio::test]
async fn a_truncated_json_body_is_an_invalid_response() {
    let body =
        r#"{"id": "c", "choices": [{"index": 0, "message": {"role": "assistant", "content": "hel"#;
    let url = fake_server(vec![Behaviour::SendThenClose(json_response(body))]).await;
    let error = lm(&url).complete(&ask()).await.unwrap_err();
    assert!(
        matches!(error, LmError::InvalidResponse { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_server_that_stalls_before_answering_times_out() {
    let url = fake_server(vec![Behaviour::SendThenStall(Vec::new())]).await;
    let error = lm(&url).complete(&ask()).await.unwrap_err();
    assert!(matches!(error, LmError::Timeout { .. }), "{error:?}");
}

#[tokio::test]
async fn an_agent_whose_server_goes_away_fails_with_its_trajectory() {
    let step = "[[ ## next_thought ## ]]\nadd them\n\n[[ ## next_tool_name ## ]]\nadd\n\n[[ ## next_tool_args ## ]]\n{\"a\": 2, \"b\": 3}\n\n[[ ## completed ## ]]";
    let body = serde_json::json!({
        "id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": step}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
    .to_string();
    // One good reply, then the port refuses connections.
    let url = fake_server(vec![Behaviour::SendThenClose(json_response(&body))]).await;
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm(&url));
    let error = agent
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap_err();
    assert!(
        matches!(error.call_error(), Some(Error::Lm(LmError::Connect { .. }))),
        "{error:?}"
    );
    let trajectory = &error.trajectory;
    assert_eq!(trajectory.steps.len(), 1);
    assert_eq!(
        trajectory.steps[0].observation,
        Observation::Output(serde_json::json!(5))
    );
}
