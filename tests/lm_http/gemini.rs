//! `GeminiLm` against a mock server that answers with exchanges written from Google's API
//! reference (`tests/fixtures/gemini/exchanges.json`, each naming the page it follows; no Gemini
//! server runs here): contents and parts, parallel function calls, images, structured output,
//! streaming, usage with cached and thought tokens, and each error kind with its retry behaviour.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use signet::lm::{
    FinishReason, GeminiLm, Lm, LmError, LmRequest, Message, ProviderState, StreamEvent, ToolCall,
    ToolDefinition,
};
use signet::media::{ContentPart, Image};
use signet::module::{Observation, ReAct};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::scripted::{conversation, quick_retries, structured_answer};
use crate::support;
use support::*;

/// One exchange of the fixture file: its status and body (or its stream's chunks).
fn exchange(name: &str) -> (u16, Value) {
    let all: Value =
        serde_json::from_str(include_str!("../fixtures/gemini/exchanges.json")).unwrap();
    let exchange = &all[name];
    assert!(
        exchange["reference"]
            .as_str()
            .is_some_and(|r| r.starts_with("https://")),
        "{name} names its reference"
    );
    let status = exchange["status"].as_u64().unwrap() as u16;
    (status, exchange.clone())
}

fn reply(name: &str) -> ResponseTemplate {
    let (status, exchange) = exchange(name);
    if let Some(chunks) = exchange["chunks"].as_array() {
        let events: String = chunks
            .iter()
            .map(|c| format!("data: {c}\r\n\r\n"))
            .collect();
        return ResponseTemplate::new(status).set_body_raw(events, "text/event-stream");
    }
    ResponseTemplate::new(status).set_body_json(&exchange["response"])
}

/// Answers with the named exchanges in turn (streamed or not as the exchange is).
struct Script {
    names: Vec<&'static str>,
    next: AtomicUsize,
}

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        match self.names.get(index) {
            Some(name) => reply(name),
            None => ResponseTemplate::new(500).set_body_string("no reply left"),
        }
    }
}

