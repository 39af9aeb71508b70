//! The two-step format (DSPy 3.4.1's `TwoStepAdapter`, MIT licence; see the parent module): a
//! plain task description and `name: value` lines for the main model, and the instructions of
//! the extraction step that reads its reply.

use serde_json::{Map, Value};

use crate::python::{py_str, strip};
use crate::schema::python_repr;
use crate::signature::{DynSignature, Field, FieldKind};

use super::field_list;

/// The main model's system message: what it is given, what its answer must contain, and the
/// signature's instructions.
pub(crate) fn two_step_system_message(signature: &DynSignature) -> String {
    let mut parts = vec![
        "You are a helpful assistant that can solve tasks based on user input.".to_owned(),
        format!(
            "As input, you will be provided with:\n{}",
            field_list(signature.inputs())
        ),
        format!(
            "Your outputs must contain:\n{}",
            field_list(signature.outputs())
        ),
        "You should lay out your outputs in detail so that your answer can be understood by \
         another agent"
            .to_owned(),
    ];
    let instructions = signature.instructions();
    if !instructions.is_empty() {
        parts.push(format!("Specific instructions: {instructions}"));
    }
    parts.join("\n")
}

/// A user message: the prefix, then `name: value` for each input present, a blank line apart.
pub(crate) fn two_step_user_message(
    signature: &DynSignature,
    inputs: &Map<String, Value>,
    prefix: &str,
    _main_request: bool,
) -> String {
    pairs(signature.inputs(), inputs, prefix)
}

/// An assistant message: `name: value` for each output present, a blank line apart.
pub(crate) fn two_step_assistant_message(
    signature: &DynSignature,
    outputs: &Map<String, Value>,
    _missing: Option<&str>,
) -> String {
    pairs(signature.outputs(), outputs, "")
}

fn pairs(fields: &[Field], values: &Map<String, Value>, prefix: &str) -> String {
    let mut parts = vec![prefix.to_owned()];
    for field in fields {
        if let Some(value) = values.get(field.name()) {
            parts.push(format!("{}: {}", field.name(), python_str(field, value)));
        }
    }
    parts.push(String::new());
    strip(&parts.join("\n\n")).to_owned()
}

/// A value as Python's `str()` prints it (DSPy formats the two-step inputs with an f-string):
/// text as it is, containers as Python's `repr`; an image or audio as its content parts.
fn python_str(field: &Field, value: &Value) -> String {
    match value {
        _ if field.kind() == FieldKind::Media => crate::adapter::media::render(value),
        Value::Array(_) | Value::Object(_) => python_repr(value),
        scalar => py_str(scalar),
    }
}

/// The extraction step's instructions for these outputs (DSPy's text, its line continuation's
/// indentation included).
pub(crate) fn two_step_extraction_instructions(outputs: &[Field]) -> String {
    let names: Vec<String> = outputs.iter().map(|f| format!("`{}`", f.name())).collect();
    format!(
        "The input is a text that should contain all the necessary information to produce the \
         fields {}.             Your job is to extract the fields from the text verbatim. Extract \
         precisely the appropriate value (content) for each field.",
        names.join(", ")
    )
}

/// The two-step format for [`format_messages`](crate::adapter::format_messages).
pub(crate) const TWO_STEP_FORMAT: crate::adapter::Format = crate::adapter::Format {
    name: "two_step",
    system: two_step_system_message,
    user: two_step_user_message,
    assistant: two_step_assistant_message,
};
