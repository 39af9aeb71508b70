//! A suspended run read back from a store is not trusted as given: a sealed state resumes only
//! unchanged and under its key, an unsealed one is checked against the agent (pending tools that
//! exist and wait for what they can wait for, unique ids, turns in range) before anything runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use signet::lm::{Capabilities, Completion, ToolCall};
use signet::module::{
    Decision, ReAct, ReActMode, ResumeError, RunOutcome, SuspendedRun, react::RunFailure,
};
use signet::testing::ScriptedLm;
use signet::{Tool, tool};

use crate::support;
use support::*;

const KEY: &[u8] = b"a long random key from the service's secrets";

/// How often `pay` sent money to mallory (whom no model asked to pay).
static TO_MALLORY: AtomicUsize = AtomicUsize::new(0);

/// Send money (needs a person's approval).
#[tool(confirm)]
fn pay(to: String, amount: u32) -> String {
    if to == "mallory" {
        TO_MALLORY.fetch_add(1, Ordering::SeqCst);
    }
    format!("paid {amount} to {to}")
}

/// Look up an account's balance.
#[tool]
fn balance(account: String) -> String {
    format!("{account}: 120")
}

fn tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(PayTool), Arc::new(BalanceTool)]
}

fn replies() -> Vec<Completion> {
    vec![
        Completion::tool_calls(vec![
            ToolCall::new("c1", "balance", r#"{"account": "ada"}"#),
            ToolCall::new("c2", "pay", r#"{"to": "bob", "amount": 20}"#),
        ]),
        Completion::text("[[ ## answer ## ]]\npaid\n\n[[ ## completed ## ]]"),
    ]
}

fn agent(replies: &[Completion]) -> ReAct<Ask> {
    ReAct::<Ask>::new()
        .tools(tools())
        .with_mode(ReActMode::Native)
        .with_lm(
            ScriptedLm::new(replies.to_vec())
                .with_capabilities(Capabilities::default().with_function_calling(true)),
        )
}

/// A state as a store hands it back: through JSON.
fn stored(state: &SuspendedRun) -> SuspendedRun {
    serde_json::from_str(&serde_json::to_string(state).unwrap()).unwrap()
}

async fn suspend(agent: &ReAct<Ask>) -> SuspendedRun {
    match agent.start(ask()).await.unwrap() {
        RunOutcome::Suspended(state) => stored(&state),
        RunOutcome::Finished(run) => panic!("expected a suspended run, got {run:?}"),
    }
}

async fn refused(agent: &ReAct<Ask>, state: SuspendedRun) -> ResumeError {
    let decisions = state.decide_all(Decision::Approve);
    let error = agent.resume(state, decisions).await.unwrap_err();
    match error.reason {
        RunFailure::Resume(error) => error,
        other => panic!("expected a resume error, got {other:?}"),
    }
}

fn invalid(error: ResumeError, words: &str) {
    match &error {
        ResumeError::Invalid { reason } => assert!(reason.contains(words), "{reason}"),
        other => panic!("expected an invalid state ({words}), got {other:?}"),
    }
}

#[tokio::test]
async fn an_agent_with_a_state_key_seals_what_it_suspends_and_resumes_it_unchanged() {
    let state = suspend(&agent(&replies()[..1]).with_state_key(KEY)).await;
    assert_eq!(state.seal.as_ref().map(String::len), Some(64));
    assert!(state.verify(KEY).is_ok());

    let resumed = agent(&replies()[1..]).with_state_key(KEY);
    let decisions = state.decide_all(Decision::Approve);
    let done = resumed.resume(state, decisions).await.unwrap();
    let RunOutcome::Finished(done) = done else {
        panic!("expected a finished run")
    };
    assert_eq!(done.output.answer, "paid");
}

#[tokio::test]
async fn a_changed_unsealed_or_foreign_state_is_refused_before_anything_runs() {
    let state = suspend(&agent(&replies()[..1]).with_state_key(KEY)).await;
    let resumed = agent(&replies()[1..]).with_state_key(KEY);

    // Whoever edits the stored JSON picks the arguments that run when approved.
    let mut changed = state.clone();
    changed.pending[0].args = json!({"to": "mallory", "amount": 4_000_000});
    assert_eq!(refused(&resumed, changed).await, ResumeError::BadSeal);

    let mut unsealed = state.clone();
    unsealed.seal = None;
    assert_eq!(refused(&resumed, unsealed).await, ResumeError::Unsealed);

    let mut resealed = state.clone();
    resealed.pending[0].args = json!({"to": "mallory", "amount": 4_000_000});
    resealed.seal(b"another key");
    assert_eq!(refused(&resumed, resealed).await, ResumeError::BadSeal);

    let mut garbled = state.clone();
    garbled.seal = Some("not hex".into());
    assert_eq!(refused(&resumed, garbled).await, ResumeError::BadSeal);

    // A state from an agent without the key is unsealed.
    let plain = suspend(&agent(&replies()[..1])).await;
    assert_eq!(plain.seal, None);
    assert_eq!(refused(&resumed, plain).await, ResumeError::Unsealed);
    assert_eq!(TO_MALLORY.load(Ordering::SeqCst), 0, "nothing ran");
}

/// The same JSON with every object's keys in reverse order.
fn reversed(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .rev()
                .map(|(key, value)| (key, reversed(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(reversed).collect()),
        other => other,
    }
}

#[tokio::test]
async fn a_store_that_reorders_keys_keeps_the_seal_valid() {
    let state = suspend(&agent(&replies()[..1]).with_state_key(KEY)).await;
    let reordered: SuspendedRun =
        serde_json::from_value(reversed(serde_json::to_value(&state).unwrap())).unwrap();
    assert!(reordered.verify(KEY).is_ok());
    let resumed = agent(&replies()[1..]).with_state_key(KEY);
    let decisions = reordered.decide_all(Decision::Approve);
    assert!(resumed.resume(reordered, decisions).await.is_ok());
}

#[tokio::test]
async fn an_unsealed_state_that_contradicts_the_agent_is_invalid() {
    let state = suspend(&agent(&replies()[..1])).await;
    let resumed = agent(&replies()[1..]);

    let mut unknown = state.clone();
    unknown.pending[0].tool = "delete_everything".into();
    invalid(refused(&resumed, unknown).await, "lacks");

    // `balance` needs no approval: a state saying it waits for one was not written by the agent.
    let mut approval = state.clone();
    approval.pending[0].tool = "balance".into();
    invalid(refused(&resumed, approval).await, "needs none");

    let mut twice = state.clone();
    twice.pending.push(twice.pending[0].clone());
    twice.pending[1].index += 10;
    invalid(refused(&resumed, twice).await, "two calls have id");

    let mut same_index = state.clone();
    same_index.pending[0].index = same_index.settled[0].index;
    invalid(refused(&resumed, same_index).await, "step index");

    let mut none = state.clone();
    none.pending.clear();
    invalid(refused(&resumed, none).await, "no pending call");

    let mut selected = state.clone();
    selected.selected_tools = Some(vec!["balance".into()]);
    invalid(refused(&resumed, selected).await, "did not select");
}

#[tokio::test]
async fn turns_at_the_end_of_the_range_are_refused_not_overflowed() {
    let state = suspend(&agent(&replies()[..1])).await;
    let resumed = agent(&replies()[1..]);

    let mut last = state.clone();
    last.turn = usize::MAX;
    last.settled[0].turn = usize::MAX;
    invalid(refused(&resumed, last).await, "out of range");

    let mut later = state.clone();
    later.settled[0].turn = usize::MAX;
    invalid(refused(&resumed, later).await, "not the suspended turn");

    // A text-mode state (whose resumed loop adds one to the turn) is checked the same way.
    let text = ReAct::<Ask>::new()
        .tools(tools())
        .with_mode(ReActMode::Text)
        .with_lm(ScriptedLm::texts([step(
            "Pay Bob.",
            "pay",
            json!({"to": "bob", "amount": 20}),
        )]));
    let mut state = suspend(&text).await;
    state.turn = usize::MAX;
    invalid(refused(&text, state).await, "out of range");
}

#[test]
fn seal_and_verify_by_hand() {
    let mut state: SuspendedRun = serde_json::from_value(json!({
        "format": 1,
        "signature": "Ask",
        "fingerprint": "f",
        "native": true,
        "inputs": {"question": "q"},
        "trajectory": {"steps": []},
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "lm_calls": 0, "cache_hits": 0,
                  "adapter_fallbacks": 0, "retries": 0},
        "turn": 0,
        "pending": [],
    }))
    .unwrap();
    assert_eq!(state.verify(KEY), Err(ResumeError::Unsealed));
    state.seal(KEY);
    assert_eq!(state.verify(KEY), Ok(()));
    assert_eq!(state.verify(b"other"), Err(ResumeError::BadSeal));
    state.turn = 1;
    assert_eq!(state.verify(KEY), Err(ResumeError::BadSeal));
}
