//! Replies nested far deeper than any real answer (100,000 levels) are a typed error in every
//! parser a model's text reaches — the Chat, JSON and XML adapters, native tool-call arguments and
//! the structured call — on a thread with tokio's default 2 MiB stack, never a stack overflow that
//! aborts the process.

use std::sync::Arc;

use serde_json::{Value, json};
use signet::DynSignature;
use signet::adapter::{Adapter, ChatAdapter, JsonAdapter, XmlAdapter};
use signet::lm::{Completion, ToolCall};
use signet::testing::ScriptedLm;

/// How deep the hostile replies nest.
const LEVELS: usize = 100_000;

/// Runs `f` on a thread with tokio's default worker stack (2 MiB). A stack overflow there aborts
/// the whole test binary, so getting past this call is the test.
fn on_a_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

fn signature() -> DynSignature {
    DynSignature::parse("question -> names: list[str], anything: Any, table: dict[str, Any]")
        .unwrap()
}

/// Every shape of deep nesting a model might write: closed and torn JSON arrays and objects,
/// Python tuples, and a mix of them.
fn deep_values() -> Vec<(&'static str, String)> {
    vec![
        (
            "closed arrays",
            format!("{}{}", "[".repeat(LEVELS), "]".repeat(LEVELS)),
        ),
        ("torn arrays", "[".repeat(LEVELS)),
        (
            "objects",
            format!("{}1{}", "{\"a\": ".repeat(LEVELS), "}".repeat(LEVELS)),
        ),
        ("torn objects", "{'a': ".repeat(LEVELS)),
        ("tuples", "(".repeat(LEVELS)),
        ("mixed", "[{'a': (".repeat(LEVELS / 3)),
    ]
}

fn assert_too_deep(what: &str, error: &str) {
    assert!(
        error.contains("nested deeper than 128 levels"),
        "{what}: the error should say the reply is nested too deep, got: {}",
        &error[..error.len().min(400)]
    );
}

#[test]
fn the_chat_adapter_refuses_a_deep_value_with_a_typed_error() {
    on_a_small_stack(|| {
        let sig = signature();
        for (shape, deep) in deep_values() {
            for field in ["names", "anything", "table"] {
                let mut reply = String::new();
                for name in ["names", "anything", "table"] {
                    let value = if name == field { deep.as_str() } else { "[]" };
                    let value = if name == "table" && name != field {
                        "{}"
                    } else {
                        value
                    };
                    reply.push_str(&format!("[[ ## {name} ## ]]\n{value}\n\n"));
                }
                reply.push_str("[[ ## completed ## ]]");
                let error = ChatAdapter::default().parse(&sig, &reply).unwrap_err();
                assert_too_deep(&format!("chat, {shape} in {field}"), &error.to_string());
            }
        }
    });
}

#[test]
fn the_json_adapter_refuses_a_deep_reply_with_a_typed_error() {
    on_a_small_stack(|| {
        let sig = signature();
        for (shape, deep) in deep_values() {
            // The whole reply deep, and a deep value inside an otherwise fine object.
            for reply in [
                deep.clone(),
                format!("{{\"names\": [], \"table\": {{}}, \"anything\": {deep}}}"),
                format!("Here it is: {{\"names\": {deep}"),
            ] {
                let error = JsonAdapter::new().parse(&sig, &reply).unwrap_err();
                assert_too_deep(&format!("json, {shape}"), &error.to_string());
            }
        }
    });
}

#[test]
fn the_xml_adapter_refuses_deep_elements_and_deep_text_with_a_typed_error() {
    on_a_small_stack(|| {
        let sig = signature();
        let elements = format!("{}x{}", "<item>".repeat(LEVELS), "</item>".repeat(LEVELS));
        // A quote in the text before the elements hides them from a scan for JSON strings.
        let quoted = format!("\"{}x{}", "<item>".repeat(LEVELS), "</item>".repeat(LEVELS));
        let mut cases = vec![
            ("elements".to_owned(), elements.clone()),
            ("quoted elements".to_owned(), quoted),
        ];
        for (shape, deep) in deep_values() {
            cases.push((shape.to_owned(), deep));
        }
        for (shape, deep) in cases {
            for field in ["names", "anything", "table"] {
                let mut reply = String::new();
                for name in ["names", "anything", "table"] {
                    let value = if name == field { deep.as_str() } else { "" };
                    reply.push_str(&format!("<{name}>{value}</{name}>\n"));
                }
                let error = XmlAdapter::new().parse(&sig, &reply).unwrap_err();
                assert_too_deep(&format!("xml, {shape} in {field}"), &error.to_string());
            }
        }
    });
}

/// Answer the question using the tools.
#[derive(signet::Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Echoes what it was given.
#[signet::tool]
fn echo(word: Value) -> String {
    word.to_string()
}

#[test]
fn deep_native_tool_call_arguments_are_a_typed_error() {
    use signet::module::{Observation, ReAct, ReActMode};

    on_a_small_stack(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            for (shape, deep) in deep_values() {
                let arguments = format!("{{\"word\": {deep}}}");
                let lm = Arc::new(ScriptedLm::new([
                    Completion::tool_calls(vec![ToolCall::new("c1", "echo", arguments)]),
                    Completion::tool_calls(vec![ToolCall::new(
                        "c2",
                        "finish",
                        json!({"answer": "done"}).to_string(),
                    )]),
                ]));
                let agent = ReAct::<Ask>::new()
                    .tool(EchoTool)
                    .with_mode(ReActMode::Native)
                    .with_lm(lm);
                let out = agent
                    .call(AskInput {
                        question: "Echo it".into(),
                    })
                    .await
                    .unwrap();
                // serde_json refuses past its own 128 levels; what the model reads says why.
                let Observation::Error(error) = &out.trajectory.steps[0].observation else {
                    panic!("native arguments, {shape}: the call should fail");
                };
                assert!(
                    error.contains("the arguments are not valid JSON"),
                    "native arguments, {shape}: {}",
                    &error[..error.len().min(400)]
                );
            }
        });
    });
}

#[test]
fn a_deep_structured_reply_is_a_typed_error() {
    use signet::lm::Message;
    use signet::structured::{StructuredRequest, call_structured};

    on_a_small_stack(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            for (shape, deep) in deep_values() {
                let lm = ScriptedLm::texts(vec![deep.clone(); 8]);
                let request = StructuredRequest::new(
                    "answer",
                    json!({"type": "array"}),
                    vec![Message::user("A list, please.")],
                );
                let error = call_structured(&lm, &request).await.unwrap_err();
                assert_too_deep(&format!("structured, {shape}"), &error.to_string());
            }
        });
    });
}
