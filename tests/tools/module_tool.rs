//! Modules as tools (`ModuleTool`): arguments from the signature's inputs, the outputs as the
//! result, failures as tool errors, and a ReAct run's steps as progress — also when the agent is
//! itself a tool of another agent.

use serde_json::json;
use signet::module::ModuleTool;
use signet::prelude::*;
use signet::testing::{ScriptedLm, ScriptedReply};
use signet::tool::{ProgressLog, with_progress};

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Work out the sum.
#[derive(Signature)]
struct Sum {
    /// What to add up.
    #[input]
    question: String,
    /// How many digits to show, if limited.
    #[input]
    digits: Option<u32>,
    #[output]
    total: i64,
}

fn adder(replies: Vec<ScriptedReply>) -> ReAct<Sum> {
    ReAct::<Sum>::new()
        .tool(AddTool)
        .with_lm(ScriptedLm::replies(replies))
        .with_mode(ReActMode::Text)
}

#[tokio::test]
async fn a_react_agent_as_a_tool_returns_its_outputs_and_reports_each_step() {
    let agent = adder(vec![
        ScriptedReply::tool("add", json!({"a": 2, "b": 3})).thought("Add them."),
        ScriptedReply::finish(json!({"total": 5})).thought("Done."),
    ]);
    let tool = ModuleTool::new::<Sum>("sum", agent);
    assert_eq!(tool.description(), "Work out the sum.");
    assert_eq!(tool.args_schema()["required"], json!(["question"]));
    assert_eq!(
        tool.args_schema()["properties"]["digits"]["description"],
        "How many digits to show, if limited."
    );
    assert_eq!(
        tool.output_schema().unwrap(),
        &json!({"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]})
    );

    let log = ProgressLog::new();
    let out = with_progress(log.sink(), tool.call(json!({"question": "2 + 3?"})))
        .await
        .unwrap();
    assert_eq!(out, json!({"total": 5}));
    let seen = log.lines();
    assert_eq!(seen.len(), 8, "{seen:?}");
    assert_eq!(
        seen[..3],
        [
            "turn 1",
            "thought: Add them.",
            r#"calling add {"a":2,"b":3}"#
        ]
    );
    assert!(seen[3].starts_with("add returned after "), "{seen:?}");
    assert_eq!(
        seen[4..7],
        ["turn 2", "thought: Done.", r#"calling finish {"total":5}"#]
    );
}

#[tokio::test]
async fn bad_arguments_and_failed_runs_are_tool_errors() {
    let tool = ModuleTool::new::<Sum>("sum", adder(Vec::new()));
    let error = tool.call(json!({"question": 7})).await.unwrap_err();
    assert!(
        matches!(error, ToolError::InvalidArguments { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("argument `question`"), "{error}");
    // The scripted model has no reply left: the run fails, and the tool says why.
    let error = tool.call(json!({"question": "2 + 3?"})).await.unwrap_err();
    assert!(
        matches!(error, ToolError::Failed { ref tool, .. } if tool == "sum"),
        "{error}"
    );
}

#[tokio::test]
async fn an_agent_calling_an_agent_reports_both_runs() {
    let inner = ModuleTool::new::<Sum>(
        "sum",
        adder(vec![
            ScriptedReply::tool("add", json!({"a": 2, "b": 3})),
            ScriptedReply::finish(json!({"total": 5})),
        ]),
    )
    .with_description("Add numbers with a helper agent.");
    let outer = ReAct::<Sum>::new()
        .tool(inner)
        .with_mode(ReActMode::Text)
        .with_lm(ScriptedLm::replies([
            ScriptedReply::tool("sum", json!({"question": "2 + 3?"})),
            ScriptedReply::finish(json!({"total": 5})),
        ]));
    let log = ProgressLog::new();
    let out = with_progress(
        log.sink(),
        outer.call(SumInput {
            question: "2 + 3?".into(),
            digits: None,
        }),
    )
    .await
    .unwrap();
    assert_eq!(out.output.total, 5);
    let seen = log.lines();
    let calls: Vec<&str> = seen
        .iter()
        .filter(|l| l.starts_with("calling "))
        .map(String::as_str)
        .collect();
    assert_eq!(
        calls,
        [
            r#"calling sum {"question":"2 + 3?"}"#,
            r#"calling add {"a":2,"b":3}"#,
            r#"calling finish {"total":5}"#,
            r#"calling finish {"total":5}"#
        ]
    );
}
