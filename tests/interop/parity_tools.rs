//! The tool-schema fixture family (`tool_schemas`, recorded by `record.py`'s `ts*` cases): for each
//! Python function DSPy 3.4.1 made a `dspy.Tool` of, the `#[tool]` a Rust user writes for the same
//! function, compared byte for byte with what DSPy shows of it: the listing ReAct puts in its
//! instructions (`str(tool)`) and the descriptor native function calling sends.

use std::collections::HashMap;

use serde_json::{Value, json};
use signet::Tool;
use signet::schemars::JsonSchema;
use signet::serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(crate = "signet::serde")]
#[schemars(crate = "signet::schemars")]
#[allow(dead_code)]
struct TsPoint {
    x: i64,
    y: i64,
}

/// A route through some points.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "signet::serde")]
#[schemars(crate = "signet::schemars")]
#[allow(dead_code)]
struct TsRoute {
    name: String,
    stops: Vec<TsPoint>,
    note: Option<String>,
}

#[derive(Serialize, Deserialize, JsonSchema)]
#[serde(crate = "signet::serde", rename_all = "lowercase")]
#[schemars(crate = "signet::schemars")]
enum TsColor {
    Red,
    Blue,
}

/// Search the notes.
#[signet::tool]
fn ts_search(
    query: String,
    tags: Vec<String>,
    #[arg(default = 5)] limit: i64,
    #[arg(default = false)] exact: bool,
) -> Vec<String> {
    let _ = (query, tags, limit, exact);
    Vec::new()
}

/// Annotate a text.
#[signet::tool]
fn ts_annotate(
    text: String,
    note: Option<String>,
    count: Option<i64>,
    scores: Option<Vec<f64>>,
) -> String {
    let _ = (note, count, scores);
    text
}

/// Greet someone.
///
/// Twice if asked.
#[signet::tool]
fn ts_greet(
    name: String,
    #[arg(default = "Hello")] greeting: String,
    #[arg(default = 1)] times: i64,
    #[arg(default = 0.5)] ratio: f64,
    #[arg(default = vec!["a".to_owned(), "b".to_owned()])] tags: Vec<String>,
) -> String {
    let _ = (greeting, times, ratio, tags);
    name
}

/// Plan a trip.
#[signet::tool]
fn ts_plan(
    route: TsRoute,
    start: TsPoint,
    extra: Option<TsPoint>,
    #[arg(default = Vec::new())] points: Vec<TsPoint>,
) -> String {
    let _ = (route, start, extra, points);
    String::new()
}

/// Paint the wall.
#[signet::tool]
fn ts_paint(
    color: TsColor,
    // Python's `Literal["matte", "gloss"]` has no Rust type of its own: its schema, by hand.
    #[arg(default = "matte", schema = json!({"enum": ["matte", "gloss"], "type": "string"}))]
    finish: String,
    #[arg(default = TsColor::Blue)] shade: TsColor,
    maybe: Option<TsColor>,
) -> String {
    let _ = (color, finish, shade, maybe);
    String::new()
}

/// Mixed shapes.
#[signet::tool]
fn ts_mixed(
    weights: HashMap<String, f64>,
    pair: (i64, String),
    nested: Vec<Vec<i64>>,
    anything: Option<Value>,
) -> String {
    let _ = (weights, pair, nested, anything);
    String::new()
}

#[signet::tool]
fn ts_no_doc(count: i64) -> i64 {
    count
}

/// Search the notes.
#[signet::tool(name = "ts_search_described")]
fn ts_search_described(
    #[arg(desc = "What to look for.")] query: String,
    tags: Vec<String>,
    #[arg(default = 5, desc = "How many results.")] limit: i64,
    #[arg(default = false)] exact: bool,
) -> Vec<String> {
    let _ = (query, tags, limit, exact);
    Vec::new()
}

/// The Rust twin of each recorded Python function, by the name DSPy gave the tool.
fn rust_tool(name: &str) -> Option<Box<dyn Tool>> {
    Some(match name {
        "ts_search" => Box::new(TsSearchTool),
        "ts_annotate" => Box::new(TsAnnotateTool),
        "ts_greet" => Box::new(TsGreetTool),
        "ts_plan" => Box::new(TsPlanTool),
        "ts_paint" => Box::new(TsPaintTool),
        "ts_mixed" => Box::new(TsMixedTool),
        "ts_no_doc" => Box::new(TsNoDocTool),
        "ts_search_described" => Box::new(TsSearchDescribedTool),
        _ => return None,
    })
}

/// What the check of a tool-schema fixture found.
pub(crate) enum Checked {
    /// Every recorded tool has a twin, and each matches.
    Same,
    /// A twin differs: every difference.
    Differs(String),
    /// Recorded tools without a twin here (a Rust function has to be written for each), the
    /// others matching.
    NoTwin(Vec<String>),
}

/// Checks each recorded tool against its `#[tool]` twin: the listing byte for byte, and the
/// native descriptor but for `additionalProperties: false` (Signet's tools take no other
/// arguments, a documented difference).
pub(crate) fn check(fixture: &Value) -> Checked {
    let mut problems = Vec::new();
    let mut missing = Vec::new();
    for recorded in fixture["tool_schemas"].as_array().into_iter().flatten() {
        let name = recorded["name"].as_str().unwrap_or_default();
        let Some(tool) = rust_tool(name) else {
            missing.push(name.to_owned());
            continue;
        };
        let listing = signet::module::react::tool_listing(tool.as_ref());
        if Some(listing.as_str()) != recorded["str"].as_str() {
            problems.push(format!(
                "{name}: listing\n  signet {listing}\n  dspy   {}",
                recorded["str"].as_str().unwrap_or_default()
            ));
        }
        let mut descriptor = tool.to_openai_function();
        if let Some(parameters) = descriptor["function"]["parameters"].as_object_mut() {
            parameters.shift_remove("additionalProperties");
        }
        let mut want = recorded["litellm_function_call"].clone();
        if want["function"]["description"].is_null() {
            want["function"]["description"] = json!("");
        }
        // As text: key order is what the provider receives (`Value`'s equality ignores it).
        let (got, wanted) = (descriptor.to_string(), want.to_string());
        if got != wanted {
            problems.push(format!(
                "{name}: descriptor\n  signet {descriptor}\n  dspy   {want}"
            ));
        }
    }
    match (problems.is_empty(), missing.is_empty()) {
        (false, _) => Checked::Differs(problems.join("\n")),
        (true, false) => Checked::NoTwin(missing),
        (true, true) => Checked::Same,
    }
}
