//! Evaluation: run a program over a dev set, score every output with a [`Metric`], and report
//! the average, each example's result, the LM usage and where time went — DSPy's `Evaluate`,
//! concurrent by default and honest about failures (a failed example scores 0 and keeps its
//! typed error; the report says how many failed and why).
//!
//! ```
//! use serde_json::json;
//! use signet::data::Dataset;
//! use signet::evaluate::{Evaluate, exact_match};
//! use signet::testing::ScriptedLm;
//! use signet::prelude::*;
//!
//! /// Answer with one word.
//! #[derive(Signature)]
//! struct Ask { #[input] question: String, #[output] answer: String }
//!
//! let devset = Dataset::from_jsonl_str(
//!     "{\"question\": \"Capital of France?\", \"answer\": \"Paris\"}\n\
//!      {\"question\": \"Capital of Japan?\", \"answer\": \"Tokyo\"}\n",
//!     &["question"],
//! ).unwrap();
//! let program = Predict::<Ask>::new().with_lm(ScriptedLm::texts([
//!     "[[ ## answer ## ]]\nParis",
//!     "[[ ## answer ## ]]\nKyoto",
//! ]));
//! let report = Evaluate::new(&devset, exact_match("answer"))
//!     .with_concurrency(1)
//!     .run_blocking(&program)
//!     .unwrap();
//! assert_eq!(report.score, 50.0);
//! assert_eq!(report.passed(), 1);
//! assert_eq!(report.results[1].fields()["answer"], "Kyoto");
//! ```

mod majority;
mod metric;
mod parallel;
mod pool;
mod progress;
mod report;

use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::{Mutex, OnceLock};

pub(crate) use crate::shared::panic_text;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::{self, Either};
use tokio_util::sync::ReusableBoxFuture;

use crate::data::Example;
use crate::lm::Usage;
use crate::module::Module;
use crate::trace::Trace;

pub use majority::{majority, majority_by};
pub(crate) use metric::Borrowed;
pub use metric::{
    FieldMatch, Metric, Predicted, Score, WithTrace, exact_match, f1, normalize_text, with_trace,
};
pub use parallel::{ItemError, Parallel, ParallelError, ParallelRun};
pub(crate) use progress::Bar;
pub use progress::Progress;
pub use report::{ExampleError, ExampleResult, Report};

/// How many examples run at once when neither the caller nor the program's LM says.
const DEFAULT_CONCURRENCY: usize = 8;

/// Runs a program over examples and scores it (see the [module docs](self)).
pub struct Evaluate<'d, M> {
    examples: &'d [Example],
    metric: M,
    /// `None`: the program's LM decides ([`concurrency_for`](Evaluate::concurrency_for)).
    concurrency: Option<usize>,
    progress: Progress,
    max_errors: Option<usize>,
    failure_score: f64,
    keep_traces: bool,
    budget: Option<crate::lm::Budget>,
}

/// Why an evaluation stopped before scoring every example.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvaluateError<O> {
    /// More examples failed than allowed ([`with_max_errors`](Evaluate::with_max_errors)); the
    /// report holds what finished.
    #[error(
        "{errors} examples failed (more than the {max_errors} allowed); the first error: {first}"
    )]
    TooManyErrors {
        /// How many failed.
        errors: usize,
        /// The limit.
        max_errors: usize,
        /// The first failure, in words.
        first: String,
        /// The examples that finished.
        report: Box<Report<O>>,
    },
    /// The blocking entry point could not run (see [`crate::blocking`]).
    #[error(transparent)]
    Blocking(#[from] crate::blocking::BlockingError),
    /// One more example would have gone past the evaluation's
    /// [budget](Evaluate::with_budget); the report holds the examples that ran.
    #[error("the evaluation stopped: {exceeded}")]
    Budget {
        /// Which cap, what was spent, what the next example was estimated at.
        exceeded: crate::lm::BudgetExceeded,
        /// The examples that ran.
        report: Box<Report<O>>,
    },
}

