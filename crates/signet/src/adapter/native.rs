//! Native function calling: tools sent as `tools=`, tool calls read from the response.

use serde_json::Value;

use super::Fields;
use crate::lm::{Completion, ToolDefinition};
use crate::signature::DynSignature;
use crate::signature::{ToolCallRecord, ToolCalls};

/// What native function calling changes for one call.
pub(crate) struct NativeTools {
    /// The signature without the tools input and the tool-calls output.
    pub processed: DynSignature,
    /// The tools to send.
    pub tools: Vec<ToolDefinition>,
    /// The name of the tool-calls output field.
    pub output_field: String,
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
