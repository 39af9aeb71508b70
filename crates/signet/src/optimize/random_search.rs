//! DSPy's `BootstrapFewShotWithRandomSearch`.

use super::{
    BootstrapFewShot, BootstrapReport, Compiled, LabeledFewShot, OptimizeError, Optimizer,
    reset_copy,
};
use crate::data::{Example, PyRandom};
use crate::evaluate::{Borrowed, Evaluate, Metric, Progress};
use crate::lm::{Lm, Usage};
use crate::module::Module;

/// DSPy's `BootstrapFewShotWithRandomSearch`: candidate programs from seeds `-3` (zero-shot),
/// `-2` (labeled demos only), `-1` (a bootstrap in training-set order) and `0..n` (bootstraps on
/// the training set shuffled with `random.Random(seed)`, each with `random.Random(seed).randint(1,
/// max_bootstrapped_demos)` demos), each scored on the validation set; the first best score
/// wins.
///
/// ```no_run
/// # async fn demo(program: signet::module::Predict<Ask>, trainset: Vec<signet::data::Example>, devset: Vec<signet::data::Example>) {
/// use signet::evaluate::exact_match;
/// use signet::optimize::{BootstrapFewShotWithRandomSearch, Optimizer};
/// let compiled = BootstrapFewShotWithRandomSearch::new(exact_match("answer"))
///     .with_candidates(4)
///     .compile(&program, &trainset, &devset)
///     .await
///     .unwrap();
/// for candidate in &compiled.report.candidates {
///     println!("seed {:>2}: {:.1}%", candidate.seed, candidate.score);
/// }
/// # }
/// # #[derive(signet::Signature)]
/// # struct Ask { #[input] question: String, #[output] answer: String }
/// ```
pub struct BootstrapFewShotWithRandomSearch<M> {
    bootstrap: BootstrapFewShot<M>,
    candidates: usize,
    stop_at_score: Option<f64>,
    restrict: Option<Vec<i64>>,
    labeled_sample: bool,
    progress: Progress,
}

/// One candidate program and its validation score.
#[derive(Debug, Clone)]
pub struct Candidate<P> {
    /// Its seed (`-3` zero-shot, `-2` labeled only, `-1` unshuffled bootstrap, then shuffles).
    pub seed: i64,
    /// Its average validation score, in percent.
    pub score: f64,
    /// Each validation example's score.
    pub subscores: Vec<f64>,
    /// The program.
    pub program: P,
    /// The bootstrap that made it (seeds `-1` and up).
    pub bootstrap: Option<BootstrapReport>,
}

/// What a random search found.
#[derive(Debug, Clone)]
pub struct SearchReport<P> {
    /// Every candidate evaluated, best first (ties in seed order).
    pub candidates: Vec<Candidate<P>>,
    /// The winner's seed.
    pub best_seed: i64,
    /// LM usage of every bootstrap and evaluation.
    pub usage: Usage,
}

impl<M> BootstrapFewShotWithRandomSearch<M> {
    /// A search with DSPy's defaults: 16 shuffled candidates (plus the three fixed ones), up to 4
    /// bootstrapped and 16 labeled demos per predictor.
    pub fn new(metric: M) -> BootstrapFewShotWithRandomSearch<M> {
        BootstrapFewShotWithRandomSearch {
            bootstrap: BootstrapFewShot::new(metric),
            candidates: 16,
            stop_at_score: None,
            restrict: None,
            labeled_sample: true,
            progress: Progress::Auto,
        }
    }

    crate::shared::setters! {
        /// How many shuffled candidates (seeds `0..n`) besides the three fixed ones.
        fn with_candidates(n: usize) { candidates = n }

        /// Stops once a candidate scores at least `score` (percent).
        fn with_stop_at_score(score: f64) { stop_at_score = Some(score) }

        /// Evaluates only the candidates with these seeds.
        fn with_restrict(seeds: impl IntoIterator<Item = i64>) {
            restrict = Some(seeds.into_iter().collect())
        }
    }

    /// Seed `-2` takes the first labeled examples instead of a seeded sample.
    pub fn without_labeled_sampling(mut self) -> Self {
        self.labeled_sample = false;
        self
    }