impl<'d, M> Evaluate<'d, M> {
    /// An evaluation of `examples` (a [`Dataset`](crate::data::Dataset), a `Vec` or a slice of
    /// [`Example`]s) with `metric`. Defaults: as many examples at a time as the program's LM
    /// decodes at once when it says (a local model's slots:
    /// [`concurrency_for`](Self::concurrency_for)), else 8; progress on a terminal, no error
    /// limit, failures scored 0.
    pub fn new(examples: &'d (impl AsRef<[Example]> + ?Sized), metric: M) -> Evaluate<'d, M> {
        Evaluate {
            examples: examples.as_ref(),
            metric,
            concurrency: None,
            progress: Progress::Auto,
            max_errors: None,
            failure_score: 0.0,
            keep_traces: false,
            budget: None,
        }
    }

    /// Stops starting examples once one more (of the average cost so far) would go past
    /// `budget` of tokens or dollars: the evaluation ends with [`EvaluateError::Budget`], its
    /// report holding the examples that ran. Examples already running finish (up to the
    /// [concurrency](Self::with_concurrency) start before the first one ends).
    ///
    /// ```
    /// use signet::evaluate::{Evaluate, EvaluateError, exact_match};
    /// use signet::lm::{Budget, Completion};
    /// use signet::module::Predict;
    /// use signet::testing::ScriptedLm;
    /// # #[derive(signet::Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let examples: Vec<_> = (0..10)
    ///     .map(|i| signet::data::Example::new(serde_json::json!({"question": i.to_string(), "answer": "4"})).with_inputs(["question"]))
    ///     .collect();
    /// let mut reply = Completion::text("[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]");
    /// reply.usage.prompt_tokens = 100;
    /// let lm = ScriptedLm::new(std::iter::repeat_n(reply, 10));
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let result = Evaluate::new(&examples, exact_match("answer"))
    ///     .with_concurrency(1)
    ///     .with_budget(Budget::tokens(350))
    ///     .run(&Predict::<Ask>::new().with_lm(lm))
    ///     .await;
    /// let Err(EvaluateError::Budget { report, .. }) = result else { panic!("over budget") };
    /// assert_eq!(report.results.len(), 3); // a fourth would have reached 400 tokens
    /// # });
    /// ```
    pub fn with_budget(mut self, budget: crate::lm::Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// How many examples run at once (at least 1). Each runs the whole program; its LM calls
    /// and tools overlap with the other examples'. Without it, see
    /// [`concurrency_for`](Self::concurrency_for).
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.concurrency = Some(n.max(1));
        self
    }

    /// How many examples of `program` run at once: the
    /// [`with_concurrency`](Self::with_concurrency) given, else the fewest requests any of the
    /// program's LMs decodes at once when they say
    /// ([`Capabilities::parallel_requests`](crate::lm::Capabilities::parallel_requests): a local
    /// model's slots; more examples would only wait at the server), else 8. The LMs are those
    /// the program's predictors call (their own, else the global one).
    ///
    /// ```
    /// use signet::data::Example;
    /// use signet::evaluate::{Evaluate, exact_match};
    /// use signet::lm::Capabilities;
    /// use signet::testing::ScriptedLm;
    /// use signet::prelude::*;
    /// # #[derive(Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let one_slot = ScriptedLm::texts(["[[ ## answer ## ]]\n4"])
    ///     .with_capabilities(Capabilities::llama_cpp().with_parallel_requests(1));
    /// let program = Predict::<Ask>::new().with_lm(one_slot);
    /// let devset: Vec<Example> = Vec::new();
    /// let evaluate = Evaluate::new(&devset, exact_match("answer"));
    /// assert_eq!(evaluate.concurrency_for(&program), 1);
    /// assert_eq!(evaluate.with_concurrency(4).concurrency_for(&program), 4);
    /// ```
    pub fn concurrency_for<P: crate::module::Predictors>(&self, program: &P) -> usize {
        self.concurrency.unwrap_or_else(|| {
            program
                .named_predictors()
                .into_iter()
                .filter_map(|(_, predictor)| {
                    let resolved = predictor
                        .resolve(&crate::module::CallConfig::default())
                        .ok()?;
                    resolved.lm.capabilities().parallel_requests
                })
                .min()
                .map_or(DEFAULT_CONCURRENCY, |n| n.max(1) as usize)
        })
    }

    crate::shared::setters! {
        /// How progress is shown (see [`Progress`]).
        fn with_progress(progress: Progress) { progress = progress }

        /// Stops with [`EvaluateError::TooManyErrors`] once more than `n` examples have failed (a
        /// dead endpoint fails fast instead of scoring 0 on every example).
        fn with_max_errors(n: usize) { max_errors = Some(n) }

        /// The score a failed example gets (default 0).
        fn with_failure_score(score: f64) { failure_score = score }

        /// Keeps each example's trace (its predictor calls) in the report, and shows it to the
        /// metric: what optimizers use.
        fn with_traces(keep: bool) { keep_traces = keep }
    }

    /// Runs `program` on every example and scores the outputs.
    pub async fn run<P>(&self, program: &P) -> Result<Report<P::Output>, EvaluateError<P::Output>>
    where
        P: Module,
        M: Metric<P::Output>,
    {
        self.run_until(program, std::future::pending::<()>()).await
    }

    /// [`run`](Self::run), stopped early when `cancel` completes: examples still running are
    /// dropped (their LM requests cancelled), finished ones are reported, and the report says it
    /// was cancelled.
    pub async fn run_until<P>(
        &self,
        program: &P,
        cancel: impl std::future::Future<Output = ()>,
    ) -> Result<Report<P::Output>, EvaluateError<P::Output>>
    where
        P: Module,
        M: Metric<P::Output>,
    {
        use tracing::Instrument;
        let span = crate::telemetry::evaluate_span(self.examples.len(), || {
            (crate::telemetry::short_type_name::<P>(), program.version())
        });
        let result = self
            .run_until_unspanned(program, cancel)
            .instrument(span.clone())
            .await;
        let report = match &result {
            Ok(report) => Some(report),
            Err(
                EvaluateError::TooManyErrors { report, .. } | EvaluateError::Budget { report, .. },
            ) => Some(&**report),
            Err(_) => None,
        };
        if let Some(report) = report.filter(|_| !span.is_disabled()) {
            span.record("signet.evaluate.score", report.score);
            span.record(
                "signet.evaluate.completed",
                crate::telemetry::int(report.results.len()),
            );
            span.record(
                "signet.evaluate.errors",
                crate::telemetry::int(report.results.iter().filter(|r| r.error.is_some()).count()),
            );
            span.record("signet.evaluate.cancelled", report.cancelled);
            crate::lm::record_usage(&span, &report.usage);
        }
        match &result {
            Err(error @ EvaluateError::Budget { .. }) => {
                crate::telemetry::record_error(&span, "budget_exceeded", error);
            }
            Err(error) => crate::telemetry::record_error(&span, "too_many_errors", error),
            Ok(_) => {}
        }
        result
    }

    async fn run_until_unspanned<P>(
        &self,
        program: &P,
        cancel: impl std::future::Future<Output = ()>,
    ) -> Result<Report<P::Output>, EvaluateError<P::Output>>
    where
        P: Module,
        M: Metric<P::Output>,
    {
        let started = Instant::now();
        let concurrency = self.concurrency_for(program);
        tracing::debug!(
            concurrency,
            examples = self.examples.len(),
            "evaluate: starting"
        );
        let bar = progress::Bar::new(self.progress, "evaluate", self.examples.len());
        let total = self.examples.len();
        let state = Mutex::new(Tally {
            next: self.examples.iter().enumerate(),
            results: Vec::with_capacity(total),
            sum: 0.0,
            errors: 0,
            usage: Usage::default(),
            over_budget: None,
        });
        let tally = || state.lock().unwrap_or_else(|e| e.into_inner());
        // The next example, unless what the ended ones spent says the budget would not hold.
        let next = || {
            let mut tally = tally();
            if tally.over_budget.is_some() {
                return None;
            }
            if let Some(budget) = &self.budget
                && let Err(exceeded) = budget.check_next(&tally.usage, tally.results.len() as u64)
            {
                tally.over_budget = Some(exceeded);
                return None;
            }
            tally.next.next()
        };
        let finished = |result: ExampleResult<P::Output>| {
            let mut tally = tally();
            tally.errors += usize::from(result.error.is_some());
            tally.sum += result.score.value;
            tally.usage += result.usage;
            tally.results.push(result);
            let (sum, done, errors) = (tally.sum, tally.results.len(), tally.errors);
            bar.advance(|| progress::average_line(sum, done, errors));
            match self.max_errors {
                Some(max_errors) if errors > max_errors => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            }
        };
        let slots = Mutex::new(Vec::new());
        let (flow, cancelled) = {
            let runs = pool::run_pooled(
                concurrency,
                next,
                |(index, example)| self.run_one_spanned(program, index, example, &slots),
                finished,
            );
            match future::select(pin!(cancel), pin!(runs)).await {
                Either::Left(((), _)) => (ControlFlow::Continue(()), true),
                Either::Right((flow, _)) => (flow, false),
            }
        };
        let Tally {
            mut results,
            errors,
            over_budget,
            ..
        } = state.into_inner().unwrap_or_else(|e| e.into_inner());
        bar.finish();
        results.sort_by_key(|r| r.index);
        if let (ControlFlow::Break(()), Some(max_errors)) = (flow, self.max_errors) {
            let first = results
                .iter()
                .find_map(|r| r.error.as_ref().map(ToString::to_string))
                .unwrap_or_default();
            let report = Report::new(results, total, started.elapsed(), false);
            return Err(EvaluateError::TooManyErrors {
                errors,
                max_errors,
                first,
                report: Box::new(report),
            });
        }
        if let Some(exceeded) = over_budget {
            let report = Report::new(results, total, started.elapsed(), false);
            return Err(EvaluateError::Budget {
                exceeded,
                report: Box::new(report),
            });
        }
        let cancelled = cancelled && results.len() < total;
        Ok(Report::new(results, total, started.elapsed(), cancelled))
    }

    /// [`run`](Self::run) from sync code (see [`crate::blocking`] for the rule).
    pub fn run_blocking<P>(
        &self,
        program: &P,
    ) -> Result<Report<P::Output>, EvaluateError<P::Output>>
    where
        P: Module,
        M: Metric<P::Output>,
    {
        crate::blocking::block_on(self.run(program))?
    }

    /// One example in its `evaluate_example` span: its score and feedback, or its error; with
    /// content capture, its inputs and the program's outputs.
    async fn run_one_spanned<'p, P>(
        &self,
        program: &'p P,
        index: usize,
        example: &Example,
        slots: &Slots<'p, P>,
    ) -> ExampleResult<P::Output>
    where
        P: Module,
        M: Metric<P::Output>,
    {
        use crate::telemetry::RecordContent;
        use tracing::Instrument;
        let span = crate::telemetry::example_span(index);
        span.record_content("signet.example.inputs", || {
            serde_json::to_string(&example.inputs()).unwrap_or_default()
        });
        let result = self
            .run_one(program, index, example, slots)
            .instrument(span.clone())
            .await;
        if !span.is_disabled() {
            span.record("signet.example.score", result.score.value);
            if let Some(feedback) = &result.score.feedback {
                span.record("signet.example.feedback", feedback.as_str());
            }
            span.record_content("signet.module.outputs", || {
                serde_json::to_string(result.fields()).unwrap_or_default()
            });
            if let Some(error) = &result.error {
                crate::telemetry::record_error(&span, error.kind(), error);
            }
        }
        result
    }

