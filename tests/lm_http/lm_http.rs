//! `OpenAiLm` against a local mock OpenAI-compatible server (wiremock): request bodies, response
//! parsing, typed errors, retries, timeouts, streaming, cache and history.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use signet::lm::{
    CallHistory, Capabilities, Completion, FinishReason, Lm, LmError, LmRequest, Message, OpenAiLm,
    OpenAiLmBuilder, ResponseCache, ResponseFormat, RetryPolicy, StreamEvent, ToolCall, ToolChoice,
    ToolDefinition,
};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockBuilder, MockServer, ResponseTemplate};

use crate::support;
use support::bodies;

const API_KEY: &str = "sk-test-key-never-shown";

/// A client of `server` with fast retries.
fn client(server: &MockServer) -> OpenAiLmBuilder {
    OpenAiLm::builder("test-model")
        .base_url(format!("{}/v1", server.uri()))
        .api_key(API_KEY)
        .timeout(Duration::from_secs(10))
        .retry(
            RetryPolicy::default()
                .with_initial_backoff(Duration::from_millis(5))
                .with_jitter(false),
        )
}

fn completion_body(content: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "test-model",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    })
}

fn ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

fn chat() -> MockBuilder {
    Mock::given(method("POST")).and(path("/v1/chat/completions"))
}

fn ask(text: &str) -> LmRequest {
    LmRequest::new(vec![Message::user(text)])
}

#[tokio::test]
async fn plain_completion_with_usage() {
    let server = MockServer::start().await;
    chat()
        .and(header(
            "authorization",
            format!("Bearer {API_KEY}").as_str(),
        ))
        .respond_with(ok(completion_body("Paris")))
        .expect(1)
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();

    let reply = lm.complete(&ask("Capital of France?")).await.unwrap();

    assert_eq!(reply.text.as_deref(), Some("Paris"));
    assert_eq!(reply.finish_reason, Some(FinishReason::Stop));
    assert_eq!(reply.usage.prompt_tokens, 12);
    assert_eq!(reply.usage.completion_tokens, 3);
    assert_eq!(reply.usage.lm_calls, 1);
    assert_eq!(reply.usage.retries, 0);
    assert_eq!(reply.usage.cache_hits, 0);
    assert_eq!(
        bodies(&server).await,
        [json!({
            "model": "test-model",
            "messages": [{"role": "user", "content": "Capital of France?"}]
        })]
    );
    // The call is in the history, printed the DSPy way.
    assert_eq!(lm.history().len(), 1);
    let printed = lm.history().render(1);
    assert!(printed.contains("User message:\n\nCapital of France?\n\n\n"));
    assert!(printed.ends_with("Response:\n\nParis\n"));
}

