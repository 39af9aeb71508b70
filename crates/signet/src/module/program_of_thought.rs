//! DSPy's `ProgramOfThought`: the model writes a program, the sandbox runs it, and the answer is
//! read from its output ([`ProgramOfThought`]).

use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use signet_sandbox::Sandbox;

use super::{DynPredict, Error, Module, Predictors, from_fields, to_fields, with_reasoning};
use crate::adapter::Fields;
use crate::adapter::templates::{
    POT_CODE_DESC, POT_ERROR_DESC, POT_OUTPUT_DESC, POT_PREVIOUS_CODE_DESC, PotStep,
    pot_instructions,
};
use crate::lm::Lm;
use crate::signature::{DynSignature, Field, Signature};

/// DSPy's `ProgramOfThought`, on JavaScript: a chain-of-thought step writes code that computes
/// the outputs and submits them (`SUBMIT({...})`); the code runs in a [`Sandbox`]; when it fails
/// to parse or run, another step is shown the code and the error and writes a correction, up to
/// `max_iters` tries in all; a last step reads the code and its output and gives the outputs.
/// For questions a model cannot answer in its head (arithmetic, counting, dates).
///
/// As in DSPy 3.4.1: the three steps and their predictor names (`code_generate.predict`,
/// `code_regenerate.predict`, `generate_output.predict`), their instructions and fields with
/// JavaScript where DSPy says Python (DSPy's runs in a Python interpreter under Deno), the
/// parsing of the code (the part before `---`, the fenced block, a trailing assignment's value),
/// and `max_iters` 3. The code's value is what it submits, else its last statement's.
///
/// ```
/// use signet::module::{Module, ProgramOfThought};
/// use signet::testing::ScriptedLm;
/// # #[derive(signet::Signature)]
/// # struct Ask { #[input] question: String, #[output] answer: String }
///
/// let lm = ScriptedLm::texts([
///     "[[ ## reasoning ## ]]\nMultiply.\n\n[[ ## generated_code ## ]]\n```javascript\nSUBMIT({answer: 17 * 23})\n```",
///     "[[ ## reasoning ## ]]\nThe code printed it.\n\n[[ ## answer ## ]]\n391",
/// ]);
/// let pot = ProgramOfThought::<Ask>::new().with_lm(lm);
/// let out = pot.call_blocking(AskInput { question: "17 * 23?".into() }).unwrap();
/// assert_eq!(out.answer, "391");
/// ```
pub struct ProgramOfThought<S: Signature> {
    generate: DynPredict,
    regenerate: DynPredict,
    answer: DynPredict,
    max_iters: usize,
    sandbox: Sandbox,
    _signature: PhantomData<fn() -> S>,
}

impl<S: Signature> Clone for ProgramOfThought<S> {
    fn clone(&self) -> Self {
        ProgramOfThought {
            generate: self.generate.clone(),
            regenerate: self.regenerate.clone(),
            answer: self.answer.clone(),
            max_iters: self.max_iters,
            sandbox: self.sandbox.clone(),
            _signature: PhantomData,
        }
    }
}

impl<S: Signature> Default for ProgramOfThought<S> {
    fn default() -> Self {
        ProgramOfThought::new()
    }
}

/// The signature of one step: the program's inputs, then the step's own fields.
fn step(signature: &DynSignature, mode: PotStep) -> DynSignature {
    let mut step = DynSignature::new(format!("{}_{}", signature.name(), mode.name()));
    for input in signature.inputs() {
        step = step.with_input(input.clone());
    }
    step = match mode {
        PotStep::Generate => {
            step.with_output(Field::str("generated_code").with_desc(POT_CODE_DESC))
        }
        PotStep::Regenerate => step
            .with_input(Field::str("previous_code").with_desc(POT_PREVIOUS_CODE_DESC))
            .with_input(Field::str("error").with_desc(POT_ERROR_DESC))
            .with_output(Field::str("generated_code").with_desc(POT_CODE_DESC)),
        PotStep::Answer => {
            let mut answer = step
                .with_input(Field::str("final_generated_code").with_desc(POT_CODE_DESC))
                .with_input(Field::str("code_output").with_desc(POT_OUTPUT_DESC));
            for output in signature.outputs() {
                answer = answer.with_output(output.clone());
            }
            answer
        }
    };
    let instructions = pot_instructions(mode, &step, signature);
    with_reasoning(&step.with_instructions(instructions))
}

