//! The prompt templates, reproduced from Python DSPy 3.4.1 so that prompts are byte-identical and
//! programs tuned for DSPy carry over.
//!
//! The wording and layout of these templates come from DSPy (<https://github.com/stanfordnlp/dspy>,
//! MIT licence, Copyright (c) 2023 Stanford Future Data Systems). All prompt text Signet sends lives in
//! this module; the few prompts that are Signet's own (structured calls) are marked as such at the
//! end.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::python::{json_dumps, py_str};
use crate::shared::SharedText;
use crate::signature::{DynSignature, Field, FieldKind};

mod copro;
mod program;
#[cfg(feature = "sandbox")]
mod program_of_thought;
mod two_step;
pub(crate) use copro::*;
pub(crate) use program::*;
#[cfg(feature = "sandbox")]
pub(crate) use program_of_thought::*;
pub(crate) use two_step::*;

/// The marker that ends a Chat-format reply.
pub(crate) const COMPLETED_MARKER: &str = "[[ ## completed ## ]]";

/// The prefix of a demo whose inputs or outputs are not all given.
pub(crate) const INCOMPLETE_DEMO_PREFIX: &str =
    "This is an example of the task, though some input or output fields are not supplied.";

/// The placeholder shown for an output an incomplete demo does not give.
pub(crate) const MISSING_FIELD: &str = "Not supplied for this particular example. ";

const STRUCTURE_INTRO: &str = "All interactions will be structured in the following way, with the appropriate values filled in.";

/// `[[ ## name ## ]]`
pub(crate) fn field_header(name: &str) -> String {
    format!("[[ ## {name} ## ]]")
}

/// A system message: the field descriptions, the format's `structure`, then the objective (DSPy's
/// `format_system_message`, shared by every format).
pub(crate) fn system_message(signature: &DynSignature, structure: &str) -> String {
    format!(
        "{}\n{}\n{}",
        field_descriptions(signature),
        structure,
        task_description(signature)
    )
}

/// "Your input fields are: .. Your output fields are: .."
pub(crate) fn field_descriptions(signature: &DynSignature) -> String {
    format!(
        "Your input fields are:\n{}\nYour output fields are:\n{}",
        field_list(signature.inputs()),
        field_list(signature.outputs())
    )
}

/// `dspy.ToolCalls.description()`.
const TOOL_CALLS_DESCRIPTION: &str = "Tool calls must be a JSON object with `tool_calls`, a list of \
    calls. Each call must include `name` and `args`. Example: {\"tool_calls\": [{\"name\": \
    \"search\", \"args\": {\"query\": \"cats\"}}]}";

fn field_list(fields: &[Field]) -> String {
    let lines: Vec<String> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let constraints = f
                .constraints_text()
                .map(|text| format!("\nConstraints: {text}"))
                .unwrap_or_default();
            // DSPy appends the description of a DSPy type (`ToolCalls`) to the field's own, on a
            // line of its own: the field's line then keeps the space after its colon.
            let type_description = match f.kind() {
                FieldKind::ToolCalls => format!(
                    "\n    Type description of {}: {TOOL_CALLS_DESCRIPTION}",
                    f.type_name()
                ),
                _ => String::new(),
            };
            format!(
                "{}. `{}` ({}): {}{type_description}{constraints}",
                i + 1,
                f.name(),
                f.type_name(),
                f.desc().unwrap_or("")
            )
        })
        .collect();
    lines.join("\n").trim().to_owned()
}

/// "In adhering to this structure, your objective is: " and the instructions, each line indented by
/// eight spaces on a line of its own.
pub(crate) fn task_description(signature: &DynSignature) -> String {
    let instructions = dedent(&signature.instructions());
    let mut objective = String::new();
    for line in crate::python::splitlines(&instructions) {
        objective.push_str("\n        ");
        objective.push_str(line);
    }
    format!("In adhering to this structure, your objective is: {objective}")
}

