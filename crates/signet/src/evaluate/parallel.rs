//! [`Parallel`]: many module calls at once, a bounded number at a time, each result kept in the
//! order of the inputs (DSPy's `dspy.Parallel`).

use std::time::{Duration, Instant};

use futures::StreamExt;

use super::progress::Bar;
use super::{Progress, catch_panic};
use crate::lm::Usage;
use crate::module::Module;
use crate::trace::{Record, Trace};

/// Runs a module (or several of one type) on many inputs at once: at most
/// [`with_concurrency`](Self::with_concurrency) calls in flight (default 8), each bounded by a
/// time limit (default 120 s, DSPy's), results in the order of the inputs with each failure kept
/// beside the successes — DSPy's `dspy.Parallel`. After more than
/// [`with_max_errors`](Self::with_max_errors) failures (default 10, DSPy's) no further call
/// starts and the run is [`ParallelError::TooManyErrors`], which still holds every result.
///
/// All calls run on the caller's task (no `tokio::spawn`), so an enclosing
/// [`CallConfig::scope`](crate::module::CallConfig::scope) and trace recording apply to each.
///
/// ```
/// use signet::evaluate::Parallel;
/// use signet::module::Predict;
/// use signet::prelude::*;
/// use signet::testing::FnLm;
///
/// /// Answer the question.
/// #[derive(Signature)]
/// struct QA { #[input] question: String, #[output] answer: String }
///
/// // Answers with the question's last word (the line after `[[ ## question ## ]]`).
/// let lm = FnLm::new(|request| {
///     let question = request.messages[1].content.lines().nth(1).unwrap_or("");
///     let last = question.split_whitespace().last().unwrap_or("");
///     format!("[[ ## answer ## ]]\n{last}\n\n[[ ## completed ## ]]")
/// });
/// let qa = Predict::<QA>::new().with_lm(lm);
/// let questions = ["Say one", "Say two", "Say three"].map(|q| QAInput { question: q.into() });
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let run = Parallel::new().with_concurrency(2).run(&qa, questions).await.unwrap();
/// let answers: Vec<String> = run.results.into_iter().map(|r| r.unwrap().answer).collect();
/// assert_eq!(answers, ["one", "two", "three"]);
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Parallel {
    concurrency: usize,
    max_errors: usize,
    timeout: Option<Duration>,
    progress: Progress,
}

impl Default for Parallel {
    fn default() -> Self {
        Parallel {
            concurrency: 8,
            max_errors: 10,
            timeout: Some(Duration::from_secs(120)),
            progress: Progress::Off,
        }
    }
}

/// One call's result.
type ItemResult<M> = Result<<M as Module>::Output, ItemError<<M as Module>::Error>>;

/// What a [`Parallel`] run produced.
#[derive(Debug)]
pub struct ParallelRun<O, E> {
    /// One result per input, in the order of the inputs.
    pub results: Vec<Result<O, ItemError<E>>>,
    /// The LM usage of every call.
    pub usage: Usage,
    /// How long the run took.
    pub elapsed: Duration,
}

impl<O, E> ParallelRun<O, E> {
    /// How many calls failed (not counting those the run stopped).
    pub fn failures(&self) -> usize {
        self.results
            .iter()
            .filter(|r| matches!(r, Err(e) if !matches!(e, ItemError::Stopped)))
            .count()
    }
}

/// Why one call of a [`Parallel`] run has no output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ItemError<E> {
    /// The module failed.
    #[error(transparent)]
    Module(E),
    /// The module panicked.
    #[error("the call panicked: {0}")]
    Panicked(String),
    /// The call took longer than the run's time limit (its LM usage is not counted).
    #[error("the call took longer than {0:?}")]
    TimedOut(Duration),
    /// The call was not run to its end: the run stopped after too many failures (it was not
    /// started, or it was cancelled in flight).
    #[error("the call was stopped: the run stopped after too many failures")]
    Stopped,
}

