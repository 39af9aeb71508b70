//! The field types with a meaning of their own to adapters and modules, and the map of field
//! values every layer passes around. They live with signatures (a signature's field of one of
//! these types gets its [`FieldKind`](super::FieldKind)), below the adapters that render them;
//! [`adapter`](crate::adapter) re-exports them where users have always found them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::tool::ToolDefinition;

/// Field values by name: inputs, outputs, or a demo holding both.
pub type Fields = Map<String, Value>;

/// Conversation history: earlier turns, each a map of the signature's field values. Give a signature
/// an input of this type and every adapter renders the turns as user/assistant messages before the
/// current request, as DSPy does.
///
/// ```
/// use signet::adapter::History;
/// let field = signet::Field::of::<History>("history");
/// assert_eq!(field.type_name(), "History");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct History {
    /// The earlier turns, oldest first.
    pub messages: Vec<Fields>,
}

/// The tools offered to the model through a signature input (DSPy's `list[dspy.Tool]`): OpenAI
/// function descriptors. With native function calling they go in `tools=`; otherwise the prompt
/// lists them.
///
/// ```
/// use signet::adapter::Tools;
/// use signet::{Field, tool};
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 { a + b }
///
/// let tools = Tools::from_tools([&AddTool as &dyn signet::Tool]);
/// assert_eq!(tools.0[0]["function"]["name"], "add");
/// assert_eq!(Field::of::<Tools>("tools").type_name(), "list[Tool]");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Tools(pub Vec<Value>);

impl Tools {
    /// The descriptors of `tools`.
    pub fn from_tools<'a>(tools: impl IntoIterator<Item = &'a dyn crate::tool::Tool>) -> Tools {
        Tools(tools.into_iter().map(|t| t.to_openai_function()).collect())
    }
}

impl JsonSchema for Tools {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Tools".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "array", "items": {"type": "object", "title": "Tool"}})
    }
}

/// The tools of a tools input's value (a list of descriptors, or one), or what is wrong with it.
pub(crate) fn descriptors(value: Option<&Value>) -> Result<Vec<ToolDefinition>, String> {
    match value {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| ToolDefinition::from_descriptor(item).map_err(|e| e.to_string()))
            .collect(),
        Some(one @ Value::Object(_)) => Ok(vec![
            ToolDefinition::from_descriptor(one).map_err(|e| e.to_string())?,
        ]),
        other => Err(format!(
            "expected tool descriptors ({{\"type\": \"function\", ..}}), got {}",
            other.map_or_else(|| "nothing".to_owned(), ToString::to_string)
        )),
    }
}

/// One branch of a schema that ties a tool's name to its arguments, for schema-constrained
/// decoding: an object whose `name_key` is exactly `name` and whose `args_key` follows `args`,
/// after the `leading` properties (ReAct's `next_thought`), all required and nothing else. The
/// one builder of per-tool call schemas: native calls through a constraint, the JSON adapter's
/// tool-call outputs and ReAct's constrained step.
pub(crate) fn call_branch(
    leading: &[(&str, Value)],
    (name_key, name): (&str, &str),
    (args_key, args): (&str, Value),
) -> Value {
    let mut properties = Map::new();
    for (key, schema) in leading {
        properties.insert((*key).to_owned(), schema.clone());
    }
    properties.insert(
        name_key.to_owned(),
        serde_json::json!({"type": "string", "enum": [name]}),
    );
    properties.insert(args_key.to_owned(), args);
    let required: Vec<&str> = properties.keys().map(String::as_str).collect();
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The value of a tool-calls output field: the calls the model made, with their ids.
///
/// A reply without tool calls leaves the field `null` in the outputs (as DSPy does); a typed
/// output reads `null` as no calls.
///
/// ```
/// use signet::adapter::ToolCalls;
/// let field = signet::Field::of::<ToolCalls>("tool_calls");
/// assert_eq!(field.type_name(), "ToolCalls");
/// let none: ToolCalls = serde_json::from_value(serde_json::Value::Null).unwrap();
/// assert!(none.tool_calls.is_empty());
/// // As DSPy reads them: wrapped, a bare list, or one call.
/// for written in [
///     serde_json::json!({"tool_calls": [{"name": "add", "args": {"a": 1}}]}),
///     serde_json::json!([{"name": "add", "args": {"a": 1}}]),
///     serde_json::json!({"name": "add", "args": {"a": 1}}),
/// ] {
///     let calls: ToolCalls = serde_json::from_value(written).unwrap();
///     assert_eq!(calls.tool_calls[0].name, "add");
/// }
/// assert!(serde_json::from_value::<ToolCalls>(serde_json::json!("add")).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct ToolCalls {
    /// The calls, in the order the model made them.
    pub tool_calls: Vec<ToolCallRecord>,
}

impl<'de> Deserialize<'de> for ToolCalls {
    /// Reads what DSPy's `ToolCalls` validator reads: `{"tool_calls": [..]}`, a bare list of
    /// calls, or one call (`{"name", "args"}`); `null` is no calls.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let calls =
            |value: Value| Vec::<ToolCallRecord>::deserialize(value).map_err(D::Error::custom);
        let tool_calls = match Option::<Value>::deserialize(deserializer)? {
            None => Vec::new(),
            Some(Value::Array(items)) => calls(Value::Array(items))?,
            Some(Value::Object(mut map)) => match map.remove("tool_calls") {
                Some(Value::Null) => Vec::new(),
                Some(list) => calls(list)?,
                None if map.contains_key("name") && map.contains_key("args") => {
                    vec![
                        ToolCallRecord::deserialize(Value::Object(map))
                            .map_err(D::Error::custom)?,
                    ]
                }
                None => {
                    return Err(D::Error::custom(format!(
                        "expected tool calls ({{\"tool_calls\": [..]}}, a list of calls or one \
                         {{\"name\", \"args\"}} call), got {}",
                        Value::Object(map)
                    )));
                }
            },
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "expected tool calls ({{\"tool_calls\": [..]}}, a list of calls or one \
                     {{\"name\", \"args\"}} call), got {other}"
                )));
            }
        };
        Ok(ToolCalls { tool_calls })
    }
}

/// One tool call in a [`ToolCalls`] value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolCallRecord {
    /// The provider's id for the call, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The tool's name.
    pub name: String,
    /// The arguments (a JSON object, or the raw text when the model wrote invalid JSON).
    pub args: Value,
}