/// Python's `textwrap.dedent`: removes the whitespace prefix common to all non-blank lines.
fn dedent(text: &str) -> String {
    let prefix = text
        .split('\n')
        .filter(|line| !line.trim().is_empty())
        .map(|line| &line[..line.len() - line.trim_start_matches([' ', '\t']).len()])
        .reduce(|a, b| {
            let common = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
            &a[..common]
        })
        .unwrap_or("");
    text.split('\n')
        .map(|line| {
            if line.trim().is_empty() {
                line.trim_start_matches([' ', '\t'])
            } else {
                line.strip_prefix(prefix).unwrap_or(line)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The placeholder for a field in the structure section: `{name}` plus, for outputs of types other
/// than `str`, a note on the expected format.
pub(crate) fn field_placeholder(field: &Field, is_input: bool) -> String {
    let note = if is_input { None } else { type_note(field) };
    match note {
        Some(note) => format!(
            "{{{}}}        # note: the value you produce {note}",
            field.name()
        ),
        None => format!("{{{}}}", field.name()),
    }
}

fn type_note(field: &Field) -> Option<String> {
    let schema = field.schema();
    match field.type_name() {
        "str" => None,
        "bool" => Some("must be True or False".to_owned()),
        "int" | "float" => Some(format!("must be a single {} value", field.type_name())),
        name => {
            let values = schema.get("enum").and_then(Value::as_array);
            match values {
                Some(values) if name.starts_with("Literal[") => {
                    let values: Vec<String> = values.iter().map(py_str).collect();
                    Some(format!(
                        "must exactly match (no extra characters) one of: {}",
                        values.join("; ")
                    ))
                }
                Some(values) => {
                    let values: Vec<String> = values.iter().map(py_str).collect();
                    Some(format!("must be one of: {}", values.join("; ")))
                }
                None => Some(format!(
                    "must adhere to the JSON schema: {}",
                    json_dumps(schema, None)
                )),
            }
        }
    }
}

/// A field's value as it appears in a prompt. A `str` field given a list is rendered as DSPy's
/// numbered list of «quoted» items; containers as JSON; scalars as Python prints them.
pub(crate) fn field_value<'a>(field: &Field, value: &'a Value) -> Cow<'a, str> {
    if field.kind() == FieldKind::Media {
        return super::media::render(value).into();
    }
    if field.kind() == FieldKind::Tools {
        // DSPy serializes a `dspy.Tool` as its listing (`str(tool)`): a list of tools is a JSON
        // list of listings, one tool its listing as it is.
        let listed = match value {
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|item| tool_listing(item).map_or_else(|| item.clone(), Value::String))
                    .collect(),
            ),
            other => tool_listing(other).map_or_else(|| other.clone(), Value::String),
        };
        return py_str(&listed).into();
    }
    match value {
        // A string is itself, in a text field or not: no copy.
        Value::String(text) => Cow::Borrowed(text),
        value if field.is_text() => text_value(value).into(),
        value => py_str(value).into(),
    }
}

/// DSPy's `str(tool)` for a tool given as an OpenAI function descriptor (`{"type": "function",
/// "function": {name, description, parameters}}`, or the inner object):
/// `NAME, whose description is <desc>DESC</desc>. It takes arguments {ARGS}.`
fn tool_listing(descriptor: &Value) -> Option<String> {
    let function = descriptor.get("function").unwrap_or(descriptor);
    let name = function.get("name")?.as_str()?;
    let description = function
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let args = function
        .get("parameters")
        .and_then(|p| p.get("properties"))
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let desc = if description.is_empty() {
        ".".to_owned()
    } else {
        format!(", whose description is <desc>{description}</desc>.").replace('\n', "  ")
    };
    Some(format!(
        "{name}{desc} It takes arguments {}.",
        crate::schema::python_repr(&args)
    ))
}

/// A value of a `str` field as it appears in a prompt: a list as DSPy's numbered list of «quoted»
/// items, anything else as Python prints it.
pub(crate) fn text_value(value: &Value) -> String {
    match value {
        Value::Array(items) => text_list(items),
        other => py_str(other),
    }
}

