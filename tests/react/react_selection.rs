//! Tool selection on an agent whose step instructions were tuned (a program loaded from DSPy, or
//! optimized by GEPA or MIPROv2): the tuned text stays, with the tool list narrowed, in text mode
//! and in `Auto`, and an event says so.

use futures::StreamExt;
use serde_json::json;
use signet::adapter::Fields;
use signet::lm::{Capabilities, Completion, ToolCall};
use signet::module::{CallConfig, DynReAct, Predictors, ReActEvent, ReActMode};
use signet::testing::ScriptedLm;
use signet::tool::FnTool;

const TUNED: &str = "Answer like a librarian: cite the tool you used.";

fn agent(mode: ReActMode) -> DynReAct {
    (0..3).fold(
        DynReAct::new("question -> answer".parse().unwrap())
            .with_tool_selection_threshold(2)
            .with_mode(mode),
        |agent, i| {
            agent.tool(
                FnTool::builder(format!("tool_{i}"))
                    .description(format!("Tool number {i}."))
                    .sync_fn(|_| Ok::<_, String>(json!("ok"))),
            )
        },
    )
}

/// The agent with its step instructions tuned: a sentence of the optimizer's before DSPy's text.
fn tuned(mut agent: DynReAct) -> DynReAct {
    for (name, predictor) in agent.named_predictors_mut() {
        if name == "react" {
            let instructions = format!("{TUNED}\n{}", predictor.instructions());
            predictor.set_instructions(instructions);
        }
    }
    agent
}

fn replies() -> Vec<String> {
    vec![
        r#"{"tools": ["tool_1"]}"#.to_owned(),
        "[[ ## next_thought ## ]]\ndone\n\n[[ ## next_tool_name ## ]]\nfinish\n\n\
         [[ ## next_tool_args ## ]]\n{\"answer\": \"ok\"}\n\n[[ ## completed ## ]]"
            .to_owned(),
    ]
}

async fn run(agent: &DynReAct) -> Vec<ReActEvent> {
    let mut inputs = Fields::new();
    inputs.insert("question".into(), json!("?"));
    agent.stream(inputs, CallConfig::default()).collect().await
}

/// The step's system message (the call after the selection's).
fn step_instructions(lm: &ScriptedLm) -> String {
    lm.requests()[1].messages[0].content.to_string()
}

#[tokio::test]
async fn text_mode_keeps_tuned_instructions_with_the_tool_list_narrowed() {
    let lm = ScriptedLm::texts(replies());
    let lm = std::sync::Arc::new(lm);
    let agent = tuned(agent(ReActMode::Text)).with_lm(lm.clone());
    let events = run(&agent).await;
    assert!(
        events.iter().any(|e| matches!(
            e,
            ReActEvent::TunedInstructionsKept { removed } if removed == &["tool_0", "tool_2"]
        )),
        "{events:?}"
    );
    assert!(
        matches!(events.last(), Some(ReActEvent::Done { .. })),
        "{events:?}"
    );
    let system = step_instructions(&lm);
    assert!(system.contains(TUNED), "{system}");
    assert!(
        system.contains("(1) tool_1, whose description is <desc>Tool number 1.</desc>")
            && system.contains("(2) finish, whose description is"),
        "{system}"
    );
    assert!(
        !system.contains("tool_0") && !system.contains("tool_2"),
        "{system}"
    );
}

#[tokio::test]
async fn auto_mode_keeps_tuned_instructions_in_text_mode_and_says_why() {
    // With native calls the selection is a forced call of `select_tools`.
    let replies = replies();
    let lm = ScriptedLm::new([
        Completion::tool_calls(vec![ToolCall::new(
            "call_1",
            "select_tools",
            replies[0].as_str(),
        )]),
        Completion::text(replies[1].clone()),
    ])
    .with_capabilities(Capabilities::openai());
    let lm = std::sync::Arc::new(lm);
    let agent = tuned(agent(ReActMode::Auto)).with_lm(lm.clone());
    let events = run(&agent).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ReActEvent::TextMode { .. })),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ReActEvent::TunedInstructionsKept { .. })),
        "{events:?}"
    );
    assert!(
        matches!(events.last(), Some(ReActEvent::Done { .. })),
        "{events:?}"
    );
    assert!(
        lm.requests()[1].tools.is_empty(),
        "text mode sends no tools"
    );
    let system = step_instructions(&lm);
    assert!(
        system.contains(TUNED) && !system.contains("tool_0"),
        "{system}"
    );
}

#[tokio::test]
async fn untuned_instructions_are_generated_for_the_tools_kept() {
    let lm = std::sync::Arc::new(ScriptedLm::texts(replies()));
    let agent = agent(ReActMode::Text).with_lm(lm.clone());
    let events = run(&agent).await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ReActEvent::TunedInstructionsKept { .. })),
        "{events:?}"
    );
    let system = step_instructions(&lm);
    assert!(system.contains("(1) tool_1, whose description is") && !system.contains("tool_0"));
}
