//! Adapters end to end through `DynPredict` with a scripted LM: native function calling, fallbacks
//! counted in usage, typed parse errors, and the three formats side by side.

use std::sync::Arc;

use serde_json::{Value, json};
use signet::adapter::{Adapter, ChatAdapter, JsonAdapter, ParseError, ToolCalls, XmlAdapter};
use signet::lm::{Capabilities, Completion, ResponseFormat, ToolCall};
use signet::module::{DynPredict, Error};
use signet::testing::ScriptedLm;
use signet::{DynSignature, Field, Tool, tool};

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn tool_signature() -> DynSignature {
    DynSignature::new("ToolSig")
        .with_instructions("Use the tools to answer the question.")
        .with_input(Field::str("question"))
        .with_input(Field::of::<signet::adapter::Tools>("tools"))
        .with_output(Field::str("answer"))
        .with_output(Field::of::<ToolCalls>("tool_calls"))
}

fn inputs() -> serde_json::Map<String, Value> {
    json!({"question": "What is 2 + 3?", "tools": [AddTool.to_openai_function()]})
        .as_object()
        .cloned()
        .unwrap()
}

fn function_calling() -> Capabilities {
    Capabilities::default().with_function_calling(true)
}

#[tokio::test]
async fn a_forged_tool_descriptor_is_a_typed_error_naming_the_input_and_nothing_is_sent() {
    let lm = Arc::new(ScriptedLm::texts(["unused"]).with_capabilities(function_calling()));
    let predictor = DynPredict::new(tool_signature())
        .with_adapter(ChatAdapter::new().with_native_function_calling(true))
        .with_lm(lm.clone());
    let mut forged = inputs();
    forged.insert(
        "tools".into(),
        json!([{"type": "function", "function": {"parameters": {}}}]),
    );
    let error = predictor.forward(&forged).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid signature for this call: input `tools`: a tool descriptor needs a string `name`, got {\"parameters\":{}}"
    );
    assert!(matches!(error, Error::InvalidSignature { .. }));
    assert!(lm.requests().is_empty());
}

#[tokio::test]
async fn native_tool_calls_are_sent_and_parsed_with_their_ids() {
    let lm = Arc::new(
        ScriptedLm::new([Completion::tool_calls(vec![ToolCall::new(
            "call_1",
            "add",
            r#"{"a": 2, "b": 3}"#,
        )])])
        .with_capabilities(function_calling()),
    );
    let predictor = DynPredict::new(tool_signature())
        .with_adapter(ChatAdapter::new().with_native_function_calling(true))
        .with_lm(lm.clone());
    let prediction = predictor.forward(&inputs()).await.unwrap();
    let calls: ToolCalls =
        serde_json::from_value(prediction.outputs["tool_calls"].clone()).unwrap();
    assert_eq!(calls.tool_calls[0].id.as_deref(), Some("call_1"));
    assert_eq!(calls.tool_calls[0].args, json!({"a": 2, "b": 3}));
    assert_eq!(
        prediction.outputs["answer"],
        Value::Null,
        "the model called a tool instead of answering"
    );

    let request = &lm.requests()[0];
    assert_eq!(request.tools, vec![AddTool.definition()]);
    // The tools and tool-call fields are not described in the prompt when sent natively.
    assert!(!request.messages[0].content.contains("tool_calls"));
    assert!(!request.messages[1].content.contains("[[ ## tools ## ]]"));
}

#[tokio::test]
async fn without_function_calling_support_tools_stay_in_the_prompt() {
    let reply = "[[ ## answer ## ]]\n5\n\n[[ ## tool_calls ## ]]\n{\"tool_calls\": []}\n\n[[ ## completed ## ]]";
    let lm = Arc::new(ScriptedLm::texts([reply]));
    let predictor = DynPredict::new(tool_signature())
        .with_adapter(ChatAdapter::new().with_native_function_calling(true))
        .with_lm(lm.clone());
    let prediction = predictor.forward(&inputs()).await.unwrap();
    assert_eq!(prediction.outputs["answer"], "5");
    assert!(lm.requests()[0].tools.is_empty());
}