/// `[[ ## name ## ]]\nvalue` blocks for text fields, in order, separated by blank lines, the
/// whole trimmed (written into one buffer: ReAct renders its trajectory this way on every call).
pub(crate) fn text_blocks(values: &Map<String, Value>) -> String {
    let mut out = String::new();
    for (index, (name, value)) in values.iter().enumerate() {
        push_text_block(&mut out, index == 0, name, BlockValue::Json(value));
    }
    trimmed_in_place(out)
}

/// What a block [`push_text_block`] writes holds: text, or a value written as a prompt shows it.
pub(crate) trait BlockText {
    /// Writes the value at the end of `out`.
    fn push_to(self, out: &mut String);
}

/// The value of a text field's block.
#[derive(Clone, Copy)]
pub(crate) enum BlockValue<'a> {
    /// Text, as it is.
    Text(&'a str),
    /// A field's value: a string as it is, anything else as [`text_value`] writes it.
    Json(&'a Value),
}

impl BlockText for BlockValue<'_> {
    fn push_to(self, out: &mut String) {
        match self {
            BlockValue::Text(text) => out.push_str(text),
            BlockValue::Json(Value::String(text)) => out.push_str(text),
            BlockValue::Json(other) => out.push_str(&text_value(other)),
        }
    }
}

/// An input field's value, as [`field_value`] writes it.
struct FieldValue<'a>(&'a Field, &'a Value);

impl BlockText for FieldValue<'_> {
    fn push_to(self, out: &mut String) {
        out.push_str(&field_value(self.0, self.1));
    }
}

/// Writes a `[[ ## name ## ]]` block at the end of `out`, after a blank line unless it is the
/// `first`.
pub(crate) fn push_text_block(
    out: &mut String,
    first: bool,
    name: impl std::fmt::Display,
    value: impl BlockText,
) {
    use std::fmt::Write;
    if !first {
        out.push_str("\n\n");
    }
    // Writing into a String cannot fail.
    let _ = writeln!(out, "[[ ## {name} ## ]]");
    value.push_to(out);
}

/// `text` without its leading and trailing whitespace, in its own buffer.
pub(crate) fn trimmed_in_place(mut text: String) -> String {
    text.truncate(text.trim_end().len());
    let start = text.len() - text.trim_start().len();
    text.drain(..start);
    text
}

fn text_list(items: &[Value]) -> String {
    match items {
        [] => "N/A".to_owned(),
        [one] => blob(&py_str(one)),
        many => many
            .iter()
            .enumerate()
            .map(|(i, item)| format!("[{}] {}", i + 1, blob(&py_str(item))))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn blob(text: &str) -> String {
    if !text.contains('\n') && !text.contains('«') && !text.contains('»') {
        return format!("«{text}»");
    }
    format!("«««\n    {}\n»»»", text.replace('\n', "\n    "))
}

/// `[[ ## name ## ]]\nvalue` blocks separated by blank lines (fields missing from `values` are
/// skipped).
pub(crate) fn field_blocks<'a>(fields: impl IntoIterator<Item = (&'a Field, String)>) -> String {
    let blocks: Vec<String> = fields
        .into_iter()
        .map(|(field, value)| format!("{}\n{}", field_header(field.name()), value))
        .collect();
    blocks.join("\n\n").trim().to_owned()
}

/// The user message: an optional prefix, the input fields present in `inputs`, the output
/// requirements (for the main request) and an optional suffix, separated by blank lines.
pub(crate) fn user_message(
    signature: &DynSignature,
    inputs: &Map<String, Value>,
    prefix: &str,
    requirements: Option<&str>,
) -> String {
    // The prefix, each field's block and the requirements joined by blank lines, the whole
    // trimmed: written into one buffer.
    let text: usize = inputs
        .values()
        .map(|v| v.as_str().map_or(64, str::len))
        .sum();
    let mut out = String::with_capacity(
        prefix.len() + text + requirements.map_or(0, str::len) + 32 * (inputs.len() + 1),
    );
    out.push_str(prefix);
    for field in signature.inputs() {
        if let Some(value) = inputs.get(field.name()) {
            push_text_block(&mut out, false, field.name(), FieldValue(field, value));
        }
    }
    if let Some(requirements) = requirements {
        out.push_str("\n\n");
        out.push_str(requirements);
    }
    trimmed_in_place(out)
}

