//! GEPA's settings: the budget presets, how candidates and components are chosen, and the
//! builder of [`Gepa`].

use std::path::PathBuf;
use std::sync::Arc;

use super::MetricFeedback;
use crate::evaluate::Progress;
use crate::lm::{Lm, LmOptions};
use crate::optimize::run_settings::RunSettings;

/// How many metric calls a GEPA run may spend: DSPy's `auto` presets or an explicit count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GepaBudget {
    /// DSPy's `auto="light"`: about six candidates' worth.
    Light,
    /// DSPy's `auto="medium"`: about twelve.
    Medium,
    /// DSPy's `auto="heavy"`: about eighteen.
    Heavy,
    /// `n` passes over the training plus validation sets (DSPy's `max_full_evals`).
    FullEvals(usize),
    /// Exactly this many metric calls (DSPy's `max_metric_calls`).
    MetricCalls(usize),
}

impl GepaBudget {
    /// The budget in metric calls for a program of `predictors` predictors, `train` training
    /// and `val` validation examples, as DSPy computes it (with no validation set, `val` 0, the
    /// presets size the budget by the training set, which then serves as the validation set).
    ///
    /// ```
    /// use signet::optimize::GepaBudget;
    /// // DSPy: GEPA(auto="light") on one predictor and 10 validation examples allows 420 calls.
    /// assert_eq!(GepaBudget::Light.metric_calls(1, 20, 10), 420);
    /// assert_eq!(GepaBudget::FullEvals(2).metric_calls(1, 20, 10), 60);
    /// ```
    pub fn metric_calls(&self, predictors: usize, train: usize, val: usize) -> usize {
        let scored = if val == 0 { train } else { val };
        match *self {
            GepaBudget::Light => auto_budget(predictors.max(1), 6, scored),
            GepaBudget::Medium => auto_budget(predictors.max(1), 12, scored),
            GepaBudget::Heavy => auto_budget(predictors.max(1), 18, scored),
            GepaBudget::FullEvals(n) => n * (train + val),
            GepaBudget::MetricCalls(n) => n,
        }
    }
}

/// DSPy's `GEPA.auto_budget` (its minibatch of 35 and five full evaluations are fixed there).
fn auto_budget(predictors: usize, candidates: usize, val: usize) -> usize {
    let candidates_f = candidates as f64;
    let trials =
        (2.0 * (predictors as f64 * 2.0) * candidates_f.log2()).max(1.5 * candidates_f) as usize;
    let mut total = val + candidates * 5 + trials * 35;
    if trials > 0 {
        total += ((trials + 1) / 5 + 1 + usize::from(trials < 5)) * val;
    }
    total
}

/// Which candidate an iteration improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CandidateSelection {
    /// A candidate from the Pareto frontier, drawn in proportion to the number of validation
    /// examples it is best on (the default).
    #[default]
    Pareto,
    /// Always the candidate with the best average.
    CurrentBest,
}

/// Which predictors an iteration rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ComponentSelection {
    /// One predictor per iteration, in turn (the default).
    #[default]
    RoundRobin,
    /// Every predictor at once.
    All,
}

/// GEPA, DSPy's reflective instruction optimizer: each iteration runs a parent from the Pareto
/// frontier on a training minibatch, shows one predictor's calls and the metric's feedback to a
/// reflection LM, which writes a new instruction; the child is kept when it beats the parent on
/// the minibatch, then scored on the validation set. Merges combine candidates that improved
/// different predictors. The best validation average is returned.
///
/// ```
/// use signet::data::Example;
/// use signet::evaluate::Score;
/// use signet::testing::ScriptedLm;
/// use signet::optimize::{Gepa, GepaBudget};
/// use signet::prelude::*;
///
/// /// Answer.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: String }
///
/// let examples: Vec<Example> = ["a", "b", "c"].iter()
///     .map(|q| Example::new(serde_json::json!({"question": q, "answer": "yes"})).with_inputs(["question"]))
///     .collect();
/// // The task model says "no" until its instruction tells it to say yes.
/// let task = ScriptedLm::texts(std::iter::repeat_n("[[ ## answer ## ]]\nno", 6)
///     .chain(std::iter::repeat_n("[[ ## answer ## ]]\nyes", 6)));
/// let reflection = ScriptedLm::texts([r#"{"new_instruction": "Always answer yes."}"#]);
/// let metric = |example: &Example, out: &AskOutput| {
///     let right = example.get("answer").and_then(|a| a.as_str()) == Some(out.answer.as_str());
///     Score::new(if right { 1.0 } else { 0.0 }).with_feedback("The answer is always yes.")
/// };
/// let compiled = Gepa::new(metric, reflection)
///     .with_budget(GepaBudget::MetricCalls(9))
///     .with_concurrency(1)
///     .compile_blocking(&Predict::<Ask>::new().with_lm(task), &examples, &examples)
///     .unwrap();
/// assert_eq!(compiled.program.predictor().instructions(), "Always answer yes.");
/// assert_eq!(compiled.report.candidates.len(), 2);
/// assert_eq!(compiled.report.candidates[1].average, 1.0);
/// // One line for logs: candidates, proposals, calls, and the score before and after.
/// assert!(compiled.report.to_string().ends_with("score 0.000 -> 1.000"), "{}", compiled.report);
/// ```
pub struct Gepa<M, F = MetricFeedback> {
    pub(super) metric: M,
    pub(super) feedback: F,
    pub(super) settings: Settings,
}

