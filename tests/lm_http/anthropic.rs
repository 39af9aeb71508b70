//! `AnthropicLm` against a mock Messages server (the wire shapes of Anthropic's API reference,
//! <https://docs.anthropic.com/en/api/messages> and `/en/docs/build-with-claude/streaming`):
//! requests, replies, parallel tool calls, images, structured output, streaming, usage with cache
//! tokens, each error kind with its retry behaviour, secrets, and a fallback to another LM.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use signet::lm::{
    AnthropicLm, FallbackLm, FinishReason, HistoryLm, Lm, LmError, LmRequest, Message, OpenAiLm,
    Pricing, ResponseFormat, RetryPolicy, StreamEvent, ToolCall, ToolDefinition,
};
use signet::media::{ContentPart, Image};
use signet::module::{Observation, Predict, ReAct};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::scripted::{Script, conversation, native_run, quick_retries, structured_answer};
use crate::support;
use support::*;

/// A client of `server` that retries quickly.
fn client(server: &MockServer) -> AnthropicLm {
    AnthropicLm::builder("claude-test")
        .base_url(server.uri())
        .api_key("sk-ant-secret-123")
        .retry(quick_retries())
        .build()
        .expect("a valid client")
}

/// A whole reply with `content` blocks.
fn reply(content: Value, stop_reason: &str) -> Value {
    json!({"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-test",
           "content": content, "stop_reason": stop_reason, "stop_sequence": null,
           "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0,
                     "cache_read_input_tokens": 2000, "output_tokens": 9}})
}

fn text_reply(text: &str) -> Value {
    reply(json!([{"type": "text", "text": text}]), "end_turn")
}

/// An SSE body of `(event, data)` pairs.
fn sse(events: &[(&str, Value)]) -> String {
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// The events Anthropic streams for a reply with `text` and then two parallel tool calls.
fn streamed_reply(text: &str) -> String {
    sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_02",
            "type": "message", "role": "assistant", "model": "claude-test", "content": [],
            "stop_reason": null, "usage": {"input_tokens": 30, "cache_read_input_tokens": 70,
            "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        ("ping", json!({"type": "ping"})),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": &text[..2]}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": &text[2..]}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_a", "name": "add", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 2, "}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": "\"b\": 3}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_b", "name": "add", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 1, \"b\": 1}"}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 2}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use",
            "stop_sequence": null}, "usage": {"output_tokens": 25}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ])
}

