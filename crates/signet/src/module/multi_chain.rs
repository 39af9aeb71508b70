//! [`MultiChainComparison`]: given M completions of a signature (each with its reasoning), one
//! more call reads them all and writes a corrected reasoning and the answer (DSPy's
//! `dspy.MultiChainComparison`).

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CallConfig, DynPredict, Module, Predictors, from_fields, to_fields};
use crate::adapter::Fields;
use crate::error::Error;
use crate::lm::LmOptions;
use crate::signature::{DynSignature, Field, Signature};

/// The temperature DSPy's `MultiChainComparison` sends.
const TEMPERATURE: f32 = 0.7;

/// Compares M completions of the signature `S` — M [`ChainOfThought`](super::ChainOfThought)
/// runs, say — and answers once more from all of them (DSPy's `dspy.MultiChainComparison`).
///
/// Its predictor (`predict`, as DSPy names it) has `S`'s fields, one input per attempt
/// (`reasoning_attempt_1`, ..: `«I'm trying to <first line of the reasoning> I'm not sure but my
/// prediction is <first line of the last output>»`) and a first output `rationale`, and sends
/// temperature 0.7 — DSPy's prompt and settings, byte for byte.
///
/// ```
/// use signet::module::{MultiChainComparison, Reasoned};
/// use signet::prelude::*;
/// use signet::testing::ScriptedLm;
///
/// /// Answer the question.
/// #[derive(Signature)]
/// struct QA { #[input] question: String, #[output] answer: String }
///
/// let attempt = |reasoning: &str, answer: &str| Reasoned {
///     reasoning: reasoning.into(),
///     output: QAOutput { answer: answer.into() },
/// };
/// let lm = ScriptedLm::texts(["[[ ## rationale ## ]]\nTwo say Brussels.\n\n[[ ## answer ## ]]\nBrussels"]);
/// let compare = MultiChainComparison::<QA>::new(2).with_lm(lm);
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let out = compare
///     .compare(
///         QAInput { question: "Capital of Belgium?".into() },
///         &[attempt("It is the seat of government.", "Brussels"), attempt("A port.", "Antwerp")],
///     )
///     .await
///     .unwrap();
/// assert_eq!((out.rationale.as_str(), out.output.answer.as_str()), ("Two say Brussels.", "Brussels"));
/// # });
/// ```
pub struct MultiChainComparison<S: Signature> {
    inner: DynPredict,
    m: usize,
    /// The signature's last output: the answer each attempt is summed up by.
    last_key: String,
    _signature: PhantomData<fn() -> S>,
}

impl<S: Signature> Clone for MultiChainComparison<S> {
    fn clone(&self) -> Self {
        MultiChainComparison {
            inner: self.inner.clone(),
            m: self.m,
            last_key: self.last_key.clone(),
            _signature: PhantomData,
        }
    }
}

/// The output of [`MultiChainComparison`]: the corrected reasoning and the outputs. Serialized,
/// `rationale` is one more field beside the outputs'.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compared<T> {
    /// The reasoning written after reading every attempt.
    pub rationale: String,
    /// The outputs.
    #[serde(flatten)]
    pub output: T,
}

/// What [`MultiChainComparison`] takes as a [`Module`]: the input and the completions to compare
/// (each an object with `reasoning` or `rationale` and the signature's last output).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Completions<I> {
    /// The signature's inputs.
    pub input: I,
    /// The completions, M of them.
    pub completions: Vec<Fields>,
}

impl<S: Signature> MultiChainComparison<S> {
    /// Compares `m` completions per call.
    pub fn new(m: usize) -> Self {
        let base = S::signature();
        let last_key = base
            .outputs()
            .last()
            .map(|f| f.name().to_owned())
            .unwrap_or_default();
        MultiChainComparison {
            inner: DynPredict::new(comparison_signature(base, m))
                .with_options(LmOptions::new().temperature(TEMPERATURE)),
            m,
            last_key,
            _signature: PhantomData,
        }
    }