#[tokio::test]
async fn a_tool_calls_output_without_a_tools_input_is_a_typed_error() {
    let sig = DynSignature::new("Broken")
        .with_input(Field::str("question"))
        .with_output(Field::of::<ToolCalls>("tool_calls"));
    let lm = Arc::new(ScriptedLm::texts(["unused"]).with_capabilities(function_calling()));
    let predictor = DynPredict::new(sig)
        .with_adapter(JsonAdapter::new())
        .with_lm(lm.clone());
    let err = predictor
        .forward(&json!({"question": "q"}).as_object().cloned().unwrap())
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidSignature { .. }), "{err}");
    assert!(
        lm.requests().is_empty(),
        "nothing is sent for an unusable signature"
    );
}

fn qa() -> DynSignature {
    DynSignature::parse("question -> answer, count: int").unwrap()
}

fn question() -> serde_json::Map<String, Value> {
    json!({"question": "How many museums?"})
        .as_object()
        .cloned()
        .unwrap()
}

#[tokio::test]
async fn chat_fallback_to_json_is_counted() {
    let lm = Arc::new(ScriptedLm::texts([
        "Paris has 3 museums.",
        r#"{"answer": "Paris", "count": 3}"#,
    ]));
    let prediction = DynPredict::new(qa())
        .with_lm(lm.clone())
        .forward(&question())
        .await
        .unwrap();
    assert_eq!(prediction.adapter, signet::adapter::AdapterName::Json);
    assert_eq!(prediction.usage.adapter_fallbacks, 1);
    assert_eq!(prediction.usage.lm_calls, 2);
    assert!(
        lm.requests()[1].messages[0]
            .content
            .contains("Outputs will be a JSON object")
    );
}

#[tokio::test]
async fn structured_outputs_retry_once_in_json_mode() {
    let caps = Capabilities::default().with_response_schema(true);
    let lm = Arc::new(
        ScriptedLm::texts(["not json", r#"{"answer": "Paris", "count": "3"}"#])
            .with_capabilities(caps),
    );
    let prediction = DynPredict::new(qa())
        .with_adapter(JsonAdapter::new())
        .with_lm(lm.clone())
        .forward(&question())
        .await
        .unwrap();
    assert_eq!(prediction.outputs["count"], 3);
    assert_eq!(prediction.usage.adapter_fallbacks, 1);
    let requests = lm.requests();
    assert!(matches!(
        requests[0].response_format,
        Some(ResponseFormat::JsonSchema { .. })
    ));
    assert_eq!(
        requests[1].response_format,
        Some(ResponseFormat::JsonObject)
    );
}

#[tokio::test]
async fn a_constrained_reply_cut_off_is_retried_once_under_tighter_bounds() {
    let local = Capabilities::default().with_json_object_schema(true);
    let adapter = JsonAdapter::constrained()
        .with_max_tool_calls(4)
        .with_max_string_length(200);
    let cut_off = r#"{"answer": "5", "tool_calls": {"tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}, {"name": "ad"#;
    let whole = r#"{"answer": "5", "tool_calls": {"tool_calls": [{"name": "add", "args": {"a": 2, "b": 3}}]}}"#;
    let lm = Arc::new(ScriptedLm::texts([cut_off, whole]).with_capabilities(local));
    let prediction = DynPredict::new(tool_signature())
        .with_adapter(adapter)
        .with_lm(lm.clone())
        .forward(&inputs())
        .await
        .unwrap();
    assert_eq!(
        prediction.outputs["tool_calls"]["tool_calls"][0]["args"]["b"],
        3
    );
    assert_eq!(prediction.usage.adapter_fallbacks, 1);
    let max_calls = |request: &signet::lm::LmRequest| {
        let Some(ResponseFormat::Raw(format)) = &request.response_format else {
            panic!("{:?}", request.response_format)
        };
        format["schema"]["properties"]["tool_calls"]["properties"]["tool_calls"]["maxItems"].clone()
    };
    let requests = lm.requests();
    assert_eq!(
        (max_calls(&requests[0]), max_calls(&requests[1])),
        (json!(4), json!(1))
    );

    // Cut off twice: the parse error of the retry, after two calls and no more.
    let lm = Arc::new(ScriptedLm::texts([cut_off, cut_off, whole]).with_capabilities(local));
    let err = DynPredict::new(tool_signature())
        .with_adapter(adapter)
        .with_lm(lm.clone())
        .forward(&inputs())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Parse(ParseError::NotAnObject { .. })),
        "{err}"
    );
    assert_eq!(lm.requests().len(), 2);
}

