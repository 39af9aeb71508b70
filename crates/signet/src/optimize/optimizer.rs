//! The contract every optimizer keeps ([`Optimizer`]).

use std::future::Future;

use super::{Compiled, OptimizeError};
use crate::data::Example;
use crate::module::Module;

/// What every optimizer does: compiles a student program on training data into a better copy of
/// it (new demos, new instructions), with a report of what it did. The student is never changed.
///
/// `valset` is where an optimizer that compares candidates scores them; each optimizer's page says
/// what it does with an empty one (DSPy's choice: GEPA and COPRO score on the training set,
/// MIPROv2 on the last 80% of it). Optimizers that compare nothing ([`LabeledFewShot`],
/// [`BootstrapFewShot`], [`KnnFewShot`]) take no validation set and ignore it.
///
/// Code that works with any optimizer takes an `O: Optimizer<P>`:
///
/// ```
/// use signet::data::Example;
/// use signet::optimize::{LabeledFewShot, OptimizeError, Optimizer};
/// use signet::prelude::*;
///
/// /// Answer with one word.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: String }
///
/// /// How many demos an optimizer gives a `Predict`.
/// fn demos_given<O: Optimizer<Predict<Ask>>>(optimizer: &O, trainset: &[Example]) -> Result<usize, OptimizeError> {
///     let compiled = optimizer.compile_blocking(&Predict::<Ask>::new(), trainset, &[])?;
///     Ok(compiled.program.predictor().demos().len())
/// }
///
/// let trainset: Vec<Example> = (0..5)
///     .map(|i| Example::new(serde_json::json!({"question": format!("{i}?"), "answer": "x"})).with_inputs(["question"]))
///     .collect();
/// assert_eq!(demos_given(&LabeledFewShot::new(3), &trainset).unwrap(), 3);
/// ```
///
/// [`LabeledFewShot`]: super::LabeledFewShot
/// [`BootstrapFewShot`]: super::BootstrapFewShot
/// [`KnnFewShot`]: super::KnnFewShot
pub trait Optimizer<P: Module + Clone> {
    /// What the optimizer reports about a compile.
    type Report: Send;

    /// Compiles `student`: a better copy of it, and the report. LM calls of the compile are
    /// recorded in the trace as one `optimize` span.
    fn compile(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> impl Future<Output = Result<Compiled<P, Self::Report>, OptimizeError>> + Send;

    /// [`compile`](Optimizer::compile) from sync code (see [`crate::blocking`] for the rule).
    fn compile_blocking(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, Self::Report>, OptimizeError> {
        crate::blocking::block_on(self.compile(student, trainset, valset))?
    }
}
