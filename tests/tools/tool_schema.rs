//! `#[tool]` generates the argument schema at compile time: one property per parameter, optional
//! parameters left out of `required`, nested types inlined, unknown arguments rejected.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use signet::{Tool, tool};

/// A point on the canvas.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Point {
    /// X coordinate
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

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Shape {
    Circle { radius: f64 },
    Square { side: f64 },
}

/// Exercise every argument shape.
///
/// The second paragraph stays in the description.
#[tool]
#[allow(clippy::too_many_arguments, unused_variables)]
fn shapes(
    integer: i64,
    text: String,
    borrowed: &str,
    real: f64,
    flag: bool,
    maybe: Option<String>,
    list: Vec<i64>,
    slice: &[String],
    weights: HashMap<String, f64>,
    tags: BTreeMap<String, Vec<String>>,
    point: Point,
    points: Vec<Point>,
    maybe_point: Option<Point>,
    color: Color,
    shape: Shape,
    pair: (i32, String),
    anything: Value,
    /// How many results to return.
    #[arg(default = 3)]
    k: u32,
    #[arg(desc = "The greeting to use", default = "Hello")] greeting: String,
    #[arg(default = Color::Red)] default_color: Color,
) -> usize {
    0
}

fn props() -> &'static Value {
    &ShapesTool.args_schema()["properties"]
}

#[test]
fn scalars() {
    assert_eq!(props()["integer"], json!({"type": "integer"}));
    assert_eq!(props()["text"], json!({"type": "string"}));
    assert_eq!(props()["borrowed"], json!({"type": "string"}));
    assert_eq!(props()["real"], json!({"type": "number"}));
    assert_eq!(props()["flag"], json!({"type": "boolean"}));
}

#[test]
fn option_is_nullable_and_optional() {
    // pydantic's `Optional[str] = None`, as DSPy shows it.
    assert_eq!(
        props()["maybe"].to_string(),
        r#"{"anyOf":[{"type":"string"},{"type":"null"}],"default":null}"#
    );
    let required = &ShapesTool.args_schema()["required"];
    assert!(!required.as_array().unwrap().contains(&json!("maybe")));
}

