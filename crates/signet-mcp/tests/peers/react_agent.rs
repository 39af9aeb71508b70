//! A ReAct agent (scripted LM) that uses MCP tools from a real server next to a local `#[tool]`,
//! with every MCP failure reaching the model as an observation.

use crate::common;

use std::sync::Arc;

use serde_json::json;
use signet::module::{Limits, Observation, ReAct, ReActMode};
use signet::testing::ScriptedLm;
use signet::{Signature, Tool, tool};
use signet_mcp::McpClient;

/// Answer the question using the tools.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Double an integer.
#[tool]
fn double(x: i64) -> i64 {
    x * 2
}

fn step(thought: &str, tool: &str, args: serde_json::Value) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
         [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

fn extract(answer: &str) -> String {
    format!("[[ ## reasoning ## ]]\ndone\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
}

fn agent(tools: Vec<Arc<dyn Tool>>, replies: Vec<String>) -> (ReAct<Ask>, Arc<ScriptedLm>) {
    let lm = Arc::new(ScriptedLm::texts(replies));
    let agent = ReAct::<Ask>::new()
        .tools(tools)
        .with_lm(lm.clone())
        .with_mode(ReActMode::Text)
        // Every tool of the Python server is offered: no selection call before the steps.
        .with_tool_selection_threshold(64)
        .with_limits(Limits::default().max_iters(8));
    (agent, lm)
}

#[tokio::test]
async fn react_uses_mcp_tools_and_local_tools_side_by_side() {
    let server = McpClient::spawn(common::python_server()).await.unwrap();
    let mut tools = server.tools();
    tools.push(Arc::new(DoubleTool));
    let (agent, lm) = agent(
        tools,
        vec![
            step("Add on the MCP server.", "add", json!({"a": 2, "b": 3})),
            step("Double it locally.", "double", json!({"x": 5})),
            step(
                "Try the failing tool.",
                "fail",
                json!({"message": "no luck"}),
            ),
            step(
                "Plan with a bad mode.",
                "plan_trip",
                json!({"trip": {"destination": {"city": "Oslo", "country": "NO"}, "mode": "car", "depart": "2026-01-02"}}),
            ),
            step("Get the picture.", "pixel", json!({})),
            step("Done.", "finish", json!({})),
            extract("10"),
        ],
    );
    let out = agent
        .call(AskInput {
            question: "What is (2 + 3) * 2?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "10");
    let observations: Vec<&Observation> = out
        .trajectory
        .steps
        .iter()
        .map(|s| &s.observation)
        .collect();
    assert_eq!(observations[0], &Observation::Output(json!("5")));
    assert_eq!(observations[1], &Observation::Output(json!(10)));
    assert_eq!(
        observations[2],
        &Observation::Error(
            "Execution error in fail: tool `fail` failed: Error executing tool fail: no luck"
                .into()
        )
    );
    let Observation::Error(bad) = observations[3] else {
        panic!("{:?}", observations[3]);
    };
    assert!(
        bad.starts_with("Execution error in plan_trip: invalid arguments for tool `plan_trip`: argument `trip.mode`: expected one of"),
        "{bad}"
    );
    let Observation::Output(image) = observations[4] else {
        panic!("{:?}", observations[4]);
    };
    assert_eq!(image["type"], "image");
    // The picture reached the model as an image part where its observation stands.
    let after = lm.requests()[5].messages.last().unwrap().content.clone();
    assert_eq!(after.media().count(), 1, "{after:?}");
    let parts = after.parts();
    let before = parts
        .iter()
        .position(|p| p.as_text().is_none())
        .and_then(|at| parts[at - 1].as_text())
        .unwrap();
    assert!(before.ends_with("[[ ## observation_4 ## ]]\n"), "{before}");

    // The model was shown the MCP tools with their descriptions and argument schemas.
    let first_prompt = format!("{:?}", lm.requests()[0]);
    assert!(first_prompt.contains("Plan a trip: check the itinerary and summarise it."));
    assert!(first_prompt.contains("Double an integer."));
    server.close().await.unwrap();
}

#[tokio::test]
async fn react_keeps_going_when_the_mcp_server_dies() {
    let server = McpClient::spawn(common::python_server()).await.unwrap();
    let mut tools = server.tools();
    tools.push(Arc::new(DoubleTool));
    let (agent, _lm) = agent(
        tools,
        vec![
            step("Crash the server.", "crash", json!({"code": 7})),
            step(
                "The server is gone; use the local tool.",
                "double",
                json!({"x": 21}),
            ),
            step("Done.", "finish", json!({})),
            extract("42"),
        ],
    );
    let out = agent
        .call(AskInput {
            question: "Double 21.".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "42");
    let Observation::Error(died) = &out.trajectory.steps[0].observation else {
        panic!("{:?}", out.trajectory.steps[0].observation);
    };
    assert!(
        died.starts_with(
            "Execution error in crash: tool `crash`: MCP server `python_server` is not running: \
             its process ended (exit status: 7)"
        ),
        "{died}"
    );
    assert_eq!(
        out.trajectory.steps[1].observation,
        Observation::Output(json!(42))
    );
}