/// Why a [`Parallel`] run stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParallelError<O, E> {
    /// More calls failed than allowed; the calls not finished then were stopped
    /// ([`ItemError::Stopped`]). Holds every result.
    #[error("{} calls failed, more than the {max_errors} allowed; the run stopped", run.failures())]
    TooManyErrors {
        /// The failures allowed.
        max_errors: usize,
        /// Every result so far.
        run: Box<ParallelRun<O, E>>,
    },
}

impl Parallel {
    /// Eight calls at a time, 120 s each, at most ten failures, no progress shown.
    pub fn new() -> Self {
        Parallel::default()
    }

    crate::shared::setters! {
        /// At most `n` calls in flight (at least one).
        fn with_concurrency(n: usize) { concurrency = n.max(1) }

        /// Stops starting calls once more than `n` have failed (default 10, DSPy's).
        fn with_max_errors(n: usize) { max_errors = n }

        /// Each call's time limit (default 120 s, DSPy's); `None` for none.
        fn with_timeout(limit: Option<Duration>) { timeout = limit }

        /// How progress is shown (default: not at all).
        fn with_progress(progress: Progress) { progress = progress }
    }

    /// Runs `module` on each of `inputs`.
    pub async fn run<M: Module>(
        &self,
        module: &M,
        inputs: impl IntoIterator<Item = M::Input>,
    ) -> Result<ParallelRun<M::Output, M::Error>, ParallelError<M::Output, M::Error>> {
        self.run_pairs(inputs.into_iter().map(|input| (module, input)))
            .await
    }

    /// Runs each module on its input (DSPy's `exec_pairs`).
    pub async fn run_pairs<'m, M: Module + 'm>(
        &self,
        pairs: impl IntoIterator<Item = (&'m M, M::Input)>,
    ) -> Result<ParallelRun<M::Output, M::Error>, ParallelError<M::Output, M::Error>> {
        let started = Instant::now();
        let pairs: Vec<(&M, M::Input)> = pairs.into_iter().collect();
        let total = pairs.len();
        let bar = Bar::new(self.progress, "parallel", total);
        let mut results: Vec<Option<ItemResult<M>>> = (0..total).map(|_| None).collect();
        // Each call's predictor calls, kept when the enclosing record wants them.
        let mut traces: Vec<Trace> = (0..total).map(|_| Trace::new()).collect();
        let keep_calls = crate::trace::recording_calls();
        let mut usage = Usage::default();
        let mut failures = 0;
        let timeout = self.timeout;
        let mut calls = futures::stream::iter(pairs.into_iter().enumerate())
            .map(|(index, (module, input))| async move {
                let call = crate::trace::record(catch_panic(module.call(input)), keep_calls);
                let (outcome, record) = match timeout {
                    Some(limit) => match tokio::time::timeout(limit, call).await {
                        Ok(done) => done,
                        Err(_) => {
                            return (index, Err(ItemError::TimedOut(limit)), Record::default());
                        }
                    },
                    None => call.await,
                };
                let result = match outcome {
                    Ok(Ok(output)) => Ok(output),
                    Ok(Err(error)) => Err(ItemError::Module(error)),
                    Err(message) => Err(ItemError::Panicked(message)),
                };
                (index, result, record)
            })
            .buffer_unordered(self.concurrency);
        while let Some((index, result, record)) = calls.next().await {
            usage += record.usage;
            traces[index] = record.trace;
            failures += usize::from(result.is_err());
            results[index] = Some(result);
            bar.advance(|| format!("{failures} failed"));
            if failures > self.max_errors {
                break;
            }
        }
        // Dropping the stream cancels the calls in flight; they and the ones never started are
        // `Stopped`.
        drop(calls);
        bar.finish();
        // The calls in the order of the inputs, whatever order they finished in.
        let trace = traces.into_iter().flatten().collect();
        crate::trace::absorb(Record { trace, usage }, true);
        let run = ParallelRun {
            results: results
                .into_iter()
                .map(|r| r.unwrap_or(Err(ItemError::Stopped)))
                .collect(),
            usage,
            elapsed: started.elapsed(),
        };
        if failures > self.max_errors {
            return Err(ParallelError::TooManyErrors {
                max_errors: self.max_errors,
                run: Box::new(run),
            });
        }
        Ok(run)
    }
}