/// Everything but the metric and the feedback (see the setters of [`Gepa`]).
pub(super) struct Settings {
    pub(super) reflection_lm: Arc<dyn Lm>,
    pub(super) reflection_options: LmOptions,
    pub(super) budget: GepaBudget,
    pub(super) minibatch_size: usize,
    pub(super) selection: CandidateSelection,
    pub(super) components: ComponentSelection,
    pub(super) tool_descriptions: bool,
    pub(super) merge: bool,
    pub(super) max_merges: usize,
    pub(super) skip_perfect_score: bool,
    pub(super) perfect_score: f64,
    pub(super) failure_score: f64,
    pub(super) seed: i64,
    /// Concurrency, limits, log directory, metric name, progress.
    pub(super) run: RunSettings,
}

impl<M> Gepa<M> {
    /// GEPA with DSPy's defaults: a light budget, minibatches of 3, Pareto selection, one
    /// predictor per iteration in turn, up to 5 merges, perfect minibatches skipped, seed 0.
    /// `reflection_lm` writes the new instructions (a strong model pays off here).
    pub fn new(metric: M, reflection_lm: impl Lm + 'static) -> Gepa<M> {
        Gepa {
            metric,
            feedback: MetricFeedback,
            settings: Settings {
                run: RunSettings::default(),
                reflection_lm: crate::lm::shared(reflection_lm),
                reflection_options: LmOptions::default(),
                budget: GepaBudget::Light,
                minibatch_size: 3,
                selection: CandidateSelection::Pareto,
                components: ComponentSelection::RoundRobin,
                tool_descriptions: false,
                merge: true,
                max_merges: 5,
                skip_perfect_score: true,
                perfect_score: 1.0,
                failure_score: 0.0,
                seed: 0,
            },
        }
    }
}

impl<M, F> Gepa<M, F> {
    /// Feedback per predictor (see [`PredictorFeedback`](super::PredictorFeedback)).
    pub fn with_feedback<G>(self, feedback: G) -> Gepa<M, G> {
        Gepa {
            metric: self.metric,
            feedback,
            settings: self.settings,
        }
    }

    crate::shared::setters! {
        /// Options of the reflection LM's calls (default: the LM's own), e.g. a `max_tokens` bound
        /// for a model that may run on.
        fn with_reflection_options(options: LmOptions) { settings.reflection_options = options }

        /// How many metric calls to spend.
        fn with_budget(budget: GepaBudget) { settings.budget = budget }

        /// Training examples per reflective minibatch (default 3, at least 1).
        fn with_minibatch_size(n: usize) { settings.minibatch_size = n.max(1) }

        /// How parents are picked.
        fn with_candidate_selection(selection: CandidateSelection) {
            settings.selection = selection
        }

        /// Which predictors each iteration rewrites.
        fn with_component_selection(components: ComponentSelection) {
            settings.components = components
        }

        /// Also optimizes the description of every tool of every ReAct loop in the program (off by
        /// default, as in DSPy, whose GEPA rewrites only instructions). Each tool becomes a component
        /// named as [`Predictors::named_tool_descriptions`](crate::module::Predictors::named_tool_descriptions) names it (`tools.search`), after the
        /// predictors: the reflection LM reads, from each run, a step call that called the tool (any
        /// step call of its loop when none did) with the feedback, and writes a new description. The
        /// best program shows its tools so, and saves them (see [`crate::module::TOOL_DESCRIPTIONS`]).
        fn with_tool_descriptions(on: bool) { settings.tool_descriptions = on }

        /// Turns merging on or off (on by default, as in DSPy).
        fn with_merge(merge: bool) { settings.merge = merge }

        /// At most `n` merges kept (default 5).
        fn with_max_merges(n: usize) { settings.max_merges = n }
    }

    /// Whether an iteration whose parent is perfect on its minibatch is skipped (default yes),
    /// and what counts as perfect (default 1.0).
    pub fn with_skip_perfect_score(mut self, skip: bool, perfect: f64) -> Self {
        self.settings.skip_perfect_score = skip;
        self.settings.perfect_score = perfect;
        self
    }

    crate::shared::setters! {
        /// The score of an example whose run failed (default 0).
        fn with_failure_score(score: f64) { settings.failure_score = score }

        /// The seed of every random choice (default 0).
        fn with_seed(seed: i64) { settings.seed = seed }

        /// Keeps the run's state in `dir` (`gepa_state.json`, `run_log.jsonl`, `candidates.json`):
        /// a run given a directory that holds a state of the same run continues it, and creating
        /// `gepa.stop` there stops the run at its next iteration.
        ///
        /// The same run means the same predictors and validation set size, and the same
        /// fingerprint: the training and validation data (hashed by content), the metric's name (see
        /// [`with_metric_name`](Self::with_metric_name)), the program's saved JSON and the models
        /// (each predictor's and the reflection model). A state of another run, or one damaged (an
        /// index out of range), is refused with [`OptimizeError::RunLog`](crate::optimize::OptimizeError::RunLog), never used.
        fn with_log_dir(dir: impl Into<PathBuf>) { settings.run.log_dir = Some(dir.into()) }
    }

    crate::optimize::run_settings::run_setters!(settings.run; resumable);
}
