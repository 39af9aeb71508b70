//! Reflection: what GEPA shows its reflection LM about one predictor (each example's inputs, the
//! predictor's outputs and the metric's feedback) and how it asks for a new instruction — DSPy
//! 3.4.1's `ProposeInstruction` signature, answered through the JSON adapter.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::adapter::JsonAdapter;
use crate::adapter::templates::{
    GEPA_PROPOSE_FIELDS, GEPA_PROPOSE_INSTRUCTIONS, GEPA_TOOL_PROPOSE_FIELDS,
    GEPA_TOOL_PROPOSE_INSTRUCTIONS,
};
use crate::data::PyRandom;
use crate::lm::{Lm, LmOptions, Usage};
use crate::module::DynPredict;
use crate::signature::{DynSignature, Field};
use crate::trace::{PredictorId, TraceEntry};

/// One example as the reflection LM sees it: `Inputs`, `Generated Outputs`, `Feedback`.
pub(crate) fn record(entry: &TraceEntry, feedback: String) -> Value {
    let mut record = Map::new();
    record.insert("Inputs".into(), Value::Object(entry.inputs.clone()));
    record.insert(
        "Generated Outputs".into(),
        Value::Object(entry.outputs.clone()),
    );
    record.insert("Feedback".into(), Value::String(feedback));
    Value::Object(record)
}

/// The call of `predictor` a run contributes: one of its calls, drawn as DSPy draws it (a
/// predictor called several times in one run, such as a ReAct step, gives one random call).
pub(crate) fn pick_call<'t>(
    trace: &'t [TraceEntry],
    predictor: PredictorId,
    random: &mut PyRandom,
) -> Option<&'t TraceEntry> {
    let calls: Vec<&TraceEntry> = trace.iter().filter(|e| e.predictor == predictor).collect();
    if calls.is_empty() {
        return None;
    }
    Some(calls[random.below(calls.len())])
}

/// Of `predictor`'s calls, one that called `tool` (its `next_tool_name`, or the `name` of one of
/// its tool calls, as native and history steps record them), drawn as [`pick_call`] draws; when no
/// call did, one of all its calls.
pub(crate) fn pick_tool_call<'t>(
    trace: &'t [TraceEntry],
    predictor: PredictorId,
    tool: &str,
    random: &mut PyRandom,
) -> Option<&'t TraceEntry> {
    let using: Vec<&TraceEntry> = trace
        .iter()
        .filter(|e| e.predictor == predictor && calls_tool(&Value::Object(e.outputs.clone()), tool))
        .collect();
    if using.is_empty() {
        return pick_call(trace, predictor, random);
    }
    Some(using[random.below(using.len())])
}

/// Whether `outputs` name `tool` as the tool called: a `next_tool_name` field, or an object with
/// `name` (and `args` or `arguments`) anywhere inside.
fn calls_tool(outputs: &Value, tool: &str) -> bool {
    match outputs {
        Value::Object(map) => {
            let named = |key: &str| map.get(key).and_then(Value::as_str) == Some(tool);
            named("next_tool_name")
                || (named("name") && (map.contains_key("args") || map.contains_key("arguments")))
                || map.values().any(|v| calls_tool(v, tool))
        }
        Value::Array(items) => items.iter().any(|v| calls_tool(v, tool)),
        _ => false,
    }
}

/// What a proposal asks for.
pub(crate) enum Proposal<'a> {
    /// A predictor's new instructions (DSPy's `ProposeInstruction`).
    Instruction,
    /// A tool's new description (Signet's own prompt).
    ToolDescription {
        /// The tool's name.
        tool: &'a str,
        /// Its argument schema.
        arguments: &'a Value,
    },
}

impl Proposal<'_> {
    /// The signature of the request, and the names of its current-text and answer fields.
    fn signature(&self) -> (DynSignature, &'static str, &'static str) {
        let field = |(name, type_name, desc): (&str, &str, &str)| {
            let field = if type_name == "str" {
                Field::str(name)
            } else {
                Field::of::<Vec<std::collections::BTreeMap<String, Value>>>(name)
            };
            field.with_type_name(type_name).with_desc(desc)
        };
        match self {
            Proposal::Instruction => {
                let [current, examples, new] = GEPA_PROPOSE_FIELDS;
                let signature = DynSignature::new("ProposeInstruction")
                    .with_instructions(GEPA_PROPOSE_INSTRUCTIONS)
                    .with_input(field(current))
                    .with_input(field(examples))
                    .with_output(field(new));
                (signature, current.0, new.0)
            }
            Proposal::ToolDescription { .. } => {
                let [name, arguments, current, examples, new] = GEPA_TOOL_PROPOSE_FIELDS;
                let signature = DynSignature::new("ProposeToolDescription")
                    .with_instructions(GEPA_TOOL_PROPOSE_INSTRUCTIONS)
                    .with_input(field(name))
                    .with_input(field(arguments))
                    .with_input(field(current))
                    .with_input(field(examples))
                    .with_output(field(new));
                (signature, current.0, new.0)
            }
        }
    }
}

