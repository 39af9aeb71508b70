//! COPRO's proposer signatures (DSPy 3.4.1's `teleprompt/copro_optimizer.py`), word for word.

use super::ProposerSignature;

const PROPOSED_INSTRUCTION: (&str, &str) = (
    "proposed_instruction",
    "The improved instructions for the language model",
);

const PROPOSED_PREFIX: (&str, &str) = (
    "proposed_prefix_for_output_field",
    "The string at the end of the prompt, which will help the model start solving the task",
);

/// DSPy's `BasicGenerateInstruction`: the first proposals, from the predictor's own instruction.
pub(crate) const COPRO_BASIC_GENERATE: ProposerSignature = ProposerSignature {
    name: "BasicGenerateInstruction",
    instructions: "You are an instruction optimizer for large language models. I will give you a ``signature`` of fields (inputs and outputs) in English. Your task is to propose an instruction that will lead a good language model to perform the task well. Don't be afraid to be creative.",
    inputs: &[(
        "basic_instruction",
        "The initial instructions before optimization",
    )],
    outputs: &[PROPOSED_INSTRUCTION, PROPOSED_PREFIX],
};

/// DSPy's `GenerateInstructionGivenAttempts`: later proposals, from the best attempts so far and
/// their scores (its input has no description: DSPy shows none).
pub(crate) const COPRO_GENERATE_GIVEN_ATTEMPTS: ProposerSignature = ProposerSignature {
    name: "GenerateInstructionGivenAttempts",
    instructions: "You are an instruction optimizer for large language models. I will give some task instructions I've tried, along with their corresponding validation scores. The instructions are arranged in increasing order based on their scores, where higher scores indicate better quality.\n\nYour task is to propose a new instruction that will lead a good language model to perform the task even better. Don't be afraid to be creative.",
    inputs: &[("attempted_instructions", "")],
    outputs: &[PROPOSED_INSTRUCTION, PROPOSED_PREFIX],
};

/// The lines of one attempt shown to [`COPRO_GENERATE_GIVEN_ATTEMPTS`]: its number (1 for the
/// lowest score shown), instruction, prefix and score (as Python prints the float).
pub(crate) fn copro_attempt(
    number: usize,
    instruction: &str,
    prefix: &str,
    score: f64,
) -> [String; 3] {
    [
        format!("Instruction #{number}: {instruction}"),
        format!("Prefix #{number}: {prefix}"),
        format!(
            "Resulting Score #{number}: {}",
            crate::python::float_repr(score)
        ),
    ]
}
