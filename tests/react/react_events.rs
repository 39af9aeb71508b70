//! The ReAct event stream: typed events in order, ending with `done`; dropping the stream cancels
//! the run and the tool calls in flight.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt;
use serde_json::json;
use signet::module::{Limits, Observation, ReAct, ReActEvent};
use signet::testing::ScriptedLm;
use signet::{ToolBox, tool};

#[tokio::test]
async fn events_arrive_in_order_and_end_with_done() {
    let lm = Arc::new(ScriptedLm::texts([
        step("thinking", "add", json!({"a": 2, "b": 3})),
        step("thinking", "finish", json!({})),
        "[[ ## reasoning ## ]]\nsum\n\n[[ ## answer ## ]]\n5".to_owned(),
    ]));
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm);
    let events = all_events(&agent, "2 + 3?").await;
    let mut kinds: Vec<String> = events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    kinds.dedup_by(|a, b| a == "answer_delta" && b == "answer_delta");
    assert_eq!(
        kinds,
        [
            "text_mode",
            "step_started",
            "thought",
            "tool_call_started",
            "tool_call_finished",
            "step_started",
            "thought",
            "tool_call_started",
            "tool_call_finished",
            "extracting",
            "answer_delta",
            "answer_done",
            "done",
        ]
    );
    match &events[4] {
        ReActEvent::ToolCallFinished {
            name, observation, ..
        } => {
            assert_eq!(
                (name.as_str(), observation),
                ("add", &Observation::Output(json!(5)))
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    match events.last() {
        Some(ReActEvent::Done {
            output,
            usage,
            iterations,
            ..
        }) => {
            assert_eq!(output.answer, "5");
            assert_eq!(usage.lm_calls, 3);
            assert_eq!(*iterations, 2);
        }
        other => panic!("expected done, got {other:?}"),
    }
}

/// Every event of a streamed run of `agent` on `question`.
async fn all_events(agent: &ReAct<Ask>, question: &str) -> Vec<ReActEvent<AskOutput>> {
    agent
        .stream(AskInput {
            question: question.into(),
        })
        .collect()
        .await
}

/// The answer deltas of a streamed run, concatenated per field, in order of first appearance.
fn answer_text(events: &[ReActEvent<AskOutput>]) -> Vec<(Option<String>, String)> {
    let mut fields: Vec<(Option<String>, String)> = Vec::new();
    for event in events {
        if let ReActEvent::AnswerDelta { field, text } = event {
            match fields.iter_mut().find(|(f, _)| f == field) {
                Some((_, acc)) => acc.push_str(text),
                None => fields.push((field.clone(), text.clone())),
            }
        }
    }
    fields
}

#[tokio::test]
async fn the_extractor_streams_its_answer_field_by_field() {
    let lm = Arc::new(ScriptedLm::texts([
        step("thinking", "finish", json!({})),
        "[[ ## reasoning ## ]]\nThe tools were not needed.\n\n[[ ## answer ## ]]\nFive apples,\n\nand two pears.\n\n[[ ## completed ## ]]".to_owned(),
    ]));
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm);
    let events = all_events(&agent, "fruit?").await;
    let deltas = events
        .iter()
        .filter(|e| matches!(e, ReActEvent::AnswerDelta { .. }))
        .count();
    assert!(
        deltas > 2,
        "the scripted LM streams word by word: {deltas} deltas"
    );
    assert_eq!(
        answer_text(&events),
        [
            (
                Some("reasoning".into()),
                "The tools were not needed.".into()
            ),
            (
                Some("answer".into()),
                "Five apples,\n\nand two pears.".into()
            ),
        ]
    );
    match events.last() {
        Some(ReActEvent::Done { output, .. }) => {
            assert_eq!(output.answer, "Five apples,\n\nand two pears.")
        }
        other => panic!("expected done, got {other:?}"),
    }
}

#[tokio::test]
async fn with_the_json_adapter_the_fields_stream_by_name() {
    let reply = r#"{"reasoning": "none needed", "answer": "5"}"#;
    let lm = Arc::new(ScriptedLm::texts([
        r#"{"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {}}"#.to_owned(),
        reply.to_owned(),
    ]));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm)
        .with_adapter(signet::adapter::JsonAdapter::new());
    let events = all_events(&agent, "2 + 3?").await;
    assert_eq!(
        answer_text(&events),
        [
            (Some("reasoning".into()), "none needed".into()),
            (Some("answer".into()), "5".into())
        ]
    );
    assert!(matches!(events.last(), Some(ReActEvent::Done { .. })));
}