fn type_info(field: &Field) -> String {
    if field.kind() == FieldKind::ToolCalls {
        // DSPy's Chat and JSON reminders spell out the shape of `ToolCalls`.
        return r#" (must be a JSON object like {"tool_calls": [{"name": "...", "args": {...}}]})"#
            .to_owned();
    }
    if field.is_text() {
        String::new()
    } else {
        format!(
            " (must be formatted as a valid Python {})",
            field.type_name()
        )
    }
}

// ---- Chat format -------------------------------------------------------------------------------

/// The Chat format's system message.
pub(crate) fn chat_system_message(signature: &DynSignature) -> String {
    let structure = [
        STRUCTURE_INTRO.to_owned(),
        field_blocks(
            signature
                .inputs()
                .iter()
                .map(|f| (f, field_placeholder(f, true))),
        ),
        field_blocks(
            signature
                .outputs()
                .iter()
                .map(|f| (f, field_placeholder(f, false))),
        ),
        format!("{COMPLETED_MARKER}\n"),
    ]
    .join("\n\n");
    system_message(signature, structure.trim())
}

/// The Chat format's messages.
pub(crate) const CHAT_FORMAT: super::Format = super::Format {
    name: "chat",
    system: chat_system_message,
    user: |signature, values, prefix, main| {
        user_message(
            signature,
            values,
            prefix,
            // The same for every call of a signature: rendered once.
            main.then(|| signature.rendered("chat_requirements", chat_output_requirements))
                .as_deref()
                .map(SharedText::as_str),
        )
    },
    assistant: chat_assistant_message,
};

/// What the Chat format asks for at the end of the main user message.
pub(crate) fn chat_output_requirements(signature: &DynSignature) -> String {
    let fields: Vec<String> = signature
        .outputs()
        .iter()
        .map(|f| format!("`{}`{}", field_header(f.name()), type_info(f)))
        .collect();
    format!(
        "Respond with the corresponding output fields, starting with the field {}, and then ending \
         with the marker for `{COMPLETED_MARKER}`.",
        fields.join(", then ")
    )
}

/// An assistant message in the Chat format (for demos and history).
pub(crate) fn chat_assistant_message(
    signature: &DynSignature,
    outputs: &Map<String, Value>,
    missing: Option<&str>,
) -> String {
    let blocks =
        field_blocks(
            signature
                .outputs()
                .iter()
                .map(|f| match (outputs.get(f.name()), missing) {
                    (Some(v), _) => (f, field_value(f, v).into_owned()),
                    (None, Some(m)) => (f, m.to_owned()),
                    (None, None) => (f, "None".to_owned()),
                }),
        );
    format!("{blocks}\n\n{COMPLETED_MARKER}\n")
}

// ---- JSON format -------------------------------------------------------------------------------

/// The JSON format's system message.
pub(crate) fn json_system_message(signature: &DynSignature) -> String {
    let outputs = json_dumps(
        &Value::Object(
            signature
                .outputs()
                .iter()
                .map(|f| {
                    (
                        f.name().to_owned(),
                        Value::String(field_placeholder(f, false)),
                    )
                })
                .collect(),
        ),
        Some(2),
    );
    let outputs = format!("Outputs will be a JSON object with the following fields.\n\n{outputs}");
    json_system_with_outputs(signature, &outputs)
}

/// The system message of the schema-constrained JSON format: as [`json_system_message`], but the
/// outputs are named rather than shown as a template with `{placeholder}` values, which small
/// models copy into their replies (the decoding schema already gives the reply its shape).
pub(crate) fn json_constrained_system_message(signature: &DynSignature) -> String {
    let names: Vec<String> = signature
        .outputs()
        .iter()
        .map(|f| format!("`{}`", f.name()))
        .collect();
    let outputs = format!(
        "Outputs will be a JSON object with the keys {}, in this order.",
        names.join(", ")
    );
    json_system_with_outputs(signature, &outputs)
}

