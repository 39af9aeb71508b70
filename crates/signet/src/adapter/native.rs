//! Native function calling: tools sent as `tools=`, tool calls read from the response.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Adapter, Fields};
use crate::Error;
use crate::lm::{Capabilities, Completion};
use crate::signature::{DynSignature, FieldKind};

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
    pub fn from_tools<'a>(tools: impl IntoIterator<Item = &'a dyn crate::Tool>) -> Tools {
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

/// The tool descriptors of a tools input's value: a list of them, or one.
pub(crate) fn descriptors(value: Option<&Value>) -> Option<Vec<Value>> {
    match value? {
        Value::Array(items) => Some(items.clone()),
        one @ Value::Object(_) => Some(vec![one.clone()]),
        _ => None,
    }
}

/// The name of an OpenAI function descriptor (`{"type": "function", "function": {"name", ..}}`,
/// or a bare function object).
pub(crate) fn descriptor_name(descriptor: &Value) -> Option<&str> {
    descriptor
        .pointer("/function/name")
        .or_else(|| descriptor.get("name"))
        .and_then(Value::as_str)
}

/// The argument schema of a function descriptor, `$ref`s inlined (an open object when it has none).
pub(crate) fn descriptor_parameters(descriptor: &Value) -> Value {
    descriptor
        .pointer("/function/parameters")
        .or_else(|| descriptor.get("parameters"))
        .map(crate::schema::inline_refs)
        .unwrap_or_else(|| serde_json::json!({"type": "object"}))
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
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, JsonSchema)]
pub struct ToolCalls {
    /// The calls, in the order the model made them.
    pub tool_calls: Vec<ToolCallRecord>,
}

impl<'de> Deserialize<'de> for ToolCalls {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Calls {
            tool_calls: Vec<ToolCallRecord>,
        }
        let calls = Option::<Calls>::deserialize(deserializer)?;
        Ok(ToolCalls {
            tool_calls: calls.map(|c| c.tool_calls).unwrap_or_default(),
        })
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

/// What native function calling changes for one call.
pub(crate) struct NativeTools {
    /// The signature without the tools input and the tool-calls output.
    pub processed: DynSignature,
    /// The OpenAI function descriptors to send.
    pub tools: Vec<Value>,
    /// The name of the tool-calls output field.
    pub output_field: String,
}

/// Native function calling applies when the adapter enables it, the signature has a `ToolCalls`
/// output and a `list[Tool]` input, and the LM supports function calling.
pub(crate) fn prepare(
    adapter: &dyn Adapter,
    signature: &DynSignature,
    inputs: &Fields,
    capabilities: Capabilities,
) -> Result<Option<NativeTools>, Error> {
    if !adapter.native_function_calling() || !capabilities.function_calling {
        return Ok(None);
    }
    let Some(output) = signature
        .outputs()
        .iter()
        .find(|f| f.kind() == FieldKind::ToolCalls)
    else {
        return Ok(None);
    };
    let Some(input) = signature
        .inputs()
        .iter()
        .find(|f| f.kind() == FieldKind::Tools)
    else {
        return Err(Error::InvalidSignature {
            message: format!(
                "output `{}` holds tool calls but no input field holds the tools (`Tools`, DSPy's \
                 list[Tool]): native function calling needs the tools as an input",
                output.name()
            ),
        });
    };
    let given = inputs.get(input.name());
    let Some(tools) = descriptors(given) else {
        return Err(Error::InvalidSignature {
            message: format!(
                "input `{}` must hold tool descriptors ({{\"type\": \"function\", ..}}), got {}",
                input.name(),
                given.map_or_else(|| "nothing".to_owned(), ToString::to_string)
            ),
        });
    };
    let processed = signature
        .without_field(output.name())
        .without_field(input.name());
    Ok(Some(NativeTools {
        processed,
        tools,
        output_field: output.name().to_owned(),
    }))
}

/// The outputs of the original signature: the parsed text outputs (`null` for those absent because
/// the model called tools instead of answering) and the tool calls.
pub(crate) fn merge(
    signature: &DynSignature,
    parsed: Fields,
    native: &NativeTools,
    completion: &Completion,
) -> Fields {
    let mut parsed = parsed;
    signature
        .outputs()
        .iter()
        .map(|f| {
            let value = if f.name() == native.output_field {
                tool_calls_value(completion)
            } else {
                parsed.remove(f.name()).unwrap_or(Value::Null)
            };
            (f.name().to_owned(), value)
        })
        .collect()
}

fn tool_calls_value(completion: &Completion) -> Value {
    if completion.tool_calls.is_empty() {
        return Value::Null;
    }
    let calls = ToolCalls {
        tool_calls: completion
            .tool_calls
            .iter()
            .map(|call| ToolCallRecord {
                id: (!call.id.is_empty()).then(|| call.id.clone()),
                name: call.name.clone(),
                args: super::value::lenient_json(&call.arguments)
                    .unwrap_or_else(|| Value::String(call.arguments.clone())),
            })
            .collect(),
    };
    serde_json::to_value(calls).unwrap_or(Value::Null)
}