#[tokio::test]
async fn parse_errors_name_the_field_value_and_type() {
    let lm = Arc::new(ScriptedLm::texts([
        "[[ ## answer ## ]]\nParis\n\n[[ ## count ## ]]\nmany",
    ]));
    let err = DynPredict::new(qa())
        .with_adapter(ChatAdapter::new().without_json_fallback())
        .with_lm(lm)
        .forward(&question())
        .await
        .unwrap_err();
    match err {
        Error::Parse(ParseError::InvalidField {
            field,
            value,
            expected,
            ..
        }) => {
            assert_eq!(
                (field.as_str(), value.as_str(), expected.as_str()),
                ("count", "many", "int")
            );
        }
        other => panic!("expected InvalidField, got {other:?}"),
    }
}

#[tokio::test]
async fn the_three_formats_read_the_same_answer() {
    let replies: [(Arc<dyn Adapter>, &str); 3] = [
        (
            Arc::new(ChatAdapter::new()),
            "[[ ## answer ## ]]\nParis\n\n[[ ## count ## ]]\n3\n\n[[ ## completed ## ]]",
        ),
        (
            Arc::new(JsonAdapter::new()),
            "```json\n{\"answer\": \"Paris\", \"count\": 3}\n```",
        ),
        (
            Arc::new(XmlAdapter::new()),
            "<answer>\nParis\n</answer>\n<count>\n3\n</count>",
        ),
    ];
    for (adapter, reply) in replies {
        let name = adapter.name();
        let lm = Arc::new(ScriptedLm::texts([reply]));
        let prediction = DynPredict::new(qa())
            .with_adapter(adapter)
            .with_lm(lm)
            .forward(&question())
            .await
            .unwrap();
        assert_eq!(
            Value::Object(prediction.outputs),
            json!({"answer": "Paris", "count": 3}),
            "{name}"
        );
        assert_eq!(prediction.usage.adapter_fallbacks, 0, "{name}");
    }
}

#[tokio::test]
async fn empty_replies_are_errors_not_nulls() {
    let lm = Arc::new(ScriptedLm::new([Completion::default()]));
    let err = DynPredict::new(qa())
        .with_adapter(ChatAdapter::new().without_json_fallback())
        .with_lm(lm)
        .forward(&question())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Parse(ParseError::EmptyResponse { .. })),
        "{err}"
    );
}

