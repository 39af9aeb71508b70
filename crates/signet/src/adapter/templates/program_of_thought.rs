//! ProgramOfThought's instructions and field descriptions (DSPy 3.4.1's
//! `predict/program_of_thought.py`), with JavaScript where DSPy says Python: Signet's sandbox
//! runs JavaScript (`signet-sandbox`).

use crate::signature::DynSignature;
use crate::signature::quoted_names;

/// The description of the code the model writes.
pub(crate) const POT_CODE_DESC: &str = "javascript code that answers the question";
/// The description of the code that failed, shown when asking for a correction.
pub(crate) const POT_PREVIOUS_CODE_DESC: &str = "previously-generated javascript code that errored";
/// The description of the failure.
pub(crate) const POT_ERROR_DESC: &str = "error message from previously-generated javascript code";
/// The description of the code's output, shown when asking for the answer.
pub(crate) const POT_OUTPUT_DESC: &str = "output of previously-generated javascript code";

/// One of ProgramOfThought's steps (DSPy's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PotStep {
    /// Write the code.
    Generate,
    /// Correct code that failed.
    Regenerate,
    /// Read the code's output as the answer.
    Answer,
}

impl PotStep {
    /// DSPy's name of the mode (the suffix of the step's signature name).
    pub(crate) fn name(self) -> &'static str {
        match self {
            PotStep::Generate => "generate",
            PotStep::Regenerate => "regenerate",
            PotStep::Answer => "answer",
        }
    }
}

/// The instructions of one of ProgramOfThought's steps, given that step's signature and the
/// program's output fields.
pub(crate) fn pot_instructions(
    mode: PotStep,
    step: &DynSignature,
    outputs: &DynSignature,
) -> String {
    let inputs = quoted_names(step.inputs());
    let produced = quoted_names(step.outputs());
    match mode {
        PotStep::Generate => [
            format!("You will be given {inputs} and you will respond with {produced}."),
            format!("Generating executable JavaScript code that programmatically computes the correct {produced}."),
            "After you're done with the computation and think you have the final output, make sure to submit your output by calling the preloaded function `SUBMIT()`.".to_owned(),
            format!(
                "You must structure your output in an object, like {{\"field_a\": value_a, ...}}, with the correct value mapping for the field(s): {}.",
                quoted_names(outputs.outputs())
            ),
        ]
        .join("\n"),
        PotStep::Regenerate => [
            format!("You are given {inputs} due to an error in previous code."),
            "Your task is to correct the error and provide the new `generated_code`.".to_owned(),
        ]
        .join("\n"),
        PotStep::Answer => format!("Given the final code {inputs}, provide the final {produced}."),
    }
}
