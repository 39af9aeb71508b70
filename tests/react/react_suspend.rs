//! A resumable ReAct run parks at a call that needs a person, its state survives a file and a
//! fresh agent, and the resumed run sends the model exactly what a run approved inline sends.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use serde_json::{Value, json};
use signet::adapter::ChatAdapter;
use signet::lm::{Capabilities, Completion, LmRequest, ToolCall};
use signet::module::{
    Approval, Decision, Observation, ReAct, ReActEvent, ReActMode, ResumeError, RunOutcome, Step,
    SuspendedRun, Waiting, react::RunFailure,
};
use signet::testing::ScriptedLm;
use signet::{Tool, ToolError, tool};

use crate::support;
use support::*;

/// Send money (needs a person's approval).
#[tool(confirm)]
fn pay(to: String, amount: u32) -> String {
    format!("paid {amount} to {to}")
}

/// Look up an account's balance.
#[tool]
fn balance(account: String) -> String {
    format!("{account}: 120")
}

/// How often `rate` ran (only the native test calls it).
static RATES: AtomicUsize = AtomicUsize::new(0);

/// Today's exchange rate of a currency to euros.
#[tool]
fn rate(currency: String) -> String {
    RATES.fetch_add(1, Ordering::SeqCst);
    format!("1 {currency} = 0.9 EUR")
}

/// Ask the user a question.
#[tool]
fn ask_user(question: String) -> Result<String, ToolError> {
    Err(ToolError::needs_input(question))
}

fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(PayTool),
        Arc::new(BalanceTool),
        Arc::new(RateTool),
        Arc::new(AskUserTool),
    ]
}

fn text_agent(replies: &[String]) -> (ReAct<Ask>, Arc<ScriptedLm>) {
    let lm = Arc::new(ScriptedLm::texts(replies.to_vec()));
    let agent = ReAct::<Ask>::new()
        .tools(tools())
        .with_mode(ReActMode::Text)
        .with_lm(lm.clone());
    (agent, lm)
}

