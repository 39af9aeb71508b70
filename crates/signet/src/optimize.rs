//! Optimizers: compile a program into better demos, as DSPy's teleprompters do, with DSPy's
//! choices (the same seeds pick the same examples as Python's `random.Random`), concurrent runs,
//! and a report of what happened.
//!
//! * [`LabeledFewShot`]: `k` training examples as demos on every predictor (no LM calls).
//! * [`BootstrapFewShot`]: runs a teacher (the program itself, with labeled demos) on training
//!   examples; every run the metric accepts gives each predictor a demo of what it was given and
//!   what it answered. Works for any program: intermediate steps get demos although only the
//!   final output has a label.
//! * [`BootstrapFewShotWithRandomSearch`]: several bootstrapped candidates (zero-shot,
//!   labeled-only, then bootstrap runs on reshuffled training sets), each scored on a validation
//!   set; the best wins.
//! * [`KnnFewShot`]: at each call, the training examples nearest to the inputs become the demos
//!   (DSPy's `KNNFewShot`; nearness by word overlap on the input fields, no model needed).
//! * [`Gepa`]: rewrites each predictor's instructions from a reflection LM's reading of runs and
//!   the metric's feedback.
//! * [`MiproV2`]: searches instructions and demo sets together with a seeded TPE sampler.
//!
//! Every optimizer's `compile` is async (`compile_blocking` for sync code) and returns
//! [`Compiled`]: the program and a report of what happened.
//!
//! A compiled program saves in DSPy's format ([`save`](crate::module::Predictors::save)) and
//! loads in Python, and the other way round.
//!
//! ```
//! use signet::data::{Dataset, Example};
//! use signet::evaluate::exact_match;
//! use signet::testing::ScriptedLm;
//! use signet::optimize::BootstrapFewShot;
//! use signet::prelude::*;
//!
//! /// Answer with one word.
//! #[derive(Signature)]
//! struct Ask { #[input] question: String, #[output] answer: String }
//!
//! let trainset: Dataset = [("2 + 2?", "4"), ("3 + 3?", "6")]
//!     .into_iter()
//!     .map(|(q, a)| Example::new(serde_json::json!({"question": q, "answer": a})).with_inputs(["question"]))
//!     .collect();
//! let student = Predict::<Ask>::new()
//!     .with_lm(ScriptedLm::texts(["[[ ## answer ## ]]\n4", "[[ ## answer ## ]]\n7"]));
//! let compiled = BootstrapFewShot::new(exact_match("answer"))
//!     .with_max_labeled_demos(0)
//!     .with_concurrency(1)
//!     .compile_blocking(&student, &trainset)
//!     .unwrap();
//! let demos = compiled.program.predictor().demos();
//! assert_eq!(demos.len(), 1);
//! assert_eq!(demos[0]["augmented"], true);
//! assert_eq!(demos[0]["answer"], "4");
//! assert_eq!(compiled.report.bootstrapped, 1);
//! ```

mod bootstrap;
mod copro;
mod ensemble;
mod gepa;
mod knn;
mod mipro;
mod optimizer;
mod random_search;
mod run_fingerprint;
mod run_settings;

use std::sync::Arc;

use crate::adapter::Fields;
use crate::data::{Example, PyRandom};
use crate::evaluate::ExampleError;
use crate::module::Predictors;

pub use bootstrap::{BootstrapFewShot, BootstrapReport};
pub use copro::{Copro, CoproCandidate, CoproReport};
pub use ensemble::{Ensemble, Ensembled};
pub use gepa::{
    CandidateSelection, ComponentSelection, Gepa, GepaBudget, GepaCandidate, GepaReport, GepaStop,
    MetricFeedback, PredictorFeedback,
};
pub use knn::{KnnFewShot, KnnReport};
pub use mipro::{
    DemoSetKind, MiproBudget, MiproChoice, MiproReport, MiproStop, MiproTrial, MiproV2, TrialKind,
};
pub use optimizer::Optimizer;
pub use random_search::{BootstrapFewShotWithRandomSearch, Candidate, SearchReport};