#[tokio::test]
async fn a_conversation_with_parallel_tool_results_and_an_image_is_sent_in_the_messages_shape() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", "sk-ant-secret-123"))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_reply("4 and 2")))
        .mount(&server)
        .await;
    let lm = AnthropicLm::builder("claude-test")
        .base_url(server.uri())
        .api_key("sk-ant-secret-123")
        .pricing(Pricing::per_million_tokens(1.0, 5.0).cached_input(0.1))
        .build()
        .unwrap();
    let image = Image::from_bytes_with_type(b"\x89PNG....", "image/png").unwrap();
    let remote = Image::from_url("https://example.com/cat.jpg").unwrap();
    let calls = vec![
        ToolCall::new("toolu_1", "add", r#"{"a": 2, "b": 2}"#),
        ToolCall::new("toolu_2", "add", r#"{"a": 1, "b": 1}"#),
    ];
    let media = vec![ContentPart::Image(image), ContentPart::Image(remote)];
    let mut request = conversation(media, calls, [("toolu_1", "4"), ("toolu_2", "2")]);
    request.tools = vec![ToolDefinition::new(
        "add",
        "Add two integers.",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
    )];
    request.options.max_tokens = Some(100);
    request.options.stop = vec!["\n\n".into()];
    let completion = lm.complete(&request).await.unwrap();
    assert_eq!(completion.text.as_deref(), Some("4 and 2"));
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    // Usage: every prompt token, the cached ones among them, and the cost at the cached price.
    assert_eq!(completion.usage.prompt_tokens, 2012);
    assert_eq!(completion.usage.cached_prompt_tokens, 2000);
    assert_eq!(completion.usage.completion_tokens, 9);
    assert_eq!(completion.usage.cost_nanousd, 12_000 + 200_000 + 45_000);

    let body = &bodies(&server).await[0];
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 100);
    assert_eq!(body["stop_sequences"], json!(["\n\n"]));
    assert_eq!(body["system"][0]["text"], "You add.");
    let turns = body["messages"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{turns:#?}");
    assert_eq!(
        turns[0]["content"][1]["source"],
        json!({"type": "base64", "media_type": "image/png", "data": "iVBORy4uLi4="})
    );
    assert_eq!(
        turns[0]["content"][2]["source"],
        json!({"type": "url", "url": "https://example.com/cat.jpg"})
    );
    assert_eq!(turns[1]["role"], "assistant");
    assert_eq!(turns[1]["content"][0]["input"], json!({"a": 2, "b": 2}));
    // Both results in one user turn, matched by id; the stable prefix marked for caching.
    assert_eq!(turns[2]["role"], "user");
    assert_eq!(turns[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(turns[2]["content"][1]["tool_use_id"], "toolu_2");
    assert_eq!(turns[2]["content"][1]["content"][0]["text"], "2");
    assert_eq!(turns[1]["content"][1]["cache_control"]["type"], "ephemeral");
    assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
}

#[tokio::test]
async fn a_streamed_reply_gives_text_and_parallel_calls_in_pieces_and_the_whole_at_the_end() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(streamed_reply("Adding."), "text/event-stream"),
        )
        .mount(&server)
        .await;
    let lm = client(&server);
    let request = LmRequest::new(vec![Message::user("2+3 and 1+1?")]);
    let events: Vec<StreamEvent> = lm.stream(&request).map(|e| e.unwrap()).collect().await;
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Ad", "ding."]);
    let Some(StreamEvent::Done(done)) = events.last() else {
        panic!("no Done: {events:?}")
    };
    assert_eq!(done.text.as_deref(), Some("Adding."));
    assert_eq!(done.tool_calls.len(), 2);
    assert_eq!(done.tool_calls[0].args().unwrap(), json!({"a": 2, "b": 3}));
    assert_eq!(done.tool_calls[1].id, "toolu_b");
    assert_eq!(done.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(
        (done.usage.prompt_tokens, done.usage.cached_prompt_tokens),
        (100, 70)
    );
    assert_eq!(done.usage.completion_tokens, 25);
    assert_eq!(bodies(&server).await[0]["stream"], true);
}

#[tokio::test]
async fn predict_with_a_json_schema_asks_for_structured_output_and_reads_it() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(text_reply(r#"{"answer": "Paris"}"#)),
        )
        .mount(&server)
        .await;
    assert_eq!(structured_answer(client(&server)).await, "Paris");
    let body = &bodies(&server).await[0];
    assert_eq!(body["output_config"]["format"]["type"], "json_schema");
    assert_eq!(
        body["output_config"]["format"]["schema"]["required"],
        json!(["answer"])
    );
    // The API has no JSON mode: asked for one, the client says so and sends nothing.
    let mut request = LmRequest::new(vec![Message::user("hi")]);
    request.response_format = Some(ResponseFormat::JsonObject);
    let error = client(&server).complete(&request).await.unwrap_err();
    assert!(
        matches!(error, LmError::Rejected { status: 0, .. }),
        "{error}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

/// A whole reply as the events Anthropic streams for it: each block started, given in one delta
/// and stopped, then the stop reason and usage.
fn as_events(reply: &Value) -> String {
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": reply["id"], "model": reply["model"],
               "content": [], "usage": reply["usage"]}}),
    )];
    for (index, block) in reply["content"].as_array().unwrap().iter().enumerate() {
        let mut deltas = Vec::new();
        let start = match block["type"].as_str() {
            Some("tool_use") => {
                deltas.push(
                    json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
                );
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}})
            }
            // Thinking streams its text, then its signature; redacted thinking comes whole.
            Some("thinking") => {
                deltas.push(json!({"type": "thinking_delta", "thinking": block["thinking"]}));
                deltas.push(json!({"type": "signature_delta", "signature": block["signature"]}));
                json!({"type": "thinking", "thinking": ""})
            }
            Some("redacted_thinking") => block.clone(),
            _ => {
                deltas.push(json!({"type": "text_delta", "text": block["text"]}));
                json!({"type": "text", "text": ""})
            }
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for delta in deltas {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": reply["stop_reason"]}, "usage": {"output_tokens": 9}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    sse(&events)
}

async fn scripted(replies: Vec<Value>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Script::new(replies, as_events))
        .mount(&server)
        .await;
    server
}