impl<S: Signature> ProgramOfThought<S> {
    /// The three steps of `S`, `max_iters` 3, and a sandbox with the default limits.
    pub fn new() -> Self {
        let signature = S::signature();
        ProgramOfThought {
            generate: DynPredict::new(step(signature, PotStep::Generate)),
            regenerate: DynPredict::new(step(signature, PotStep::Regenerate)),
            answer: DynPredict::new(step(signature, PotStep::Answer)),
            max_iters: 3,
            sandbox: Sandbox::new(),
            _signature: PhantomData,
        }
    }

    /// Every step asks `lm`.
    pub fn with_lm(mut self, lm: impl Lm + 'static) -> Self {
        let lm = crate::lm::shared(lm);
        for step in [&mut self.generate, &mut self.regenerate, &mut self.answer] {
            step.set_lm(lm.clone());
        }
        self
    }

    /// Every step's LM options (temperature, `max_tokens`, ..).
    pub fn with_options(mut self, options: crate::lm::LmOptions) -> Self {
        for step in [&mut self.generate, &mut self.regenerate, &mut self.answer] {
            *step.options_mut() = options.clone();
        }
        self
    }

    /// Tries of writing and running code before the call fails (default 3, at least 1).
    pub fn with_max_iters(mut self, n: usize) -> Self {
        self.max_iters = n.max(1);
        self
    }

    /// Runs the code in `sandbox` (its limits, and what it grants: the code may call those
    /// functions).
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// The code parsed from what the model wrote, and what running it gave (the parse error
    /// when it does not parse).
    async fn try_code(&self, generated: &str) -> (Result<String, String>, Result<String, String>) {
        let parsed = parse_code(generated);
        let outcome = match &parsed {
            Ok(code) => self.execute(code).await,
            Err(error) => Err(error.clone()),
        };
        (parsed, outcome)
    }

    /// Runs `code` with `SUBMIT` granted: the value it submits (else the last statement's) as
    /// JSON text, or the error to show the model.
    async fn execute(&self, code: &str) -> Result<String, String> {
        let submitted: Arc<Mutex<Option<Value>>> = Arc::default();
        let keep = submitted.clone();
        let sandbox = self.sandbox.clone().grant("SUBMIT", move |value| {
            *keep.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
            Ok(Value::Null)
        });
        let run = sandbox.run_async(code).await.map_err(|e| e.to_string())?;
        let value = submitted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or(run.value);
        Ok(crate::python::json_dumps(&value, None))
    }
}

/// DSPy's `_parse_code`: the code before `---` or three newlines, the fenced block if there is
/// one, and a trailing assignment's variable appended as the value; or why it is not code.
fn parse_code(generated: &str) -> Result<String, String> {
    let code = generated.split("---").next().unwrap_or_default();
    let code = code.split("\n\n\n").next().unwrap_or_default();
    let block = fenced(code).unwrap_or(code);
    if block.is_empty() {
        return Err("Error: Empty code after parsing.".into());
    }
    if !block.contains('\n') && block.matches('=').count() > 1 {
        return Err("Error: Code format is not correct.".into());
    }
    let last = block.lines().last().unwrap_or_default().trim();
    let assigned = last
        .trim_start_matches("const ")
        .trim_start_matches("let ")
        .trim_start_matches("var ");
    let name: String = assigned
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
        .collect();
    let rest = assigned[name.len()..].trim_start();
    if !name.is_empty() && rest.starts_with('=') && !rest.starts_with("==") {
        return Ok(format!("{block}\n{name}"));
    }
    Ok(block.to_owned())
}