/// A compiled program and what the optimizer did to get it.
#[derive(Debug, Clone)]
pub struct Compiled<P, R> {
    /// The program with its new demos (and instructions, for instruction optimizers).
    pub program: P,
    /// What happened.
    pub report: R,
}

/// Why an optimizer stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OptimizeError {
    /// Too many training runs failed (see `with_max_errors`): the LM is likely unreachable or
    /// misconfigured.
    #[error("{errors} training runs failed (the limit is {max_errors}); the first error: {first}")]
    TooManyErrors {
        /// How many failed.
        errors: usize,
        /// The limit.
        max_errors: usize,
        /// The first failure.
        first: ExampleError,
    },
    /// The teacher is not shaped like the student.
    #[error("the teacher does not match the student: {reason}")]
    TeacherMismatch {
        /// What differs.
        reason: String,
    },
    /// No candidate program was evaluated (the search's `restrict` matched no seed).
    #[error("no candidate program was evaluated: {reason}")]
    NoCandidates {
        /// Why.
        reason: String,
    },
    /// The optimizer cannot run with these settings or data (no training examples, a program
    /// without predictors).
    #[error("{reason}")]
    Settings {
        /// What is wrong.
        reason: String,
    },
    /// The run's log directory could not be written, or holds a state that cannot be resumed.
    #[error("run log {path}: {reason}")]
    RunLog {
        /// The file or directory.
        path: std::path::PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The blocking entry point could not run (see [`crate::blocking`]).
    #[error(transparent)]
    Blocking(#[from] crate::blocking::BlockingError),
    /// The training examples could not be embedded ([`KnnFewShot::with_embedder`]).
    #[error("the training examples could not be embedded: {0}")]
    Embed(#[from] crate::embed::EmbedError),
    /// An evaluation stopped at its [budget](crate::evaluate::Evaluate::with_budget).
    #[error("an evaluation stopped: {0}")]
    Budget(crate::lm::BudgetExceeded),
}

/// An evaluation that stopped on its error limit stops the optimizer, with the first failure.
impl<O> From<crate::evaluate::EvaluateError<O>> for OptimizeError {
    fn from(error: crate::evaluate::EvaluateError<O>) -> OptimizeError {
        match error {
            crate::evaluate::EvaluateError::TooManyErrors {
                errors,
                max_errors,
                report,
                ..
            } => OptimizeError::TooManyErrors {
                errors,
                max_errors,
                first: report.errors().next().map(|(_, e)| e.clone()).unwrap_or(
                    ExampleError::Metric {
                        message: "unknown".into(),
                    },
                ),
            },
            crate::evaluate::EvaluateError::Blocking(error) => error.into(),
            crate::evaluate::EvaluateError::Budget { exceeded, .. } => {
                OptimizeError::Budget(exceeded)
            }
        }
    }
}

/// One call of an optimizer's own signature (a proposer's) on the Chat adapter, as DSPy's proposers
/// make it: the reply's fields, its usage added to `usage`. Without `lm`, the LM the call resolves
/// (the [configured](crate::module::configure) one).
pub(crate) async fn ask_prompt_model(
    signature: crate::signature::DynSignature,
    lm: Option<&Arc<dyn crate::lm::Lm>>,
    options: crate::lm::LmOptions,
    inputs: &Fields,
    usage: &mut crate::lm::Usage,
) -> Result<Fields, crate::Error> {
    let mut predictor = crate::module::DynPredict::new(signature)
        .with_adapter(crate::adapter::ChatAdapter::new())
        .with_options(options);
    if let Some(lm) = lm {
        predictor = predictor.with_lm(lm.clone());
    }
    let prediction = predictor
        .forward_counting(inputs, &crate::module::CallConfig::default(), usage)
        .await?;
    Ok(prediction.outputs)
}

/// Appends one JSON line to a run log, synced before it returns (see
/// [`crate::fs_atomic::append_line`]).
pub(crate) fn append_jsonl(
    path: &std::path::Path,
    entry: &serde_json::Value,
) -> Result<(), OptimizeError> {
    crate::fs_atomic::append_line(path, &entry.to_string()).map_err(|source| {
        OptimizeError::RunLog {
            path: path.to_owned(),
            reason: source.to_string(),
        }
    })
}

/// DSPy's `LabeledFewShot`: `k` training examples (inputs and labels) as demos on every
/// predictor, sampled as Python's `random.Random(0).sample` samples them (or the first `k`, with
/// [`without_sampling`](Self::without_sampling)). No LM calls.
///
/// `compile` has the shape of every optimizer's: async, returning [`Compiled`] with the program
/// and a [`LabeledReport`] of which training examples each predictor got. It never fails and never
/// waits ([`compile_blocking`](Self::compile_blocking) needs no runtime).
///
/// ```
/// use signet::data::Example;
/// use signet::optimize::LabeledFewShot;
/// use signet::prelude::*;
/// # #[derive(Signature)]
/// # struct Ask { #[input] question: String, #[output] answer: String }
/// let trainset: Vec<Example> = (0..10)
///     .map(|i| Example::new(serde_json::json!({"question": format!("{i} + {i}?"), "answer": (2 * i).to_string()})).with_inputs(["question"]))
///     .collect();
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let compiled = LabeledFewShot::new(4).compile(&Predict::<Ask>::new(), &trainset).await?;
/// let picked: Vec<&str> = compiled.program.predictor().demos().iter().map(|d| d["question"].as_str().unwrap()).collect();
/// assert_eq!(picked, ["6 + 6?", "9 + 9?", "0 + 0?", "2 + 2?"]); // Python: Random(0).sample(range(10), 4) == [6, 9, 0, 2]
/// assert_eq!(compiled.report.demos, [("self".to_owned(), vec![6, 9, 0, 2])]); // a lone Predict is `self`, as in DSPy
/// assert_eq!(compiled.report.to_string(), "self: training examples 6, 9, 0, 2");
/// # Ok::<(), signet::optimize::OptimizeError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct LabeledFewShot {
    k: usize,
    sample: bool,
}

/// What [`LabeledFewShot`] did: which training examples became each predictor's demos.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabeledReport {
    /// Each predictor's path and the training-set indices of its demos, in demo order (empty
    /// for every predictor when the training set is empty).
    pub demos: Vec<(String, Vec<usize>)>,
}