/// An agent's two replies: `first` blocks and a call of `add` (40 + 2), then `finish` with 42.
fn add_then_finish(first: &[Value]) -> Vec<Value> {
    let mut content = first.to_vec();
    content.push(
        json!({"type": "tool_use", "id": "toolu_9", "name": "add", "input": {"a": 40, "b": 2}}),
    );
    vec![
        reply(Value::Array(content), "tool_use"),
        reply(
            json!([{"type": "tool_use", "id": "toolu_10", "name": "finish", "input": {"answer": "42"}}]),
            "tool_use",
        ),
    ]
}

#[tokio::test]
async fn a_native_react_run_streamed_or_not_calls_the_tool_by_its_tool_use_block_and_answers() {
    for streamed in [true, false] {
        let server = scripted(add_then_finish(&[])).await;
        let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(client(&server));
        let (output, trajectory) = native_run(&agent, streamed).await;
        assert_eq!(output.answer, "42");
        assert_eq!(
            trajectory.steps[0].observation,
            Observation::Output(json!(42))
        );
        let sent = bodies(&server).await;
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[0]["stream"].as_bool().unwrap_or(false), streamed);
        assert_eq!(sent[0]["tool_choice"]["type"], "auto");
        // The second request carries the call and its result as tool_use / tool_result blocks.
        let blocks: Vec<&Value> = sent[1]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|t| t["content"].as_array().unwrap())
            .collect();
        let used = blocks
            .iter()
            .find(|b| b["type"] == "tool_use")
            .expect("tool_use sent back");
        assert_eq!(
            (used["id"].clone(), used["input"].clone()),
            (json!("toolu_9"), json!({"a": 40, "b": 2}))
        );
        let result = blocks
            .iter()
            .find(|b| b["type"] == "tool_result")
            .expect("tool_result");
        assert_eq!(result["tool_use_id"], "toolu_9");
    }
}

#[tokio::test]
async fn thinking_blocks_go_back_signed_and_first_in_the_turn_that_called_the_tool() {
    let thinking = json!([
        {"type": "thinking", "thinking": "40 plus 2: the add tool.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
    ]);
    for streamed in [true, false] {
        let server = scripted(add_then_finish(thinking.as_array().unwrap())).await;
        let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(client(&server));
        let (output, _) = native_run(&agent, streamed).await;
        assert_eq!(output.answer, "42");
        let sent = bodies(&server).await;
        let assistant = sent[1]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|turn| turn["role"] == "assistant")
            .expect("the assistant turn sent back");
        // The thinking blocks unchanged (signature and redacted data), then the call; the
        // thinking is not sent again as the turn's text.
        let blocks = assistant["content"].as_array().unwrap();
        assert_eq!(
            blocks[..2],
            thinking.as_array().unwrap()[..],
            "streamed: {streamed}"
        );
        assert_eq!(blocks.len(), 3, "{blocks:?}");
        assert_eq!(blocks[2]["type"], "tool_use");
    }
}

#[tokio::test]
async fn rate_limits_and_overload_are_retried_after_the_time_they_ask_and_other_errors_are_not() {
    let server = MockServer::start().await;
    let limited =
        json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}});
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(limited),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(529).set_body_json(overloaded.clone()))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_reply("fine")))
        .mount(&server)
        .await;
    let completion = client(&server)
        .complete(&LmRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap();
    assert_eq!(completion.text.as_deref(), Some("fine"));
    assert_eq!(completion.usage.retries, 2);

    // Each kind, typed, with no retry.
    let cases = [
        (
            429,
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
            "429",
        ),
        (529, overloaded, "529"),
        (
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "messages: bad"}}),
            "400",
        ),
        (
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
            "context_window_exceeded",
        ),
        (
            401,
            json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key sk-ant-secret-123"}}),
            "401",
        ),
        (
            500,
            json!({"type": "error", "error": {"type": "api_error", "message": "oops"}}),
            "500",
        ),
    ];
    for (status, body, kind) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(status).set_body_json(body))
            .mount(&server)
            .await;
        let lm = AnthropicLm::builder("claude-test")
            .base_url(server.uri())
            .api_key("sk-ant-secret-123")
            .max_retries(0)
            .build()
            .unwrap();
        let error = lm
            .complete(&LmRequest::new(vec![Message::user("hi")]))
            .await
            .unwrap_err();
        assert_eq!(error.error_type(), kind, "{error}");
        assert!(!error.to_string().contains("sk-ant-secret-123"), "{error}");
    }
}

