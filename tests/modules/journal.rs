//! Runs through a journal: every LM call and tool call is handed to it, in an order fixed by
//! the program, and a replay from the recorded entries needs neither the LM nor the tools.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use signet::journal::{Entry, MemoryJournal};
use signet::lm::{Capabilities, Completion, ToolCall};
use signet::module::{CallConfig, DynReAct, ReActMode};
use signet::testing::ScriptedLm;
use signet::tool::FnTool;

fn counting_tool(name: &str, calls: &Arc<AtomicUsize>) -> FnTool {
    let calls = calls.clone();
    let owned = name.to_owned();
    FnTool::builder(name)
        .description("Echo the text.")
        .schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
        .sync_fn(move |args: Value| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, String>(format!("{owned}: {}", args["text"].as_str().unwrap_or_default()))
        })
}

fn call(id: &str, name: &str, text: &str) -> ToolCall {
    ToolCall::new(id, name, json!({ "text": text }).to_string())
}

/// A native agent whose first turn calls two tools at once, then finishes.
fn agent(lm: ScriptedLm, calls: &Arc<AtomicUsize>) -> DynReAct {
    DynReAct::new("question -> answer".parse().unwrap())
        .tool(counting_tool("left", calls))
        .tool(counting_tool("right", calls))
        .with_mode(ReActMode::Native)
        .with_lm(lm)
}

fn replies() -> ScriptedLm {
    ScriptedLm::new([
        Completion::tool_calls(vec![call("a", "left", "one"), call("b", "right", "two")]),
        Completion::tool_calls(vec![ToolCall::new(
            "c",
            "finish",
            json!({"answer": "done"}).to_string(),
        )]),
    ])
    .with_capabilities(Capabilities::default().with_function_calling(true))
}

#[tokio::test]
async fn a_journaled_run_records_its_calls_in_order_and_replays_without_lm_or_tools() {
    let calls = Arc::new(AtomicUsize::new(0));
    let journal = MemoryJournal::new();
    let inputs = json!({"question": "?"}).as_object().unwrap().clone();
    let live = agent(replies(), &calls)
        .forward(&inputs, &CallConfig::new().with_journal(journal.clone()))
        .await
        .unwrap();
    assert_eq!(live.outputs["answer"], "done");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let kinds: Vec<String> = journal
        .entries()
        .iter()
        .map(|e| match e {
            Entry::Lm { .. } => "lm".to_owned(),
            Entry::Tool { tool, .. } => tool.clone(),
        })
        .collect();
    // The two calls of the first turn, one after the other, in the model's order.
    assert_eq!(kinds, ["lm", "left", "right", "lm"]);

    // Replayed: the LM has no reply left and the tools are not called, yet the run is the same.
    let replay = MemoryJournal::replaying(journal.entries());
    let again = agent(
        ScriptedLm::texts(Vec::<String>::new())
            .with_capabilities(Capabilities::default().with_function_calling(true)),
        &calls,
    )
    .forward(&inputs, &CallConfig::new().with_journal(replay.clone()))
    .await
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(replay.replayed(), 4);
    assert_eq!(again.outputs, live.outputs);
    let observations = |run: &signet::module::ReActRun| -> Vec<Value> {
        run.trajectory
            .steps
            .iter()
            .map(|s| s.observation.as_value())
            .collect()
    };
    assert_eq!(observations(&again), observations(&live));
}

#[tokio::test]
async fn a_replay_that_departs_from_the_record_fails_instead_of_running_on() {
    let calls = Arc::new(AtomicUsize::new(0));
    let journal = MemoryJournal::new();
    let inputs = json!({"question": "?"}).as_object().unwrap().clone();
    agent(replies(), &calls)
        .forward(&inputs, &CallConfig::new().with_journal(journal.clone()))
        .await
        .unwrap();
    // A record that says `left` was asked for "three", where the replayed reply asks "one".
    let mut entries = journal.entries();
    entries.truncate(2);
    if let Entry::Tool { args, .. } = &mut entries[1] {
        *args = json!({"text": "three"});
    }
    let replay = MemoryJournal::replaying(entries);
    let error = agent(replies(), &calls)
        .forward(&inputs, &CallConfig::new().with_journal(replay))
        .await
        .unwrap_err();
    // The model read the departure on `left`; `right` and the next LM call were refused too,
    // which ends the run.
    let observation = error.trajectory.steps[0].observation.as_text();
    assert!(
        observation.contains("departed from the journal at entry 1"),
        "{observation}"
    );
    assert!(
        error.to_string().contains("the run's journal failed"),
        "{error}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "no tool ran in the replay");
}