fn json_system_with_outputs(signature: &DynSignature, outputs: &str) -> String {
    let structure = [
        STRUCTURE_INTRO.to_owned(),
        "Inputs will have the following structure:".to_owned(),
        field_blocks(
            signature
                .inputs()
                .iter()
                .map(|f| (f, field_placeholder(f, true))),
        ),
        outputs.to_owned(),
    ]
    .join("\n\n");
    system_message(signature, structure.trim())
}

/// The JSON format's messages.
pub(crate) const JSON_FORMAT: super::Format = super::Format {
    name: "json",
    system: json_system_message,
    user: |signature, values, prefix, main| {
        user_message(
            signature,
            values,
            prefix,
            main.then(|| signature.rendered("json_requirements", json_output_requirements))
                .as_deref()
                .map(SharedText::as_str),
        )
    },
    assistant: json_assistant_message,
};

/// The schema-constrained JSON format's messages (see [`json_constrained_system_message`]).
pub(crate) const JSON_CONSTRAINED_FORMAT: super::Format = super::Format {
    name: "json_constrained",
    system: json_constrained_system_message,
    ..JSON_FORMAT
};

/// What the JSON format asks for at the end of the main user message.
pub(crate) fn json_output_requirements(signature: &DynSignature) -> String {
    let fields: Vec<String> = signature
        .outputs()
        .iter()
        .map(|f| format!("`{}`{}", f.name(), type_info(f)))
        .collect();
    format!(
        "Respond with a JSON object in the following order of fields: {}.",
        fields.join(", then ")
    )
}

/// An assistant message in the JSON format (for demos and history).
pub(crate) fn json_assistant_message(
    signature: &DynSignature,
    outputs: &Map<String, Value>,
    missing: Option<&str>,
) -> String {
    let object: Map<String, Value> = signature
        .outputs()
        .iter()
        .map(|f| {
            let value = match (outputs.get(f.name()), missing) {
                (Some(v), _) => v.clone(),
                (None, Some(m)) => Value::String(m.to_owned()),
                (None, None) => Value::Null,
            };
            (f.name().to_owned(), value)
        })
        .collect();
    json_dumps(&Value::Object(object), Some(2))
}

// ---- GEPA's reflection (DSPy's `teleprompt/gepa/instruction_proposal.py`) -----------------------

/// The instructions of DSPy 3.4.1's `ProposeInstruction` signature, which GEPA's reflection LM
/// answers (through the JSON adapter) with a new instruction for one predictor.
pub(crate) const GEPA_PROPOSE_INSTRUCTIONS: &str = "I provided an assistant with instructions to perform a task for me. You are given those instructions, along with examples of different task inputs provided to the assistant, the assistant's response for each of them, and some feedback on how the assistant's response could be better.

Your task is to write a new instruction for the assistant.

Read the inputs carefully and identify the input format and infer detailed task description about the task I wish to solve with the assistant.

Read all the assistant responses and the corresponding feedback. Identify all niche and domain specific factual information about the task and include it in the instruction, as a lot of it may not be available to the assistant in the future. The assistant may have utilized a generalizable strategy to solve the task, if so, include that in the instruction as well.";

/// `ProposeInstruction`'s fields: name, type as DSPy shows it, description.
pub(crate) const GEPA_PROPOSE_FIELDS: [(&str, &str, &str); 3] = [
    (
        "current_instruction",
        "str",
        "The instructions I provided to the assistant.",
    ),
    (
        "examples_with_feedback",
        "list[dict[str, Any]]",
        "Task inputs provided to the assistant, the assistant's response for each, and feedback on how the response could be better.",
    ),
    (
        "new_instruction",
        "str",
        "The new instruction for the assistant.",
    ),
];

/// The feedback GEPA gives the reflection LM when the metric gives only a number (`score` as
/// Python prints a float).
pub(crate) fn gepa_default_feedback(score: f64) -> String {
    format!(
        "This trajectory got a score of {}.",
        crate::python::float_repr(score)
    )
}