/// One line: each predictor and the training examples it got.
impl std::fmt::Display for LabeledReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.demos.is_empty() {
            return write!(f, "no predictors");
        }
        for (i, (path, indices)) in self.demos.iter().enumerate() {
            if i > 0 {
                write!(f, "; ")?;
            }
            if indices.is_empty() {
                write!(f, "{path}: no demos")?;
            } else {
                let list: Vec<String> = indices.iter().map(ToString::to_string).collect();
                write!(f, "{path}: training examples {}", list.join(", "))?;
            }
        }
        Ok(())
    }
}

impl LabeledFewShot {
    /// `k` demos per predictor (DSPy's default is 16).
    pub fn new(k: usize) -> LabeledFewShot {
        LabeledFewShot { k, sample: true }
    }

    /// Takes the first `k` examples instead of a seeded sample.
    pub fn without_sampling(mut self) -> LabeledFewShot {
        self.sample = false;
        self
    }

    /// A copy of `student` whose predictors have `k` labeled demos each (their earlier demos
    /// dropped; instructions and LMs kept), and which examples each got. Async and fallible only
    /// to have the shape of the other optimizers' `compile`: it makes no LM call and returns
    /// `Ok`.
    pub async fn compile<P: Predictors + Clone>(
        &self,
        student: &P,
        trainset: &[Example],
    ) -> Result<Compiled<P, LabeledReport>, OptimizeError> {
        Ok(self.labeled(student, trainset))
    }