#[tokio::test]
async fn every_request_field_is_sent_exactly() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ok(completion_body("ok")))
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();

    let add_tool = json!({
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two numbers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }
        }
    });
    let mut request = LmRequest::new(vec![
        Message::system("You add."),
        Message::user("2+3?"),
        Message::assistant_tool_calls(vec![ToolCall::new("call_1", "add", r#"{"a":2,"b":3}"#)]),
        Message::tool_result("call_1", "5"),
    ]);
    request.options.temperature = Some(0.2);
    request.options.max_tokens = Some(64);
    request.options.stop = vec!["\n\n".into(), "END".into()];
    request.options.seed = Some(7);
    request.options.top_p = Some(0.9);
    request.response_format = Some(ResponseFormat::JsonSchema {
        name: "sum".into(),
        schema: json!({"type": "object", "properties": {"sum": {"type": "integer"}}}),
        strict: true,
    });
    request.tools = vec![serde_json::from_value(add_tool.clone()).unwrap()];
    request.tool_choice = Some(ToolChoice::Function("add".into()));
    request.parallel_tool_calls = Some(false);
    request.extra.insert("top_k".into(), json!(40));
    request.extra.insert("cache_prompt".into(), json!(true));
    lm.complete(&request).await.unwrap();

    // The other response formats and tool choices.
    let mut variant = ask("x");
    variant.response_format = Some(ResponseFormat::JsonObject);
    variant.tool_choice = Some(ToolChoice::Auto);
    lm.complete(&variant).await.unwrap();
    let mut variant = ask("y");
    let llama_schema = json!({"type": "json_object", "schema": {"type": "object"}});
    variant.response_format = Some(ResponseFormat::Raw(llama_schema.clone()));
    variant.tool_choice = Some(ToolChoice::Required);
    lm.complete(&variant).await.unwrap();
    let mut variant = ask("z");
    variant.response_format = Some(ResponseFormat::Text);
    variant.tool_choice = Some(ToolChoice::None);
    lm.complete(&variant).await.unwrap();

    let sent = bodies(&server).await;
    assert_eq!(
        sent[0],
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You add."},
                {"role": "user", "content": "2+3?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2,\"b\":3}"}}
                ]},
                {"role": "tool", "content": "5", "tool_call_id": "call_1"}
            ],
            "temperature": 0.2,
            "top_p": 0.9,
            "max_tokens": 64,
            "stop": ["\n\n", "END"],
            "seed": 7,
            "response_format": {
                "type": "json_schema",
                "json_schema": {
                    "name": "sum",
                    "strict": true,
                    "schema": {"type": "object", "properties": {"sum": {"type": "integer"}}}
                }
            },
            "tools": [add_tool],
            "tool_choice": {"type": "function", "function": {"name": "add"}},
            "parallel_tool_calls": false,
            "top_k": 40,
            "cache_prompt": true
        })
    );
    // Key order on the wire follows the request (not only the JSON value).
    let raw = String::from_utf8(server.received_requests().await.unwrap()[0].body.clone()).unwrap();
    assert!(
        raw.starts_with(r#"{"model":"test-model","messages":"#),
        "{raw}"
    );
    assert_eq!(sent[1]["response_format"], json!({"type": "json_object"}));
    assert_eq!(sent[1]["tool_choice"], json!("auto"));
    assert_eq!(sent[2]["response_format"], llama_schema);
    assert_eq!(sent[2]["tool_choice"], json!("required"));
    assert_eq!(sent[3]["response_format"], json!({"type": "text"}));
    assert_eq!(sent[3]["tool_choice"], json!("none"));
}

#[tokio::test]
async fn max_completion_tokens_is_opt_in() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ok(completion_body("ok")))
        .mount(&server)
        .await;
    let lm = client(&server).max_completion_tokens(true).build().unwrap();
    let mut request = ask("hi");
    request.options.max_tokens = Some(10);
    lm.complete(&request).await.unwrap();
    let sent = bodies(&server).await;
    assert_eq!(sent[0]["max_completion_tokens"], 10);
    assert!(sent[0].get("max_tokens").is_none());
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_json(json!({"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    chat()
        .respond_with(ok(completion_body("after the wait")))
        .mount(&server)
        .await;
    // A backoff far longer than the test: only the server's Retry-After can explain a quick retry.
    let lm = client(&server)
        .retry(RetryPolicy::default().with_initial_backoff(Duration::from_secs(3600)))
        .build()
        .unwrap();

    let reply = tokio::time::timeout(Duration::from_secs(60), lm.complete(&ask("hi")))
        .await
        .expect("Retry-After (1 s) was not honoured: the client fell back to its 1 h backoff")
        .unwrap();

    assert_eq!(reply.text.as_deref(), Some("after the wait"));
    assert_eq!(reply.usage.retries, 1);
    assert_eq!(reply.usage.lm_calls, 1);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn rate_limit_error_carries_retry_after() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "7")
                .set_body_json(json!({"error": {"message": "slow down"}})),
        )
        .mount(&server)
        .await;
    let lm = client(&server).retry(RetryPolicy::none()).build().unwrap();
    let error = lm.complete(&ask("hi")).await.unwrap_err();
    assert_eq!(
        error,
        LmError::RateLimited {
            retry_after: Some(Duration::from_secs(7)),
            message: "slow down".into()
        }
    );
}

#[tokio::test]
async fn server_error_then_success() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(500).set_body_string("upstream exploded"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    chat()
        .respond_with(ok(completion_body("recovered")))
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();

    let reply = lm.complete(&ask("hi")).await.unwrap();

    assert_eq!(reply.text.as_deref(), Some("recovered"));
    assert_eq!(reply.usage.retries, 1);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn server_error_on_every_attempt() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(503)
                .set_body_json(json!({"error": {"message": "overloaded", "type": "server_error"}})),
        )
        .mount(&server)
        .await;
    let lm = client(&server)
        .retry(
            RetryPolicy::default()
                .with_max_retries(2)
                .with_initial_backoff(Duration::from_millis(5)),
        )
        .build()
        .unwrap();

    let error = lm.complete(&ask("hi")).await.unwrap_err();

    assert_eq!(
        error,
        LmError::Server {
            status: 503,
            message: "overloaded".into()
        }
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    assert!(lm.history().is_empty(), "failures are not recorded");
}