// ---- MIPROv2's proposer (DSPy's `propose/dataset_summary_generator.py` and
// `propose/grounded_proposer.py`) --------------------------------------------------------------

/// A signature of MIPROv2's proposer: its name, instructions, and fields (name, description;
/// every field is a `str`), inputs first.
pub(crate) struct ProposerSignature {
    pub(crate) name: &'static str,
    pub(crate) instructions: &'static str,
    pub(crate) inputs: &'static [(&'static str, &'static str)],
    pub(crate) outputs: &'static [(&'static str, &'static str)],
}

impl ProposerSignature {
    /// The signature (every field a `str`; an empty description is DSPy's `${name}`, not shown).
    pub(crate) fn signature(&self) -> DynSignature {
        let mut signature = DynSignature::new(self.name).with_instructions(self.instructions);
        for (name, desc) in self.inputs {
            signature = signature.with_input(Field::str(*name).with_desc(*desc));
        }
        for (name, desc) in self.outputs {
            signature = signature.with_output(Field::str(*name).with_desc(*desc));
        }
        signature
    }
}

/// DSPy's `DatasetDescriptor`: observations on the first batch of training examples.
pub(crate) const MIPRO_DATASET_DESCRIPTOR: ProposerSignature = ProposerSignature {
    name: "DatasetDescriptor",
    instructions: "Given several examples from a dataset please write observations about trends that hold for most or all of the samples. Some areas you may consider in your observations: topics, content, syntax, conciseness, etc. It will be useful to make an educated guess as to the nature of the task this dataset will enable. Don't be afraid to be creative",
    inputs: &[("examples", "Sample data points from the dataset")],
    outputs: &[(
        "observations",
        "Somethings that holds true for most or all of the data you observed",
    )],
};

/// DSPy's `DatasetDescriptorWithPriorObservations`: more observations on a later batch (or
/// `COMPLETE`). The double space and the spelling are DSPy's.
pub(crate) const MIPRO_DATASET_DESCRIPTOR_WITH_PRIOR: ProposerSignature = ProposerSignature {
    name: "DatasetDescriptorWithPriorObservations",
    instructions: "Given several examples from a dataset please write observations about trends that hold for most or all of the samples. I will also provide you with a few observations I have already made.  Please add your own observations or if you feel the observations are comprehensive say 'COMPLETE' Some areas you may consider in your observations: topics, content, syntax, conciceness, etc. It will be useful to make an educated guess as to the nature of the task this dataset will enable. Don't be afraid to be creative",
    inputs: &[
        ("examples", "Sample data points from the dataset"),
        (
            "prior_observations",
            "Some prior observations I made about the data",
        ),
    ],
    outputs: &[(
        "observations",
        "Somethings that holds true for most or all of the data you observed or COMPLETE if you have nothing to add",
    )],
};

/// DSPy's `ObservationSummarizer`: the dataset summary the proposals are grounded in.
pub(crate) const MIPRO_OBSERVATION_SUMMARIZER: ProposerSignature = ProposerSignature {
    name: "ObservationSummarizer",
    instructions: "Given a series of observations I have made about my dataset, please summarize them into a brief 2-3 sentence summary which highlights only the most important details.",
    inputs: &[("observations", "Observations I have made about my dataset")],
    outputs: &[(
        "summary",
        "Two to Three sentence summary of only the most significant highlights of my observations",
    )],
};

const PROGRAM_CODE_DESC: &str =
    "Pseudocode for a language model program designed to solve a particular task.";
const PROGRAM_EXAMPLE_DESC: &str = "An example of the program in use.";
const PROGRAM_DESCRIPTION_DESC: &str =
    "Summary of the task the program is designed to solve, and how it goes about solving it.";