    /// [`compile`](Self::compile) from sync code (it needs no runtime: nothing waits).
    ///
    /// ```
    /// # use signet::data::Example;
    /// # use signet::optimize::LabeledFewShot;
    /// # use signet::prelude::*;
    /// # #[derive(Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let trainset = vec![Example::new(serde_json::json!({"question": "1 + 1?", "answer": "2"})).with_inputs(["question"])];
    /// let compiled = LabeledFewShot::new(4).compile_blocking(&Predict::<Ask>::new(), &trainset)?;
    /// assert_eq!(compiled.program.predictor().demos()[0]["answer"], "2");
    /// # Ok::<(), signet::optimize::OptimizeError>(())
    /// ```
    pub fn compile_blocking<P: Predictors + Clone>(
        &self,
        student: &P,
        trainset: &[Example],
    ) -> Result<Compiled<P, LabeledReport>, OptimizeError> {
        Ok(self.labeled(student, trainset))
    }

    /// The compile itself (the other optimizers build their labeled teachers with it).
    pub(crate) fn labeled<P: Predictors + Clone>(
        &self,
        student: &P,
        trainset: &[Example],
    ) -> Compiled<P, LabeledReport> {
        let mut program = reset_copy(student);
        let mut random = PyRandom::new(0);
        let k = self.k.min(trainset.len());
        let mut report = LabeledReport::default();
        for (path, predictor) in program.named_predictors_mut() {
            let picked: Vec<usize> = if trainset.is_empty() {
                Vec::new()
            } else if self.sample {
                random.sample_indices(trainset.len(), k)
            } else {
                (0..k).collect()
            };
            predictor.set_demos(
                picked
                    .iter()
                    .map(|&i| trainset[i].values().clone())
                    .collect(),
            );
            report.demos.push((path, picked));
        }
        Compiled { program, report }
    }
}

/// `valset` is not used: labeled demos compare nothing.
impl<P: crate::module::Module + Clone> Optimizer<P> for LabeledFewShot {
    type Report = LabeledReport;

    async fn compile(
        &self,
        student: &P,
        trainset: &[Example],
        _valset: &[Example],
    ) -> Result<Compiled<P, LabeledReport>, OptimizeError> {
        Ok(self.labeled(student, trainset))
    }
}

/// A copy of `program` with every predictor's demos cleared (DSPy's `reset_copy`; instructions,
/// settings and LMs are kept).
pub fn reset_copy<P: Predictors + Clone>(program: &P) -> P {
    let mut copy = program.clone();
    for (_, predictor) in copy.named_predictors_mut() {
        predictor.set_demos(Vec::new());
    }
    copy
}

/// A demo from a run: `augmented: true` first, as DSPy writes bootstrapped demos, then the
/// predictor's inputs and outputs.
fn augmented(entry: &crate::trace::TraceEntry) -> Fields {
    let mut demo = Fields::new();
    demo.insert("augmented".into(), serde_json::Value::Bool(true));
    demo.extend(entry.demo());
    demo
}

/// The LM a teacher runs with, when it differs from the student's.
type TeacherLm = Option<Arc<dyn crate::lm::Lm>>;

/// Runs an optimizer's compile inside its `optimize` span: the compiled program's version, or
/// the error, recorded on it.
pub(crate) async fn traced<P: Predictors, R>(
    optimizer: &str,
    trainset: usize,
    valset: usize,
    compile: impl std::future::Future<Output = Result<Compiled<P, R>, OptimizeError>>,
) -> Result<Compiled<P, R>, OptimizeError> {
    use tracing::Instrument;
    let span = crate::telemetry::optimize_span(optimizer, trainset, valset);
    let result = compile.instrument(span.clone()).await;
    if !span.is_disabled() {
        match &result {
            Ok(compiled) => {
                span.record("gen_ai.agent.version", compiled.program.version());
            }
            Err(error) => crate::telemetry::record_error(&span, "optimize", error),
        }
    }
    result
}
