//! Prompts about a whole program: its code as DSPy shows it to an optimizer or to Refine's
//! feedback step, and Refine's `OfferFeedback` signature (from DSPy 3.4.1, MIT licence; see the
//! parent module).

use serde_json::Value;

use crate::schema::python_repr;
use crate::signature::DynSignature;

use super::{dedent, field_list};

/// The program as pseudo-code, where DSPy shows its Python source (MIPROv2's proposer, Refine's
/// feedback; a compiled Rust program has none): each distinct signature as a DSPy signature class, then the predictors.
pub(crate) fn program_code<'a>(
    predictors: impl IntoIterator<Item = (&'a str, &'a DynSignature)>,
) -> String {
    let mut classes: Vec<String> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for (path, signature) in predictors {
        let name = if signature.name().is_empty() {
            "Signature".to_owned()
        } else {
            signature.name().to_owned()
        };
        if !seen.contains(&name) {
            seen.push(name.clone());
            let mut class = format!(
                "class {name}(dspy.Signature):\n    {}\n",
                python_repr(&Value::String(signature.instructions()))
            );
            for (kind, fields) in [
                ("InputField", signature.inputs()),
                ("OutputField", signature.outputs()),
            ] {
                for field in fields {
                    let desc = field
                        .desc()
                        .map(|d| format!("desc={}", python_repr(&Value::String(d.to_owned()))))
                        .unwrap_or_default();
                    class.push_str(&format!(
                        "    {}: {} = dspy.{kind}({desc})\n",
                        field.name(),
                        field.type_name()
                    ));
                }
            }
            classes.push(class);
        }
        lines.push(format!("    {path} = dspy.Predict({name})"));
    }
    format!(
        "{}\n# The program's predictors, in the order they are declared:\nclass Program(dspy.Module):\n{}\n",
        classes.join("\n"),
        lines.join("\n")
    )
}

/// DSPy's `OfferFeedback` signature (`dspy.Refine`): its instructions.
pub(crate) const REFINE_FEEDBACK_INSTRUCTIONS: &str = "In the discussion, assign blame to each module that contributed to the final reward being below the threshold, if
any. Then, prescribe concrete advice of how the module should act on its future input when we retry the process, if
it were to receive the same or similar inputs. If a module is not to blame, the advice should be N/A.
The module will not see its own history, so it needs to rely on entirely concrete and actionable advice from you
to avoid the same mistake on the same or similar inputs.";

/// `OfferFeedback`'s input fields (name, description), in order; `target_threshold` and
/// `reward_value` are `float`, `module_names` is `list[str]`, the rest `str`.
pub(crate) const REFINE_FEEDBACK_INPUTS: [(&str, &str); 9] = [
    (
        "program_code",
        "The code of the program that we are analyzing",
    ),
    (
        "modules_defn",
        "The definition of each module in the program, including its I/O",
    ),
    (
        "program_inputs",
        "The inputs to the program that we are analyzing",
    ),
    (
        "program_trajectory",
        "The trajectory of the program's execution, showing each module's I/O",
    ),
    (
        "program_outputs",
        "The outputs of the program that we are analyzing",
    ),
    (
        "reward_code",
        "The code of the reward function that we are analyzing",
    ),
    (
        "target_threshold",
        "The target threshold for the reward function",
    ),
    (
        "reward_value",
        "The reward value assigned to the program's outputs",
    ),
    (
        "module_names",
        "The names of the modules in the program, for which we seek advice",
    ),
];

/// `OfferFeedback`'s outputs: `discussion` (`str`) and `advice` (`dict[str, str]`). DSPy's
/// description of `advice` joins two string literals without a space ("kind ofscenario").
pub(crate) const REFINE_FEEDBACK_OUTPUTS: [(&str, &str); 2] = [
    (
        "discussion",
        "Discussing blame of where each module went wrong, if it did",
    ),
    (
        "advice",
        "For each module, describe very concretely, in this order: the specific scenarios in which it has made mistakes in the past and what each mistake was, followed by what it should do differently in that kind ofscenario in the future. If the module is not to blame, write N/A.",
    ),
];

/// The input `dspy.Refine` adds to every predictor of a retried program, and its description.
pub(crate) const REFINE_HINT_FIELD: (&str, &str) =
    ("hint_", "A hint to the module from an earlier run");

/// What a predictor is told when the advice names another one.
pub(crate) const REFINE_NO_ADVICE: &str = "N/A";

/// DSPy's `inspect_modules` (`dspy.Refine`): each predictor's name, input and output fields and
/// instructions, between lines of 80 dashes.
pub(crate) fn modules_definition<'a>(
    predictors: impl IntoIterator<Item = (&'a str, &'a DynSignature)>,
) -> String {
    let separator = "-".repeat(80);
    // Each line of `text` after a newline and two tabs (Python's `"\n\t\t".join([""] + lines)`).
    let indented = |text: &str| -> String {
        crate::python::splitlines(text)
            .into_iter()
            .map(|line| format!("\n\t\t{line}"))
            .collect()
    };
    let mut parts = vec![separator.clone()];
    for (name, signature) in predictors {
        let instructions = indented(&dedent(&signature.instructions()));
        parts.push(format!("Module {name}"));
        parts.push("\n\tInput Fields:".to_owned());
        parts.push(indented(&field_list(signature.inputs())));
        parts.push("\tOutput Fields:".to_owned());
        parts.push(indented(&field_list(signature.outputs())));
        parts.push(format!("\tOriginal Instructions: {instructions}"));
        parts.push(separator.clone());
    }
    parts
        .iter()
        .map(|part| part.trim_matches('\n'))
        .collect::<Vec<_>>()
        .join("\n")
}
