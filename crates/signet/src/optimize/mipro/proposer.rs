//! MIPROv2's grounded proposer, as DSPy 3.4.1 runs it: a summary of the training set, then for
//! each proposal a description of the program and of the predictor, and an instruction written
//! from those, a few bootstrapped demos, the predictor's current instruction and a random tip.
//! Every prompt is DSPy's (see [`crate::adapter::templates`]), sent through the Chat adapter.

use std::sync::{Arc, LazyLock};

use serde_json::Value;

use crate::adapter::Fields;
use crate::adapter::templates::{
    MIPRO_DATASET_DESCRIPTOR, MIPRO_DATASET_DESCRIPTOR_WITH_PRIOR, MIPRO_DESCRIBE_MODULE,
    MIPRO_DESCRIBE_PROGRAM, MIPRO_GENERATE_INPUTS, MIPRO_GENERATE_INSTRUCTION,
    MIPRO_GENERATE_OUTPUT, MIPRO_NO_TASK_DEMOS, MIPRO_OBSERVATION_SUMMARIZER,
};
use crate::data::Example;
use crate::lm::{Lm, LmOptions, Usage};
use crate::module::DynPredict;
use crate::python::py_str;
use crate::schema::python_repr;
use crate::signature::{DynSignature, Field};

/// At most this many bootstrapped demos are shown per proposal (DSPy's `num_demos_in_context`).
const DEMOS_IN_CONTEXT: usize = 3;
/// At most this many summary calls on later batches (DSPy stops at its tenth).
const MAX_PRIOR_CALLS: usize = 9;
/// After this many `COMPLETE` answers the summary stops reading batches.
const MAX_COMPLETE: usize = 5;

/// DSPy's `strip_prefix`: drops a leading label of up to five words and a colon (`Proposed
/// Instruction:`), then every leading and trailing double quote.
pub(crate) fn strip_prefix(text: &str) -> String {
    static LABEL: LazyLock<regex::Regex> = LazyLock::new(|| {
        regex::Regex::new(r"^[\*\s]*(([\w'\-]+\s+){0,4}[\w'\-]+):\s*").expect("a valid pattern")
    });
    LABEL.replace(text, "").trim_matches('"').to_owned()
}