/// DSPy's `DescribeProgram`.
pub(crate) const MIPRO_DESCRIBE_PROGRAM: ProposerSignature = ProposerSignature {
    name: "DescribeProgram",
    instructions: "Below is some pseudo-code for a pipeline that solves tasks with calls to language models. Please describe what type of task this program appears to be designed to solve, and how it appears to work.",
    inputs: &[
        ("program_code", PROGRAM_CODE_DESC),
        ("program_example", PROGRAM_EXAMPLE_DESC),
    ],
    outputs: &[(
        "program_description",
        "Describe what task the program is designed to solve, and how it goes about solving this task.",
    )],
};

/// DSPy's `DescribeModule`.
pub(crate) const MIPRO_DESCRIBE_MODULE: ProposerSignature = ProposerSignature {
    name: "DescribeModule",
    instructions: "Below is some pseudo-code for a pipeline that solves tasks with calls to language models. Please describe the purpose of one of the specified module in this pipeline.",
    inputs: &[
        ("program_code", PROGRAM_CODE_DESC),
        ("program_example", PROGRAM_EXAMPLE_DESC),
        ("program_description", PROGRAM_DESCRIPTION_DESC),
        (
            "module",
            "The module in the program that we want to describe.",
        ),
    ],
    outputs: &[(
        "module_description",
        "Description of the module's role in the broader program.",
    )],
};

/// The instructions of DSPy's `GenerateSingleModuleInstruction`.
pub(crate) const MIPRO_GENERATE_INSTRUCTION: &str = "Use the information below to learn about a task that we are trying to solve using calls to an LM, then generate a new instruction that will be used to prompt a Language Model to better solve the task.";

/// Its input fields in DSPy's order, each present or not depending on the proposer's settings.
pub(crate) const MIPRO_GENERATE_INPUTS: [(&str, &str); 8] = [
    (
        "dataset_description",
        "A description of the dataset that we are using.",
    ),
    (
        "program_code",
        "Language model program designed to solve a particular task.",
    ),
    ("program_description", PROGRAM_DESCRIPTION_DESC),
    ("module", "The module to create an instruction for."),
    (
        "module_description",
        "Description of the module to create an instruction for.",
    ),
    ("task_demos", "Example inputs/outputs of our module."),
    ("basic_instruction", "Basic instruction."),
    (
        "tip",
        "A suggestion for how to go about generating the new instruction.",
    ),
];

/// Its output field.
pub(crate) const MIPRO_GENERATE_OUTPUT: (&str, &str) = (
    "proposed_instruction",
    "Propose an instruction that will be used to prompt a Language Model to perform this task.",
);

/// The proposer's tips, in DSPy's order (a proposal draws one at random; `none` adds no tip).
pub(crate) const MIPRO_TIPS: [(&str, &str); 6] = [
    ("none", ""),
    (
        "creative",
        "Don't be afraid to be creative when creating the new instruction!",
    ),
    ("simple", "Keep the instruction clear and concise."),
    (
        "description",
        "Make sure your instruction is very informative and descriptive.",
    ),
    (
        "high_stakes",
        "The instruction should include a high stakes scenario in which the LM must solve the task!",
    ),
    (
        "persona",
        "Include a persona that is relevant to the task in the instruction (ie. \"You are a ...\")",
    ),
];

/// What the proposer shows when a proposal has no bootstrapped demos to show.
pub(crate) const MIPRO_NO_TASK_DEMOS: &str = "No task demos provided.";

// ---- Signet's own prompts (structured calls) ----------------------------------------------------
// These are not DSPy's: DSPy has no equivalent of `signet::structured`.

/// Appended to the system message in ReAct's native-function-calling mode.
pub(crate) fn native_tools_note() -> String {
    "\n\nYou can call the available tools to collect the information you need, several at once when \
     they are independent. When you have everything, answer in the format above, or call `finish` \
     with the outputs as its arguments."
        .to_owned()
}

/// The description of `finish` in native mode (`outputs` like "`answer`, `score`").
pub(crate) fn native_finish_description(outputs: &str) -> String {
    format!(
        "Marks the task as complete. Pass the outputs ({outputs}) as arguments when you have them."
    )
}