#[tokio::test]
async fn a_loop_that_stops_early_says_why() {
    let lm = Arc::new(ScriptedLm::texts([
        step("thinking", "add", json!({"a": 1, "b": 1})),
        "[[ ## reasoning ## ]]\nr\n\n[[ ## answer ## ]]\n2".to_owned(),
    ]));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm)
        .with_limits(Limits::default().max_iters(1));
    let events = all_events(&agent, "1 + 1?").await;
    let stopped = events
        .iter()
        .position(|e| {
            matches!(
                e,
                ReActEvent::StoppedEarly {
                    reason: signet::module::react::StopReason::MaxIters { max_iters: 1 }
                }
            )
        })
        .expect("a stopped_early event");
    let extracting = events
        .iter()
        .position(|e| matches!(e, ReActEvent::Extracting))
        .expect("an extracting event");
    assert!(stopped < extracting);
}

#[tokio::test]
async fn a_failed_run_ends_with_failed() {
    let lm = Arc::new(ScriptedLm::texts([step("thinking", "finish", json!({}))]));
    let agent = ReAct::<Ask>::new().with_lm(lm);
    let events = all_events(&agent, "?").await;
    match events.last() {
        Some(ReActEvent::Failed { error }) => {
            assert!(error.to_string().contains("no reply left"), "{error}")
        }
        other => panic!("expected failed, got {other:?}"),
    }
}

/// A tool that never returns, and records whether its future was dropped.
struct Hang {
    dropped: Arc<AtomicBool>,
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tool]
impl Hang {
    /// Wait forever.
    #[tool]
    async fn wait(&self) -> bool {
        let _guard = SetOnDrop(self.dropped.clone());
        std::future::pending::<()>().await;
        true
    }
}

#[tokio::test]
async fn dropping_the_stream_cancels_the_tool_in_flight() {
    let dropped = Arc::new(AtomicBool::new(false));
    let tools = Hang::tools(&Arc::new(Hang {
        dropped: dropped.clone(),
    }));
    let lm = Arc::new(ScriptedLm::texts([step("thinking", "wait", json!({}))]));
    let agent = ReAct::<Ask>::new().tools(tools).with_lm(lm);
    let mut events = agent.stream(AskInput {
        question: "?".into(),
    });
    loop {
        match events.next().await {
            Some(ReActEvent::ToolCallStarted { .. }) => break,
            Some(_) => continue,
            None => panic!("the stream ended before the tool started"),
        }
    }
    // Give the tool a chance to start waiting, then hang up.
    tokio::task::yield_now().await;
    events.next().now_or_never();
    assert!(!dropped.load(Ordering::SeqCst), "the tool is still running");
    drop(events);
    assert!(
        dropped.load(Ordering::SeqCst),
        "dropping the stream dropped the tool's future"
    );
}

use futures::FutureExt;

use crate::support;
use support::*;

#[tokio::test]
async fn native_mode_emits_an_event_pair_per_concurrent_call() {
    use signet::lm::{Capabilities, Completion, ToolCall};
    let lm = Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![
                ToolCall::new("c1", "add", r#"{"a": 1, "b": 2}"#),
                ToolCall::new("c2", "add", r#"{"a": 3, "b": 4}"#),
            ]),
            signet::lm::Completion::text("[[ ## answer ## ]]\n3 and 7"),
        ])
        .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm);
    let events = all_events(&agent, "?").await;
    // Concurrent calls finish in whatever order they complete; each event names its call.
    let mut finished: Vec<(usize, Observation)> = events
        .iter()
        .filter_map(|e| match e {
            ReActEvent::ToolCallFinished {
                index, observation, ..
            } => Some((*index, observation.clone())),
            _ => None,
        })
        .collect();
    finished.sort_by_key(|(index, _)| *index);
    assert_eq!(
        finished,
        [
            (0, Observation::Output(json!(3))),
            (1, Observation::Output(json!(7)))
        ]
    );
    assert!(matches!(events.last(), Some(ReActEvent::Done { .. })));
}

#[tokio::test]
async fn an_explicit_mode_sends_no_text_mode_event() {
    let lm = Arc::new(ScriptedLm::texts([step(
        "done",
        "finish",
        json!({"answer": "4"}),
    )]));
    let agent = ReAct::<Ask>::new()
        .with_lm(lm)
        .with_mode(signet::module::ReActMode::Text);
    let events = all_events(&agent, "2 + 2?").await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ReActEvent::TextMode { .. })),
        "{events:?}"
    );
    assert!(matches!(events.last(), Some(ReActEvent::Done { .. })));
}