    crate::shared::forward_builders! {
        bootstrap;

        /// The bootstraps' accept threshold (see [`BootstrapFewShot::with_threshold`]).
        fn with_threshold(threshold: f64);

        /// Up to `n` bootstrapped demos per predictor; each shuffled candidate draws its own number
        /// from 1 to `n`.
        fn with_max_bootstrapped_demos(n: usize);

        /// Up to `n` demos per predictor in all (see [`BootstrapFewShot::with_max_labeled_demos`]).
        fn with_max_labeled_demos(n: usize);

        /// Tries per example (see [`BootstrapFewShot::with_max_rounds`]).
        fn with_max_rounds(n: usize);

        /// Failed runs allowed per bootstrap and per evaluation.
        fn with_max_errors(n: usize);

        /// Runs at once, in bootstraps and evaluations.
        fn with_concurrency(n: usize);

        /// The teachers' LM (see [`BootstrapFewShot::with_teacher_lm`]).
        fn with_teacher_lm(lm: impl Lm + 'static);
    }

    /// How each bootstrap and evaluation shows progress.
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self.bootstrap = self.bootstrap.with_progress(progress);
        self
    }

    /// The search [`compile`](Optimizer::compile) runs in its span.
    async fn search<P>(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, SearchReport<P>>, OptimizeError>
    where
        P: Module + Clone,
        M: Metric<P::Output>,
    {
        let seeds: Vec<i64> = (-3..self.candidates as i64)
            .filter(|seed| self.restrict.as_ref().is_none_or(|r| r.contains(seed)))
            .collect();
        if seeds.is_empty() {
            return Err(OptimizeError::NoCandidates {
                reason: format!(
                    "the restricted seeds {:?} are not in -3..{}",
                    self.restrict.as_deref().unwrap_or_default(),
                    self.candidates
                ),
            });
        }
        let mut usage = Usage::default();
        let mut candidates: Vec<Candidate<P>> = Vec::new();
        for seed in seeds {
            let (program, bootstrap) = match seed {
                -3 => (reset_copy(student), None),
                -2 => {
                    let labeled = LabeledFewShot::new(self.bootstrap.max_labeled_demos);
                    let labeled = if self.labeled_sample {
                        labeled
                    } else {
                        labeled.without_sampling()
                    };
                    (labeled.labeled(student, trainset).program, None)
                }
                -1 => {
                    let compiled = self.bootstrap.compile(student, trainset).await?;
                    (compiled.program, Some(compiled.report))
                }
                seed => {
                    let mut shuffled = trainset.to_vec();
                    PyRandom::new(seed).shuffle(&mut shuffled);
                    let size = PyRandom::new(seed)
                        .randint(1, self.bootstrap.max_bootstrapped_demos.max(1));
                    let bootstrap = BootstrapFewShot {
                        max_bootstrapped_demos: size,
                        ..self.bootstrap.borrowed()
                    };
                    let compiled = bootstrap.compile(student, &shuffled).await?;
                    (compiled.program, Some(compiled.report))
                }
            };
            if let Some(report) = &bootstrap {
                usage += report.usage;
            }
            let evaluation = Evaluate::new(valset, Borrowed(&self.bootstrap.metric))
                .with_concurrency(self.bootstrap.concurrency)
                .with_max_errors(self.bootstrap.max_errors)
                .with_progress(self.progress);
            let report = evaluation.run(&program).await?;
            usage += report.usage;
            tracing::info!(
                seed,
                score = report.score,
                "random search: candidate scored"
            );
            let score = report.score;
            candidates.push(Candidate {
                seed,
                score,
                subscores: report.results.iter().map(|r| r.score.value).collect(),
                program,
                bootstrap,
            });
            if self.stop_at_score.is_some_and(|stop| score >= stop) {
                break;
            }
        }
        // The first candidate with the best score wins (a later tie does not replace it).
        let best = candidates.iter().enumerate().fold(0, |best, (i, c)| {
            if c.score > candidates[best].score {
                i
            } else {
                best
            }
        });
        let program = candidates[best].program.clone();
        let best_seed = candidates[best].seed;
        candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(Compiled {
            program,
            report: SearchReport {
                candidates,
                best_seed,
                usage,
            },
        })
    }
}

/// Searches for the best demos for `student`: bootstraps from `trainset`, scores on `valset`
/// (DSPy uses the training set when there is no validation set; pass it twice for that).
impl<M, P> Optimizer<P> for BootstrapFewShotWithRandomSearch<M>
where
    P: Module + Clone,
    M: Metric<P::Output>,
{
    type Report = SearchReport<P>;

    async fn compile(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, SearchReport<P>>, OptimizeError> {
        let run = self.search(student, trainset, valset);
        super::traced(
            "BootstrapFewShotWithRandomSearch",
            trainset.len(),
            valset.len(),
            run,
        )
        .await
    }
}