    async fn run_one<'p, P>(
        &self,
        program: &'p P,
        index: usize,
        example: &Example,
        slots: &Slots<'p, P>,
    ) -> ExampleResult<P::Output>
    where
        P: Module,
        M: Metric<P::Output>,
    {
        let started = Instant::now();
        let failed =
            |error: ExampleError, usage: Usage, trace: Trace, elapsed: Duration| ExampleResult {
                index,
                example: example.clone(),
                output: None,
                fields: OnceLock::new(),
                fields_of: P::output_fields,
                score: Score::new(self.failure_score),
                error: Some(error),
                usage,
                trace,
                elapsed,
            };
        let input = match input_of::<P>(example) {
            Ok(input) => input,
            Err(error) => return failed(error, Usage::default(), Trace::new(), started.elapsed()),
        };
        // Boxed where it is made (the program's future is large, and every layer around it
        // would move it whole), in a box an earlier example of this evaluation left.
        let program_run = crate::module::traced(program, input);
        let reused = slots.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut slot = match reused {
            Some(mut slot) => {
                slot.set(program_run);
                slot
            }
            None => ReusableBoxFuture::new(program_run),
        };
        let run = catch_panic(&mut slot);
        let (outcome, record) = if self.keep_traces {
            crate::trace::recorded(run).await
        } else {
            crate::trace::usage_of(run).await
        };
        slots.lock().unwrap_or_else(|e| e.into_inner()).push(slot);
        let elapsed = started.elapsed();
        let trace = if self.keep_traces {
            record.trace
        } else {
            Trace::new()
        };
        let output = match outcome {
            Ok(Ok(output)) => output,
            Ok(Err(error)) => {
                let error = ExampleError::Program {
                    message: error.to_string(),
                    source: std::sync::Arc::new(error),
                };
                return failed(error, record.usage, trace, elapsed);
            }
            Err(message) => {
                return failed(
                    ExampleError::Panicked { message },
                    record.usage,
                    trace,
                    elapsed,
                );
            }
        };
        let fields = P::output_fields(&output);
        let predicted = Predicted {
            output: &output,
            fields: &fields,
            trace: self.keep_traces.then_some(&trace),
        };
        let scored =
            std::panic::catch_unwind(AssertUnwindSafe(|| self.metric.score(example, &predicted)));
        // The result writes its fields again if asked (`ExampleResult::fields`) rather than
        // keeping this copy beside the typed output.
        drop(fields);
        let (score, error) = match scored {
            Ok(score) if score.value.is_finite() => (score, None),
            Ok(score) => (
                Score::new(self.failure_score),
                Some(ExampleError::Metric {
                    message: format!("the metric returned {}, not a finite number", score.value),
                }),
            ),
            Err(panic) => (
                Score::new(self.failure_score),
                Some(ExampleError::Metric {
                    message: format!("the metric panicked: {}", panic_text(&*panic)),
                }),
            ),
        };
        ExampleResult {
            index,
            example: example.clone(),
            output: Some(output),
            fields: OnceLock::new(),
            fields_of: P::output_fields,
            score,
            error,
            usage: record.usage,
            trace,
            elapsed,
        }
    }
}

