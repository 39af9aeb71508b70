//! The structured call's parse fn: a value that matches the schema but that the caller's rule or
//! type refuses is invalid at its level (reformat retry with the reason, then the next level, the
//! pattern level too), a refused default is a typed error, and every refusal is in the failures.

use serde_json::{Value, json};
use signet::lm::{Capabilities, Completion, ToolCall};
use signet::structured::{Level, StructuredError, call_structured, call_structured_as};
use signet::testing::ScriptedLm;

use crate::structured::request;

/// Refuses a `k` above 5: a rule the schema does not say.
fn small_k(value: &Value) -> Result<(), String> {
    match value.get("k").and_then(Value::as_i64) {
        Some(k) if k > 5 => Err(format!("k must be at most 5, not {k}")),
        _ => Ok(()),
    }
}

fn caps(function_calling: bool, json_object: bool) -> Capabilities {
    Capabilities::default()
        .with_function_calling(function_calling)
        .with_json_object(json_object)
}

#[tokio::test]
async fn a_refused_json_mode_reply_is_retried_with_the_reason() {
    let lm = ScriptedLm::texts([r#"{"tool": "calc", "k": 9}"#, r#"{"tool": "calc", "k": 2}"#])
        .with_capabilities(caps(false, true));
    let out = call_structured(&lm, &request().with_parse_fn(small_k))
        .await
        .unwrap();
    assert_eq!(
        (out.level, out.value),
        (Level::JsonMode, json!({"tool": "calc", "k": 2}))
    );
    assert_eq!(out.usage.lm_calls, 2);
    assert!(out.failures.is_empty(), "{:?}", out.failures);
    let retry = &lm.requests()[1];
    let last = &retry.messages[retry.messages.len() - 1].content;
    assert!(
        last.contains("not valid") && last.contains("k must be at most 5, not 9"),
        "{last}"
    );
}

#[tokio::test]
async fn refusals_at_every_level_fall_through_to_the_default() {
    let lm = ScriptedLm::new([
        Completion::tool_calls(vec![ToolCall::new(
            "c1",
            "pick",
            r#"{"tool": "calc", "k": 7}"#,
        )]),
        Completion::text(r#"{"tool": "calc", "k": 8}"#),
        Completion::text(r#"{"tool": "search", "k": 9}"#),
        Completion::text(r#"{"tool": "calc", "k": 10}"#),
        Completion::text(r#"{"tool": "calc", "k": 11}"#),
    ])
    .with_capabilities(caps(true, true));
    let request = request()
        .with_parse_fn(small_k)
        .with_default(json!({"tool": "search", "k": 1}));
    let out = call_structured(&lm, &request).await.unwrap();
    assert_eq!(
        (out.level, out.value),
        (Level::Default, json!({"tool": "search", "k": 1}))
    );
    assert_eq!(out.usage.lm_calls, 5);
    let levels: Vec<Level> = out.failures.iter().map(|f| f.level).collect();
    assert_eq!(
        levels,
        [
            Level::NativeTool,
            Level::JsonMode,
            Level::Text,
            Level::Pattern
        ]
    );
    for (failure, k) in out.failures.iter().zip([7, 9, 11]) {
        assert!(
            failure
                .reason
                .contains(&format!("k must be at most 5, not {k}")),
            "{failure:?}"
        );
    }
    // The pattern level found nothing to read in JSON replies.
    assert!(
        out.failures[3].reason.contains("no `name: value` line"),
        "{:?}",
        out.failures[3]
    );
}

#[tokio::test]
async fn a_default_the_parse_fn_refuses_is_a_typed_error_before_any_call() {
    let lm = ScriptedLm::texts(["unused"]).with_capabilities(caps(false, false));
    let request = request()
        .with_parse_fn(small_k)
        .with_default(json!({"tool": "calc", "k": 6}));
    let err = call_structured(&lm, &request).await.unwrap_err();
    assert_eq!(
        err,
        StructuredError::DefaultRefused {
            reason: "k must be at most 5, not 6".into()
        }
    );
    assert!(err.to_string().contains("default value"), "{err}");
    assert_eq!(err.usage().lm_calls, 0);
    assert!(lm.requests().is_empty());
}

#[tokio::test]
async fn the_pattern_level_candidate_is_checked_too() {
    // Lines, no JSON: the text level fails twice, then the pattern level reads `tool` and `k`.
    let replies = ["I pick a tool.", "- tool: calc\n- k: 8"];
    let lm = ScriptedLm::texts(replies).with_capabilities(caps(false, false));
    match call_structured(&lm, &request().with_parse_fn(small_k))
        .await
        .unwrap_err()
    {
        StructuredError::Exhausted { failures, usage } => {
            assert_eq!(usage.lm_calls, 2);
            assert_eq!(failures[1].level, Level::Pattern);
            assert!(
                failures[1]
                    .reason
                    .contains("refused: k must be at most 5, not 8"),
                "{:?}",
                failures[1]
            );
            assert_eq!(failures[2].level, Level::Default);
        }
        other => panic!("expected Exhausted, got {other:?}"),
    }
    // The same lines with a `k` the rule accepts are the answer.
    let lm = ScriptedLm::texts(["I pick a tool.", "- tool: calc\n- k: 3"])
        .with_capabilities(caps(false, false));
    let out = call_structured(&lm, &request().with_parse_fn(small_k))
        .await
        .unwrap();
    assert_eq!(
        (out.level, out.value),
        (Level::Pattern, json!({"tool": "calc", "k": 3}))
    );
    assert_eq!(out.failures[0].level, Level::Text);
}

#[derive(Debug, PartialEq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum Tool {
    Search,
    Calc,
}

#[derive(Debug, PartialEq, serde::Deserialize)]
struct Pick {
    tool: Tool,
    k: u8,
}

#[tokio::test]
async fn with_type_refuses_a_value_the_type_cannot_hold() {
    // `k: 300` matches the schema (an integer) but not `u8`; then `k` is missing, which the schema
    // allows but `Pick` does not; the text level's reply fits.
    let lm = ScriptedLm::texts([
        r#"{"tool": "calc", "k": 300}"#,
        r#"{"tool": "calc"}"#,
        r#"{"tool": "search", "k": 4}"#,
    ])
    .with_capabilities(caps(false, true));
    let out = call_structured(&lm, &request().with_type::<Pick>())
        .await
        .unwrap();
    assert_eq!(
        (out.level, out.value),
        (Level::Text, json!({"tool": "search", "k": 4}))
    );
    let retry = &lm.requests()[1];
    let last = &retry.messages[retry.messages.len() - 1].content;
    assert!(
        last.contains("not a valid Pick") && last.contains("300"),
        "{last}"
    );
    assert_eq!(out.failures.len(), 1);
    assert!(
        out.failures[0].reason.contains("missing field `k`"),
        "{:?}",
        out.failures[0]
    );
}

#[tokio::test]
async fn call_structured_as_returns_the_typed_value() {
    let lm = ScriptedLm::texts([
        r#"{"tool": "calc", "k": 256}"#,
        r#"{"tool": "calc", "k": 2}"#,
    ])
    .with_capabilities(caps(false, true));
    let (pick, out) = call_structured_as::<Pick>(&lm, &request().with_parse_fn(small_k))
        .await
        .unwrap();
    assert_eq!(
        pick,
        Pick {
            tool: Tool::Calc,
            k: 2
        }
    );
    assert_eq!(out.level, Level::JsonMode);
    // The request's own parse fn still runs, before the type's check.
    let retry = &lm.requests()[1];
    assert!(
        retry.messages[retry.messages.len() - 1]
            .content
            .contains("k must be at most 5, not 256"),
        "{:?}",
        retry.messages
    );
    // A default the type cannot hold is refused before any call.
    let lm = ScriptedLm::texts(["unused"]);
    let request = request().with_default(json!({"tool": "calc", "k": -1}));
    assert!(matches!(
        call_structured_as::<Pick>(&lm, &request).await.unwrap_err(),
        StructuredError::DefaultRefused { reason } if reason.contains("not a valid Pick")
    ));
    assert!(lm.requests().is_empty());
}