/// Asks the reflection LM for a new text (an instruction or a tool description): the reply's
/// answer field, trimmed. Fails when the call fails, the reply cannot be read, or the text is
/// empty.
pub(crate) async fn propose(
    lm: &Arc<dyn Lm>,
    options: &LmOptions,
    asked: Proposal<'_>,
    current: &str,
    records: Vec<Value>,
    usage: &mut Usage,
) -> Result<String, String> {
    let (signature, current_field, answer_field) = asked.signature();
    let predictor = DynPredict::new(signature)
        .with_lm(lm.clone())
        .with_adapter(JsonAdapter::new())
        .with_options(options.clone());
    let mut inputs = Map::new();
    if let Proposal::ToolDescription { tool, arguments } = asked {
        let [name, args, ..] = GEPA_TOOL_PROPOSE_FIELDS;
        inputs.insert(name.0.into(), Value::String(tool.into()));
        inputs.insert(args.0.into(), Value::String(arguments.to_string()));
    }
    inputs.insert(current_field.into(), Value::String(current.into()));
    inputs.insert("examples_with_feedback".into(), Value::Array(records));
    let prediction = predictor
        .forward_counting(&inputs, &crate::module::CallConfig::default(), &mut *usage)
        .await
        .map_err(|e| e.to_string())?;
    let text = match prediction.outputs.get(answer_field) {
        Some(Value::String(text)) => text.trim().to_owned(),
        Some(other) => other.to_string().trim().to_owned(),
        None => String::new(),
    };
    if text.is_empty() {
        return Err(format!(
            "the reflection LM returned an empty `{answer_field}`"
        ));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ScriptedLm;

    /// The messages DSPy 3.4.1 sends for this proposal (captured from Python; the system message's
    /// blank objective lines hold eight spaces).
    const SYSTEM: &str = "Your input fields are:\n1. `current_instruction` (str): The instructions I provided to the assistant.\n2. `examples_with_feedback` (list[dict[str, Any]]): Task inputs provided to the assistant, the assistant's response for each, and feedback on how the response could be better.\nYour output fields are:\n1. `new_instruction` (str): The new instruction for the assistant.\nAll interactions will be structured in the following way, with the appropriate values filled in.\n\nInputs will have the following structure:\n\n[[ ## current_instruction ## ]]\n{current_instruction}\n\n[[ ## examples_with_feedback ## ]]\n{examples_with_feedback}\n\nOutputs will be a JSON object with the following fields.\n\n{\n  \"new_instruction\": \"{new_instruction}\"\n}\nIn adhering to this structure, your objective is: \n        I provided an assistant with instructions to perform a task for me. You are given those instructions, along with examples of different task inputs provided to the assistant, the assistant's response for each of them, and some feedback on how the assistant's response could be better.\n        \n        Your task is to write a new instruction for the assistant.\n        \n        Read the inputs carefully and identify the input format and infer detailed task description about the task I wish to solve with the assistant.\n        \n        Read all the assistant responses and the corresponding feedback. Identify all niche and domain specific factual information about the task and include it in the instruction, as a lot of it may not be available to the assistant in the future. The assistant may have utilized a generalizable strategy to solve the task, if so, include that in the instruction as well.";
    const USER: &str = "[[ ## current_instruction ## ]]\nHINT-v0 instruction\n\n[[ ## examples_with_feedback ## ]]\n[{\"Inputs\": {\"question\": \"q=7\"}, \"Generated Outputs\": {\"hint\": \"bad\"}, \"Feedback\": \"fb for hinter: expected 7\"}, {\"Inputs\": {\"question\": \"q=5\"}, \"Generated Outputs\": {\"hint\": \"bad\"}, \"Feedback\": \"fb for hinter: expected 5\"}]\n\nRespond with a JSON object in the following order of fields: `new_instruction`.";

    fn entry(question: &str) -> TraceEntry {
        TraceEntry {
            predictor: PredictorId::fresh(),
            inputs: serde_json::json!({"question": question})
                .as_object()
                .unwrap()
                .clone(),
            outputs: serde_json::json!({"hint": "bad"})
                .as_object()
                .unwrap()
                .clone(),
        }
    }

    #[tokio::test]
    async fn the_proposal_prompt_is_dspys_byte_for_byte() {
        let scripted = Arc::new(ScriptedLm::texts(["{\"new_instruction\": \"  Say 7.  \"}"]));
        let lm: Arc<dyn Lm> = scripted.clone();
        let records = vec![
            record(&entry("q=7"), "fb for hinter: expected 7".into()),
            record(&entry("q=5"), "fb for hinter: expected 5".into()),
        ];
        let mut usage = Usage::default();
        let text = propose(
            &lm,
            &LmOptions::new().max_tokens(300),
            Proposal::Instruction,
            "HINT-v0 instruction",
            records,
            &mut usage,
        )
        .await
        .unwrap();
        assert_eq!(text, "Say 7.");
        assert_eq!(usage.lm_calls, 1);
        let request = &scripted.requests()[0];
        assert_eq!(request.messages.len(), 2);
        assert_eq!(request.messages[0].content, SYSTEM);
        assert_eq!(request.messages[1].content, USER);
        assert_eq!(request.options.max_tokens, Some(300));
    }

    #[tokio::test]
    async fn an_empty_or_unreadable_proposal_is_an_error() {
        let lm: Arc<dyn Lm> = Arc::new(ScriptedLm::texts(["{\"new_instruction\": \"   \"}"]));
        let error = propose(
            &lm,
            &LmOptions::default(),
            Proposal::Instruction,
            "x",
            Vec::new(),
            &mut Usage::default(),
        )
        .await
        .unwrap_err();
        assert!(error.contains("empty `new_instruction`"), "{error}");
        let lm: Arc<dyn Lm> = Arc::new(ScriptedLm::texts(["not json", "still not json"]));
        assert!(
            propose(
                &lm,
                &LmOptions::default(),
                Proposal::Instruction,
                "x",
                Vec::new(),
                &mut Usage::default()
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn a_tool_description_is_asked_with_the_tools_name_and_arguments() {
        let scripted = Arc::new(ScriptedLm::texts([
            "{\"new_description\": \" Convert an amount between currencies. \"}",
        ]));
        let lm: Arc<dyn Lm> = scripted.clone();
        let args =
            serde_json::json!({"type": "object", "properties": {"amount": {"type": "number"}}});
        let asked = Proposal::ToolDescription {
            tool: "convert",
            arguments: &args,
        };
        let records = vec![record(&entry("q=7"), "used the wrong currency".into())];
        let mut usage = Usage::default();
        let text = propose(
            &lm,
            &LmOptions::default(),
            asked,
            "Convert.",
            records,
            &mut usage,
        )
        .await
        .unwrap();
        assert_eq!(text, "Convert an amount between currencies.");
        let request = &scripted.requests()[0];
        assert!(request.messages[0].content.contains(
            "1. `tool_name` (str): The tool's name.\n2. `tool_arguments` (str): The JSON schema of the tool's arguments.\n3. `current_description` (str)"
        ));
        assert!(
            request.messages[0]
                .content
                .contains("Your task is to write a new description of the tool")
        );
        assert_eq!(
            request.messages[1].content,
            "[[ ## tool_name ## ]]\nconvert\n\n[[ ## tool_arguments ## ]]\n{\"type\":\"object\",\"properties\":{\"amount\":{\"type\":\"number\"}}}\n\n[[ ## current_description ## ]]\nConvert.\n\n[[ ## examples_with_feedback ## ]]\n[{\"Inputs\": {\"question\": \"q=7\"}, \"Generated Outputs\": {\"hint\": \"bad\"}, \"Feedback\": \"used the wrong currency\"}]\n\nRespond with a JSON object in the following order of fields: `new_description`."
        );
    }

    #[test]
    fn a_tool_component_reads_the_steps_that_called_the_tool() {
        let step = PredictorId::fresh();
        let call = |outputs: Value| TraceEntry {
            predictor: step,
            inputs: Map::new(),
            outputs: outputs.as_object().unwrap().clone(),
        };
        let text = call(serde_json::json!({"next_tool_name": "convert", "next_tool_args": {}}));
        let other = call(serde_json::json!({"next_tool_name": "finish", "next_tool_args": {}}));
        let native = call(
            serde_json::json!({"tool_turns": [[{"name": "convert", "args": {}, "observation": 1}]]}),
        );
        let mut random = PyRandom::new(0);
        for _ in 0..5 {
            let trace = vec![other.clone(), text.clone()];
            assert_eq!(
                pick_tool_call(&trace, step, "convert", &mut random),
                Some(&trace[1])
            );
            let trace = vec![other.clone(), native.clone()];
            assert_eq!(
                pick_tool_call(&trace, step, "convert", &mut random),
                Some(&trace[1])
            );
        }
        // No step called it: any step call of the loop.
        let trace = vec![other.clone()];
        assert_eq!(
            pick_tool_call(&trace, step, "convert", &mut random),
            Some(&trace[0])
        );
        // A field merely holding the name is not a call.
        assert!(!calls_tool(
            &serde_json::json!({"answer": {"name": "convert"}}),
            "convert"
        ));
        assert!(pick_tool_call(&[], step, "convert", &mut random).is_none());
    }

    #[test]
    fn a_run_gives_one_call_per_predictor() {
        let mut a = entry("q=1");
        let b = entry("q=2");
        a.predictor = b.predictor;
        let other = entry("q=3");
        let trace = vec![a.clone(), other.clone(), b.clone()];
        let mut random = PyRandom::new(0);
        let picked = pick_call(&trace, b.predictor, &mut random).unwrap();
        assert!(picked == &a || picked == &b);
        assert!(pick_call(&trace, PredictorId::fresh(), &mut random).is_none());
    }
}