fn native_agent(replies: &[Completion]) -> (ReAct<Ask>, Arc<ScriptedLm>) {
    let lm = Arc::new(
        ScriptedLm::new(replies.to_vec())
            .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let agent = ReAct::<Ask>::new()
        .tools(tools())
        .with_mode(ReActMode::Native)
        .with_lm(lm.clone());
    (agent, lm)
}

/// The same steps, timings aside (they differ from run to run).
fn same_run(resumed: &[Step], inline: &[Step]) {
    let untimed = |steps: &[Step]| -> Vec<Step> {
        steps
            .iter()
            .map(|s| Step {
                elapsed: Default::default(),
                ..s.clone()
            })
            .collect()
    };
    assert_eq!(untimed(resumed), untimed(inline));
}

/// The requests before the suspension and after the resumption are the inline run's, in order.
fn same_requests(before: Vec<LmRequest>, after: &ScriptedLm, inline: &ScriptedLm) {
    let requests: Vec<LmRequest> = before.into_iter().chain(after.requests()).collect();
    assert_eq!(requests, inline.requests());
}

/// Writes the state to a file and reads it back, as a service parks a run between requests.
fn through_a_file(state: &SuspendedRun, name: &str) -> SuspendedRun {
    let path = std::env::temp_dir().join(format!("signet-{}-{name}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_vec_pretty(state).unwrap()).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn suspended<R: std::fmt::Debug>(outcome: RunOutcome<R>) -> SuspendedRun {
    match outcome {
        RunOutcome::Suspended(state) => state,
        RunOutcome::Finished(run) => panic!("expected a suspended run, got {run:?}"),
    }
}

fn finished<R>(outcome: RunOutcome<R>) -> R {
    match outcome {
        RunOutcome::Finished(run) => run,
        RunOutcome::Suspended(state) => panic!("expected a finished run, got {state:?}"),
    }
}

fn text_replies() -> Vec<String> {
    vec![
        step("Check first.", "balance", json!({"account": "ada"})),
        step("Pay Bob.", "pay", json!({"to": "bob", "amount": 20})),
        step("Done.", "finish", json!({"answer": "paid"})),
    ]
}

#[tokio::test]
async fn a_text_run_resumed_from_a_file_matches_a_run_approved_inline() {
    let replies = text_replies();
    let (inline, inline_lm) = text_agent(&replies);
    let inline = inline.with_approver(|_| async { Approval::Approve });
    let expected = inline.call(ask()).await.unwrap();

    let (first, first_lm) = text_agent(&replies[..2]);
    let state = suspended(first.start(ask()).await.unwrap());
    assert_eq!(state.pending.len(), 1);
    assert_eq!(state.pending[0].id, "step_1");
    assert_eq!(state.pending[0].tool, "pay");
    assert_eq!(state.pending[0].thought, "Pay Bob.");
    assert_eq!(state.pending[0].waiting_for, Waiting::Approval);
    assert_eq!(state.trajectory.steps.len(), 1, "the balance step ran");
    let saved = through_a_file(&state, "text");
    let first_requests = first_lm.requests();
    drop((first, first_lm, state));

    let (second, second_lm) = text_agent(&replies[2..]);
    let decisions = saved.decide_all(Decision::Approve);
    let done = finished(second.resume(saved, decisions).await.unwrap());

    assert_eq!(done.output.answer, expected.output.answer);
    assert_eq!(done.usage.lm_calls, expected.usage.lm_calls);
    same_run(&done.trajectory.steps, &expected.trajectory.steps);
    same_requests(first_requests, &second_lm, &inline_lm);
}

fn native_replies() -> Vec<Completion> {
    vec![
        Completion::tool_calls(vec![
            ToolCall::new("c1", "rate", r#"{"currency": "USD"}"#),
            ToolCall::new("c2", "pay", r#"{"to": "bob", "amount": 20}"#),
            ToolCall::new("c3", "rate", r#"{"currency": "GBP"}"#),
        ]),
        Completion::text("[[ ## answer ## ]]\npaid\n\n[[ ## completed ## ]]"),
    ]
}

#[tokio::test]
async fn a_native_turn_runs_what_needs_no_one_and_resumes_the_rest_as_inline() {
    let replies = native_replies();
    let (inline, inline_lm) = native_agent(&replies);
    let inline = inline.with_approver(|_| async { Approval::Approve });
    let expected = inline.call(ask()).await.unwrap();

    assert_eq!(RATES.load(Ordering::SeqCst), 2);
    let (first, first_lm) = native_agent(&replies[..1]);
    let state = suspended(first.start(ask()).await.unwrap());
    assert_eq!(
        RATES.load(Ordering::SeqCst),
        4,
        "both rates ran before suspending"
    );
    let settled: Vec<_> = state.settled.iter().map(|s| s.call_id.clone()).collect();
    assert_eq!(settled, [Some("c1".to_owned()), Some("c3".to_owned())]);
    assert_eq!(state.pending[0].id, "c2");
    let saved = through_a_file(&state, "native");
    let first_requests = first_lm.requests();
    drop((first, first_lm, state));

    let (second, second_lm) = native_agent(&replies[1..]);
    let done = finished(
        second
            .resume(saved, [("c2".to_owned(), Decision::Approve)])
            .await
            .unwrap(),
    );
    assert_eq!(
        RATES.load(Ordering::SeqCst),
        4,
        "settled calls do not run again"
    );
    assert_eq!(done.output.answer, "paid");
    same_run(&done.trajectory.steps, &expected.trajectory.steps);
    same_requests(first_requests, &second_lm, &inline_lm);
}

/// The text of the step `index` observed in a resumed text run whose pending call got `decision`.
async fn decided(decision: Decision) -> (Step, Vec<LmRequest>) {
    let replies = text_replies();
    let (first, _) = text_agent(&replies[1..2]);
    let state = suspended(first.start(ask()).await.unwrap());
    let (second, lm) = text_agent(&replies[2..]);
    let done = finished(
        second
            .resume(state, [("step_0".to_owned(), decision)])
            .await
            .unwrap(),
    );
    (done.trajectory.steps[0].clone(), lm.requests())
}

#[tokio::test]
async fn a_denial_is_worded_as_an_inline_denial() {
    let (step, _) = decided(Decision::Deny(Some("over budget".into()))).await;
    assert_eq!(
        step.observation,
        Observation::Error(
            "Execution error in pay: this call needs a person's approval and was denied: over budget"
                .into()
        )
    );
}

#[tokio::test]
async fn edited_arguments_run_and_are_what_the_model_sees() {
    let (step, requests) = decided(Decision::Edit(json!({"to": "bob", "amount": 5}))).await;
    assert_eq!(
        step.observation,
        Observation::Output(json!("paid 5 to bob"))
    );
    assert_eq!(step.tool_args, json!({"to": "bob", "amount": 5}));
    let prompt = &requests[0].messages.last().unwrap().content;
    assert!(prompt.contains(r#"{"to": "bob", "amount": 5}"#), "{prompt}");
}

#[tokio::test]
async fn edited_arguments_are_still_checked() {
    let (step, _) = decided(Decision::Edit(json!({"to": "bob"}))).await;
    let Observation::Error(text) = &step.observation else {
        panic!("{:?}", step.observation)
    };
    assert!(
        text.contains("missing required argument `amount`"),
        "{text}"
    );
}

#[tokio::test]
async fn a_response_replaces_the_call() {
    let (step, _) = decided(Decision::Respond(json!("the bank is closed"))).await;
    assert_eq!(
        step.observation,
        Observation::Output(json!("the bank is closed"))
    );
}

#[tokio::test]
async fn a_tool_that_needs_an_answer_suspends_and_the_answer_is_its_observation() {
    let replies = vec![
        step(
            "Which colour?",
            "ask_user",
            json!({"question": "Which colour?"}),
        ),
        step("Done.", "finish", json!({"answer": "blue"})),
    ];
    let (first, _) = text_agent(&replies[..1]);
    let state = suspended(first.start(ask()).await.unwrap());
    assert_eq!(
        state.pending[0].waiting_for,
        Waiting::Answer {
            question: "Which colour?".into()
        }
    );
    let (second, lm) = text_agent(&replies[1..]);
    let decisions = [("step_0".to_owned(), Decision::Respond(json!("blue")))];
    let done = finished(second.resume(state, decisions).await.unwrap());
    assert_eq!(
        done.trajectory.steps[0].observation,
        Observation::Output(json!("blue"))
    );
    assert!(lm.requests()[0].messages[1].content.contains("blue"));

    // A run that cannot wait tells the model no one answered.
    let (inline, _) = text_agent(&replies);
    let out = inline.call(ask()).await.unwrap();
    assert_eq!(
        out.trajectory.steps[0].observation,
        Observation::Error(
            "Execution error in ask_user: the tool needs a person's answer (Which colour?) and no \
             one is available to give it"
                .into()
        )
    );
}

#[tokio::test]
async fn an_approver_decides_inline_in_a_resumable_run() {
    let (agent, _) = text_agent(&text_replies());
    let agent = agent.with_approver(|_| async { Approval::Deny(None) });
    let done = finished(agent.start(ask()).await.unwrap());
    assert!(matches!(
        &done.trajectory.steps[1].observation,
        Observation::Error(text) if text.ends_with("was denied")
    ));
}

fn resume_error(error: signet::module::ReActError) -> ResumeError {
    match error.reason {
        RunFailure::Resume(error) => error,
        other => panic!("expected a resume error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_state_resumed_on_another_agent_or_without_decisions_is_a_typed_error() {
    let replies = text_replies();
    let (first, _) = text_agent(&replies[1..2]);
    let state = suspended(first.start(ask()).await.unwrap());

    // Another tool set: the fingerprint differs.
    let other = ReAct::<Ask>::new()
        .tool(PayTool)
        .with_mode(ReActMode::Text)
        .with_lm(ScriptedLm::texts(replies.clone()));
    let decisions = state.decide_all(Decision::Approve);
    let error = other.resume(state.clone(), decisions).await.unwrap_err();
    let stale = resume_error(error);
    assert!(matches!(stale, ResumeError::StaleState { .. }), "{stale}");
    assert!(
        stale
            .to_string()
            .contains("signature, tools or settings changed")
    );

    let (agent, lm) = text_agent(&replies);
    let missing = resume_error(agent.resume(state.clone(), []).await.unwrap_err());
    assert_eq!(
        missing,
        ResumeError::MissingDecision {
            id: "step_0".into(),
            tool: "pay".into()
        }
    );
    let unknown = [
        ("step_0".to_owned(), Decision::Approve),
        ("c9".to_owned(), Decision::Approve),
    ];
    let unknown = resume_error(agent.resume(state.clone(), unknown).await.unwrap_err());
    assert!(matches!(unknown, ResumeError::UnknownCall { ref id, .. } if id == "c9"));
    let mut future = state.clone();
    future.format += 1;
    let format = resume_error(agent.resume(future, []).await.unwrap_err());
    assert!(matches!(format, ResumeError::Format { .. }), "{format}");
    assert!(
        lm.requests().is_empty(),
        "no LM call is made for a bad state"
    );
}

#[tokio::test]
async fn a_streamed_run_ends_suspended_and_a_streamed_resume_ends_done() {
    let replies = text_replies();
    let (first, _) = text_agent(&replies[..2]);
    let events: Vec<_> = first.stream_start(ask()).collect().await;
    let Some(ReActEvent::Suspended { state }) = events.last() else {
        panic!("{events:?}")
    };
    let json: Value = serde_json::to_value(events.last().unwrap()).unwrap();
    assert_eq!(json["type"], "suspended");
    assert_eq!(json["state"]["pending"][0]["tool"], "pay");
    let (second, _) = text_agent(&replies[2..]);
    let decisions = state.decide_all(Decision::Approve);
    let events: Vec<_> = second
        .stream_resume((**state).clone(), decisions)
        .collect()
        .await;
    assert!(events.iter().any(|e| matches!(
        e,
        ReActEvent::ToolCallFinished { name, observation: Observation::Output(_), .. } if name == "pay"
    )));
    let Some(ReActEvent::Done { output, .. }) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(output.answer, "paid");
}

fn history_agent(replies: &[Completion], native: bool) -> (ReAct<Ask>, Arc<ScriptedLm>) {
    let lm = Arc::new(
        ScriptedLm::new(replies.to_vec())
            .with_capabilities(Capabilities::default().with_function_calling(native)),
    );
    let agent = ReAct::<Ask>::new()
        .tools(tools())
        .with_mode(ReActMode::History)
        .with_adapter(ChatAdapter::new().with_native_function_calling(native))
        .with_lm(lm.clone());
    (agent, lm)
}

/// A history-mode turn in DSPy's text format (`next_thought`, `tool_calls`).
fn history_turn(thought: &str, calls: Value) -> Completion {
    Completion::text(format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## tool_calls ## ]]\n{}\n\n[[ ## completed ## ]]",
        json!({ "tool_calls": calls })
    ))
}

fn history_replies(native: bool) -> Vec<Completion> {
    if native {
        return vec![
            Completion::tool_calls(vec![
                ToolCall::new("c1", "balance", r#"{"account": "ada"}"#),
                ToolCall::new("c2", "pay", r#"{"to": "bob", "amount": 20}"#),
            ]),
            Completion::tool_calls(vec![ToolCall::new("c3", "submit", r#"{"answer": "paid"}"#)]),
        ];
    }
    vec![
        history_turn(
            "Check, then pay.",
            json!([
                {"name": "balance", "args": {"account": "ada"}},
                {"name": "pay", "args": {"to": "bob", "amount": 20}}
            ]),
        ),
        history_turn(
            "Done.",
            json!([{"name": "submit", "args": {"answer": "paid"}}]),
        ),
    ]
}

/// A history-mode run suspended at `pay` (the turn's other call ran), resumed from a file by a
/// fresh agent, sends the conversation a run approved inline sends.
async fn history_run_resumes_as_inline(native: bool) {
    let replies = history_replies(native);
    let (inline, inline_lm) = history_agent(&replies, native);
    let inline = inline.with_approver(|_| async { Approval::Approve });
    let expected = inline.call(ask()).await.unwrap();

    let (first, first_lm) = history_agent(&replies[..1], native);
    let state = suspended(first.start(ask()).await.unwrap());
    let pay_id = if native { "c2" } else { "call_0_1" };
    assert_eq!(state.pending.len(), 1);
    assert_eq!(state.pending[0].id, pay_id);
    assert_eq!(state.settled.len(), 1, "balance ran before suspending");
    assert_eq!(state.settled[0].tool_name, "balance");
    let position = state.history.as_ref().expect("a history-mode state");
    assert!(position.turns.is_empty());
    assert_eq!(position.inputs["question"], json!("q"));
    let saved = through_a_file(&state, if native { "history-native" } else { "history" });
    let first_requests = first_lm.requests();
    drop((first, first_lm, state));

    let (second, second_lm) = history_agent(&replies[1..], native);
    let done = finished(
        second
            .resume(saved, [(pay_id.to_owned(), Decision::Approve)])
            .await
            .unwrap(),
    );
    assert_eq!(done.output.answer, "paid");
    same_run(&done.trajectory.steps, &expected.trajectory.steps);
    assert_eq!(done.trajectory.history, expected.trajectory.history);
    same_requests(first_requests, &second_lm, &inline_lm);
}

#[tokio::test]
async fn a_history_run_in_text_resumed_from_a_file_matches_a_run_approved_inline() {
    history_run_resumes_as_inline(false).await;
}

#[tokio::test]
async fn a_native_history_run_resumed_from_a_file_matches_a_run_approved_inline() {
    history_run_resumes_as_inline(true).await;
}

#[tokio::test]
async fn a_history_denial_is_what_the_model_reads_and_a_state_without_its_history_is_refused() {
    let replies = history_replies(false);
    let (first, _) = history_agent(&replies[..1], false);
    let state = suspended(first.start(ask()).await.unwrap());

    let mut lost = state.clone();
    lost.history = None;
    let (agent, lm) = history_agent(&replies[1..], false);
    let error = resume_error(agent.resume(lost, []).await.unwrap_err());
    assert_eq!(error, ResumeError::MissingHistory);
    assert!(lm.requests().is_empty());

    let deny = [(
        "call_0_1".to_owned(),
        Decision::Deny(Some("over budget".into())),
    )];
    let done = finished(agent.resume(state, deny).await.unwrap());
    assert_eq!(
        done.trajectory.steps[1].observation,
        Observation::Error(
            "Execution error in pay: this call needs a person's approval and was denied: over budget"
                .into()
        )
    );
    let sent = serde_json::to_string(&lm.requests()[0].messages).unwrap();
    assert!(sent.contains("was denied: over budget"), "{sent}");
}