    crate::shared::forward_builders! {
        inner;
        /// Uses `lm` for every call (see [`DynPredict::with_lm`]).
        fn with_lm(lm: impl crate::lm::Lm + 'static);
        /// Uses `adapter` for every call.
        fn with_adapter(adapter: impl crate::adapter::Adapter + 'static);
        /// Sampling options (default: temperature 0.7, as DSPy).
        fn with_options(options: LmOptions);
    }

    /// The untyped predictor inside.
    pub fn predictor(&self) -> &DynPredict {
        &self.inner
    }

    /// Compares `completions` (M of them: anything that serializes to an object with `reasoning`
    /// or `rationale` and the signature's last output, such as `ChainOfThought`'s
    /// [`Reasoned`](super::Reasoned)) and answers `input` once more.
    pub async fn compare<C: Serialize>(
        &self,
        input: S::Input,
        completions: &[C],
    ) -> Result<Compared<S::Output>, Error> {
        self.compare_with(input, completions, &CallConfig::default())
            .await
    }

    /// [`compare`](Self::compare) with per-call settings (see [`CallConfig`]).
    pub async fn compare_with<C: Serialize>(
        &self,
        input: S::Input,
        completions: &[C],
        call: &CallConfig,
    ) -> Result<Compared<S::Output>, Error> {
        let completions = completions
            .iter()
            .map(to_fields)
            .collect::<Result<Vec<_>, _>>()?;
        let mut inputs = self.attempts(&completions)?;
        inputs.extend(to_fields(&input)?);
        let mut outputs = self.inner.forward_with(&inputs, call).await?.outputs;
        let rationale = match outputs.shift_remove("rationale") {
            Some(Value::String(text)) => text,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        Ok(Compared {
            rationale,
            output: from_fields(&outputs)?,
        })
    }

    /// The attempt inputs, `reasoning_attempt_1` .. `reasoning_attempt_M`, as DSPy writes them.
    fn attempts(&self, completions: &[Fields]) -> Result<Fields, Error> {
        if completions.len() != self.m {
            return Err(Error::Completions {
                message: format!(
                    "{} completions were given; this MultiChainComparison compares {} (its M)",
                    completions.len(),
                    self.m
                ),
            });
        }
        let first_line = |text: &str| {
            let text = crate::python::strip(text);
            crate::python::strip(text.split('\n').next().unwrap_or_default()).to_owned()
        };
        completions
            .iter()
            .enumerate()
            .map(|(i, completion)| {
                let missing = |what: &str| Error::Completions {
                    message: format!("completion {} has no `{what}`", i + 1),
                };
                let reasoning = completion
                    .get("rationale")
                    .or_else(|| completion.get("reasoning"))
                    .ok_or_else(|| missing("reasoning"))?;
                let answer = completion
                    .get(&self.last_key)
                    .ok_or_else(|| missing(&self.last_key))?;
                let attempt = format!(
                    "«I'm trying to {} I'm not sure but my prediction is {}»",
                    first_line(&crate::python::py_str(reasoning)),
                    first_line(&crate::python::py_str(answer))
                );
                Ok((format!("reasoning_attempt_{}", i + 1), attempt.into()))
            })
            .collect()
    }
}

/// `base` with DSPy's attempt inputs appended and `rationale` output first.
fn comparison_signature(base: &DynSignature, m: usize) -> DynSignature {
    let mut signature = base.clone();
    for i in 1..=m {
        signature = signature.with_input(
            Field::str(format!("reasoning_attempt_{i}"))
                .with_prefix(format!("Student Attempt #{i}:"))
                .with_desc("${reasoning attempt}"),
        );
    }
    signature.insert_output(
        0,
        Field::str("rationale")
            .with_prefix("Accurate Reasoning: Thank you everyone. Let's now holistically")
            .with_desc("${corrected reasoning}"),
    );
    signature
}

impl<S: Signature> Predictors for MultiChainComparison<S> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        vec![("predict".to_owned(), &self.inner)]
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        vec![("predict".to_owned(), &mut self.inner)]
    }
}

impl<S: Signature> Module for MultiChainComparison<S> {
    type Input = Completions<S::Input>;
    type Output = Compared<S::Output>;
    type Error = Error;

    async fn call(&self, input: Completions<S::Input>) -> Result<Compared<S::Output>, Error> {
        self.compare(input.input, &input.completions).await
    }
}
