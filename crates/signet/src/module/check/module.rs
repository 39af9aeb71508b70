//! Checks around a program of your own: [`Checked`] runs it, checks its typed output, and on a
//! failure runs it again with every predictor shown the failure's message.

use std::sync::Arc;

use super::{CheckFailure, ChecksFailed, FailedAttempt};
use crate::module::hint_adapter::HintAdapter;
use crate::module::{DynPredict, DynReAct, Module, Predictors};

/// A typed check of a program's output.
type ProgramCheck<I, O> = Arc<dyn Fn(&I, &O) -> Result<(), String> + Send + Sync>;

/// A check with its name.
type NamedCheck<I, O> = (String, ProgramCheck<I, O>);

/// A fallback of a program's own: its output from the input and the refused attempts.
type ProgramFallback<I, O> = Arc<dyn Fn(&I, &[FailedAttempt]) -> Option<O> + Send + Sync>;

/// A program of your own with output checks: `module` runs; when a check refuses its output,
/// it runs again — at most [`with_max_reasks`](Self::with_max_reasks) times (default 2) — with
/// every predictor inside given one more input, DSPy's `hint_`, holding the failures' messages
/// (as [`Refine`](crate::module::Refine) shows its advice). After the last re-ask the call fails
/// with [`CheckedError::Checks`], holding every attempt, unless a
/// [fallback](Self::with_fallback) answers.
///
/// Its predictors are the wrapped program's, under the same paths (a saved program loads in
/// either). `Predict`, `ChainOfThought` and `ReAct` take checks of their own (`with_check`);
/// this wrapper is for programs that compose modules.
///
/// ```
/// use signet::module::check::Checked;
/// use signet::module::{Module, Predict};
/// use signet::prelude::*;
/// use signet::testing::ScriptedLm;
///
/// /// Answer in one word.
/// #[derive(Signature)]
/// struct QA { #[input] question: String, #[output] answer: String }
///
/// let reply = |a: &str| format!("[[ ## answer ## ]]\n{a}\n\n[[ ## completed ## ]]");
/// let lm = std::sync::Arc::new(ScriptedLm::texts([reply("It is Brussels"), reply("Brussels")]));
/// let checked = Checked::new(Predict::<QA>::new().with_lm(lm.clone()))
///     .with_check("one word", |_, out: &QAOutput| match out.answer.split_whitespace().count() {
///         1 => Ok(()),
///         n => Err(format!("the answer has {n} words: give one")),
///     });
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let out = checked.call(QAInput { question: "Capital of Belgium?".into() }).await.unwrap();
/// assert_eq!(out.answer, "Brussels");
/// assert!(lm.requests()[1].messages[1].content.contains("the answer has 3 words"));
/// # });
/// ```
pub struct Checked<M: Module> {
    module: M,
    checks: Vec<NamedCheck<M::Input, M::Output>>,
    max_reasks: usize,
    fallback: Option<ProgramFallback<M::Input, M::Output>>,
}

impl<M: Module + Clone> Clone for Checked<M> {
    fn clone(&self) -> Self {
        Checked {
            module: self.module.clone(),
            checks: self.checks.clone(),
            max_reasks: self.max_reasks,
            fallback: self.fallback.clone(),
        }
    }
}

/// Why a [`Checked`] program gave no output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckedError<E> {
    /// The program itself failed (on the first attempt or a re-ask).
    #[error(transparent)]
    Module(E),
    /// Its output failed the checks on every attempt.
    #[error(transparent)]
    Checks(ChecksFailed),
}

