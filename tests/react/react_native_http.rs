//! ReAct in native function-calling mode through the real HTTP client (`OpenAiLm`) against a mock
//! OpenAI-compatible server: tools go out as `tools=`, the model's parallel tool calls run
//! concurrently, and the next request carries the assistant's `tool_calls` and one `tool` message per
//! call, with its `tool_call_id`, in call order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use signet::lm::{Capabilities, OpenAiLm};
use signet::module::{Observation, ReAct};
use signet::tool;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::support;
use support::*;

/// Get tomorrow's forecast for a city.
#[tool]
async fn forecast(city: String) -> String {
    // The first call is the slower one: results must still be sent back in call order.
    if city == "Oslo" {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    format!("{city}: 4 °C")
}

/// Replies in turn: first two parallel tool calls, then a text answer.
struct Script {
    replies: Vec<Value>,
    next: AtomicUsize,
}

impl Respond for Script {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        match self.replies.get(index) {
            Some(body) => ResponseTemplate::new(200).set_body_json(body),
            None => ResponseTemplate::new(500).set_body_string("no reply left"),
        }
    }
}

fn reply(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "test-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    })
}

fn tool_call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

async fn server_with(replies: Vec<Value>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Script {
            replies,
            next: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

fn agent(server: &MockServer) -> ReAct<Ask> {
    let lm = OpenAiLm::builder("test-model")
        .base_url(format!("{}/v1", server.uri()))
        .api_key("sk-test")
        .capabilities(Capabilities::openai())
        .build()
        .unwrap();
    ReAct::<Ask>::new().tool(ForecastTool).with_lm(lm)
}

#[tokio::test]
async fn parallel_tool_calls_round_trip_over_http() {
    let server = server_with(vec![
        reply(
            json!({"role": "assistant", "content": null, "tool_calls": [
                tool_call("call_a", "forecast", json!({"city": "Oslo"})),
                tool_call("call_b", "forecast", json!({"city": "Bergen"})),
            ]}),
            "tool_calls",
        ),
        reply(
            json!({"role": "assistant", "content": "[[ ## answer ## ]]\nOslo and Bergen: 4 °C\n\n[[ ## completed ## ]]"}),
            "stop",
        ),
    ])
    .await;
    let out = agent(&server)
        .call(AskInput {
            question: "Weather in Oslo and Bergen?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "Oslo and Bergen: 4 °C");
    assert_eq!(out.usage.lm_calls, 2);
    assert_eq!(out.usage.prompt_tokens, 200);
    let steps: Vec<(&str, &Observation, Option<&str>)> = out
        .trajectory
        .steps
        .iter()
        .map(|s| (s.tool_name.as_str(), &s.observation, s.call_id.as_deref()))
        .collect();
    assert_eq!(
        steps,
        [
            (
                "forecast",
                &Observation::Output(json!("Oslo: 4 °C")),
                Some("call_a")
            ),
            (
                "forecast",
                &Observation::Output(json!("Bergen: 4 °C")),
                Some("call_b")
            ),
        ]
    );

    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 2);
    // The first request offers the tool and `finish` as functions.
    let names: Vec<&str> = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["forecast", "finish"]);
    assert_eq!(sent[0]["tool_choice"], "auto");
    assert_eq!(sent[0]["parallel_tool_calls"], true);
    // The second carries the assistant's calls, then one tool message per call, in call order.
    let messages = sent[1]["messages"].as_array().unwrap();
    let tail = &messages[messages.len() - 3..];
    assert_eq!(tail[0]["role"], "assistant");
    assert_eq!(tail[0]["content"], "", "llama.cpp rejects a null content");
    let ids: Vec<&str> = tail[0]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["call_a", "call_b"]);
    assert_eq!(
        (
            &tail[1]["role"],
            &tail[1]["tool_call_id"],
            &tail[1]["content"]
        ),
        (&json!("tool"), &json!("call_a"), &json!("Oslo: 4 °C"))
    );
    assert_eq!(
        (&tail[2]["tool_call_id"], &tail[2]["content"]),
        (&json!("call_b"), &json!("Bergen: 4 °C"))
    );
}

#[tokio::test]
async fn finish_with_outputs_over_http_ends_the_run() {
    let server = server_with(vec![reply(
        json!({"role": "assistant", "content": null, "tool_calls": [
            tool_call("call_f", "finish", json!({"answer": "done"})),
        ]}),
        "tool_calls",
    )])
    .await;
    let out = agent(&server)
        .call(AskInput {
            question: "q".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "done");
    assert_eq!(out.usage.lm_calls, 1);
    assert_eq!(out.trajectory.stopped_early, None);
}

#[tokio::test]
async fn a_server_error_mid_run_is_a_typed_error_with_the_trajectory() {
    // One reply, then the server fails every retry: the run fails with the LM's error, no panic.
    let server = server_with(vec![reply(
        json!({"role": "assistant", "content": null, "tool_calls": [
            tool_call("call_a", "forecast", json!({"city": "Oslo"})),
        ]}),
        "tool_calls",
    )])
    .await;
    let lm = OpenAiLm::builder("test-model")
        .base_url(format!("{}/v1", server.uri()))
        .api_key("sk-test")
        .capabilities(Capabilities::openai())
        .max_retries(0)
        .build()
        .unwrap();
    let agent = ReAct::<Ask>::new().tool(ForecastTool).with_lm(lm);
    let error = agent
        .call(AskInput {
            question: "q".into(),
        })
        .await
        .unwrap_err();
    // The LM's typed error, with the step that already ran and the usage so far.
    assert!(
        matches!(
            error.call_error(),
            Some(signet::Error::Lm(signet::lm::LmError::Server {
                status: 500,
                ..
            }))
        ),
        "{error:?}"
    );
    assert!(error.is_retryable(), "a server error may pass");
    assert_eq!(error.trajectory.steps.len(), 1);
    assert_eq!(
        error.trajectory.steps[0].observation,
        Observation::Output(json!("Oslo: 4 °C"))
    );
    assert_eq!(error.usage.lm_calls, 1);
}
