//! Scripted replies written as actions (call a tool, finish, answer) stand in for a real model in
//! every adapter and mode: the same script, rendered at call time in the request's format.

use std::sync::Arc;

use serde_json::json;
use signet::adapter::Adapter;
use signet::lm::{Capabilities, ConstrainedToolCalls};
use signet::prelude::*;
use signet::testing::{ScriptedLm, ScriptedReply};

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Answer with the tools.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: i64,
}

/// Describe a list.
#[derive(Signature)]
struct Describe {
    #[input]
    text: String,
    #[output]
    tags: Vec<String>,
    #[output]
    count: u32,
}

fn script() -> Vec<ScriptedReply> {
    vec![
        ScriptedReply::tool("add", json!({"a": 2, "b": 3})).thought("Add them."),
        ScriptedReply::finish(json!({})),
        ScriptedReply::answer(json!({"answer": 5})),
    ]
}

fn adapters() -> Vec<(&'static str, Arc<dyn Adapter>)> {
    vec![
        ("chat", Arc::new(ChatAdapter::new())),
        ("json", Arc::new(JsonAdapter::new())),
        ("xml", Arc::new(XmlAdapter::new())),
        ("constrained", Arc::new(JsonAdapter::constrained())),
    ]
}

#[tokio::test]
async fn one_script_drives_react_in_every_text_format() {
    for (name, adapter) in adapters() {
        let lm = Arc::new(ScriptedLm::replies(script()));
        let agent = ReAct::<Ask>::new()
            .tool(AddTool)
            .with_lm(lm.clone())
            .with_adapter(adapter)
            .with_mode(ReActMode::Text);
        let out = agent
            .call(AskInput {
                question: "2 + 3?".into(),
            })
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(out.output.answer, 5, "{name}");
        let calls: Vec<&str> = out
            .trajectory
            .steps
            .iter()
            .map(|s| s.tool_name.as_str())
            .collect();
        assert_eq!(calls, ["add", "finish"], "{name}");
        assert_eq!(out.trajectory.steps[0].thought, "Add them.", "{name}");
        assert_eq!(
            out.usage.adapter_fallbacks, 0,
            "{name}: every reply was read in its own format"
        );
        assert_eq!(lm.remaining(), 0, "{name}: the extractor answered too");
    }
}

#[tokio::test]
async fn the_same_script_makes_native_calls_and_constrained_lists() {
    let native = Arc::new(ScriptedLm::replies(script()).with_capabilities(Capabilities::openai()));
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(native.clone());
    let out = agent
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, 5);
    assert_eq!(out.trajectory.steps[0].call_id.as_deref(), Some("call_0"));
    assert!(!native.requests()[0].tools.is_empty(), "native mode");

    let small = ScriptedLm::replies(script()).with_capabilities(Capabilities::llama_cpp());
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(ConstrainedToolCalls::new(small))
        .with_adapter(JsonAdapter::constrained());
    let out = agent
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, 5);
    assert_eq!(out.trajectory.steps[0].tool_name, "add");
}

#[tokio::test]
async fn answers_are_typed_in_every_adapter() {
    for (name, adapter) in adapters() {
        let predict = Predict::<Describe>::new()
            .with_lm(ScriptedLm::replies([ScriptedReply::answer(
                json!({"tags": ["red", "round"], "count": 2}),
            )]))
            .with_adapter(adapter);
        let out = predict
            .call(DescribeInput {
                text: "a red ball".into(),
            })
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (out.tags, out.count),
            (vec!["red".to_owned(), "round".to_owned()], 2),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_chain_of_thought_answer_gets_its_reasoning() {
    let cot = ChainOfThought::<Ask>::new().with_lm(ScriptedLm::replies([ScriptedReply::answer(
        json!({"answer": 4}),
    )]));
    let out = cot
        .call(AskInput {
            question: "2 + 2?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, 4);
    assert!(!out.reasoning.is_empty());
}