#[tokio::test]
async fn slow_server_times_out() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ok(completion_body("too late")).set_delay(Duration::from_secs(5)))
        .mount(&server)
        .await;
    let lm = client(&server)
        .timeout(Duration::from_millis(200))
        .retry(RetryPolicy::none())
        .build()
        .unwrap();

    let error = lm.complete(&ask("hi")).await.unwrap_err();

    assert_eq!(
        error,
        LmError::Timeout {
            after: Duration::from_millis(200)
        }
    );
    assert!(error.is_transient());
}

#[tokio::test]
async fn malformed_body_is_an_invalid_response() {
    let server = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(200).set_body_raw("{\"choices\": [", "application/json"),
        )
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();

    let error = lm.complete(&ask("hi")).await.unwrap_err();
    assert!(
        matches!(error, LmError::InvalidResponse { .. }),
        "{error:?}"
    );
    // Not transient: sent once.
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_body_without_choices_is_an_invalid_response() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ok(json!({"id": "x", "choices": []})))
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();
    let error = lm.complete(&ask("hi")).await.unwrap_err();
    assert!(
        matches!(error, LmError::InvalidResponse { ref message } if message.contains("no choices"))
    );
}

#[tokio::test]
async fn context_window_exceeded_is_typed_and_not_retried() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": {
                "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded"
            }
        })))
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();

    let error = lm.complete(&ask("a very long prompt")).await.unwrap_err();

    assert!(
        matches!(error, LmError::ContextWindowExceeded { ref message } if message.contains("8192")),
        "{error:?}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn llama_cpp_context_error_sent_as_500_is_recognised() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(500).set_body_json(json!({
            "error": {"code": 500, "message": "Requested tokens (5000) exceed context window of 4096", "type": "server_error"}
        })))
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();
    let error = lm.complete(&ask("long")).await.unwrap_err();
    assert!(
        matches!(error, LmError::ContextWindowExceeded { .. }),
        "{error:?}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn other_client_errors_are_rejected_without_retry() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(401).set_body_json(json!({
            "error": {"message": format!("Incorrect API key provided: {API_KEY}"), "type": "invalid_request_error", "code": "invalid_api_key"}
        })))
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();
    let error = lm.complete(&ask("hi")).await.unwrap_err();
    assert!(
        matches!(error, LmError::Rejected { status: 401, .. }),
        "{error:?}"
    );
    assert!(
        !error.to_string().contains(API_KEY),
        "the key leaked: {error}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn tool_call_round_trip() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ok(json!({
            "choices": [{
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": null,
                    "tool_calls": [
                        {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}},
                        {"id": "call_b", "type": "function", "function": {"name": "mul", "arguments": "{\"a\": 4, \"b\": 5}"}}
                    ]
                },
                "finish_reason": "tool_calls"
            }],
            "usage": {"prompt_tokens": 30, "completion_tokens": 20}
        })))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    chat()
        .respond_with(ok(completion_body("5 and 20")))
        .mount(&server)
        .await;
    let lm = client(&server)
        .capabilities(Capabilities::openai())
        .build()
        .unwrap();
    let mut request = ask("2+3 and 4*5?");
    request.tools = ["add", "mul"]
        .map(|name| ToolDefinition::new(name, "", json!({"type": "object"})))
        .into();
    request.tool_choice = Some(ToolChoice::Auto);
    request.parallel_tool_calls = Some(true);

    let first = lm.complete(&request).await.unwrap();

    assert_eq!(first.text, None);
    assert_eq!(first.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(
        first.tool_calls,
        [
            ToolCall::new("call_a", "add", r#"{"a": 2, "b": 3}"#),
            ToolCall::new("call_b", "mul", r#"{"a": 4, "b": 5}"#),
        ]
    );
    assert_eq!(first.tool_calls[1].args().unwrap()["b"], 5);

    request
        .messages
        .push(Message::assistant_tool_calls(first.tool_calls.clone()));
    request.messages.push(Message::tool_result("call_a", "5"));
    request.messages.push(Message::tool_result("call_b", "20"));
    let second = lm.complete(&request).await.unwrap();
    assert_eq!(second.text.as_deref(), Some("5 and 20"));

    let sent = bodies(&server).await;
    assert_eq!(
        sent[1]["messages"],
        json!([
            {"role": "user", "content": "2+3 and 4*5?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": "{\"a\": 2, \"b\": 3}"}},
                {"id": "call_b", "type": "function", "function": {"name": "mul", "arguments": "{\"a\": 4, \"b\": 5}"}}
            ]},
            {"role": "tool", "content": "5", "tool_call_id": "call_a"},
            {"role": "tool", "content": "20", "tool_call_id": "call_b"}
        ])
    );
    assert_eq!(sent[1]["parallel_tool_calls"], true);
    let printed = lm.history().render(2);
    assert!(printed.contains("Tool calls:\n\nadd: {\"a\": 2, \"b\": 3}\n\n"));
}

