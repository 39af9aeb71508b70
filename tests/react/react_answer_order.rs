//! An answer is taken only after the model has seen every result it asked for: a `finish` (or
//! history mode's `submit`) written in the same reply as other tool calls is postponed until
//! their observations are shown, in every mode; `Predict` with tools never reads an answer from a
//! reply that calls tools. The adapter's `parallel_tool_calls` is what the loops send.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use signet::adapter::{ChatAdapter, JsonAdapter};
use signet::lm::{Capabilities, Completion, ConstrainedToolCalls, ToolCall};
use signet::module::{
    Approval, Decision, Observation, Predict, ReAct, ReActEvent, ReActMode, RunOutcome,
};
use signet::testing::ScriptedLm;
use signet::{Signature, tool};

/// Convert an amount.
#[derive(Signature)]
struct Convert {
    #[input]
    question: String,
    #[output]
    amount: f64,
}

/// Convert euros to dollars.
#[tool]
fn eur_to_usd(amount: f64) -> f64 {
    amount * 1.08
}

/// A rate service that is down.
#[tool]
fn rate(currency: String) -> Result<f64, String> {
    Err(format!("the rate service for {currency} is down"))
}

/// Move money (needs a person's approval).
#[tool(confirm)]
fn transfer(amount: f64) -> String {
    format!("moved {amount}")
}

fn native_lm(replies: Vec<Completion>) -> Arc<ScriptedLm> {
    Arc::new(
        ScriptedLm::new(replies)
            .with_capabilities(Capabilities::default().with_function_calling(true)),
    )
}

fn calls(list: &[(&str, &str, serde_json::Value)]) -> Completion {
    Completion::tool_calls(
        list.iter()
            .map(|(id, name, args)| ToolCall::new(*id, *name, args.to_string()))
            .collect(),
    )
}

fn question() -> ConvertInput {
    ConvertInput {
        question: "50 EUR in USD?".into(),
    }
}

const POSTPONED: &str = "Finish postponed: it was called in the same reply as other tools, \
                         before their results were known; the model was asked again with their \
                         results.";

#[tokio::test]
async fn native_finish_beside_a_tool_call_waits_for_its_result() {
    let lm = native_lm(vec![
        calls(&[
            ("c1", "eur_to_usd", json!({"amount": 50})),
            ("c2", "finish", json!({"amount": 50})),
        ]),
        calls(&[("c3", "finish", json!({"amount": 54}))]),
    ]);
    let agent = ReAct::<Convert>::new()
        .tool(EurToUsdTool)
        .with_mode(ReActMode::Native)
        .with_lm(lm.clone());
    let mut events = agent.stream(question());
    let mut finished = Vec::new();
    let mut answer = None;
    while let Some(event) = events.next().await {
        match event {
            ReActEvent::ToolCallFinished {
                name, observation, ..
            } => finished.push((name, observation)),
            ReActEvent::Done { output, .. } => answer = Some(output.amount),
            _ => {}
        }
    }
    assert_eq!(answer, Some(54.0), "the answer written after the result");
    // The calls of one reply run concurrently: their events come in either order.
    finished[..2].sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        finished,
        [
            ("eur_to_usd".to_owned(), Observation::Output(json!(54.0))),
            ("finish".to_owned(), Observation::Output(json!(POSTPONED))),
            (
                "finish".to_owned(),
                Observation::Output(json!("Completed."))
            ),
        ],
        "the early finish is not run, and the stream says so"
    );
    // The second call shows the result, and the turn as if only the conversion had been made.
    let second = &lm.requests()[1].messages;
    let n = second.len();
    let names: Vec<&str> = second[n - 2]
        .tool_calls
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, ["eur_to_usd"], "the early finish is not shown");
    assert_eq!(second[n - 1].content, "54.0");
    assert!(second.iter().all(|m| m.content != POSTPONED));
    assert_eq!(lm.requests().len(), 2);
}

#[tokio::test]
async fn native_finish_beside_a_failing_tool_lets_the_model_read_the_error() {
    let lm = native_lm(vec![
        calls(&[
            ("c1", "rate", json!({"currency": "USD"})),
            ("c2", "finish", json!({"amount": 54})),
        ]),
        calls(&[("c3", "finish", json!({"amount": 0}))]),
    ]);
    let agent = ReAct::<Convert>::new()
        .tool(RateTool)
        .with_mode(ReActMode::Native)
        .with_lm(lm.clone());
    let out = agent.call(question()).await.unwrap();
    assert_eq!(
        out.output.amount, 0.0,
        "not the answer invented beside the call"
    );
    let second = &lm.requests()[1].messages;
    assert!(
        second
            .iter()
            .any(|m| m.content.contains("the rate service for USD is down")),
        "the model saw the tool's error before its answer was taken"
    );
}

#[tokio::test]
async fn a_finish_beside_an_approved_call_waits_after_resume_too() {
    let first = native_lm(vec![calls(&[
        ("c1", "transfer", json!({"amount": 10})),
        ("c2", "finish", json!({"amount": 10})),
    ])]);
    let agent = |lm: Arc<ScriptedLm>| {
        ReAct::<Convert>::new()
            .tool(TransferTool)
            .with_mode(ReActMode::Native)
            .with_lm(lm)
    };
    let RunOutcome::Suspended(state) = agent(first).start(question()).await.unwrap() else {
        panic!("the transfer waits for a person");
    };
    let second = native_lm(vec![calls(&[("c3", "finish", json!({"amount": 10.5}))])]);
    let decisions = state.decide_all(Decision::Approve);
    let RunOutcome::Finished(out) = agent(second.clone())
        .resume(state, decisions)
        .await
        .unwrap()
    else {
        panic!("the run finishes once approved");
    };
    assert_eq!(out.output.amount, 10.5);
    let shown = &second.requests()[0].messages;
    let n = shown.len();
    assert_eq!(shown[n - 1].content, "moved 10");
    assert_eq!(
        shown[n - 2].tool_calls.len(),
        1,
        "the early finish is not shown"
    );
    assert_eq!(
        out.trajectory.steps[1].observation,
        Observation::Output(json!(POSTPONED)),
        "the trajectory keeps it"
    );
}

