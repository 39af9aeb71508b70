//! DSPy's `BootstrapFewShot`.

use std::collections::HashMap;
use std::sync::Arc;

use futures::{StreamExt, stream};

use super::{Compiled, LabeledFewShot, OptimizeError, Optimizer, TeacherLm, augmented, reset_copy};
use crate::adapter::Fields;
use crate::data::{Example, PyRandom};
use crate::evaluate::{
    Bar, Borrowed, ExampleError, Metric, Predicted, Progress, catch_panic, input_of,
};
use crate::lm::{Lm, Usage};
use crate::module::Module;
use crate::trace::{PredictorId, Trace};

/// DSPy's `BootstrapFewShot` (see the [module docs](super) for an example).
///
/// For each training example in order, until `max_bootstrapped_demos` have succeeded: the
/// teacher (by default a copy of the student with up to `max_labeled_demos` labeled demos, never
/// the example itself) runs on the example's inputs; when the metric accepts the output, every
/// predictor that ran gets one demo of its inputs and outputs in that run (`augmented: true`).
/// The compiled student has those demos, then labeled demos from the examples that did not
/// bootstrap (shuffled with Python's `random.Random(0)`, as DSPy does), up to
/// `max_labeled_demos` in all.
///
/// Examples run `concurrency` at a time; results are taken in training-set order, so the demos
/// are those a sequential run would pick (later runs already started are dropped).
pub struct BootstrapFewShot<M> {
    pub(super) metric: M,
    pub(super) threshold: Option<f64>,
    pub(super) max_bootstrapped_demos: usize,
    pub(super) max_labeled_demos: usize,
    pub(super) max_rounds: usize,
    pub(super) max_errors: usize,
    pub(super) concurrency: usize,
    pub(super) teacher_lm: TeacherLm,
    pub(super) progress: Progress,
}

/// What a bootstrap did.
#[derive(Debug, Clone, Default)]
pub struct BootstrapReport {
    /// Training examples whose run the metric accepted (each gave its predictors a demo).
    pub bootstrapped: usize,
    /// Training examples tried (in order; the rest were not needed).
    pub examples_tried: usize,
    /// Teacher runs, rounds included.
    pub attempts: usize,
    /// Runs that failed with an error, by training-set index.
    pub errors: Vec<(usize, ExampleError)>,
    /// Each predictor's demos: (path, bootstrapped, labeled).
    pub demos: Vec<(String, usize, usize)>,
    /// LM usage of every teacher run.
    pub usage: Usage,
}

impl<M> BootstrapFewShot<M> {
    /// A bootstrap that keeps runs `metric` accepts (a score above zero, or at least the
    /// [threshold](Self::with_threshold)). DSPy's defaults: 4 bootstrapped and 16 labeled
    /// demos, 1 round, 10 errors at most.
    pub fn new(metric: M) -> BootstrapFewShot<M> {
        BootstrapFewShot {
            metric,
            threshold: None,
            max_bootstrapped_demos: 4,
            max_labeled_demos: 16,
            max_rounds: 1,
            max_errors: 10,
            concurrency: 8,
            teacher_lm: None,
            progress: Progress::Auto,
        }
    }