impl<M: Module + Clone> Checked<M>
where
    M::Input: Clone,
{
    /// `module` with no checks yet.
    pub fn new(module: M) -> Checked<M> {
        Checked {
            module,
            checks: Vec::new(),
            max_reasks: super::DEFAULT_MAX_REASKS,
            fallback: None,
        }
    }

    /// Adds the check called `name`: `check` accepts the input and output, or says what is wrong.
    pub fn with_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&M::Input, &M::Output) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push((name.into(), Arc::new(check)));
        self
    }

    /// At most `n` re-asks after a refused output (default 2; 0 checks without re-asking).
    pub fn with_max_reasks(mut self, n: usize) -> Self {
        self.max_reasks = n;
        self
    }

    /// When every attempt was refused: the output `fallback` makes of the input and the
    /// attempts, instead of [`CheckedError::Checks`] (`None` from it: the error all the same).
    pub fn with_fallback(
        mut self,
        fallback: impl Fn(&M::Input, &[FailedAttempt]) -> Option<M::Output> + Send + Sync + 'static,
    ) -> Self {
        self.fallback = Some(Arc::new(fallback));
        self
    }

    /// The wrapped program.
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The failures of `output`.
    fn judge(&self, input: &M::Input, output: &M::Output) -> Vec<CheckFailure> {
        self.checks
            .iter()
            .filter_map(|(name, check)| {
                let verdict =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(input, output)))
                        .unwrap_or_else(|panic| {
                            Err(format!(
                                "the check panicked: {}",
                                crate::shared::panic_text(&*panic)
                            ))
                        });
                verdict.err().map(|message| {
                    tracing::info!(
                        target: crate::telemetry::TARGET,
                        check = %name,
                        %message,
                        "signet.check.failed"
                    );
                    CheckFailure::new(name, message)
                })
            })
            .collect()
    }

    /// The program, its predictors shown `hint`.
    fn hinted(&self, hint: &str) -> M {
        let mut copy = self.module.clone();
        let originals = self.module.named_predictors();
        for ((_, original), (_, predictor)) in originals.iter().zip(copy.named_predictors_mut()) {
            // The copy's calls belong to the original predictors (in traces and demos).
            predictor.id = original.id;
            let inner = predictor.adapter_without_call();
            predictor.adapter = Some(Arc::new(HintAdapter {
                inner,
                hint: hint.to_owned(),
            }));
        }
        copy
    }

    /// Runs the program, re-asking while its output fails the checks.
    pub async fn call_checked(&self, input: M::Input) -> Result<M::Output, CheckedError<M::Error>> {
        let mut attempts: Vec<FailedAttempt> = Vec::new();
        let mut hint: Option<String> = None;
        loop {
            let output = match &hint {
                None => self.module.call(input.clone()).await,
                Some(hint) => self.hinted(hint).call(input.clone()).await,
            }
            .map_err(CheckedError::Module)?;
            let failures = self.judge(&input, &output);
            if failures.is_empty() {
                return Ok(output);
            }
            let attempt = FailedAttempt::new(M::output_fields(&output), failures);
            let message = attempt.message();
            attempts.push(attempt);
            if attempts.len() > self.max_reasks {
                break;
            }
            crate::trace::record_usage(crate::lm::Usage {
                reasks: 1,
                ..crate::lm::Usage::default()
            });
            hint = Some(message);
        }
        if let Some(output) = self.fallback.as_ref().and_then(|f| f(&input, &attempts)) {
            return Ok(output);
        }
        Err(CheckedError::Checks(ChecksFailed::new(attempts)))
    }
}

impl<M: Module> Predictors for Checked<M> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        self.module.named_predictors()
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        self.module.named_predictors_mut()
    }

    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        self.module.named_react_loops()
    }

    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        self.module.named_react_loops_mut()
    }
}

impl<M: Module + Clone> Module for Checked<M>
where
    M::Input: Clone,
{
    type Input = M::Input;
    type Output = M::Output;
    type Error = CheckedError<M::Error>;

    async fn call(&self, input: M::Input) -> Result<M::Output, CheckedError<M::Error>> {
        self.call_checked(input).await
    }

    fn output_fields(output: &M::Output) -> crate::adapter::Fields {
        M::output_fields(output)
    }
}
