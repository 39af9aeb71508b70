//! Schema-constrained decoding for small local models: every call carries its output schema as a
//! decoding constraint, and ReAct's steps tie each tool name to that tool's arguments.

use std::sync::Arc;

use serde_json::json;
use signet::adapter::JsonAdapter;
use signet::lm::{Capabilities, ResponseFormat};
use signet::module::{Predict, ReAct, ReActMode};
use signet::testing::ScriptedLm;
use signet::{Signature, Tool, tool};

/// Answer the question.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: i64,
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn llama_cpp() -> Capabilities {
    Capabilities::default().with_json_object_schema(true)
}

fn schema_of(format: &Option<ResponseFormat>) -> serde_json::Value {
    match format {
        Some(ResponseFormat::Raw(raw)) => {
            assert_eq!(raw["type"], "json_object");
            raw["schema"].clone()
        }
        other => panic!("expected the llama.cpp schema extension, got {other:?}"),
    }
}

#[tokio::test]
async fn predict_sends_its_output_schema_as_the_constraint() {
    let lm = Arc::new(ScriptedLm::texts([r#"{"answer": 5}"#]).with_capabilities(llama_cpp()));
    let ask = Predict::<Ask>::new()
        .with_lm(lm.clone())
        .with_adapter(JsonAdapter::constrained());
    assert_eq!(
        ask.call(AskInput {
            question: "2 + 3?".into()
        })
        .await
        .unwrap()
        .answer,
        5
    );
    let schema = schema_of(&lm.requests()[0].response_format);
    assert_eq!(schema["properties"]["answer"]["type"], "integer");
    assert_eq!(schema["required"], json!(["answer"]));
    assert_eq!(schema["additionalProperties"], false);
}

#[tokio::test]
async fn openai_gets_strict_structured_outputs() {
    let openai = Capabilities::default().with_response_schema(true);
    let lm = Arc::new(ScriptedLm::texts([r#"{"answer": 5}"#]).with_capabilities(openai));
    let ask = Predict::<Ask>::new()
        .with_lm(lm.clone())
        .with_adapter(JsonAdapter::constrained());
    ask.call(AskInput {
        question: "2 + 3?".into(),
    })
    .await
    .unwrap();
    assert!(matches!(
        lm.requests()[0].response_format,
        Some(ResponseFormat::JsonSchema { strict: true, .. })
    ));
}

#[tokio::test]
async fn react_steps_constrain_the_tool_name_and_its_arguments() {
    let lm = Arc::new(
        ScriptedLm::texts([
            r#"{"next_thought": "add", "next_tool_name": "add", "next_tool_args": {"a": 2, "b": 3}}"#,
            r#"{"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {"answer": 5}}"#,
        ])
        .with_capabilities(llama_cpp()),
    );
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .with_adapter(JsonAdapter::constrained())
        .with_mode(ReActMode::Text);
    let out = agent
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, 5);
    assert_eq!(out.usage.lm_calls, 2, "finish carried the answer");

    let schema = schema_of(&lm.requests()[0].response_format);
    let branches = schema["anyOf"].as_array().unwrap();
    assert_eq!(branches.len(), 2);
    assert_eq!(
        branches[0]["properties"]["next_tool_name"]["enum"],
        json!(["add"])
    );
    assert_eq!(
        branches[0]["properties"]["next_tool_args"],
        AddTool.args_schema().clone()
    );
    assert_eq!(
        branches[1]["properties"]["next_tool_name"]["enum"],
        json!(["finish"])
    );
    assert_eq!(
        branches[1]["properties"]["next_tool_args"]["properties"]["answer"]["type"],
        "integer"
    );
    // Every branch is something the validator accepts as a valid step.
    let validator = jsonschema_is_valid(&schema);
    assert!(validator(
        &json!({"next_thought": "x", "next_tool_name": "add", "next_tool_args": {"a": 1, "b": 2}})
    ));
    assert!(!validator(
        &json!({"next_thought": "x", "next_tool_name": "add", "next_tool_args": {"a": "1"}})
    ));
    assert!(!validator(
        &json!({"next_thought": "x", "next_tool_name": "mul", "next_tool_args": {}})
    ));
}

fn jsonschema_is_valid(schema: &serde_json::Value) -> impl Fn(&serde_json::Value) -> bool {
    let tool = signet::tool::ToolSpec::new("step", "", schema.clone());
    move |value| tool.validate(value).is_ok()
}

#[tokio::test]
async fn the_constrained_prompt_names_the_outputs_without_placeholders_to_copy() {
    let lm = Arc::new(ScriptedLm::texts([r#"{"answer": 5}"#]).with_capabilities(llama_cpp()));
    let ask = Predict::<Ask>::new()
        .with_lm(lm.clone())
        .with_adapter(JsonAdapter::constrained());
    ask.call(AskInput {
        question: "2 + 3?".into(),
    })
    .await
    .unwrap();
    let system = &lm.requests()[0].messages[0].content;
    assert!(
        system.contains("Outputs will be a JSON object with the keys `answer`, in this order."),
        "{system}"
    );
    assert!(
        !system.contains("{answer}"),
        "no placeholder value: {system}"
    );
    // The plain JSON adapter keeps DSPy's prompt, placeholders included.
    let plain = Arc::new(ScriptedLm::texts([r#"{"answer": 5}"#]));
    Predict::<Ask>::new()
        .with_lm(plain.clone())
        .with_adapter(JsonAdapter::new())
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    assert!(
        plain.requests()[0].messages[0]
            .content
            .contains("\"answer\": \"{answer}")
    );
}

#[tokio::test]
async fn with_structured_outputs_only_react_steps_still_send_their_own_schema() {
    let openai = Capabilities::default().with_response_schema(true);
    let lm = Arc::new(
        ScriptedLm::texts([
            r#"{"next_thought": "done", "next_tool_name": "finish", "next_tool_args": {"answer": 5}}"#,
        ])
        .with_capabilities(openai),
    );
    ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone())
        .with_adapter(JsonAdapter::constrained())
        .with_mode(ReActMode::Text)
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    let Some(ResponseFormat::JsonSchema { schema, strict, .. }) =
        lm.requests()[0].response_format.clone()
    else {
        panic!("structured outputs expected")
    };
    assert!(!strict, "a hand-made schema is sent without strict mode");
    assert_eq!(schema["anyOf"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn native_react_on_a_small_model_calls_tools_through_a_constrained_list() {
    use signet::lm::{ConstrainedToolCalls, Lm};
    let inner = ScriptedLm::texts([
        r#"[{"name": "add", "arguments": {"a": 2, "b": 3}}]"#,
        r#"[{"name": "finish", "arguments": {"answer": 5}}]"#,
    ])
    .with_capabilities(llama_cpp());
    let lm = Arc::new(ConstrainedToolCalls::new(inner));
    // The wrapper reports native tool calls, so the default mode picks the native loop.
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_lm(lm.clone() as Arc<dyn Lm>)
        .with_adapter(JsonAdapter::constrained());
    let out = agent
        .call(AskInput {
            question: "2 + 3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, 5);
    let steps: Vec<(&str, Option<&str>)> = out
        .trajectory
        .steps
        .iter()
        .map(|s| (s.tool_name.as_str(), s.call_id.as_deref()))
        .collect();
    assert_eq!(steps, [("add", Some("call_0")), ("finish", Some("call_1"))]);
    let requests = lm.inner().requests();
    assert_eq!(requests.len(), 2);
    let schema = schema_of(&requests[0].response_format);
    let calls = &schema["anyOf"][0];
    assert_eq!(calls["type"], "array");
    let names: Vec<&serde_json::Value> = calls["items"]["anyOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|branch| &branch["properties"]["name"]["enum"][0])
        .collect();
    assert_eq!(names, [&json!("add"), &json!("finish")]);
    assert_eq!(
        requests[0].tools.len(),
        2,
        "the tools go to the chat template"
    );
    // The second turn carries the first call and its result.
    assert_eq!(
        requests[1]
            .messages
            .iter()
            .filter(|m| m.tool_call_id.as_deref() == Some("call_0"))
            .count(),
        1
    );
}
