//! What the provider tests share: a mock server's script (replies in turn, streamed when the
//! request asks to stream), the conversation each sends, and the structured Predict each runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use signet::lm::{Content, Lm, LmRequest, Message, RetryPolicy, ToolCall};
use signet::media::ContentPart;
use signet::module::{Predict, ReAct, ReActEvent, Trajectory};
use wiremock::{Request, Respond, ResponseTemplate};

/// Answers with `replies` in turn: as the server-sent events `as_events` writes for a reply when
/// the request body says `"stream": true` (as every provider's server does), else as JSON; a
/// request past the script gets a 500.
pub struct Script {
    replies: Vec<Value>,
    next: AtomicUsize,
    as_events: fn(&Value) -> String,
}

impl Script {
    pub fn new(replies: Vec<Value>, as_events: fn(&Value) -> String) -> Script {
        Script {
            replies,
            next: AtomicUsize::new(0),
            as_events,
        }
    }
}

impl Respond for Script {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let streamed = serde_json::from_slice::<Value>(&request.body)
            .is_ok_and(|body| body["stream"] == json!(true));
        match self.replies.get(index) {
            Some(reply) if streamed => ResponseTemplate::new(200)
                .set_body_raw((self.as_events)(reply), "text/event-stream"),
            Some(reply) => ResponseTemplate::new(200).set_body_json(reply),
            None => ResponseTemplate::new(500).set_body_string("no reply left"),
        }
    }
}

/// A conversation with a system prompt, a user message of `Look: ` and `media`, an assistant
/// turn of parallel `calls`, and their `results` (`(call id, text)`, in order).
pub fn conversation(
    media: Vec<ContentPart>,
    calls: Vec<ToolCall>,
    results: [(&str, &str); 2],
) -> LmRequest {
    let mut parts = vec![ContentPart::Text("Look: ".into())];
    parts.extend(media);
    let mut messages = vec![
        Message::system("You add."),
        Message::user(Content::from_parts(parts)),
        Message::assistant_tool_calls(calls),
    ];
    messages.extend(results.map(|(id, text)| Message::tool_result(id, text)));
    LmRequest::new(messages)
}

/// The answer a `Predict<Ask>` on the JSON adapter reads from `lm` for "Capital of France?".
pub async fn structured_answer(lm: impl Lm + 'static) -> String {
    Predict::<crate::support::Ask>::new()
        .with_lm(lm)
        .with_adapter(signet::adapter::JsonAdapter::new())
        .call(crate::support::AskInput {
            question: "Capital of France?".into(),
        })
        .await
        .expect("a structured answer")
        .answer
}

/// A native ReAct run of `agent` on "40 + 2?", streamed (also checking that it never fell back to
/// text mode) or not: its output and trajectory.
pub async fn native_run(
    agent: &ReAct<crate::support::Ask>,
    streamed: bool,
) -> (crate::support::AskOutput, Trajectory) {
    if !streamed {
        let run = agent.call(crate::support::ask()).await.unwrap();
        return (run.output, run.trajectory);
    }
    let events: Vec<ReActEvent<crate::support::AskOutput>> =
        agent.stream(crate::support::ask()).collect().await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ReActEvent::TextMode { .. }))
    );
    let Some(ReActEvent::Done {
        output, trajectory, ..
    }) = events.last()
    else {
        panic!("the run did not finish: {:?}", events.last());
    };
    (output.clone(), trajectory.clone())
}

/// The default retry policy without its waits (1 ms backoff, no jitter), for tests that retry.
pub fn quick_retries() -> RetryPolicy {
    RetryPolicy::default()
        .with_initial_backoff(Duration::from_millis(1))
        .with_jitter(false)
}