    crate::shared::setters! {
        /// How progress is shown: a bar on a terminal, otherwise a line every tenth of the
        /// training set (see [`Progress`]).
        fn with_progress(progress: Progress) { progress = progress }

        /// Accepts a run when its score is at least `threshold`.
        fn with_threshold(threshold: f64) { threshold = Some(threshold) }

        /// How many bootstrapped demos each predictor gets at most (and how many examples must
        /// succeed before the bootstrap stops).
        fn with_max_bootstrapped_demos(n: usize) { max_bootstrapped_demos = n }

        /// How many demos each predictor gets at most, bootstrapped and labeled together; also the
        /// number of labeled demos the default teacher has.
        fn with_max_labeled_demos(n: usize) { max_labeled_demos = n }

        /// How many times an example is tried before moving on. Rounds after the first sample at
        /// temperature 1.0 with the round as the seed (new requests, not cache hits).
        fn with_max_rounds(n: usize) { max_rounds = n.max(1) }

        /// Fails with [`OptimizeError::TooManyErrors`] once this many runs have failed.
        fn with_max_errors(n: usize) { max_errors = n.max(1) }

        /// How many examples run at once.
        fn with_concurrency(n: usize) { concurrency = n.max(1) }

        /// Runs the teacher with `lm` (DSPy's `teacher_settings={"lm": ..}`): a stronger model writes
        /// the demos the student learns from.
        fn with_teacher_lm(lm: impl Lm + 'static) { teacher_lm = Some(crate::lm::shared(lm)) }
    }

    /// Bootstraps demos for `student` from `trainset`, with a copy of the student as teacher.
    pub async fn compile<P>(
        &self,
        student: &P,
        trainset: &[Example],
    ) -> Result<Compiled<P, BootstrapReport>, OptimizeError>
    where
        P: Module + Clone,
        M: Metric<P::Output>,
    {
        let teacher = if self.max_labeled_demos > 0 {
            LabeledFewShot::new(self.max_labeled_demos)
                .labeled(student, trainset)
                .program
        } else {
            student.clone()
        };
        let run = self.compile_with_teacher(student, &teacher, trainset);
        super::traced("BootstrapFewShot", trainset.len(), 0, run).await
    }

    /// [`compile`](Self::compile) with your own teacher, used as it is: the same predictors as
    /// the student (a bigger model, hand-written demos, an already compiled program).
    pub async fn compile_with_teacher<P>(
        &self,
        student: &P,
        teacher: &P,
        trainset: &[Example],
    ) -> Result<Compiled<P, BootstrapReport>, OptimizeError>
    where
        P: Module + Clone,
        M: Metric<P::Output>,
    {
        let names: Vec<String> = student
            .named_predictors()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let teacher_names: Vec<String> = teacher
            .named_predictors()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        if names != teacher_names {
            return Err(OptimizeError::TeacherMismatch {
                reason: format!(
                    "the student's predictors are {names:?}, the teacher's {teacher_names:?}"
                ),
            });
        }
        let mut teacher = teacher.clone();
        if let Some(lm) = &self.teacher_lm {
            for (_, predictor) in teacher.named_predictors_mut() {
                predictor.set_lm(lm.clone());
            }
        }
        let mut report = BootstrapReport::default();
        let mut traces: HashMap<String, Vec<Fields>> = HashMap::new();
        let mut bootstrapped = vec![false; trainset.len()];
        if self.max_bootstrapped_demos > 0 {
            // Indices in, not `&Example`s: a closure taking a reference is not provably `Send`
            // for every lifetime (rust-lang/rust#102211), and an optimizer's future must be.
            let teacher = &teacher;
            let runs = stream::iter(0..trainset.len())
                .map(move |index| self.bootstrap_example(teacher, index, &trainset[index]))
                .buffered(self.concurrency);
            let mut runs = std::pin::pin!(runs);
            let bar = Bar::new(self.progress, "bootstrap", trainset.len());
            while report.bootstrapped < self.max_bootstrapped_demos {
                let Some(outcome) = runs.next().await else {
                    break;
                };
                let accepted = report.bootstrapped + usize::from(outcome.demos.is_some());
                bar.advance(|| {
                    format!(
                        "{accepted} of {} demos bootstrapped",
                        self.max_bootstrapped_demos
                    )
                });
                report.examples_tried += 1;
                report.attempts += outcome.attempts;
                report.usage += outcome.usage;
                for error in outcome.errors {
                    report.errors.push((outcome.index, error));
                    if report.errors.len() >= self.max_errors {
                        return Err(OptimizeError::TooManyErrors {
                            errors: report.errors.len(),
                            max_errors: self.max_errors,
                            first: report.errors[0].1.clone(),
                        });
                    }
                }
                if let Some(demos) = outcome.demos {
                    bootstrapped[outcome.index] = true;
                    report.bootstrapped += 1;
                    for (name, demo) in demos {
                        traces.entry(name).or_default().push(demo);
                    }
                }
            }
            bar.finish();
        }
        // The examples that did not bootstrap, shuffled as DSPy shuffles them, are the labeled
        // demos' pool.
        let mut pool: Vec<&Example> = trainset
            .iter()
            .zip(&bootstrapped)
            .filter(|(_, done)| !**done)
            .map(|(example, _)| example)
            .collect();
        PyRandom::new(0).shuffle(&mut pool);
        let mut random = PyRandom::new(0);
        let mut program = reset_copy(student);
        for (name, predictor) in program.named_predictors_mut() {
            let mut demos: Vec<Fields> = traces.remove(&name).unwrap_or_default();
            demos.truncate(self.max_bootstrapped_demos);
            let augmented_count = demos.len();
            let labeled = self
                .max_labeled_demos
                .saturating_sub(augmented_count)
                .min(pool.len());
            demos.extend(
                random
                    .sample(&pool, labeled)
                    .into_iter()
                    .map(|e| e.values().clone()),
            );
            report.demos.push((name, augmented_count, labeled));
            predictor.set_demos(demos);
        }
        Ok(Compiled { program, report })
    }

    /// [`compile`](Self::compile) from sync code (see [`crate::blocking`] for the rule).
    pub fn compile_blocking<P>(
        &self,
        student: &P,
        trainset: &[Example],
    ) -> Result<Compiled<P, BootstrapReport>, OptimizeError>
    where
        P: Module + Clone,
        M: Metric<P::Output>,
    {
        crate::blocking::block_on(self.compile(student, trainset))?
    }

    /// Up to `max_rounds` teacher runs on one example; the demos of the first accepted run.
    async fn bootstrap_example<P>(&self, teacher: &P, index: usize, example: &Example) -> Outcome
    where
        P: Module + Clone,
        M: Metric<P::Output>,
    {
        let mut outcome = Outcome {
            index,
            attempts: 0,
            usage: Usage::default(),
            errors: Vec::new(),
            demos: None,
        };
        for round in 0..self.max_rounds {
            outcome.attempts += 1;
            let mut run_teacher = teacher.clone();
            for (_, predictor) in run_teacher.named_predictors_mut() {
                // The example must not be its own demo.
                let demos: Vec<Fields> = predictor
                    .demos()
                    .iter()
                    .filter(|d| *d != example.values())
                    .cloned()
                    .collect();
                predictor.set_demos(demos);
                if round > 0 {
                    let options = predictor.options_mut();
                    options.temperature = Some(1.0);
                    options.seed = Some(round as i64);
                }
            }
            match self.run_once(&run_teacher, example).await {
                Ok((usage, Some(demos))) => {
                    outcome.usage += usage;
                    outcome.demos = Some(demos);
                    break;
                }
                Ok((usage, None)) => outcome.usage += usage,
                Err((usage, error)) => {
                    outcome.usage += usage;
                    outcome.errors.push(error);
                }
            }
        }
        outcome
    }

    /// One teacher run: the demos it gives (one per predictor that ran) if the metric accepts it.
    async fn run_once<P>(
        &self,
        teacher: &P,
        example: &Example,
    ) -> Result<(Usage, Option<Vec<(String, Fields)>>), (Usage, ExampleError)>
    where
        P: Module,
        M: Metric<P::Output>,
    {
        let input = input_of::<P>(example).map_err(|e| (Usage::default(), e))?;
        let (outcome, record) = crate::trace::recorded(catch_panic(teacher.call(input))).await;
        let output = match outcome {
            Ok(Ok(output)) => output,
            Ok(Err(error)) => {
                let error = ExampleError::Program {
                    message: error.to_string(),
                    source: Arc::new(error),
                };
                return Err((record.usage, error));
            }
            Err(message) => return Err((record.usage, ExampleError::Panicked { message })),
        };
        let fields = P::output_fields(&output);
        let predicted = Predicted {
            output: &output,
            fields: &fields,
            trace: Some(&record.trace),
        };
        let score = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.metric.score(example, &predicted)
        }))
        .map_err(|panic| {
            (
                record.usage,
                ExampleError::Metric {
                    message: format!(
                        "the metric panicked: {}",
                        crate::evaluate::panic_text(&*panic)
                    ),
                },
            )
        })?;
        if !score.passes(self.threshold) {
            return Ok((record.usage, None));
        }
        let names: HashMap<PredictorId, String> = teacher
            .named_predictors()
            .into_iter()
            .map(|(name, p)| (p.id(), name))
            .collect();
        Ok((
            record.usage,
            Some(demos_by_predictor(&record.trace, &names)),
        ))
    }
}

