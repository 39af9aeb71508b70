//! The SSE example serves the ReAct event stream over HTTP; an SSE client reads every event, in
//! order, ending with `done`.

#[path = "../../examples/react_sse.rs"]
// The example, inside the test module named after it.
#[allow(dead_code, clippy::module_inception)]
mod react_sse;

use std::sync::Arc;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use signet::module::ReAct;

/// Serves `agent` as the example does, asks one question and reads every event.
async fn ask(agent: ReAct<react_sse::Ask>) -> Vec<eventsource_stream::Event> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = react_sse::router(Arc::new(agent));
    let server = tokio::spawn(async move { axum::serve(listener, router).await });
    let response = reqwest::get(format!("http://{address}/ask?question=2%2B3"))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = response
        .bytes_stream()
        .eventsource()
        .map(|e| e.unwrap())
        .collect()
        .await;
    server.abort();
    events
}

#[tokio::test]
async fn an_sse_client_receives_the_event_stream() {
    let events = ask(ReAct::<react_sse::Ask>::new()
        .tool(react_sse::AddTool)
        .with_lm(react_sse::scripted_lm())
        .with_mode(signet::module::ReActMode::Text))
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
            "answer_delta",
            "answer_done",
            "done",
        ]
    );
    let finished: serde_json::Value = serde_json::from_str(&events[3].data).unwrap();
    assert_eq!(
        finished["observation"],
        serde_json::json!({"kind": "output", "value": 5})
    );
    let delta: serde_json::Value = serde_json::from_str(&events[8].data).unwrap();
    assert_eq!(
        delta,
        serde_json::json!({"type": "answer_delta", "field": "answer", "text": "5"})
    );
    let done: serde_json::Value = serde_json::from_str(&events[10].data).unwrap();
    assert_eq!(done["output"]["answer"], "5");
    assert_eq!(done["iterations"], 2);
    assert_eq!(
        done["trajectory"]["steps"].as_array().map(Vec::len),
        Some(2)
    );
}

#[tokio::test]
async fn a_history_mode_run_streams_its_turns() {
    let events = ask(ReAct::<react_sse::Ask>::new()
        .tool(react_sse::AddTool)
        .with_lm(react_sse::scripted_history_lm())
        .with_mode(signet::module::ReActMode::History))
    .await;
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    // Both calls of the first turn start before either finishes: they run concurrently.
    assert_eq!(
        kinds,
        [
            "step_started",
            "thought",
            "tool_call_started",
            "tool_call_started",
            "tool_call_finished",
            "tool_call_finished",
            "step_started",
            "thought",
            "answer_delta",
            "answer_done",
            "done",
        ]
    );
    let mut sums: Vec<serde_json::Value> = events[4..6]
        .iter()
        .map(|e| {
            serde_json::from_str::<serde_json::Value>(&e.data).unwrap()["observation"]["value"]
                .clone()
        })
        .collect();
    sums.sort_by_key(|v| v.as_i64());
    assert_eq!(sums, [5, 9]);
    let done: serde_json::Value = serde_json::from_str(&events[10].data).unwrap();
    assert_eq!(done["output"]["answer"], "5 and 9");
    // Each turn is one history event: the two additions, then `submit`.
    assert_eq!(
        done["trajectory"]["history"].as_array().map(Vec::len),
        Some(2)
    );
}
