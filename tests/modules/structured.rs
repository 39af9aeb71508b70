//! The structured-call helper degrades from native tools to JSON mode to text, retries a bad reply
//! once with the reason, reports the level that worked and sums usage over every call.

use serde_json::json;
use signet::lm::{
    Capabilities, Completion, LmError, Message, ResponseFormat, ToolCall, ToolChoice,
};
use signet::structured::{Level, StructuredError, StructuredRequest, call_structured};
use signet::testing::ScriptedLm;

/// A request for a tool pick (shared with `structured_parse_fn`).
pub(crate) fn request() -> StructuredRequest {
    StructuredRequest::new(
        "pick",
        json!({
            "type": "object",
            "properties": {"tool": {"type": "string", "enum": ["search", "calc"]}, "k": {"type": "integer"}},
            "required": ["tool"]
        }),
        vec![Message::user("Which tool?")],
    )
    .with_description("The tool to use.")
}

fn caps(function_calling: bool, json_object: bool) -> Capabilities {
    Capabilities::default()
        .with_function_calling(function_calling)
        .with_json_object(json_object)
}

#[tokio::test]
async fn native_tool_call_is_the_first_level() {
    let lm = ScriptedLm::new([Completion::tool_calls(vec![ToolCall::new(
        "c1",
        "pick",
        r#"{"tool": "calc"}"#,
    )])])
    .with_capabilities(caps(true, true));
    let out = call_structured(&lm, &request()).await.unwrap();
    assert_eq!(
        (out.level, out.value),
        (Level::NativeTool, json!({"tool": "calc"}))
    );
    let sent = &lm.requests()[0];
    assert_eq!(sent.tool_choice, Some(ToolChoice::Function("pick".into())));
    assert_eq!(sent.tools[0].parameters, Some(request().schema));
}