#[tokio::test]
async fn reasoning_content_is_kept_apart() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ok(json!({
            "choices": [{
                "message": {"role": "assistant", "content": "42", "reasoning_content": "6 times 7 is 42."},
                "finish_reason": "stop"
            }]
        })))
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();
    let reply = lm.complete(&ask("6*7?")).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("42"));
    assert_eq!(reply.reasoning.as_deref(), Some("6 times 7 is 42."));
    // No usage in the body: zero tokens, still one call.
    assert_eq!(reply.usage.total_tokens(), 0);
    assert_eq!(reply.usage.lm_calls, 1);
}

fn sse(chunks: &[Value]) -> ResponseTemplate {
    let mut body = String::new();
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn delta(delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    })
}

#[tokio::test]
async fn streaming_assembles_text_reasoning_and_tool_calls() {
    let server = MockServer::start().await;
    chat()
        .respond_with(sse(&[
            delta(json!({"role": "assistant", "reasoning_content": "Let me "}), None),
            delta(json!({"reasoning_content": "think."}), None),
            delta(json!({"content": "Calling "}), None),
            delta(json!({"content": "tools."}), None),
            delta(
                json!({"tool_calls": [{"index": 0, "id": "call_x", "type": "function", "function": {"name": "add", "arguments": ""}}]}),
                None,
            ),
            delta(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\": 1,"}}]}),
                None,
            ),
            delta(
                json!({"tool_calls": [{"index": 1, "id": "call_y", "type": "function", "function": {"name": "neg", "arguments": "{\"x\": 9}"}}]}),
                None,
            ),
            delta(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"b\": 2}"}}]}),
                None,
            ),
            delta(json!({}), Some("tool_calls")),
            json!({"id": "chatcmpl-s", "choices": [], "usage": {"prompt_tokens": 21, "completion_tokens": 9}}),
        ]))
        .expect(1)
        .mount(&server)
        .await;
    let lm = client(&server).build().unwrap();

    let request = ask("go");
    let events: Vec<StreamEvent> = lm
        .stream(&request)
        .map(|event| event.expect("no stream error"))
        .collect()
        .await;

    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Calling tools.");
    assert_eq!(
        events[0],
        StreamEvent::ReasoningDelta("Let me ".into()),
        "deltas arrive in order"
    );
    assert!(events.contains(&StreamEvent::ToolCallDelta {
        index: 0,
        id: Some("call_x".into()),
        name: Some("add".into()),
        arguments: String::new(),
    }));
    let Some(StreamEvent::Done(done)) = events.last() else {
        panic!("the stream must end with Done: {events:?}");
    };
    assert_eq!(done.text.as_deref(), Some("Calling tools."));
    assert_eq!(done.reasoning.as_deref(), Some("Let me think."));
    assert_eq!(
        done.tool_calls,
        [
            ToolCall::new("call_x", "add", r#"{"a": 1, "b": 2}"#),
            ToolCall::new("call_y", "neg", r#"{"x": 9}"#),
        ]
    );
    assert_eq!(done.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(done.usage.prompt_tokens, 21);
    assert_eq!(done.usage.completion_tokens, 9);
    assert_eq!(done.usage.lm_calls, 1);

    let sent = bodies(&server).await;
    assert_eq!(sent[0]["stream"], true);
    assert_eq!(sent[0]["stream_options"], json!({"include_usage": true}));
    assert_eq!(lm.history().len(), 1, "a finished stream is recorded");
}

#[tokio::test]
async fn streaming_retries_a_failed_start_and_reports_errors() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(502).set_body_string("bad gateway"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    chat()
        .respond_with(sse(&[delta(json!({"content": "hi"}), Some("stop"))]))
        .mount(&server)
        .await;
    let lm = client(&server).stream_usage(false).build().unwrap();
    let request = ask("go");
    let events: Vec<_> = lm.stream(&request).collect().await;
    let Some(Ok(StreamEvent::Done(done))) = events.last() else {
        panic!("no Done: {events:?}");
    };
    assert_eq!(done.text.as_deref(), Some("hi"));
    assert_eq!(done.usage.retries, 1);
    assert!(bodies(&server).await[1].get("stream_options").is_none());

    // A stream that ends before any choice is an invalid response.
    let empty = MockServer::start().await;
    chat().respond_with(sse(&[])).mount(&empty).await;
    let lm = client(&empty).build().unwrap();
    let events: Vec<_> = lm.stream(&request).collect().await;
    assert!(
        matches!(events.as_slice(), [Err(LmError::InvalidResponse { .. })]),
        "{events:?}"
    );

    // So does a server that ignores `stream: true` and answers with a whole JSON completion; the
    // error says what to look for.
    let plain = MockServer::start().await;
    chat()
        .respond_with(ok(completion_body("not streamed")))
        .mount(&plain)
        .await;
    let lm = client(&plain).build().unwrap();
    let events: Vec<_> = lm.stream(&request).collect().await;
    let [Err(LmError::InvalidResponse { message })] = events.as_slice() else {
        panic!("{events:?}");
    };
    assert!(message.contains("`stream: true`"), "{message}");
}

#[tokio::test]
async fn cache_hit_makes_no_second_request() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ok(completion_body("cached answer")))
        .expect(1)
        .mount(&server)
        .await;
    let lm = client(&server).memory_cache().build().unwrap();
    let request = ask("same question");

    let first = lm.complete(&request).await.unwrap();
    let second = lm.complete(&request).await.unwrap();

    assert_eq!(first.usage.lm_calls, 1);
    assert_eq!(first.usage.cache_hits, 0);
    assert_eq!(second.text.as_deref(), Some("cached answer"));
    assert_eq!(second.usage.lm_calls, 0);
    assert_eq!(second.usage.cache_hits, 1);
    assert_eq!(second.usage.total_tokens(), 0);
    // A stream of the same request is answered from the cache too.
    let events: Vec<_> = lm.stream(&request).collect().await;
    assert!(matches!(events.last(), Some(Ok(StreamEvent::Done(c))) if c.usage.cache_hits == 1));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    // Every call, hits included, is in the history.
    assert_eq!(lm.history().len(), 3);
    assert_eq!(lm.history().total_usage().cache_hits, 2);

    // A different request is a miss.
    let mut other = request.clone();
    other.options.temperature = Some(0.0);
    server.reset().await;
    chat()
        .respond_with(ok(completion_body("fresh")))
        .mount(&server)
        .await;
    assert_eq!(
        lm.complete(&other).await.unwrap().text.as_deref(),
        Some("fresh")
    );
}

