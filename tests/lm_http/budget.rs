//! What calls cost and how much a run may spend: a `Pricing` turns every call's tokens into
//! `Usage::cost_nanousd` (over HTTP from the provider's counts, cached prompt tokens billed at
//! their own price, cache hits free), costs add up through modules, and a `Budget` stops an agent,
//! `Predict` with tools, or an evaluation with a typed error before the next call would go past
//! it, keeping what was done.

use futures::StreamExt;
use serde_json::json;
use signet::lm::{
    Budget, Completion, Lm, LmRequest, Message, OpenAiLm, Pricing, Spending, StreamEvent,
};
use signet::module::{Limits, Predict, ReAct, react::RunFailure};
use signet::testing::ScriptedLm;
use signet::{Error, tool};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support;
use support::{Ask, AskInput, step};

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn priced(text: String, prompt: u64) -> Completion {
    let mut reply = Completion::text(text);
    reply.usage.prompt_tokens = prompt;
    reply.usage.completion_tokens = 100;
    reply
}

/// $1 per million prompt tokens, $2 per million completion tokens.
fn pricing() -> Pricing {
    Pricing::per_million_tokens(1.0, 2.0)
}

#[tokio::test]
async fn an_agent_stops_before_the_call_that_would_cross_its_cost_budget() {
    // Every step costs 1,000 prompt + 100 completion tokens = $0.0012.
    let lm = ScriptedLm::new(
        (0..10).map(|i| priced(step("more", "add", json!({"a": i, "b": 1})), 1_000)),
    )
    .with_pricing(pricing());
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm)
        .with_limits(Limits::default().budget(Budget::usd(0.005)));
    let error = agent
        .call(AskInput {
            question: "count".into(),
        })
        .await
        .unwrap_err();
    let RunFailure::Budget(exceeded) = &error.reason else {
        panic!("a budget failure, got {error}");
    };
    assert_eq!(exceeded.what, Spending::Cost);
    // Four calls ($0.0048) ran; a fifth would have reached $0.0060.
    assert_eq!(error.usage.lm_calls, 4);
    assert_eq!(error.usage.cost_nanousd, 4_800_000);
    assert!(error.usage.cost_usd() <= 0.005);
    assert_eq!(
        error.trajectory.steps.len(),
        4,
        "the steps that ran are kept"
    );
    assert!(
        error.to_string().contains("cost budget of $0.0050"),
        "{error}"
    );
}

#[tokio::test]
async fn predict_with_tools_stops_at_its_token_budget_with_a_typed_error() {
    let mut replies = Vec::new();
    for _ in 0..10 {
        let mut reply = Completion::tool_calls(vec![signet::lm::ToolCall::new(
            "c1",
            "add",
            r#"{"a": 1, "b": 2}"#,
        )]);
        reply.usage.prompt_tokens = 300;
        replies.push(reply);
    }
    let lm = ScriptedLm::new(replies).with_capabilities(signet::lm::Capabilities::openai());
    let predict = Predict::<Ask>::new()
        .with_lm(lm)
        .tool(AddTool)
        .with_tool_limits(Limits::default().budget(Budget::tokens(1_000)));
    let error = predict
        .call(AskInput {
            question: "1+2?".into(),
        })
        .await
        .unwrap_err();
    let Error::Budget(exceeded) = &error else {
        panic!("a budget error, got {error}");
    };
    assert_eq!(exceeded.what, Spending::Tokens);
    assert_eq!((exceeded.spent, exceeded.limit), (900, 1_000));
}

#[tokio::test]
async fn costs_come_from_the_providers_counts_over_http_and_cache_hits_are_free() {
    let server = MockServer::start().await;
    let body = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10_000, "completion_tokens": 1_000, "total_tokens": 11_000,
                  "prompt_tokens_details": {"cached_tokens": 4_000}}
    });
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    let lm = OpenAiLm::builder("m")
        .base_url(format!("{}/v1", server.uri()))
        .api_key("k")
        .pricing(Pricing::per_million_tokens(2.5, 10.0).cached_input(1.25))
        .memory_cache()
        .build()
        .unwrap();
    let request = LmRequest::new(vec![Message::user("hi")]);
    let usage = lm.complete(&request).await.unwrap().usage;
    assert_eq!(usage.cached_prompt_tokens, 4_000);
    // 6,000 x 2.5 + 4,000 x 1.25 + 1,000 x 10, per million: $0.03.
    assert_eq!(usage.cost_nanousd, 30_000_000);
    let again = lm.complete(&request).await.unwrap().usage;
    assert_eq!((again.cache_hits, again.cost_nanousd), (1, 0));
}

#[tokio::test]
async fn a_streamed_reply_is_priced_from_its_usage_chunk() {
    let server = MockServer::start().await;
    let chunks = [
        json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}}]}),
        json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        json!({"id": "c", "model": "m", "choices": [],
               "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0}}),
    ];
    let sse: String = chunks
        .iter()
        .map(|c| format!("data: {c}\n\n"))
        .chain(["data: [DONE]\n\n".to_owned()])
        .collect();
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(sse),
        )
        .mount(&server)
        .await;
    let lm = OpenAiLm::builder("m")
        .base_url(format!("{}/v1", server.uri()))
        .api_key("k")
        .pricing(pricing())
        .build()
        .unwrap();
    let request = LmRequest::new(vec![Message::user("hi")]);
    let events: Vec<_> = lm.stream(&request).collect().await;
    let Some(Ok(StreamEvent::Done(done))) = events.last() else {
        panic!("{events:?}");
    };
    assert_eq!(done.usage.cost_usd(), 1.0);
}