#[tokio::test]
async fn an_invalid_tool_call_degrades_to_json_mode() {
    let lm = ScriptedLm::new([
        Completion::tool_calls(vec![ToolCall::new("c1", "pick", r#"{"tool": "dance"}"#)]),
        Completion::text(r#"{"tool": "search", "k": 3}"#),
    ])
    .with_capabilities(caps(true, true));
    let out = call_structured(&lm, &request()).await.unwrap();
    assert_eq!(out.level, Level::JsonMode);
    assert_eq!(out.value["k"], 3);
    assert_eq!(out.usage.lm_calls, 2);
    assert_eq!(
        lm.requests()[1].response_format,
        Some(ResponseFormat::JsonObject)
    );
}

#[tokio::test]
async fn json_mode_retries_once_with_the_reason() {
    let lm = ScriptedLm::texts([r#"{"k": 3}"#, r#"{"tool": "calc"}"#])
        .with_capabilities(caps(false, true));
    let out = call_structured(&lm, &request()).await.unwrap();
    assert_eq!(out.level, Level::JsonMode);
    let retry = &lm.requests()[1];
    let last = &retry.messages[retry.messages.len() - 1].content;
    assert!(
        last.contains("not valid") && last.contains("tool"),
        "{last}"
    );
    assert_eq!(
        retry.messages[retry.messages.len() - 2].content,
        r#"{"k": 3}"#
    );
}

#[tokio::test]
async fn text_level_extracts_json_from_prose() {
    let lm = ScriptedLm::texts(["I pick ```json\n{\"tool\": \"search\"}\n```"])
        .with_capabilities(caps(false, false));
    let out = call_structured(&lm, &request()).await.unwrap();
    assert_eq!(
        (out.level, out.value),
        (Level::Text, json!({"tool": "search"}))
    );
    assert!(lm.requests()[0].response_format.is_none());
}

#[tokio::test]
async fn schema_constrained_servers_get_the_schema_in_response_format() {
    let caps = Capabilities::default().with_json_object_schema(true);
    let lm = ScriptedLm::texts([r#"{"tool": "calc"}"#]).with_capabilities(caps);
    call_structured(&lm, &request()).await.unwrap();
    assert_eq!(
        lm.requests()[0].response_format,
        Some(ResponseFormat::Raw(
            json!({"type": "json_object", "schema": request().schema})
        ))
    );
}

#[tokio::test]
async fn every_level_failing_is_a_typed_error_with_the_reasons() {
    let lm =
        ScriptedLm::texts(["no", "still no", "nope", "never"]).with_capabilities(caps(false, true));
    match call_structured(&lm, &request()).await.unwrap_err() {
        StructuredError::Exhausted { failures, usage } => {
            let levels: Vec<Level> = failures.iter().map(|f| f.level).collect();
            assert_eq!(
                levels,
                [Level::JsonMode, Level::Text, Level::Pattern, Level::Default]
            );
            assert_eq!(usage.lm_calls, 4);
        }
        other => panic!("expected Exhausted, got {other:?}"),
    }
}

#[tokio::test]
async fn a_rejected_tools_request_moves_on_but_a_context_overflow_stops() {
    let rejected = ScriptedLm::new([])
        .then_error(LmError::Rejected {
            status: 400,
            message: "tools not supported".into(),
        })
        .then(Completion::text(r#"{"tool": "calc"}"#))
        .with_capabilities(caps(true, true));
    assert_eq!(
        call_structured(&rejected, &request()).await.unwrap().level,
        Level::JsonMode
    );

    let overflow = ScriptedLm::new([])
        .then_error(LmError::ContextWindowExceeded {
            message: "too long".into(),
        })
        .with_capabilities(caps(true, true));
    let err = call_structured(&overflow, &request()).await.unwrap_err();
    assert!(
        matches!(
            err,
            StructuredError::Lm {
                error: LmError::ContextWindowExceeded { .. },
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(overflow.requests().len(), 1);
}

#[tokio::test]
async fn an_invalid_schema_is_reported_before_any_call() {
    let mut bad = request();
    bad.schema = json!({"type": 12});
    let lm = ScriptedLm::texts(["{}"]);
    assert!(matches!(
        call_structured(&lm, &bad).await,
        Err(StructuredError::InvalidSchema { .. })
    ));
    assert!(lm.requests().is_empty());
}

#[tokio::test]
async fn name_value_lines_are_read_when_no_reply_holds_json() {
    // A small model answers in lines, twice; no further call is made to read them.
    let lm = ScriptedLm::texts(["I would pick a tool.", "- tool: calc\n- k: 3"])
        .with_capabilities(caps(false, false));
    let out = call_structured(&lm, &request()).await.unwrap();
    assert_eq!(
        (out.level, out.value),
        (Level::Pattern, json!({"tool": "calc", "k": 3}))
    );
    assert_eq!(lm.requests().len(), 2);
    // Lines whose values break the schema are no answer.
    let lm =
        ScriptedLm::texts(["tool: hammer", "tool: hammer"]).with_capabilities(caps(false, false));
    assert!(matches!(
        call_structured(&lm, &request()).await.unwrap_err(),
        StructuredError::Exhausted { .. }
    ));
}

#[tokio::test]
async fn a_default_answers_when_every_level_fails_but_never_hides_an_lm_error() {
    let lm = ScriptedLm::texts(["no", "still no"]).with_capabilities(caps(false, false));
    let with_default = request().with_default(json!({"tool": "search"}));
    let out = call_structured(&lm, &with_default).await.unwrap();
    assert_eq!(
        (out.level, out.value),
        (Level::Default, json!({"tool": "search"}))
    );
    assert_eq!(out.usage.lm_calls, 2);

    let dead = ScriptedLm::new([])
        .then_error(LmError::Timeout {
            after: std::time::Duration::from_secs(1),
        })
        .with_capabilities(caps(false, false));
    assert!(matches!(
        call_structured(&dead, &with_default).await.unwrap_err(),
        StructuredError::Lm { .. }
    ));
    // A default that breaks the schema is refused before any call.
    let lm = ScriptedLm::texts(["unused"]).with_capabilities(caps(false, false));
    let bad = request().with_default(json!({"tool": "hammer"}));
    assert!(matches!(
        call_structured(&lm, &bad).await.unwrap_err(),
        StructuredError::InvalidSchema { message } if message.starts_with("the default value does not match the schema")
    ));
    assert!(lm.requests().is_empty());
}

#[tokio::test]
async fn a_parser_of_ones_own_reads_the_reply_first() {
    let lm = ScriptedLm::texts(["use=calc"]).with_capabilities(caps(false, false));
    let parsed = request().with_parser(|text| {
        let tool = text.strip_prefix("use=")?;
        Some(json!({ "tool": tool }))
    });
    let out = call_structured(&lm, &parsed).await.unwrap();
    assert_eq!(
        (out.level, out.value),
        (Level::Text, json!({"tool": "calc"}))
    );
}