#[tokio::test]
async fn an_error_event_mid_stream_and_a_stream_cut_short_are_typed_errors() {
    let server = MockServer::start().await;
    let torn = sse(&[
        (
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
        ),
    ]);
    let overloaded = format!(
        "{torn}{}",
        sse(&[(
            "error",
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
        )])
    );
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(overloaded, "text/event-stream"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(torn, "text/event-stream"))
        .mount(&server)
        .await;
    let lm = AnthropicLm::builder("claude-test")
        .base_url(server.uri())
        .max_retries(0)
        .build()
        .unwrap();
    let request = LmRequest::new(vec![Message::user("hi")]);
    for expected in ["529", "invalid_response"] {
        let events: Vec<_> = lm.stream(&request).collect().await;
        assert_eq!(events[0], Ok(StreamEvent::TextDelta("Hel".into())));
        let error = events.last().unwrap().clone().unwrap_err();
        assert_eq!(error.error_type(), expected, "{error}");
    }
}

#[tokio::test]
async fn the_first_lm_rate_limited_then_overloaded_falls_back_to_the_second_and_the_run_says_which()
{
    let primary = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_json(
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
        ))
        .up_to_n_times(1)
        .mount(&primary)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(529).set_body_json(
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ))
        .mount(&primary)
        .await;
    let backup = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "model": "backup-model",
            "choices": [{"message": {"role": "assistant", "content": answer_reply("Paris")},
                         "finish_reason": "stop"}]})))
        .mount(&backup)
        .await;
    let first = AnthropicLm::builder("claude-test")
        .base_url(primary.uri())
        .retry(
            RetryPolicy::default()
                .with_max_retries(1)
                .with_initial_backoff(Duration::from_millis(1)),
        )
        .build()
        .unwrap();
    let second = OpenAiLm::builder("backup-model")
        .base_url(format!("{}/v1", backup.uri()))
        .build()
        .unwrap();
    let history = std::sync::Arc::new(signet::lm::CallHistory::default());
    let lm = HistoryLm::new(FallbackLm::new(first).then(second), history.clone());
    let (output, prediction) = Predict::<Ask>::new()
        .with_lm(lm)
        .call_full(
            AskInput {
                question: "Capital of France?".into(),
            },
            &Default::default(),
        )
        .await
        .unwrap();
    assert_eq!(output.answer, "Paris");
    assert_eq!(primary.received_requests().await.unwrap().len(), 2);
    assert_eq!(history.entries()[0].model, "backup-model");
    assert_eq!(prediction.usage.fallbacks, 1);
}

#[tokio::test]
async fn the_key_comes_only_from_the_builder_or_goes_home_and_never_shows() {
    let lm = AnthropicLm::builder("claude-test")
        .base_url("http://bob:url-secret@127.0.0.1:1")
        .api_key("sk-ant-very-secret")
        .header("x-gateway-key", "gateway-secret")
        .max_retries(0)
        .build()
        .unwrap();
    let shown = format!("{lm:?} {lm:#?}");
    for secret in ["sk-ant-very-secret", "gateway-secret", "url-secret"] {
        assert!(!shown.contains(secret), "{shown}");
    }
    let error = lm
        .complete(&LmRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap_err();
    assert!(matches!(error, LmError::Connect { .. }), "{error}");
    assert!(!error.to_string().contains("url-secret"), "{error}");
    let bad = AnthropicLm::builder("m").base_url("localhost:1").build();
    assert!(matches!(
        bad,
        Err(signet::lm::BuildError::InvalidBaseUrl { .. })
    ));
}

#[tokio::test]
async fn a_reply_or_a_stream_past_the_size_limit_is_cut_and_typed_not_read_on() {
    let server = MockServer::start().await;
    let huge = "x".repeat(64 << 10);
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(text_reply(&huge)))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(streamed_reply(&huge), "text/event-stream"),
        )
        .mount(&server)
        .await;
    let lm = AnthropicLm::builder("claude-test")
        .base_url(server.uri())
        .max_response_bytes(16 << 10)
        .build()
        .unwrap();
    let request = LmRequest::new(vec![Message::user("hi")]);
    let error = lm.complete(&request).await.unwrap_err();
    assert_eq!(error, LmError::ResponseTooLarge { limit: 16 << 10 });
    let events: Vec<_> = lm.stream(&request).collect().await;
    assert_eq!(
        events.last(),
        Some(&Err(LmError::ResponseTooLarge { limit: 16 << 10 }))
    );
    // Not retried: one request each.
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}