async fn scripted(call: &str, names: Vec<&'static str>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(format!("/v1beta/models/gemini-test:{call}")))
        .and(header("x-goog-api-key", "AIza-test-secret"))
        .respond_with(Script {
            names,
            next: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

fn client(server: &MockServer) -> GeminiLm {
    GeminiLm::builder("gemini-test")
        .base_url(format!("{}/v1beta", server.uri()))
        .api_key("AIza-test-secret")
        .retry(quick_retries())
        .build()
        .expect("a valid client")
}

#[tokio::test]
async fn a_conversation_with_function_responses_and_an_image_is_sent_as_contents() {
    let server = scripted("generateContent", vec!["text"]).await;
    let image = Image::from_bytes_with_type(b"\x89PNG....", "image/png").unwrap();
    let calls = vec![
        ToolCall::new("fc-1", "add", r#"{"a": 2, "b": 2}"#),
        ToolCall::new("fc-2", "mul", r#"{"a": 1, "b": 1}"#),
    ];
    let media = vec![ContentPart::Image(image)];
    let mut request = conversation(media, calls, [("fc-1", "4"), ("fc-2", "1")]);
    request.tools = vec![ToolDefinition::new(
        "add",
        "Add.",
        json!({"type": "object"}),
    )];
    request.tool_choice = Some(signet::lm::ToolChoice::Function("add".into()));
    request.options.max_tokens = Some(64);
    request.options.stop = vec!["END".into()];
    let completion = client(&server).complete(&request).await.unwrap();
    assert_eq!(
        completion.text.as_deref(),
        Some("Paris is the capital of France.")
    );
    assert_eq!(completion.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        (
            completion.usage.prompt_tokens,
            completion.usage.cached_prompt_tokens
        ),
        (12, 4)
    );

    let body = &bodies(&server).await[0];
    assert_eq!(body["systemInstruction"]["parts"][0]["text"], "You add.");
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 3, "{contents:#?}");
    assert_eq!(
        contents[0]["parts"][1],
        json!({"inlineData": {"mimeType": "image/png", "data": "iVBORy4uLi4="}})
    );
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(
        contents[1]["parts"][0]["functionCall"],
        json!({"id": "fc-1", "name": "add", "args": {"a": 2, "b": 2}})
    );
    // Both responses in one user turn, each named after the call it answers.
    assert_eq!(
        contents[2]["parts"][1]["functionResponse"],
        json!({"id": "fc-2", "name": "mul", "response": {"result": "1"}})
    );
    assert_eq!(
        body["tools"][0]["functionDeclarations"][0]["parametersJsonSchema"],
        json!({"type": "object"})
    );
    assert_eq!(
        body["toolConfig"]["functionCallingConfig"],
        json!({"mode": "ANY", "allowedFunctionNames": ["add"]})
    );
    assert_eq!(
        body["generationConfig"],
        json!({"maxOutputTokens": 64, "stopSequences": ["END"]})
    );
}

#[tokio::test]
async fn parallel_calls_thoughts_and_other_finish_reasons_are_read() {
    let server = scripted(
        "generateContent",
        vec!["parallel_calls", "max_tokens", "blocked"],
    )
    .await;
    let lm = client(&server);
    let request = LmRequest::new(vec![Message::user("2+3 and 1+1?")]);
    let calls = lm.complete(&request).await.unwrap();
    assert_eq!(calls.reasoning.as_deref(), Some("I will add both."));
    assert_eq!(calls.tool_calls.len(), 2);
    // Gemini gave no ids: each call is numbered.
    assert_eq!(
        (
            calls.tool_calls[0].id.as_str(),
            calls.tool_calls[1].id.as_str()
        ),
        ("call_0", "call_1")
    );
    assert_eq!(calls.tool_calls[0].args().unwrap(), json!({"a": 2, "b": 3}));
    assert_eq!(calls.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(calls.usage.completion_tokens, 15, "thought tokens count");
    let cut = lm.complete(&request).await.unwrap();
    assert_eq!(cut.finish_reason, Some(FinishReason::Length));
    let blocked = lm.complete(&request).await.unwrap();
    assert_eq!(
        (blocked.text, blocked.finish_reason),
        (None, Some(FinishReason::ContentFilter))
    );
}

#[tokio::test]
async fn a_stream_gives_text_in_pieces_then_the_call_and_the_whole() {
    let server = scripted("streamGenerateContent", vec!["stream"]).await;
    let events: Vec<StreamEvent> = client(&server)
        .stream(&LmRequest::new(vec![Message::user("the sea?")]))
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert_eq!(events[0], StreamEvent::TextDelta("The sea ".into()));
    let Some(StreamEvent::Done(done)) = events.last() else {
        panic!("no Done: {events:?}")
    };
    assert_eq!(done.text.as_deref(), Some("The sea is wide."));
    assert_eq!(done.tool_calls[0].name, "add");
    assert_eq!(done.finish_reason, Some(FinishReason::ToolCalls));
    assert_eq!(done.usage.prompt_tokens, 9);
    // The call's thought signature is kept, under the id the call was given.
    let state = done.provider_state.as_ref().expect("the signature kept");
    assert_eq!(
        (state.provider(), &state.data()["calls"]["call_0"]),
        ("gemini", &json!("CiQstream=="))
    );
    let sent = server.received_requests().await.unwrap();
    assert_eq!(sent[0].url.query(), Some("alt=sse"));
}

#[tokio::test]
async fn structured_output_and_a_native_react_run_work_on_gemini() {
    let server = scripted("generateContent", vec!["structured"]).await;
    assert_eq!(structured_answer(client(&server)).await, "Paris");
    let config = &bodies(&server).await[0]["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(config["responseJsonSchema"]["required"], json!(["answer"]));

    let server = scripted("generateContent", vec!["add_call", "finish"]).await;
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(client(&server));
    let run = agent.call(ask()).await.unwrap();
    assert_eq!(run.output.answer, "42");
    assert_eq!(
        run.trajectory.steps[0].observation,
        Observation::Output(json!(42))
    );
    let second = &bodies(&server).await[1];
    let answer = second["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap())
        .find_map(|p| p.get("functionResponse"))
        .expect("the result sent back");
    assert_eq!(
        answer,
        &json!({"id": "fc-1", "name": "add", "response": {"result": "42"}})
    );
}

#[tokio::test]
async fn each_error_is_typed_and_a_rate_limit_waits_the_delay_the_body_gives() {
    let server = scripted(
        "generateContent",
        vec!["rate_limited", "overloaded", "text"],
    )
    .await;
    let completion = client(&server)
        .complete(&LmRequest::new(vec![Message::user("hi")]))
        .await
        .unwrap();
    assert_eq!(completion.usage.retries, 2);

    for (name, kind) in [
        ("rate_limited", "429"),
        ("overloaded", "503"),
        ("invalid_argument", "400"),
        ("too_long", "context_window_exceeded"),
        ("bad_key", "400"),
    ] {
        let server = scripted("generateContent", vec![name]).await;
        let lm = GeminiLm::builder("gemini-test")
            .base_url(format!("{}/v1beta", server.uri()))
            .api_key("AIza-test-secret")
            .max_retries(0)
            .build()
            .unwrap();
        let error = lm
            .complete(&LmRequest::new(vec![Message::user("hi")]))
            .await
            .unwrap_err();
        assert_eq!(error.error_type(), kind, "{name}: {error}");
        if name == "rate_limited" {
            assert!(
                matches!(error, LmError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_millis(10)),
                "{error:?}"
            );
        }
    }
    // A result that answers no call cannot be named: an error before sending.
    let orphan = LmRequest::new(vec![Message::tool_result("nobody", "1")]);
    let server = scripted("generateContent", vec!["text"]).await;
    let error = client(&server).complete(&orphan).await.unwrap_err();
    assert!(
        matches!(error, LmError::Rejected { status: 0, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn a_thought_signature_goes_back_on_the_call_it_came_on_and_to_no_other_provider() {
    let server = scripted("generateContent", vec!["signed_call", "finish"]).await;
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(client(&server));
    let run = agent.call(ask()).await.unwrap();
    assert_eq!(run.output.answer, "42");
    assert_eq!(run.trajectory.steps[0].thought, "I should add 40 and 2.");
    let second = &bodies(&server).await[1];
    let model_turn = second["contents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["role"] == "model")
        .expect("the model's turn sent back");
    let call = model_turn["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p.get("functionCall").is_some())
        .unwrap();
    assert_eq!(call["thoughtSignature"], "CiQB0e2Kb1sig==");
    assert_eq!(call["functionCall"]["id"], "fc-1");

    // A message carrying another provider's state is sent without it.
    let server = scripted("generateContent", vec!["text"]).await;
    let mut foreign = Message::assistant_tool_calls(vec![ToolCall::new("fc-1", "add", "{}")]);
    foreign.provider_state = Some(ProviderState::new(
        "anthropic",
        json!({"calls": {"fc-1": "not-gemini"}}),
    ));
    let request = LmRequest::new(vec![
        Message::user("add"),
        foreign,
        Message::tool_result("fc-1", "0"),
    ]);
    client(&server).complete(&request).await.unwrap();
    let sent = bodies(&server).await[0].to_string();
    assert!(!sent.contains("thoughtSignature"), "{sent}");
}