#[tokio::test]
async fn conversation_history_becomes_earlier_turns() {
    use signet::adapter::History;
    let sig = DynSignature::new("Chat")
        .with_instructions("Answer the question.")
        .with_input(Field::str("question"))
        .with_input(Field::of::<History>("history"))
        .with_output(Field::str("answer"));
    let history = History {
        messages: vec![
            json!({"question": "Capital of France?", "answer": "Paris"})
                .as_object()
                .cloned()
                .unwrap(),
            // A turn with outputs only: no user message, not even the format reminder.
            json!({"answer": "Berlin"}).as_object().cloned().unwrap(),
        ],
    };
    let inputs = json!({"question": "And of Italy?", "history": history})
        .as_object()
        .cloned()
        .unwrap();
    let lm = Arc::new(ScriptedLm::texts(["[[ ## answer ## ]]\nRome"]));
    let prediction = DynPredict::new(sig)
        .with_lm(lm.clone())
        .forward(&inputs)
        .await
        .unwrap();
    assert_eq!(prediction.outputs["answer"], "Rome");
    let messages = &lm.requests()[0].messages;
    let contents: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
    assert!(
        contents[0].contains("2. `history` (History):"),
        "the system message lists every field"
    );
    // An earlier turn with inputs repeats the format reminder, as DSPy 3.4 does.
    assert!(
        contents[1].starts_with("[[ ## question ## ]]\nCapital of France?\n\nRespond with"),
        "{}",
        contents[1]
    );
    assert_eq!(
        contents[2],
        "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]\n"
    );
    assert_eq!(
        contents[3],
        "[[ ## answer ## ]]\nBerlin\n\n[[ ## completed ## ]]\n"
    );
    assert!(contents[4].starts_with("[[ ## question ## ]]\nAnd of Italy?\n\nRespond with"));
    assert!(!contents[4].contains("history"));
    assert_eq!(contents.len(), 5);
}

#[test]
fn a_changed_signature_renders_a_new_system_message() {
    let sig = DynSignature::parse("question -> answer").unwrap();
    let inputs = question();
    let first = ChatAdapter::new().format(&sig, &[], &inputs)[0]
        .content
        .clone();
    assert_eq!(
        ChatAdapter::new().format(&sig, &[], &inputs)[0].content,
        first,
        "cached rendering is identical"
    );
    let changed = sig.clone().with_instructions("Answer in French.");
    let second = ChatAdapter::new().format(&changed, &[], &inputs)[0]
        .content
        .clone();
    assert!(second.ends_with("Answer in French."), "{second}");
    assert_eq!(
        ChatAdapter::new().format(&sig, &[], &inputs)[0].content,
        first,
        "the original is unaffected"
    );
    let json_system = JsonAdapter::new().format(&sig, &[], &inputs)[0]
        .content
        .clone();
    assert!(
        json_system.contains("Outputs will be a JSON object"),
        "each format caches its own rendering"
    );
}

#[test]
fn tool_calls_are_read_as_dspys_validator_reads_them_in_every_format() {
    let expected = json!({"tool_calls": [{"id": null, "name": "add", "args": {"a": 1}}]});
    for written in [
        r#"{"tool_calls": [{"name": "add", "args": {"a": 1}}]}"#,
        r#"[{"name": "add", "args": {"a": 1}}]"#,
        r#"{"name": "add", "args": {"a": 1}}"#,
    ] {
        let chat = format!("[[ ## answer ## ]]\nx\n\n[[ ## tool_calls ## ]]\n{written}");
        let parsed = ChatAdapter::new().parse(&tool_signature(), &chat).unwrap();
        assert_eq!(parsed["tool_calls"], expected, "Chat: {written}");
        let json = format!(r#"{{"answer": "x", "tool_calls": {written}}}"#);
        let parsed = JsonAdapter::new().parse(&tool_signature(), &json).unwrap();
        assert_eq!(parsed["tool_calls"], expected, "JSON: {written}");
        let xml = format!("<answer>x</answer><tool_calls>{written}</tool_calls>");
        let parsed = XmlAdapter::new().parse(&tool_signature(), &xml).unwrap();
        assert_eq!(parsed["tool_calls"], expected, "XML: {written}");
    }
    // Anything else is a parse error naming the field, never an empty list.
    let error = ChatAdapter::new()
        .parse(
            &tool_signature(),
            "[[ ## answer ## ]]\nx\n\n[[ ## tool_calls ## ]]\n\"add\"",
        )
        .unwrap_err();
    assert!(error.to_string().contains("tool_calls"), "{error}");
}