#[test]
fn sequences_and_maps() {
    assert_eq!(
        props()["list"],
        json!({"type": "array", "items": {"type": "integer"}})
    );
    assert_eq!(
        props()["slice"],
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(
        props()["weights"],
        json!({"type": "object", "additionalProperties": {"type": "number"}})
    );
    assert_eq!(
        props()["tags"],
        json!({"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}})
    );
    assert_eq!(
        props()["pair"],
        json!({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2})
    );
}

#[test]
fn nested_struct_is_inlined_with_its_docs() {
    // pydantic's shape and key order: the model and its fields titled, keys sorted.
    let point = json!({
        "description": "A point on the canvas.",
        "properties": {
            "x": {"description": "X coordinate", "title": "X", "type": "integer"},
            "y": {"default": 0, "title": "Y", "type": "integer"}
        },
        "required": ["x"],
        "title": "Point",
        "type": "object"
    });
    assert_eq!(props()["point"].to_string(), point.to_string());
    assert_eq!(props()["points"], json!({"type": "array", "items": point}));
    assert_eq!(props()["maybe_point"]["anyOf"][0], point);
    assert_eq!(props()["maybe_point"]["anyOf"][1], json!({"type": "null"}));
    assert!(ShapesTool.args_schema().get("$defs").is_none());
    assert!(!ShapesTool.args_schema().to_string().contains("$ref"));
}

#[test]
fn enums() {
    assert_eq!(
        props()["color"].to_string(),
        r#"{"enum":["red","blue"],"title":"Color","type":"string"}"#
    );
    let shape = &props()["shape"]["oneOf"];
    assert_eq!(
        shape[0]["properties"]["kind"],
        json!({"type": "string", "const": "circle", "title": "Kind"})
    );
    assert_eq!(shape[1]["required"], json!(["kind", "side"]));
}

#[test]
fn any_value() {
    assert_eq!(
        props()["anything"],
        json!({}),
        "any JSON value, as DSPy shows untyped arguments"
    );
}

#[test]
fn defaults_and_descriptions() {
    assert_eq!(
        props()["k"],
        json!({"description": "How many results to return.", "type": "integer", "minimum": 0, "default": 3})
    );
    assert_eq!(
        props()["greeting"],
        json!({"description": "The greeting to use", "type": "string", "default": "Hello"})
    );
    assert_eq!(props()["default_color"]["default"], "red");
}

#[test]
fn required_lists_exactly_the_arguments_without_defaults() {
    assert_eq!(
        ShapesTool.args_schema()["required"],
        json!([
            "integer", "text", "borrowed", "real", "flag", "list", "slice", "weights", "tags",
            "point", "points", "color", "shape", "pair", "anything"
        ])
    );
    assert_eq!(ShapesTool.args_schema()["additionalProperties"], false);
}

#[test]
fn name_and_description_come_from_the_function() {
    assert_eq!(ShapesTool.name(), "shapes");
    assert_eq!(
        ShapesTool.description(),
        "Exercise every argument shape.\n\nThe second paragraph stays in the description."
    );
}

/// Look up the weather.
#[tool(name = "weather", desc = "Forecast for a city.")]
async fn get_weather(city: String) -> String {
    city
}

#[tool]
fn no_args() -> &'static str {
    "ok"
}

#[test]
fn overrides_and_openai_descriptor() {
    assert_eq!(GetWeatherTool.name(), "weather");
    assert_eq!(
        GetWeatherTool.to_openai_function(),
        json!({
            "type": "function",
            "function": {
                "name": "weather",
                "description": "Forecast for a city.",
                "parameters": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"]
                }
            }
        })
    );
    assert_eq!(NoArgsTool.description(), "");
    assert_eq!(
        NoArgsTool.to_openai_function()["function"]["parameters"],
        json!({"type": "object", "additionalProperties": false, "properties": {}, "required": []})
    );
}

#[test]
fn defaults_are_applied_when_arguments_are_left_out() {
    #[tool]
    fn greet(
        name: &str,
        #[arg(default = "Hello")] greeting: String,
        #[arg(default = 1)] times: u8,
    ) -> String {
        format!("{greeting} {name}").repeat(times as usize)
    }
    assert_eq!(
        GreetTool.call_blocking(json!({"name": "Ada"})).unwrap(),
        "Hello Ada"
    );
    assert_eq!(
        GreetTool
            .call_blocking(json!({"name": "Ada", "greeting": "Hi", "times": 2}))
            .unwrap(),
        "Hi AdaHi Ada"
    );
}

/// An opaque value with no schema of its own.
#[derive(serde::Deserialize)]
struct Code(String);

/// Book a flight between two airports.
#[tool]
fn book(
    /// The departure airport.
    #[arg(schema = serde_json::json!({"type": "string", "pattern": "^[A-Z]{3}$"}))]
    from: Code,
    to: String,
    /// Anything else the airline takes (seat, meal, ..).
    #[arg(rest)]
    extra: serde_json::Map<String, serde_json::Value>,
) -> String {
    format!(
        "{} -> {to} with {}",
        from.0,
        serde_json::Value::Object(extra)
    )
}

#[tokio::test]
async fn an_argument_schema_written_by_hand_is_shown_and_enforced_and_rest_takes_the_others() {
    let schema = BookTool.args_schema();
    assert_eq!(
        schema["properties"]["from"],
        json!({"type": "string", "pattern": "^[A-Z]{3}$", "description": "The departure airport."})
    );
    assert!(schema["properties"].get("extra").is_none());
    assert_eq!(schema["required"], json!(["from", "to"]));
    assert_eq!(schema["additionalProperties"], true);
    let out = BookTool
        .call(json!({"from": "OSL", "to": "BER", "seat": "12A"}))
        .await
        .unwrap();
    assert_eq!(out, json!("OSL -> BER with {\"seat\":\"12A\"}"));
    let err = BookTool
        .call(json!({"from": "oslo", "to": "BER"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid arguments for tool `book`: argument `from`"),
        "{err}"
    );
}