/// The events after the last tool call: how the answer reached the caller.
fn answer_events(events: &[ReActEvent<AskOutput>]) -> Vec<serde_json::Value> {
    let last_tool = events
        .iter()
        .rposition(|e| matches!(e, ReActEvent::ToolCallFinished { .. }))
        .map_or(0, |i| i + 1);
    events[last_tool..]
        .iter()
        .map(|e| {
            let mut json = serde_json::to_value(e).unwrap();
            if json["type"] == "done" {
                json = json!({"type": "done", "iterations": json["iterations"]});
            }
            json
        })
        .collect()
}

#[tokio::test]
async fn an_answer_carried_by_finish_arrives_as_deltas_then_answer_done() {
    let lm = Arc::new(ScriptedLm::texts([
        step("add", "add", json!({"a": 2, "b": 3})),
        step("done", "finish", json!({"answer": "5"})),
    ]));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm)
        .with_mode(signet::module::ReActMode::Text);
    let events = all_events(&agent, "2 + 3?").await;
    assert_eq!(
        answer_events(&events),
        [
            json!({"type": "answer_delta", "field": "answer", "text": "5"}),
            json!({"type": "answer_done"}),
            json!({"type": "done", "iterations": 2}),
        ]
    );
}

#[tokio::test]
async fn a_native_text_answer_streams_as_it_is_written_then_answer_done() {
    use signet::lm::{Capabilities, Completion, ToolCall};
    // Text a model writes beside its tool calls is not an answer and is not streamed.
    let mut calls = Completion::tool_calls(vec![ToolCall::new("c1", "add", r#"{"a": 1, "b": 2}"#)]);
    calls.text = Some("Let me add these.".into());
    let lm = Arc::new(
        ScriptedLm::new([
            calls,
            Completion::text(
                "[[ ## answer ## ]]\nThree, since 1 + 2 = 3.\n\n[[ ## completed ## ]]",
            ),
        ])
        .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm);
    let events = all_events(&agent, "?").await;
    let answer = answer_events(&events);
    assert_eq!(answer[0], json!({"type": "step_started", "turn": 1}));
    let deltas: Vec<&str> = answer[1..answer.len() - 2]
        .iter()
        .map(|e| {
            assert_eq!(
                (&e["type"], &e["field"]),
                (&json!("answer_delta"), &json!("answer"))
            );
            e["text"].as_str().unwrap()
        })
        .collect();
    assert!(
        deltas.len() > 2,
        "word by word, as the scripted LM streams: {deltas:?}"
    );
    assert_eq!(deltas.concat(), "Three, since 1 + 2 = 3.");
    assert_eq!(
        answer[answer.len() - 2..],
        [
            json!({"type": "answer_done"}),
            json!({"type": "done", "iterations": 1})
        ]
    );
    assert_eq!(
        answer_text(&events).len(),
        1,
        "nothing from the tool-calling step"
    );
}

#[tokio::test]
async fn a_streamed_extractor_answer_is_not_repeated_and_ends_with_answer_done() {
    let lm = Arc::new(ScriptedLm::texts([
        step("thinking", "finish", json!({})),
        "[[ ## reasoning ## ]]\nnone\n\n[[ ## answer ## ]]\nfive".to_owned(),
    ]));
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm);
    let events = all_events(&agent, "?").await;
    assert_eq!(
        answer_text(&events),
        [
            (Some("reasoning".into()), "none".into()),
            (Some("answer".into()), "five".into())
        ]
    );
    let done = events
        .iter()
        .filter(|e| matches!(e, ReActEvent::AnswerDone))
        .count();
    assert_eq!(done, 1);
    assert!(matches!(&events[events.len() - 2], ReActEvent::AnswerDone));
}

#[tokio::test]
async fn selecting_tools_is_announced_before_the_selection_call() {
    let tools: Vec<Arc<dyn signet::Tool>> = (0..3)
        .map(|i| {
            Arc::new(
                signet::tool::FnTool::builder(format!("tool_{i}"))
                    .description(format!("Tool number {i}."))
                    .sync_fn(|_| Ok::<_, String>(json!("ok"))),
            ) as Arc<dyn signet::Tool>
        })
        .collect();
    let lm = Arc::new(ScriptedLm::texts([
        r#"{"tools": ["tool_1"]}"#.to_owned(),
        step("done", "finish", json!({"answer": "ok"})),
    ]));
    let agent = ReAct::<Ask>::new()
        .tools(tools)
        .with_tool_selection_threshold(2)
        .with_mode(signet::module::ReActMode::Text)
        .with_lm(lm);
    let events = all_events(&agent, "?").await;
    assert!(
        matches!(&events[0], ReActEvent::SelectingTools { total: 3 }),
        "{events:?}"
    );
    assert!(
        matches!(&events[1], ReActEvent::ToolsSelected { names } if names == &["tool_1"]),
        "{events:?}"
    );
}