/// `valset` is not used: bootstrapping compares nothing (a teacher's run is kept when the metric
/// accepts it). [`compile`](BootstrapFewShot::compile) without one is the same compile.
impl<M, P> Optimizer<P> for BootstrapFewShot<M>
where
    P: Module + Clone,
    M: Metric<P::Output>,
{
    type Report = BootstrapReport;

    async fn compile(
        &self,
        student: &P,
        trainset: &[Example],
        _valset: &[Example],
    ) -> Result<Compiled<P, BootstrapReport>, OptimizeError> {
        BootstrapFewShot::compile(self, student, trainset).await
    }
}

impl<M> BootstrapFewShot<M> {
    /// The same settings over a borrowed metric.
    pub(super) fn borrowed(&self) -> BootstrapFewShot<Borrowed<'_, M>> {
        BootstrapFewShot {
            metric: Borrowed(&self.metric),
            threshold: self.threshold,
            max_bootstrapped_demos: self.max_bootstrapped_demos,
            max_labeled_demos: self.max_labeled_demos,
            max_rounds: self.max_rounds,
            max_errors: self.max_errors,
            concurrency: self.concurrency,
            teacher_lm: self.teacher_lm.clone(),
            progress: self.progress,
        }
    }
}

/// One demo per predictor from an accepted run. A predictor called several times (a ReAct step)
/// gives one of its calls, as DSPy picks: the last, or with even odds one of the earlier ones,
/// seeded by the calls' content.
fn demos_by_predictor(
    trace: &Trace,
    names: &HashMap<PredictorId, String>,
) -> Vec<(String, Fields)> {
    let mut grouped: Vec<(String, Vec<Fields>)> = Vec::new();
    for entry in trace {
        // Calls of predictors outside the program (a helper built inside `call`) are skipped.
        let Some(name) = names.get(&entry.predictor) else {
            continue;
        };
        let demo = augmented(entry);
        match grouped.iter_mut().find(|(n, _)| n == name) {
            Some((_, demos)) => demos.push(demo),
            None => grouped.push((name.clone(), vec![demo])),
        }
    }
    grouped
        .into_iter()
        .map(|(name, mut demos)| {
            if demos.len() > 1 {
                let mut random = PyRandom::new(content_seed(&demos));
                let last = demos.len() - 1;
                let pick = if random.random() < 0.5 {
                    random.below(last)
                } else {
                    last
                };
                (name, demos.swap_remove(pick))
            } else {
                (name, demos.remove(0))
            }
        })
        .collect()
}

/// A seed from the demos' text (FNV-1a), so the same run picks the same demo.
fn content_seed(demos: &[Fields]) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for demo in demos {
        for byte in serde_json::Value::Object(demo.clone()).to_string().bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    (hash >> 1) as i64
}

/// One example's bootstrap.
struct Outcome {
    index: usize,
    attempts: usize,
    usage: Usage,
    errors: Vec<ExampleError>,
    demos: Option<Vec<(String, Fields)>>,
}