#[tokio::test]
async fn errors_are_not_cached_and_disk_cache_is_shared() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ResponseTemplate::new(400).set_body_string("nope"))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    chat()
        .respond_with(ok(completion_body("on disk")))
        .mount(&server)
        .await;
    let dir = std::env::temp_dir().join(format!("signet-lm-http-cache-{}", std::process::id()));
    let lm = client(&server).disk_cache(&dir).build().unwrap();
    let request = ask("persist me");

    assert!(matches!(
        lm.complete(&request).await,
        Err(LmError::Rejected { status: 400, .. })
    ));
    assert_eq!(
        lm.complete(&request).await.unwrap().text.as_deref(),
        Some("on disk")
    );

    // A new client over the same directory answers without the server.
    let offline = OpenAiLm::builder("test-model")
        .base_url("http://127.0.0.1:9/v1")
        .api_key(API_KEY)
        .disk_cache(&dir)
        .build()
        .unwrap();
    let hit = offline.complete(&request).await.unwrap();
    assert_eq!(hit.text.as_deref(), Some("on disk"));
    assert_eq!(hit.usage.cache_hits, 1);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
    if let Some(cache) = offline.cache() {
        cache.clear();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn shared_history_and_cache_between_clients() {
    let server = MockServer::start().await;
    chat()
        .respond_with(ok(completion_body("shared")))
        .expect(1)
        .mount(&server)
        .await;
    let history = Arc::new(CallHistory::with_capacity(10));
    let cache = Arc::new(ResponseCache::in_memory());
    let a = client(&server)
        .history(history.clone())
        .cache(cache.clone())
        .build()
        .unwrap();
    let b = client(&server)
        .history(history.clone())
        .cache(cache.clone())
        .build()
        .unwrap();
    let request = ask("hello");
    a.complete(&request).await.unwrap();
    let reply: Completion = b.complete(&request).await.unwrap();
    assert_eq!(reply.usage.cache_hits, 1);
    assert_eq!(history.len(), 2);
    assert_eq!(cache.len(), 1);
}

#[tokio::test]
async fn connection_refused_is_a_connect_error() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let lm = OpenAiLm::builder("test-model")
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .api_key(API_KEY)
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let error = lm.complete(&ask("anyone?")).await.unwrap_err();
    assert!(matches!(error, LmError::Connect { .. }), "{error:?}");
    assert!(error.is_transient());
    let request = ask("anyone?");
    let events: Vec<_> = lm.stream(&request).collect().await;
    assert!(
        matches!(events.as_slice(), [Err(LmError::Connect { .. })]),
        "{events:?}"
    );
}

