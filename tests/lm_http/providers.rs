//! The capability presets of common servers, each driven through the real HTTP client (`OpenAiLm`)
//! against a mock OpenAI-compatible server: with a preset that declares native function calling,
//! ReAct's `Auto` mode sends the tools as `tools=` and runs the tool call the reply makes; with
//! llama.cpp's preset (no native tool calls declared) it says so and runs in text mode.

use futures::StreamExt;
use serde_json::{Value, json};
use signet::adapter::JsonAdapter;
use signet::lm::{Capabilities, OpenAiLm};
use signet::module::{Observation, Predict, ReAct, ReActEvent, ReActMode};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use crate::scripted::Script;
use crate::support;
use support::*;

/// The presets that declare native function calling, by name.
fn native_presets() -> [(&'static str, Capabilities); 4] {
    [
        ("openai", Capabilities::openai()),
        ("vllm", Capabilities::vllm()),
        ("ollama", Capabilities::ollama()),
        ("openrouter", Capabilities::openrouter()),
    ]
}

/// A whole completion as the SSE chunks a server streams for it: the message as one delta (tool
/// calls with their indexes), then the finish reason, then the usage, then `[DONE]`.
fn as_events(completion: &Value) -> String {
    let choice = &completion["choices"][0];
    let mut delta = choice["message"].clone();
    if let Some(calls) = delta["tool_calls"].as_array_mut() {
        for (index, call) in calls.iter_mut().enumerate() {
            call["index"] = json!(index);
        }
    }
    let chunk = |choices: Value, usage: Value| {
        json!({"id": completion["id"], "object": "chat.completion.chunk", "created": 1,
               "model": completion["model"], "choices": choices, "usage": usage})
    };
    let chunks = [
        chunk(
            json!([{"index": 0, "delta": delta, "finish_reason": null}]),
            Value::Null,
        ),
        chunk(
            json!([{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]),
            Value::Null,
        ),
        chunk(json!([]), completion["usage"].clone()),
    ];
    let mut events: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    events.push_str("data: [DONE]\n\n");
    events
}

async fn server_with(replies: Vec<Value>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Script::new(replies, as_events))
        .mount(&server)
        .await;
    server
}

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    })
}

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

fn calls(calls: Vec<Value>) -> Value {
    completion(
        json!({"role": "assistant", "content": null, "tool_calls": calls}),
        "tool_calls",
    )
}

fn text(content: &str) -> Value {
    completion(json!({"role": "assistant", "content": content}), "stop")
}

fn lm(server: &MockServer, capabilities: Capabilities) -> OpenAiLm {
    OpenAiLm::builder("test-model")
        .base_url(format!("{}/v1", server.uri()))
        .api_key("sk-test")
        .capabilities(capabilities)
        .max_retries(0)
        .build()
        .expect("a valid client")
}

/// The names of the functions a request body offers in `tools`.
fn offered(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn each_native_preset_sends_the_tools_and_runs_the_call_the_reply_makes() {
    for (name, capabilities) in native_presets() {
        let server = server_with(vec![
            calls(vec![tool_call("call_a", "add", json!({"a": 2, "b": 3}))]),
            calls(vec![tool_call("call_b", "finish", json!({"answer": "5"}))]),
        ])
        .await;
        let agent = ReAct::<Ask>::new()
            .tool(AddTool)
            .with_lm(lm(&server, capabilities));
        assert_eq!(ReActMode::default(), ReActMode::Auto);

        let events: Vec<ReActEvent<AskOutput>> = agent.stream(ask()).collect().await;
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, ReActEvent::TextMode { .. })),
            "{name}: Auto chose text mode"
        );
        let Some(ReActEvent::Done {
            output, trajectory, ..
        }) = events.last()
        else {
            panic!("{name}: the run did not finish: {:?}", events.last());
        };
        assert_eq!(output.answer, "5", "{name}");
        let step = &trajectory.steps[0];
        assert_eq!(
            (step.tool_name.as_str(), step.call_id.as_deref()),
            ("add", Some("call_a")),
            "{name}"
        );
        assert_eq!(step.observation, Observation::Output(json!(5)), "{name}");

        let sent = bodies(&server).await;
        assert_eq!(sent.len(), 2, "{name}: one request per model turn");
        assert_eq!(offered(&sent[0]), ["add", "finish"], "{name}");
        assert_eq!(sent[0]["tool_choice"], "auto", "{name}");
        // A streamed run streams its native steps.
        assert_eq!(sent[0]["stream"], true, "{name}");
        // The call's result went back as a `tool` message answering its id.
        let messages = sent[1]["messages"].as_array().expect("messages");
        let result = messages.last().expect("a last message");
        assert_eq!(result["role"], "tool", "{name}");
        assert_eq!(result["tool_call_id"], "call_a", "{name}");
        assert_eq!(result["content"], "5", "{name}");
    }
}

#[tokio::test]
async fn the_llama_cpp_preset_declares_no_native_tools_so_auto_runs_in_text_mode() {
    let server = server_with(vec![
        text(&step("Add them.", "add", json!({"a": 2, "b": 3}))),
        text(&step("Done.", "finish", json!({"answer": "5"}))),
    ])
    .await;
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm(&server, Capabilities::llama_cpp()));

    let events: Vec<ReActEvent<AskOutput>> = agent.stream(ask()).collect().await;
    assert!(
        matches!(&events[0], ReActEvent::TextMode { model, reason } if model == "test-model" && reason.starts_with("the LM reports no native function calling")),
        "the first event says the run is in text mode: {:?}",
        events[0]
    );
    let Some(ReActEvent::Done {
        output, trajectory, ..
    }) = events.last()
    else {
        panic!("the run did not finish: {:?}", events.last());
    };
    assert_eq!(output.answer, "5");
    assert_eq!(
        trajectory.steps[0].observation,
        Observation::Output(json!(5))
    );

    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|body| body.get("tools").is_none()));
}

#[tokio::test]
async fn a_preset_with_structured_outputs_gets_the_output_schema_from_the_json_adapter() {
    for (name, capabilities) in native_presets() {
        let server = server_with(vec![text(r#"{"answer": "Paris"}"#)]).await;
        let predict = Predict::<Ask>::new()
            .with_lm(lm(&server, capabilities))
            .with_adapter(JsonAdapter::new());
        let out = predict.call(ask()).await.expect("a typed answer");
        assert_eq!(out.answer, "Paris", "{name}");

        let sent = bodies(&server).await;
        let format = &sent[0]["response_format"];
        assert_eq!(format["type"], "json_schema", "{name}");
        assert_eq!(
            format["json_schema"]["schema"]["required"],
            json!(["answer"]),
            "{name}"
        );
    }
}
