//! A streamed answer has one shape in every adapter: each `AnswerDelta` names its output field
//! and carries only that field's text — no `[[ ## field ## ]]` markers, no JSON keys, quotes or
//! escapes, no XML tags or entities — `reasoning` first under its own name, then the outputs.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use signet::adapter::{Adapter, ChatAdapter, JsonAdapter, XmlAdapter};
use signet::module::{ReAct, ReActEvent};
use signet::testing::{ScriptedLm, ScriptedReply};
use signet::{Signature, tool};

/// Answer the question using the tools.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
    #[output]
    count: i64,
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

const REASONING: &str = "The tool said 5.\nSo: \"five\".";
const ANSWER: &str = "Five \"apples\" & <pears>, {not JSON}";

fn adapters() -> [(&'static str, Arc<dyn Adapter>); 3] {
    [
        ("Chat", Arc::new(ChatAdapter::new())),
        ("JSON", Arc::new(JsonAdapter::new())),
        ("XML", Arc::new(XmlAdapter::new())),
    ]
}

/// The answer deltas of a streamed text-mode run whose extractor writes the answer.
async fn deltas(adapter: Arc<dyn Adapter>) -> (Vec<(Option<String>, String)>, AskOutput) {
    let lm = ScriptedLm::replies([
        ScriptedReply::tool("add", json!({"a": 2, "b": 3})),
        ScriptedReply::finish(json!({})),
        ScriptedReply::answer(json!({"reasoning": REASONING, "answer": ANSWER, "count": 5})),
    ]);
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm)
        .with_adapter(adapter);
    let events: Vec<ReActEvent<AskOutput>> = agent
        .stream(AskInput {
            question: "2 + 3?".into(),
        })
        .collect()
        .await;
    let mut deltas = Vec::new();
    let mut output = None;
    for event in events {
        match event {
            ReActEvent::AnswerDelta { field, text } => deltas.push((field, text)),
            ReActEvent::Done { output: done, .. } => output = Some(done),
            ReActEvent::Failed { error } => panic!("the run failed: {error}"),
            _ => {}
        }
    }
    (deltas, output.expect("a done event"))
}

/// `deltas` with consecutive pieces of one field joined.
fn by_field(deltas: &[(Option<String>, String)]) -> Vec<(Option<String>, String)> {
    let mut joined: Vec<(Option<String>, String)> = Vec::new();
    for (field, text) in deltas {
        match joined.last_mut() {
            Some((last, acc)) if last == field => acc.push_str(text),
            _ => joined.push((field.clone(), text.clone())),
        }
    }
    joined
}

#[tokio::test]
async fn every_adapter_streams_the_answer_field_by_field() {
    for (name, adapter) in adapters() {
        let (deltas, output) = deltas(adapter).await;
        assert!(
            deltas.len() > 3,
            "{name}: the answer streams in pieces, got {deltas:?}"
        );
        assert!(
            deltas.iter().all(|(field, _)| field.is_some()),
            "{name}: every piece names its field: {deltas:?}"
        );
        assert_eq!(
            by_field(&deltas),
            [
                (Some("reasoning".to_owned()), REASONING.to_owned()),
                (Some("answer".to_owned()), ANSWER.to_owned()),
                (Some("count".to_owned()), "5".to_owned()),
            ],
            "{name}"
        );
        assert_eq!(
            (output.answer.as_str(), output.count),
            (ANSWER, 5),
            "{name}"
        );
    }
}

#[tokio::test]
async fn no_piece_shows_the_format_around_the_values() {
    for (name, adapter) in adapters() {
        let (deltas, _) = deltas(adapter).await;
        for (_, text) in &deltas {
            for syntax in [
                "[[ ##",
                "\"reasoning\"",
                "\"answer\":",
                "<reasoning>",
                "</answer>",
                "&amp;",
                "\\\"",
            ] {
                assert!(!text.contains(syntax), "{name}: {text:?} shows {syntax:?}");
            }
        }
    }
}

#[tokio::test]
async fn history_mode_streams_the_submit_arguments_as_the_model_writes_them() {
    use signet::lm::{Capabilities, Completion, ToolCall};
    use signet::module::ReActMode;
    let submit = json!({"answer": ANSWER, "count": 5}).to_string();
    let lm = Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new("c1", "add", r#"{"a": 2, "b": 3}"#)]),
            Completion::tool_calls(vec![ToolCall::new("c2", "submit", submit)]),
        ])
        .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_mode(ReActMode::History)
        .with_adapter(ChatAdapter::new().with_native_function_calling(true))
        .with_lm(lm);
    let events: Vec<ReActEvent<AskOutput>> = agent
        .stream(AskInput {
            question: "2 + 3?".into(),
        })
        .collect()
        .await;
    let mut deltas = Vec::new();
    let mut submitted = None;
    for (position, event) in events.iter().enumerate() {
        match event {
            ReActEvent::AnswerDelta { field, text } => {
                deltas.push((field.clone(), text.clone()));
            }
            ReActEvent::ToolCallFinished { name, .. } if name == "add" => {
                assert!(deltas.is_empty(), "nothing streams before the submit");
            }
            ReActEvent::Done { output, .. } => submitted = Some((position, output)),
            _ => {}
        }
    }
    let (_, output) = submitted.expect("a done event");
    assert_eq!((output.answer.as_str(), output.count), (ANSWER, 5));
    assert!(
        deltas.len() > 3,
        "the arguments stream in pieces: {deltas:?}"
    );
    assert_eq!(
        by_field(&deltas),
        [
            (Some("answer".to_owned()), ANSWER.to_owned()),
            (Some("count".to_owned()), "5".to_owned()),
        ]
    );
}