/// Boxes for the program's futures, handed from an example that ended to the next one: a
/// program's future is a few KB, and a fresh allocation of that size per example cost more than
/// the rest of the evaluation's own work (glibc serves it outside its per-thread caches).
type Slots<'p, P> =
    Mutex<Vec<ReusableBoxFuture<'p, Result<<P as Module>::Output, <P as Module>::Error>>>>;

/// An evaluation's examples not yet started, and what the ended ones found and spent.
struct Tally<'d, O> {
    next: std::iter::Enumerate<std::slice::Iter<'d, Example>>,
    results: Vec<ExampleResult<O>>,
    sum: f64,
    errors: usize,
    usage: Usage,
    /// Set when the budget stopped new examples from starting.
    over_budget: Option<crate::lm::BudgetExceeded>,
}

/// The program's typed input from an example's inputs.
pub(crate) fn input_of<P: Module>(example: &Example) -> Result<P::Input, ExampleError> {
    if example.input_keys().is_empty() {
        return Err(ExampleError::Input {
            message: "the example marks no inputs: call `with_inputs([..])` on it, or name the \
                      input keys when loading the dataset"
                .into(),
        });
    }
    example
        .input_as::<P::Input>()
        .map_err(|error| ExampleError::Input {
            message: format!(
                "its inputs do not fit `{}`: {}",
                std::any::type_name::<P::Input>(),
                std::error::Error::source(&error)
                    .map_or_else(|| error.to_string(), ToString::to_string)
            ),
        })
}

/// Runs `future`, turning a panic into an error message (for user code called by optimizers).
pub(crate) async fn catch_panic<T>(
    future: impl std::future::Future<Output = T>,
) -> Result<T, String> {
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|panic| panic_text(&*panic))
}
