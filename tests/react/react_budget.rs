//! The context budget: with a known context window, every prompt is counted before it is sent
//! and the trajectory truncated until it fits, with a `compacted` event; the provider's refusal
//! stays the fallback.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use signet::lm::{Capabilities, Completion, LmError, LmRequest, ToolCall, count_prompt_tokens};
use signet::module::{Limits, Predict, ReAct, ReActEvent, ReActMode, react::StopReason};
use signet::testing::ScriptedLm;
use signet::tool;

use crate::support;
use support::*;

/// Fetch a long report.
#[tool]
fn report(part: u32) -> String {
    format!("part {part}: {}", "lorem ipsum dolor sit amet ".repeat(40))
}

/// The largest prompt among `requests`, counted as the budget counts it.
fn largest_prompt(requests: &[LmRequest]) -> usize {
    requests
        .iter()
        .map(|r| count_prompt_tokens("scripted", &r.messages, &r.tools).tokens)
        .max()
        .unwrap_or(0)
}

fn compactions(events: &[ReActEvent<AskOutput>]) -> Vec<(usize, usize, usize)> {
    events
        .iter()
        .filter_map(|e| match e {
            ReActEvent::Compacted {
                dropped_steps,
                tokens_before,
                tokens_after,
            } => Some((*dropped_steps, *tokens_before, *tokens_after)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn text_mode_prompts_are_cut_to_the_budget_before_they_are_sent() {
    let lm = Arc::new(ScriptedLm::texts([
        step("first", "report", json!({"part": 1})),
        step("second", "report", json!({"part": 2})),
        step("third", "report", json!({"part": 3})),
        step("done", "finish", json!({"answer": "read"})),
    ]));
    // Room for the instructions and about two reports, not three.
    let window = 1_500;
    let agent = ReAct::<Ask>::new()
        .tool(ReportTool)
        .with_mode(ReActMode::Text)
        .with_lm(lm.clone())
        .with_options(signet::lm::LmOptions::new().max_tokens(200))
        .with_limits(Limits::default().context_window(window));
    let events: Vec<_> = agent.stream(ask()).collect().await;
    let Some(ReActEvent::Done {
        output, trajectory, ..
    }) = events.last()
    else {
        panic!("{events:?}")
    };
    assert_eq!(output.answer, "read");
    let compacted = compactions(&events);
    assert!(!compacted.is_empty(), "no compaction: {events:?}");
    for (dropped, before, after) in &compacted {
        assert!(
            *dropped >= 1 && after < before && *after <= 1_300,
            "{compacted:?}"
        );
    }
    assert!(largest_prompt(&lm.requests()) <= 1_300);
    // The oldest steps went; the latest is kept.
    assert_eq!(trajectory.steps.last().unwrap().thought, "done");
    assert!(trajectory.steps.len() < 4);
}

#[tokio::test]
async fn native_mode_uses_the_lms_context_window() {
    let lm = three_reports_then_read();
    let agent = ReAct::<Ask>::new()
        .tool(ReportTool)
        .with_mode(ReActMode::Native)
        .with_lm(lm.clone());
    let events: Vec<_> = agent.stream(ask()).collect().await;
    assert!(
        matches!(events.last(), Some(ReActEvent::Done { .. })),
        "{events:?}"
    );
    assert!(!compactions(&events).is_empty());
    // An eighth of the window is left for the reply.
    assert!(largest_prompt(&lm.requests()) <= 1_400 - 1_400 / 8);
}

#[tokio::test]
async fn a_step_that_cannot_fit_stops_the_loop_and_the_extractor_answers() {
    let lm = Arc::new(ScriptedLm::texts([
        step("first", "report", json!({"part": 1})),
        extract("partial"),
    ]));
    // The first step fits; with the report in the trajectory the next one does not, and a
    // single step cannot be dropped (DropOldest, as DSPy).
    let window = 1_100;
    let agent = ReAct::<Ask>::new()
        .tool(ReportTool)
        .with_mode(ReActMode::Text)
        .with_lm(lm.clone())
        .with_limits(Limits::default().context_window(window));
    let out = agent.call(ask()).await.unwrap();
    assert_eq!(out.output.answer, "partial");
    let Some(StopReason::ContextWindow { message }) = &out.trajectory.stopped_early else {
        panic!("{:?}", out.trajectory)
    };
    assert!(
        message.contains("tokens, more than the 963 the context window leaves it"),
        "{message}"
    );
    let requests = lm.requests();
    assert_eq!(requests.len(), 2, "the step over the budget was not sent");
    assert!(largest_prompt(&requests) <= 963);
}

#[tokio::test]
async fn a_refusal_from_the_provider_is_compacted_and_announced_too() {
    let lm = Arc::new(
        ScriptedLm::texts([
            step("first", "report", json!({"part": 1})),
            step("second", "report", json!({"part": 2})),
        ])
        .then_error(LmError::ContextWindowExceeded {
            message: "maximum context length exceeded".into(),
        })
        .then(Completion::text(step(
            "done",
            "finish",
            json!({"answer": "ok"}),
        ))),
    );
    let agent = ReAct::<Ask>::new()
        .tool(ReportTool)
        .with_mode(ReActMode::Text)
        .with_lm(lm);
    let events: Vec<_> = agent.stream(ask()).collect().await;
    let compacted = compactions(&events);
    assert_eq!(compacted.len(), 1, "{events:?}");
    assert_eq!(compacted[0].0, 1);
    assert!(compacted[0].2 < compacted[0].1);
    assert!(matches!(events.last(), Some(ReActEvent::Done { .. })));
}

fn report_call(id: &str, part: u32) -> Completion {
    Completion::tool_calls(vec![ToolCall::new(
        id,
        "report",
        json!({"part": part}).to_string(),
    )])
}

/// Three native report calls, then the answer, from an LM with a 1,400-token window.
fn three_reports_then_read() -> Arc<ScriptedLm> {
    let lm = ScriptedLm::new([
        report_call("c1", 1),
        report_call("c2", 2),
        report_call("c3", 3),
        Completion::text("[[ ## answer ## ]]\nread"),
    ]);
    let window = Capabilities::default()
        .with_function_calling(true)
        .with_context_window(1_400);
    Arc::new(lm.with_capabilities(window))
}

#[tokio::test]
async fn predict_with_tools_keeps_its_turns_within_the_context_window() {
    let lm = three_reports_then_read();
    let predict = Predict::<Ask>::new().tool(ReportTool).with_lm(lm.clone());
    let events: Vec<_> = predict.stream(ask()).collect().await;
    let Some(ReActEvent::Done { trajectory, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert!(!compactions(&events).is_empty(), "{events:?}");
    // An eighth of the window is left for the reply; the oldest turns went.
    assert!(largest_prompt(&lm.requests()) <= 1_400 - 1_400 / 8);
    assert!(trajectory.steps.len() < 3, "{trajectory:?}");
}

#[tokio::test]
async fn predict_with_tools_compacts_after_a_refusal_and_says_when_nothing_fits() {
    let refusal = || LmError::ContextWindowExceeded {
        message: "maximum context length exceeded".into(),
    };
    let lm = Arc::new(
        ScriptedLm::new([report_call("c1", 1), report_call("c2", 2)])
            .then_error(refusal())
            .then(Completion::text("[[ ## answer ## ]]\nok"))
            .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let predict = Predict::<Ask>::new().tool(ReportTool).with_lm(lm.clone());
    assert_eq!(predict.call(ask()).await.unwrap().answer, "ok");
    // The refused prompt held two turns; the one sent after it, one.
    let requests = lm.requests();
    let tool_results = |r: &LmRequest| {
        r.messages
            .iter()
            .filter(|m| m.tool_call_id.is_some())
            .count()
    };
    assert_eq!(
        (tool_results(&requests[2]), tool_results(&requests[3])),
        (2, 1)
    );

    // A single turn cannot be dropped: the refusal comes back as a typed error, with the
    // provider's message and why truncating could not help.
    let lm = Arc::new(
        ScriptedLm::new([report_call("c1", 1)])
            .then_error(refusal())
            .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let predict = Predict::<Ask>::new().tool(ReportTool).with_lm(lm);
    let error = predict.call(ask()).await.unwrap_err();
    assert!(
        matches!(&error, signet::Error::Lm(LmError::ContextWindowExceeded { message })
            if message.starts_with("maximum context length exceeded; ")
                && message.contains("only has one tool call")),
        "{error:?}"
    );
}

#[tokio::test]
async fn predict_with_tools_stops_at_its_lm_call_limit() {
    let lm = Arc::new(
        ScriptedLm::new([
            report_call("c1", 1),
            report_call("c2", 2),
            report_call("c3", 3),
        ])
        .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let predict = Predict::<Ask>::new()
        .tool(ReportTool)
        .with_tool_limits(Limits::default().max_lm_calls(2))
        .with_lm(lm.clone());
    let error = predict.call(ask()).await.unwrap_err();
    assert!(
        matches!(error, signet::Error::LmCallLimit { limit: 2 }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the call reached its limit of 2 LM calls"
    );
    assert_eq!(lm.requests().len(), 2);
}