/// The inside of a ```javascript (or ```js) fence.
fn fenced(code: &str) -> Option<&str> {
    let start = ["```javascript", "```js"]
        .iter()
        .find_map(|fence| code.find(fence).map(|at| at + fence.len()))?;
    let body = code[start..]
        .strip_prefix(['\n', ' '])
        .unwrap_or(&code[start..]);
    let end = body.find("```").unwrap_or(body.len());
    Some(body[..end].trim_end_matches([' ', '\n']))
}

/// Why a [`ProgramOfThought`] call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProgramOfThoughtError {
    /// A step's call failed.
    #[error(transparent)]
    Step(#[from] Error),
    /// Every try wrote code that did not parse or run (DSPy's "Max hops reached").
    #[error("the code failed {tries} times; the last error: {error}")]
    MaxIters {
        /// Tries made.
        tries: usize,
        /// The last code.
        code: String,
        /// Its error.
        error: String,
    },
}

impl<S: Signature> ProgramOfThought<S> {
    /// Writes and runs code until it runs (or the tries are spent), then reads the outputs.
    async fn run(&self, input: &S::Input) -> Result<S::Output, ProgramOfThoughtError> {
        let mut inputs: Fields = to_fields(input)?;
        let text = |fields: &Fields| {
            fields
                .get("generated_code")
                .map(crate::python::py_str)
                .unwrap_or_default()
        };
        let generated = self.generate.forward(&inputs).await?.outputs;
        let mut code = text(&generated);
        let (mut attempt, mut outcome) = self.try_code(&code).await;
        let mut tries = 1;
        while let Err(error) = &outcome {
            if tries >= self.max_iters {
                return Err(ProgramOfThoughtError::MaxIters {
                    tries,
                    code: attempt.unwrap_or(code),
                    error: error.clone(),
                });
            }
            let previous = attempt.clone().unwrap_or_else(|_| code.clone());
            inputs.insert("previous_code".into(), previous.into());
            inputs.insert("error".into(), error.clone().into());
            let generated = self.regenerate.forward(&inputs).await?.outputs;
            code = text(&generated);
            (attempt, outcome) = self.try_code(&code).await;
            tries += 1;
        }
        inputs.remove("previous_code");
        inputs.remove("error");
        let output = outcome.unwrap_or_default();
        inputs.insert(
            "final_generated_code".into(),
            attempt.unwrap_or(code).into(),
        );
        inputs.insert("code_output".into(), output.into());
        let answered = self.answer.forward(&inputs).await?.outputs;
        Ok(from_fields(&answered)?)
    }
}

impl<S: Signature> Predictors for ProgramOfThought<S> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        vec![
            ("code_generate.predict".into(), &self.generate),
            ("code_regenerate.predict".into(), &self.regenerate),
            ("generate_output.predict".into(), &self.answer),
        ]
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        vec![
            ("code_generate.predict".into(), &mut self.generate),
            ("code_regenerate.predict".into(), &mut self.regenerate),
            ("generate_output.predict".into(), &mut self.answer),
        ]
    }
}

impl<S: Signature> Module for ProgramOfThought<S> {
    type Input = S::Input;
    type Output = S::Output;
    type Error = ProgramOfThoughtError;

    async fn call(&self, input: S::Input) -> Result<S::Output, ProgramOfThoughtError> {
        self.run(&input).await
    }
}

impl From<crate::blocking::BlockingError> for ProgramOfThoughtError {
    fn from(error: crate::blocking::BlockingError) -> Self {
        ProgramOfThoughtError::Step(error.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_is_parsed_as_dspy_parses_it() {
        assert_eq!(
            parse_code("```javascript\nconst x = 2 + 3\n```").unwrap(),
            "const x = 2 + 3\nx"
        );
        assert_eq!(
            parse_code("SUBMIT({a: 1})\n---\nnotes").unwrap(),
            "SUBMIT({a: 1})\n"
        );
        assert_eq!(parse_code("a = 1\n\n\nb = 2").unwrap(), "a = 1\na");
        // DSPy's rule: one line with two `=` is not code it runs.
        assert!(parse_code("x == 2").is_err());
        assert_eq!(parse_code("x === 2\n").unwrap(), "x === 2\n");
        assert!(parse_code("").is_err());
        assert!(parse_code("a = b = c").is_err());
    }
}
