//! The SSE example serves the ReAct event stream over HTTP; an SSE client reads every event, in
//! order, ending with `done`.

#[path = "../examples/react_sse.rs"]
#[allow(dead_code)]
mod react_sse;

use std::sync::Arc;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use signet::module::ReAct;

#[tokio::test]
async fn an_sse_client_receives_the_event_stream() {
    let agent = Arc::new(
        ReAct::<react_sse::Ask>::new()
            .tool(react_sse::AddTool)
            .with_lm(react_sse::scripted_lm())
            .with_mode(signet::module::ReActMode::Text),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, react_sse::router(agent)).await });

    let response = reqwest::get(format!("http://{address}/ask?question=2%2B3"))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events: Vec<eventsource_stream::Event> = response
        .bytes_stream()
        .eventsource()
        .map(|e| e.unwrap())
        .collect()
        .await;
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "step_started",
            "thought",
            "tool_call_started",
            "tool_call_finished",
            "step_started",
            "thought",
            "tool_call_started",
            "tool_call_finished",
            "done",
        ]
    );
    let finished: serde_json::Value = serde_json::from_str(&events[3].data).unwrap();
    assert_eq!(
        finished["observation"],
        serde_json::json!({"kind": "output", "value": 5})
    );
    let done: serde_json::Value = serde_json::from_str(&events[8].data).unwrap();
    assert_eq!(done["output"]["answer"], "5");
    assert_eq!(
        done["trajectory"]["steps"].as_array().map(Vec::len),
        Some(2)
    );
    server.abort();
}