/// Training examples as DSPy shows them to the summary calls: Python's `repr` of a list of
/// `Example`s, the input keys sorted.
pub(crate) fn examples_repr(examples: &[Example]) -> String {
    let items: Vec<String> = examples
        .iter()
        .map(|example| {
            let values: serde_json::Map<String, Value> = example
                .values()
                .iter()
                .filter(|(key, _)| !key.starts_with("dspy_"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut keys: Vec<String> = example
                .input_keys()
                .iter()
                .map(|k| python_repr(&Value::String(k.clone())))
                .collect();
            keys.sort();
            let keys = if keys.is_empty() {
                "set()".to_owned()
            } else {
                format!("{{{}}}", keys.join(", "))
            };
            format!(
                "Example({}) (input_keys={keys})",
                python_repr(&Value::Object(values))
            )
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// `Predict(inputs) -> outputs`, the module line DSPy shows for a predictor.
pub(crate) fn module_code(signature: &DynSignature) -> String {
    let names = |fields: &[Field]| -> String {
        fields
            .iter()
            .map(|f| f.name().to_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "Predict({}) -> {}",
        names(signature.inputs()),
        names(signature.outputs())
    )
}

/// Up to three bootstrapped demos from the demo sets, starting at set `index` and wrapping
/// around, each as `Prefix: value` lines; DSPy's placeholder for set 0 or when there are none.
pub(crate) fn task_demos(sets: &[Vec<Fields>], index: usize, signature: &DynSignature) -> String {
    if index == 0 {
        return MIPRO_NO_TASK_DEMOS.to_owned();
    }
    let ordered = sets[index..].iter().chain(&sets[..index.min(sets.len())]);
    let shown: Vec<String> = ordered
        .flatten()
        .filter(|demo| demo.contains_key("augmented"))
        .take(DEMOS_IN_CONTEXT)
        .map(|demo| {
            signature
                .fields()
                .map(|field| {
                    let value = demo.get(field.name()).map_or("None".to_owned(), py_str);
                    format!("{} {value}", field.prefix())
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    let text = format!("{}\n\n", shown.join("\n\n"));
    if text.trim().is_empty() {
        MIPRO_NO_TASK_DEMOS.to_owned()
    } else {
        text
    }
}

/// The proposer's LM and settings, and what it spent.
pub(crate) struct Proposer {
    pub(crate) lm: Arc<dyn Lm>,
    /// The prompt model's own options (a `max_tokens` bound, say); temperatures are set per call.
    pub(crate) options: LmOptions,
    pub(crate) temperature: f32,
    /// The program's pseudo-code, when the proposer is program-aware.
    pub(crate) program_code: Option<String>,
    /// The dataset summary, when the proposer is data-aware.
    pub(crate) summary: Option<String>,
    pub(crate) usage: Usage,
}

impl Proposer {
    /// One call of a proposer signature; the reply's fields.
    async fn ask(
        &mut self,
        signature: DynSignature,
        inputs: Fields,
        options: LmOptions,
    ) -> Result<Fields, String> {
        super::super::ask_prompt_model(signature, Some(&self.lm), options, &inputs, &mut self.usage)
            .await
            .map_err(|e| e.to_string())
    }

    /// A text output of a reply.
    fn text(outputs: &Fields, name: &str) -> String {
        outputs.get(name).map(py_str).unwrap_or_default()
    }

    /// DSPy's `create_dataset_summary`: observations on the first `batch` training examples,
    /// more on each later batch (at most nine, until five say `COMPLETE`), then a summary of them.
    pub(crate) async fn summarize(
        &mut self,
        trainset: &[Example],
        batch: usize,
    ) -> Result<String, String> {
        let batch = batch.max(1);
        let options = self.options.clone().temperature(1.0);
        let upper = trainset.len().min(batch);
        let first = self
            .ask(
                MIPRO_DATASET_DESCRIPTOR.signature(),
                fields([("examples", examples_repr(&trainset[..upper]))]),
                options.clone(),
            )
            .await?;
        let mut observations = Self::text(&first, "observations");
        let mut completes = 0;
        for (calls, start) in (batch..trainset.len()).step_by(batch).enumerate() {
            if calls + 1 > MAX_PRIOR_CALLS {
                break;
            }
            let end = trainset.len().min(start + batch);
            let reply = self
                .ask(
                    MIPRO_DATASET_DESCRIPTOR_WITH_PRIOR.signature(),
                    fields([
                        ("examples", examples_repr(&trainset[start..end])),
                        ("prior_observations", observations.clone()),
                    ]),
                    options.clone(),
                )
                .await;
            // As in DSPy, a failed call ends the reading of batches; the summary goes on.
            let Ok(reply) = reply else { break };
            let more = Self::text(&reply, "observations");
            let head: String = more.chars().take(8).collect();
            if head.to_uppercase() == "COMPLETE" {
                completes += 1;
                if completes >= MAX_COMPLETE {
                    break;
                }
                continue;
            }
            observations.push_str(&more);
        }
        let summary = self
            .ask(
                MIPRO_OBSERVATION_SUMMARIZER.signature(),
                fields([("observations", observations)]),
                options,
            )
            .await?;
        Ok(strip_prefix(&Self::text(&summary, "summary")))
    }

    /// One instruction for `predictor` (DSPy's `propose_instruction_for_predictor`), grounded in
    /// demo set `set` of `sets`; `rollout` keeps its requests apart from the others' (sent as the
    /// request's seed).
    pub(crate) async fn propose(
        &mut self,
        predictor: &DynPredict,
        sets: Option<&[Vec<Fields>]>,
        set: usize,
        tip: &str,
        rollout: usize,
    ) -> Result<String, String> {
        let options = LmOptions {
            temperature: Some(self.temperature),
            seed: Some(rollout as i64),
            ..self.options.clone()
        };
        let basic = predictor.instructions();
        let demos = match sets {
            Some(sets) => task_demos(sets, set, predictor.signature()),
            None => MIPRO_NO_TASK_DEMOS.to_owned(),
        };
        let mut inputs = Fields::new();
        if let Some(summary) = &self.summary {
            inputs.insert("dataset_description".into(), summary.clone().into());
        }
        if let Some(code) = self.program_code.clone() {
            let mut description = "Not available".to_owned();
            let mut module = "Not provided".to_owned();
            let mut module_description = "Not provided".to_owned();
            // As in DSPy, a failed description leaves DSPy's placeholders in its fields.
            if let Ok(reply) = self
                .ask(
                    MIPRO_DESCRIBE_PROGRAM.signature(),
                    fields([
                        ("program_code", code.clone()),
                        ("program_example", demos.clone()),
                    ]),
                    options.clone(),
                )
                .await
            {
                description = strip_prefix(&Self::text(&reply, "program_description"));
                module = module_code(predictor.signature());
                if let Ok(reply) = self
                    .ask(
                        MIPRO_DESCRIBE_MODULE.signature(),
                        fields([
                            ("program_code", code.clone()),
                            ("program_example", demos.clone()),
                            ("program_description", description.clone()),
                            ("module", module.clone()),
                        ]),
                        options.clone(),
                    )
                    .await
                {
                    module_description = Self::text(&reply, "module_description");
                }
            }
            inputs.insert("program_code".into(), code.into());
            inputs.insert("program_description".into(), description.into());
            inputs.insert("module".into(), module.into());
            inputs.insert("module_description".into(), module_description.into());
        }
        inputs.insert("task_demos".into(), demos.into());
        inputs.insert("basic_instruction".into(), basic.into());
        if !tip.is_empty() {
            inputs.insert("tip".into(), tip.into());
        }
        let mut generate = DynSignature::new("GenerateSingleModuleInstruction")
            .with_instructions(MIPRO_GENERATE_INSTRUCTION);
        for (name, desc) in MIPRO_GENERATE_INPUTS {
            if inputs.contains_key(name) {
                generate = generate.with_input(Field::str(name).with_desc(desc));
            }
        }
        let (name, desc) = MIPRO_GENERATE_OUTPUT;
        generate = generate.with_output(Field::str(name).with_desc(desc));
        let reply = self.ask(generate, inputs, options).await?;
        // DSPy strips the label twice (once in the generator, once in the proposer).
        let text = strip_prefix(&strip_prefix(&Self::text(&reply, name)));
        if text.trim().is_empty() {
            return Err("the prompt model proposed an empty instruction".into());
        }
        Ok(text)
    }
}

fn fields<const N: usize>(pairs: [(&str, String); N]) -> Fields {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Value::String(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strip_prefix_is_dspys() {
        // Checked against DSPy 3.4.1's `strip_prefix`.
        let once = strip_prefix("Proposed Instruction: \"Task: do X\"");
        assert_eq!(once, "Task: do X");
        assert_eq!(strip_prefix(&once), "do X");
        assert_eq!(strip_prefix("**New Instruction:** do X"), "** do X");
        assert_eq!(strip_prefix("A b c d e f: x"), "A b c d e f: x");
        assert_eq!(strip_prefix("Instruction: \"\"quoted\"\""), "quoted");
    }

    #[test]
    fn examples_print_as_python_prints_them() {
        let examples = vec![
            Example::new(json!({"question": "q=0", "answer": "0", "dspy_uuid": "x"}))
                .with_inputs(["question"]),
            Example::new(json!({"question": "it's", "context": "c", "answer": 1}))
                .with_inputs(["question", "context"]),
        ];
        assert_eq!(
            examples_repr(&examples),
            "[Example({'question': 'q=0', 'answer': '0'}) (input_keys={'question'}), \
             Example({'question': \"it's\", 'context': 'c', 'answer': 1}) (input_keys={'context', 'question'})]"
        );
    }

    #[test]
    fn task_demos_show_bootstrapped_demos_from_the_set_on() {
        let signature = DynSignature::parse("question -> answer").unwrap();
        let demo = |q: &str, augmented: bool| -> Fields {
            let mut demo = Fields::new();
            if augmented {
                demo.insert("augmented".into(), true.into());
            }
            demo.insert("question".into(), q.into());
            demo.insert("answer".into(), q.trim_start_matches("q=").into());
            demo
        };
        let sets = vec![
            vec![],
            vec![demo("q=6", false), demo("q=9", false)],
            vec![demo("q=0", true), demo("q=2", true)],
        ];
        let shown = "Question: q=0\nAnswer: 0\n\nQuestion: q=2\nAnswer: 2\n\n";
        assert_eq!(task_demos(&sets, 1, &signature), shown);
        assert_eq!(task_demos(&sets, 2, &signature), shown);
        assert_eq!(task_demos(&sets, 0, &signature), MIPRO_NO_TASK_DEMOS);
        assert_eq!(task_demos(&sets[..2], 1, &signature), MIPRO_NO_TASK_DEMOS);
        assert_eq!(module_code(&signature), "Predict(question) -> answer");
    }
}
