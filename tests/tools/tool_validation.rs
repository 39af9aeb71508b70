//! Incoming arguments are validated against the generated schema; every error names the argument,
//! what was expected and what was received, in words a model can act on.

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};
use signet::tool::{ArgError, ArgErrorKind};
use signet::{Tool, ToolError, tool};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Point {
    pub x: i64,
    #[serde(default)]
    pub y: i64,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Color {
    Red,
    Blue,
}

/// Plot a point.
#[tool]
fn plot(
    point: Point,
    label: Option<String>,
    #[arg(default = Color::Red)] color: Color,
    tags: Vec<String>,
) -> String {
    let _ = (label, color, tags);
    format!("{},{}", point.x, point.y)
}

/// An even number: a rule the schema cannot express, checked by the deserializer.
#[derive(Debug, JsonSchema)]
pub struct Even(#[allow(dead_code)] pub i64);

impl<'de> Deserialize<'de> for Even {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let n = i64::deserialize(d)?;
        if n % 2 == 0 {
            Ok(Even(n))
        } else {
            Err(serde::de::Error::custom(format!("{n} is odd")))
        }
    }
}

#[tool]
fn half(n: Even) -> i64 {
    n.0 / 2
}

fn errors(tool: &dyn Tool, args: Value) -> Vec<ArgError> {
    match tool.call_blocking(args) {
        Err(ToolError::InvalidArguments { tool: name, errors }) => {
            assert_eq!(name, tool.name());
            errors
        }
        other => panic!("expected InvalidArguments, got {other:?}"),
    }
}

fn message(tool: &dyn Tool, args: Value) -> String {
    tool.call_blocking(args).unwrap_err().to_string()
}

#[test]
fn valid_arguments_run_the_tool() {
    let out = PlotTool
        .call_blocking(json!({"point": {"x": 1, "y": 2}, "tags": []}))
        .unwrap();
    assert_eq!(out, "1,2");
    let out = PlotTool.call_blocking(json!({"point": {"x": 1}, "label": null, "tags": ["a"]}));
    assert_eq!(out.unwrap(), "1,0");
}

#[test]
fn wrong_type_names_argument_expected_type_and_value() {
    let errs = errors(&PlotTool, json!({"point": {"x": "bad"}, "tags": []}));
    assert_eq!(
        errs,
        [ArgError {
            path: "point.x".into(),
            kind: ArgErrorKind::WrongType {
                expected: "integer".into()
            },
            received: Some(json!("bad")),
        }]
    );
    assert_eq!(
        message(&PlotTool, json!({"point": {"x": 1.5}, "tags": []})),
        "invalid arguments for tool `plot`: argument `point.x`: expected integer, got number 1.5"
    );
    assert_eq!(
        message(&PlotTool, json!({"point": {"x": true}, "tags": []})),
        "invalid arguments for tool `plot`: argument `point.x`: expected integer, got boolean true"
    );
    assert_eq!(
        message(&PlotTool, json!({"point": {"x": 1}, "tags": "a,b"})),
        "invalid arguments for tool `plot`: argument `tags`: expected array, got string \"a,b\""
    );
    assert_eq!(
        message(&PlotTool, json!({"point": {"x": 1}, "tags": ["a", 2]})),
        "invalid arguments for tool `plot`: argument `tags.1`: expected string, got integer 2"
    );
    assert_eq!(
        message(
            &PlotTool,
            json!({"point": {"x": 1}, "label": 7, "tags": []})
        ),
        "invalid arguments for tool `plot`: argument `label`: expected string or null, got integer 7"
    );
}

#[test]
fn missing_arguments_name_their_type() {
    let errs = errors(&PlotTool, json!({"point": {"y": 2}}));
    let messages: Vec<String> = errs.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "missing required argument `tags` (array of string)",
            "missing required argument `point.x` (integer)"
        ]
    );
    assert!(matches!(errs[0].kind, ArgErrorKind::Missing { .. }));
}

#[test]
fn unexpected_arguments_list_the_accepted_ones() {
    assert_eq!(
        message(&PlotTool, json!({"point": {"x": 1}, "tags": [], "c": 3})),
        "invalid arguments for tool `plot`: unexpected argument `c` (accepted: point, label, color, tags)"
    );
}

#[test]
fn enum_values_are_listed() {
    let errs = errors(
        &PlotTool,
        json!({"point": {"x": 1}, "tags": [], "color": "green"}),
    );
    assert_eq!(
        errs[0].kind,
        ArgErrorKind::NotAllowed {
            allowed: vec![json!("red"), json!("blue")]
        }
    );
    assert_eq!(
        errs[0].to_string(),
        "argument `color`: expected one of \"red\", \"blue\", got \"green\""
    );
}

#[test]
fn several_problems_are_reported_together() {
    let errs = errors(
        &PlotTool,
        json!({"point": {"x": "1"}, "color": "green", "extra": 1}),
    );
    assert_eq!(errs.len(), 4, "{errs:?}");
}

#[test]
fn arguments_must_be_an_object() {
    assert_eq!(
        message(&PlotTool, json!("point")),
        "invalid arguments for tool `plot`: arguments must be a JSON object, got string \"point\""
    );
}

#[test]
fn deserializer_checks_become_argument_errors() {
    assert_eq!(HalfTool.call_blocking(json!({"n": 4})).unwrap(), 2);
    let err = HalfTool.call_blocking(json!({"n": 3})).unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }));
    assert!(err.to_string().contains("3 is odd"), "{err}");
}

#[test]
fn tools_without_arguments_accept_null_and_empty_objects() {
    #[tool]
    fn ping() -> &'static str {
        "pong"
    }
    assert_eq!(PingTool.call_blocking(Value::Null).unwrap(), "pong");
    assert_eq!(PingTool.call_blocking(json!({})).unwrap(), "pong");
    assert!(PingTool.call_blocking(json!({"x": 1})).is_err());
}

#[tokio::test]
async fn async_calls_validate_the_same_way() {
    let err = PlotTool
        .call(json!({"point": {}, "tags": []}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid arguments for tool `plot`: missing required argument `point.x` (integer)"
    );
}