#[test]
fn debug_output_never_shows_the_api_key() {
    let builder = OpenAiLm::builder("test-model")
        .base_url("http://127.0.0.1:9/v1")
        .api_key(API_KEY);
    assert!(!format!("{builder:?}").contains(API_KEY));
    assert!(!format!("{builder:#?}").contains(API_KEY));
    let lm = builder.build().unwrap();
    let shown = format!("{lm:?}");
    assert!(!shown.contains(API_KEY), "{shown}");
    assert!(shown.contains("[redacted]"));
    assert!(!format!("{lm:#?}").contains(API_KEY));
}

#[tokio::test]
async fn a_fallback_answers_after_the_first_provider_rate_limits_then_overloads() {
    // The first provider answers 429, then 529 (Anthropic's overload) to its retry.
    let primary = MockServer::start().await;
    chat()
        .respond_with(
            ResponseTemplate::new(429)
                .set_body_json(json!({"error": {"message": "Rate limit reached"}})),
        )
        .up_to_n_times(1)
        .mount(&primary)
        .await;
    chat()
        .respond_with(
            ResponseTemplate::new(529).set_body_json(
                json!({"error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
        )
        .mount(&primary)
        .await;
    let backup = MockServer::start().await;
    chat()
        .respond_with(ok(completion_body("[[ ## answer ## ]]\nParis")))
        .mount(&backup)
        .await;
    let retry_once = RetryPolicy::default()
        .with_max_retries(1)
        .with_initial_backoff(Duration::from_millis(5))
        .with_jitter(false);
    let first = client(&primary).retry(retry_once).build().unwrap();
    let second = OpenAiLm::builder("backup-model")
        .base_url(format!("{}/v1", backup.uri()))
        .api_key(API_KEY)
        .build()
        .unwrap();
    let history = Arc::new(CallHistory::new());
    let lm = signet::lm::HistoryLm::new(
        signet::lm::FallbackLm::new(first).then(second),
        history.clone(),
    );

    let predict =
        signet::module::DynPredict::new("question -> answer".parse().unwrap()).with_lm(lm);
    let mut inputs = signet::adapter::Fields::new();
    inputs.insert("question".into(), json!("Capital of France?"));
    let prediction = predict.forward(&inputs).await.unwrap();

    assert_eq!(prediction.outputs["answer"], "Paris");
    // Both of the first provider's attempts were made, then the backup's one.
    assert_eq!(primary.received_requests().await.unwrap().len(), 2);
    assert_eq!(backup.received_requests().await.unwrap().len(), 1);
    // The run records which model answered, and that a fallback happened.
    assert_eq!(history.entries()[0].model, "backup-model");
    assert_eq!(prediction.usage.fallbacks, 1);
}