#[tokio::test]
async fn two_finish_calls_alone_still_finish() {
    let lm = native_lm(vec![calls(&[
        ("c1", "finish", json!({"amount": 54})),
        ("c2", "finish", json!({"amount": 54})),
    ])]);
    let agent = ReAct::<Convert>::new()
        .tool(EurToUsdTool)
        .with_mode(ReActMode::Native)
        .with_lm(lm);
    assert_eq!(agent.call(question()).await.unwrap().output.amount, 54.0);
}

#[tokio::test]
async fn history_submit_beside_a_tool_call_waits_for_its_result() {
    let turn = |calls: &str| {
        Completion::text(format!(
            "[[ ## next_thought ## ]]\nGo.\n\n[[ ## tool_calls ## ]]\n{calls}\n\n[[ ## completed ## ]]"
        ))
    };
    let lm = Arc::new(ScriptedLm::new([
        turn(
            r#"{"tool_calls": [{"name": "eur_to_usd", "args": {"amount": 50}}, {"name": "submit", "args": {"amount": 50}}]}"#,
        ),
        turn(r#"{"tool_calls": [{"name": "submit", "args": {"amount": 54}}]}"#),
    ]));
    let agent = ReAct::<Convert>::new()
        .tool(EurToUsdTool)
        .with_mode(ReActMode::History)
        .with_adapter(ChatAdapter::new())
        .with_lm(lm.clone());
    let out = agent.call(question()).await.unwrap();
    assert_eq!(out.output.amount, 54.0);
    assert_eq!(
        out.trajectory.steps[1].observation,
        Observation::Output(json!(
            "Submit postponed: it was called in the same reply as other tools, before their \
             results were known. Read the results above, then call submit again."
        ))
    );
    assert_eq!(lm.requests().len(), 2);
}

#[tokio::test]
async fn predict_with_tools_never_reads_an_answer_from_a_reply_that_calls_tools() {
    let mut early = calls(&[("c1", "eur_to_usd", json!({"amount": 50}))]);
    early.text = Some("[[ ## amount ## ]]\n50\n\n[[ ## completed ## ]]".into());
    let lm = native_lm(vec![
        early,
        Completion::text("[[ ## amount ## ]]\n54\n\n[[ ## completed ## ]]"),
    ]);
    let predict = Predict::<Convert>::new()
        .with_lm(lm.clone())
        .tool(EurToUsdTool);
    let out = predict.call(question()).await.unwrap();
    assert_eq!(out.amount, 54.0);
    assert_eq!(lm.requests().len(), 2);
}

#[tokio::test]
async fn the_adapters_parallel_tool_calls_setting_is_sent() {
    for (adapter, sent) in [
        (JsonAdapter::new(), Some(true)),
        (
            JsonAdapter::new().with_parallel_tool_calls(true),
            Some(true),
        ),
        (
            JsonAdapter::new().with_parallel_tool_calls(false),
            Some(false),
        ),
    ] {
        let lm = native_lm(vec![calls(&[("c1", "finish", json!({"amount": 1}))])]);
        ReAct::<Convert>::new()
            .tool(EurToUsdTool)
            .with_mode(ReActMode::Native)
            .with_adapter(adapter)
            .with_required_tool_calls(true)
            .with_lm(lm.clone())
            .call(question())
            .await
            .unwrap();
        assert_eq!(lm.requests()[0].parallel_tool_calls, sent, "ReAct");

        let lm = native_lm(vec![Completion::text(r#"{"amount": 1}"#)]);
        Predict::<Convert>::new()
            .with_adapter(adapter)
            .with_lm(lm.clone())
            .tool(EurToUsdTool)
            .call(question())
            .await
            .unwrap();
        assert_eq!(lm.requests()[0].parallel_tool_calls, sent, "Predict");
    }
}

#[tokio::test]
async fn one_call_a_reply_bounds_a_constrained_reply_to_one_call() {
    let inner = Arc::new(
        ScriptedLm::texts([r#"[{"name": "finish", "arguments": {"amount": 1}}]"#])
            .with_capabilities(Capabilities::llama_cpp()),
    );
    ReAct::<Convert>::new()
        .tool(EurToUsdTool)
        .with_mode(ReActMode::Native)
        .with_adapter(JsonAdapter::constrained().with_parallel_tool_calls(false))
        .with_required_tool_calls(true)
        .with_lm(ConstrainedToolCalls::new(inner.clone()))
        .call(question())
        .await
        .unwrap();
    let format = inner.requests()[0]
        .response_format
        .as_ref()
        .expect("a decoding schema")
        .to_json();
    assert_eq!(format["schema"]["maxItems"], json!(1), "{format}");
}

#[tokio::test]
async fn an_approver_sees_no_early_finish() {
    // The inline approver path: the run goes on after the approved call's result.
    let lm = native_lm(vec![
        calls(&[
            ("c1", "transfer", json!({"amount": 10})),
            ("c2", "finish", json!({"amount": 1})),
        ]),
        calls(&[("c3", "finish", json!({"amount": 10}))]),
    ]);
    let out = ReAct::<Convert>::new()
        .tool(TransferTool)
        .with_mode(ReActMode::Native)
        .with_approver(|_| async { Approval::Approve })
        .with_lm(lm)
        .call(question())
        .await
        .unwrap();
    assert_eq!(out.output.amount, 10.0);
}
