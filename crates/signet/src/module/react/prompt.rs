//! The step signature and DSPy's ReAct instructions.

use std::sync::Arc;

use serde_json::{Value, json};

use super::FINISH;
use crate::schema::python_repr;
use crate::signature::{DynSignature, Field, quoted_names};
use crate::tool::Tool;

/// How a tool is listed in ReAct's instructions, as DSPy's `str(tool)` writes it:
/// `name, whose description is <desc>..</desc>. It takes arguments {..}.`
///
/// ```
/// use signet::{Tool, tool};
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 { a + b }
/// assert_eq!(
///     signet::module::react::tool_listing(&AddTool),
///     "add, whose description is <desc>Add two integers.</desc>. It takes arguments {'a': {'type': 'integer'}, 'b': {'type': 'integer'}}."
/// );
/// ```
pub fn tool_listing(tool: &dyn Tool) -> String {
    let args = tool
        .args_schema()
        .get("properties")
        .cloned()
        .unwrap_or_else(|| json!({}));
    describe_tool(tool.name(), tool.description(), &args)
}

fn describe_tool(name: &str, description: &str, args: &Value) -> String {
    let desc = if description.is_empty() {
        ".".to_owned()
    } else {
        format!(", whose description is <desc>{description}</desc>.").replace('\n', "  ")
    };
    format!("{name}{desc} It takes arguments {}.", python_repr(args))
}

/// The step signature shown to the model (DSPy's exact instructions and fields) and the one replies
/// are read with (the tool name as free text, so an unknown name becomes an observation).
pub(super) fn step_signatures(
    signature: &DynSignature,
    tools: &[Arc<dyn Tool>],
) -> (DynSignature, DynSignature) {
    let inputs = quoted_names(signature.inputs());
    let outputs = quoted_names(signature.outputs());
    let mut lines = vec![
        format!("{}\n", signature.instructions()),
        format!(
            "You are an Agent. In each episode, you will be given the fields {inputs} as input. And you can see \
             your past trajectory so far."
        ),
        format!(
            "Your goal is to use one or more of the supplied tools to collect any necessary information for \
             producing {outputs}.\n"
        ),
        "To do this, you will interleave next_thought, next_tool_name, and next_tool_args in each turn, and also \
         when finishing the task."
            .to_owned(),
        "After each tool call, you receive a resulting observation, which gets appended to your trajectory.\n"
            .to_owned(),
        "When writing next_thought, you may reason about the current situation and plan for future steps."
            .to_owned(),
        "When selecting the next_tool_name and its next_tool_args, the tool must be one of:\n".to_owned(),
    ];
    let finish_desc = format!(
        "Marks the task as complete. That is, signals that all information for producing the outputs, i.e. \
         {outputs}, are now available to be extracted."
    );
    let mut described: Vec<String> = tools.iter().map(|t| tool_listing(t.as_ref())).collect();
    described.push(describe_tool(FINISH, &finish_desc, &json!({})));
    for (i, text) in described.iter().enumerate() {
        lines.push(format!("({}) {text}", i + 1));
    }
    lines.push(
        "When providing `next_tool_args`, the value inside the field must be in JSON format"
            .to_owned(),
    );

    let tool_names: Vec<Value> = tools
        .iter()
        .map(|t| json!(t.name()))
        .chain([json!(FINISH)])
        .collect();
    let mut step = DynSignature::new(signature.name()).with_instructions(lines.join("\n"));
    for field in signature.inputs() {
        step = step.with_input(field.clone());
    }
    step = step.with_input(Field::str("trajectory"));
    let args_field = Field::from_schema(
        "next_tool_args",
        json!({"type": "object", "additionalProperties": true}),
    );
    let shown = step
        .clone()
        .with_output(Field::str("next_thought"))
        .with_output(Field::from_schema(
            "next_tool_name",
            json!({"type": "string", "enum": tool_names}),
        ))
        .with_output(args_field.clone())
        .with_output_schema(constrained_step_schema(signature, tools));
    let read = step
        .with_output(Field::str("next_thought"))
        .with_output(Field::str("next_tool_name"))
        .with_output(args_field);
    (shown, read)
}

/// For schema-constrained decoding: one branch per tool, each tying the tool's name to its argument
/// schema (and `finish` to the outputs, all optional), so a constrained model can only produce a
/// well-formed call.
fn constrained_step_schema(signature: &DynSignature, tools: &[Arc<dyn Tool>]) -> Value {
    let thought = [("next_thought", json!({"type": "string"}))];
    let branch = |name: &str, args: Value| {
        crate::signature::call_branch(&thought, ("next_tool_name", name), ("next_tool_args", args))
    };
    let mut branches: Vec<Value> = tools
        .iter()
        .map(|t| branch(t.name(), t.args_schema().clone()))
        .collect();
    let outputs: serde_json::Map<String, Value> = signature
        .outputs()
        .iter()
        .map(|f| (f.name().to_owned(), crate::schema::inline_refs(f.schema())))
        .collect();
    branches.push(branch(
        FINISH,
        json!({"type": "object", "properties": outputs, "required": []}),
    ));
    json!({"anyOf": branches})
}