/// The system message of ReAct's tool-selection call (`catalogue`: one `- name: summary` per line).
pub(crate) fn tool_selection_instructions(task: &str, catalogue: &str) -> String {
    format!(
        "You choose the tools an agent will need for a task. The task: {task}\n\nThe tools:\n{catalogue}\n\n\
         Pick every tool that could help with the request below, and none that cannot."
    )
}

/// Instructions of the `Summarize` truncation policy's summary call.
pub(crate) fn trajectory_summary_instructions() -> &'static str {
    "Summarize these steps of an agent's work: keep every fact, number and name the observations \
     established, and what was tried and failed, in as few words as possible."
}

/// The instructions of GEPA's tool-description proposal (`Gepa::with_tool_descriptions`); DSPy
/// 3.4.1's GEPA rewrites instructions only.
pub(crate) const GEPA_TOOL_PROPOSE_INSTRUCTIONS: &str = "I gave an assistant a tool to use while it works on tasks for me. You are given the tool's name, its arguments and its current description, along with examples of task inputs, the assistant's steps (its reasoning, the tool it chose and the arguments it gave) and feedback on how each run could have gone better.

Your task is to write a new description of the tool, the only text the assistant reads about it.

Read the steps and the feedback. Say what the tool does and returns, when to use it and when another tool or no tool is the better choice, and what each argument means and how to write its value; include the facts the feedback shows the assistant lacked. Do not rename the tool or its arguments.";

/// The fields of GEPA's tool-description proposal: name, type as shown, description.
pub(crate) const GEPA_TOOL_PROPOSE_FIELDS: [(&str, &str, &str); 5] = [
    ("tool_name", "str", "The tool's name."),
    (
        "tool_arguments",
        "str",
        "The JSON schema of the tool's arguments.",
    ),
    (
        "current_description",
        "str",
        "The tool's description the assistant was shown.",
    ),
    (
        "examples_with_feedback",
        "list[dict[str, Any]]",
        "Task inputs provided to the assistant, the assistant's step for each, and feedback on how the run could be better.",
    ),
    ("new_description", "str", "The new description of the tool."),
];

/// Asks for a JSON value matching `schema` (used by [`crate::structured`]).
pub(crate) fn structured_instruction(schema: &str) -> String {
    format!(
        "Respond with only a JSON object that matches this JSON schema, with no other text:\n{schema}"
    )
}

/// Asks for the value again after an invalid reply.
pub(crate) fn structured_reformat(error: &str) -> String {
    format!(
        "That reply was not valid: {error}. Respond again with only a JSON object that matches the \
         schema."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_blocks_are_the_trimmed_join_of_each_fields_block() {
        let joined = |values: &Map<String, Value>| {
            let blocks: Vec<String> = values
                .iter()
                .map(|(name, value)| format!("{}\n{}", field_header(name), text_value(value)))
                .collect();
            blocks.join("\n\n").trim().to_owned()
        };
        let cases = [
            serde_json::json!({}),
            serde_json::json!({"a": "x"}),
            serde_json::json!({"thought_0": "  leading and trailing \n\n", "tool_args_0": {"a": 1.0, "b": [1, "two"]}}),
            serde_json::json!({"observation_0": ["one"], "observation_1": [], "observation_2": ["a\nb", "«c»"]}),
            serde_json::json!({"n": null, "t": true, "f": 2.5, "i": -3, "s": "\n"}),
            serde_json::json!({"last": "   "}),
        ];
        for case in cases {
            let values = case.as_object().unwrap();
            assert_eq!(text_blocks(values), joined(values), "{case}");
        }
    }

    #[test]
    fn dedent_removes_the_common_prefix() {
        assert_eq!(dedent("    a\n      b\n\n    c"), "a\n  b\n\nc");
        assert_eq!(dedent("a\n  b"), "a\n  b");
    }

    #[test]
    fn text_lists_are_numbered_blobs() {
        let field = Field::str("context");
        let value = serde_json::json!(["one", "two\nlines"]);
        assert_eq!(
            field_value(&field, &value),
            "[1] «one»\n[2] «««\n    two\n    lines\n»»»"
        );
        assert_eq!(field_value(&field, &serde_json::json!([])), "N/A");
    }
}
