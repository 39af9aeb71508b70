//! GEPA: reflective instruction evolution, as DSPy 3.4.1's `dspy.GEPA` runs it (with the `gepa`
//! 0.1.4 engine it pins).
//!
//! Each iteration picks a parent from the Pareto frontier (the candidates best on at least one
//! validation example), runs it on a small training minibatch while recording each predictor's
//! calls, shows one predictor's inputs, outputs and the metric's feedback to a reflection LM, and
//! asks it for a better instruction. The child is kept when it beats the parent on the same
//! minibatch; kept children are scored on the whole validation set and join the frontier. Merges
//! combine two frontier candidates that improved different predictors of a common ancestor.

mod merge;
mod pareto;
mod reflection;
mod state;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Compiled, OptimizeError, run_fingerprint};
use crate::adapter::templates::gepa_default_feedback;
use crate::data::{Example, PyRandom};
use crate::evaluate::{Bar, Borrowed, Evaluate, Metric, Predicted, Progress, Report, Score};
use crate::lm::{Lm, LmOptions, Usage};
use crate::module::{Module, Predictors};
use crate::trace::{PredictorId, TraceEntry};
use state::State;

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

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GepaStop {
    /// The metric-call budget was spent.
    Budget,
    /// Someone created `gepa.stop` in the log directory.
    StopFile,
    /// The LM-call limit ([`Gepa::with_max_lm_calls`]) was reached.
    LmCalls,
}

/// Feedback on one predictor's call, for the reflection LM. The default,
/// [`MetricFeedback`], uses the metric's own [`Score::feedback`] (or says the score); a closure
/// `Fn(&Example, &Predicted<O>, &str, &TraceEntry) -> impl Into<Score>` gives feedback per
/// predictor, as DSPy's five-argument GEPA metrics do (the `&str` is the predictor's name, the
/// entry its call being shown).
pub trait PredictorFeedback<O: ?Sized>: Send + Sync {
    /// The feedback for `call` (a call of the predictor named `predictor`) in the run that
    /// produced `predicted`; `None` keeps the metric's.
    fn feedback(
        &self,
        example: &Example,
        predicted: &Predicted<'_, O>,
        predictor: &str,
        call: &TraceEntry,
    ) -> Option<Score>;
}

/// The default feedback: the metric's [`Score::feedback`], or `This trajectory got a score of
/// {score}.` when it gives none (DSPy's text).
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricFeedback;

impl<O: ?Sized> PredictorFeedback<O> for MetricFeedback {
    fn feedback(
        &self,
        _: &Example,
        _: &Predicted<'_, O>,
        _: &str,
        _: &TraceEntry,
    ) -> Option<Score> {
        None
    }
}

impl<O: ?Sized, F, S> PredictorFeedback<O> for F
where
    F: Fn(&Example, &Predicted<'_, O>, &str, &TraceEntry) -> S + Send + Sync,
    S: Into<Score>,
{
    fn feedback(
        &self,
        example: &Example,
        predicted: &Predicted<'_, O>,
        predictor: &str,
        call: &TraceEntry,
    ) -> Option<Score> {
        Some(self(example, predicted, predictor, call).into())
    }
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
    metric: M,
    feedback: F,
    settings: Settings,
}

/// Everything but the metric and the feedback (see the setters of [`Gepa`]).
struct Settings {
    reflection_lm: Arc<dyn Lm>,
    reflection_options: LmOptions,
    budget: GepaBudget,
    minibatch_size: usize,
    selection: CandidateSelection,
    components: ComponentSelection,
    tool_descriptions: bool,
    merge: bool,
    max_merges: usize,
    skip_perfect_score: bool,
    perfect_score: f64,
    failure_score: f64,
    seed: i64,
    concurrency: usize,
    max_errors: Option<usize>,
    max_lm_calls: Option<u64>,
    log_dir: Option<PathBuf>,
    metric_name: Option<String>,
    progress: Progress,
}

/// One candidate program GEPA found.
#[derive(Debug, Clone, PartialEq)]
pub struct GepaCandidate {
    /// Each predictor's instructions, by name.
    pub instructions: Vec<(String, String)>,
    /// Where it came from: none for the starting program, one parent for a reflective child, two
    /// for a merge.
    pub parents: Vec<usize>,
    /// Its score on each validation example.
    pub val_scores: Vec<f64>,
    /// Their average (0 to 1 for pass/fail metrics).
    pub average: f64,
    /// Metric calls spent before it was scored on the validation set.
    pub discovered_at: usize,
}

/// What a GEPA run did.
#[derive(Debug, Clone)]
pub struct GepaReport {
    /// Every candidate, in the order found; the first is the starting program.
    pub candidates: Vec<GepaCandidate>,
    /// The returned candidate: the first with the best average.
    pub best: usize,
    /// For each validation example, the candidates with its best score.
    pub fronts: Vec<Vec<usize>>,
    /// Metric calls spent (the budget is checked before each iteration, so the last one can go
    /// past it).
    pub metric_calls: usize,
    /// The budget, in metric calls.
    pub budget: usize,
    /// Iterations run (in all runs, when resumed).
    pub iterations: usize,
    /// Reflective children proposed, and how many beat their parent on the minibatch.
    pub proposed: usize,
    /// Of those, kept.
    pub accepted: usize,
    /// Merges tried, and kept.
    pub merges_tried: usize,
    /// Merges kept.
    pub merges_accepted: usize,
    /// Iterations whose reflection LM gave no usable instruction (after one retry).
    pub proposal_failures: usize,
    /// The program's LM usage over every evaluation of this run.
    pub usage: Usage,
    /// The reflection LM's usage.
    pub reflection_usage: Usage,
    /// Whether the run continued a saved one.
    pub resumed: bool,
    /// Why it stopped.
    pub stopped: GepaStop,
}

/// One line for logs: `3 candidates from 9 proposals (2 kept, 1 failed) and 1 merge (0 kept) in
/// 152 metric calls, 10 reflection-LM calls; score 0.250 -> 0.312` (the scores are the starting
/// and the returned candidate's validation averages; the stop reason is added when it was not
/// the budget).
impl std::fmt::Display for GepaReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} candidates from {} proposals ({} kept, {} failed) and {} merges ({} kept) in {} \
             metric calls, {} reflection-LM calls; ",
            self.candidates.len(),
            self.proposed,
            self.accepted,
            self.proposal_failures,
            self.merges_tried,
            self.merges_accepted,
            self.metric_calls,
            self.reflection_usage.lm_calls,
        )?;
        if self.stopped != GepaStop::Budget {
            write!(f, "stopped early ({:?}); ", self.stopped)?;
        }
        let average = |i: usize| self.candidates.get(i).map_or(0.0, |c| c.average);
        write!(f, "score {:.3} -> {:.3}", average(0), average(self.best))
    }
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
                concurrency: 8,
                max_errors: None,
                max_lm_calls: None,
                log_dir: None,
                metric_name: None,
                progress: Progress::Auto,
            },
        }
    }
}

impl<M, F> Gepa<M, F> {
    /// Feedback per predictor (see [`PredictorFeedback`]).
    pub fn with_feedback<G>(self, feedback: G) -> Gepa<M, G> {
        Gepa {
            metric: self.metric,
            feedback,
            settings: self.settings,
        }
    }

    /// Options of the reflection LM's calls (default: the LM's own), e.g. a `max_tokens` bound
    /// for a model that may run on.
    pub fn with_reflection_options(mut self, options: LmOptions) -> Self {
        self.settings.reflection_options = options;
        self
    }

    /// How many metric calls to spend.
    pub fn with_budget(mut self, budget: GepaBudget) -> Self {
        self.settings.budget = budget;
        self
    }

    /// Training examples per reflective minibatch (default 3, at least 1).
    pub fn with_minibatch_size(mut self, n: usize) -> Self {
        self.settings.minibatch_size = n.max(1);
        self
    }

    /// How parents are picked.
    pub fn with_candidate_selection(mut self, selection: CandidateSelection) -> Self {
        self.settings.selection = selection;
        self
    }

    /// Which predictors each iteration rewrites.
    pub fn with_component_selection(mut self, components: ComponentSelection) -> Self {
        self.settings.components = components;
        self
    }

    /// Also optimizes the description of every tool of every ReAct loop in the program (off by
    /// default, as in DSPy, whose GEPA rewrites only instructions). Each tool becomes a component
    /// named as [`Predictors::named_tool_descriptions`] names it (`tools.search`), after the
    /// predictors: the reflection LM reads, from each run, a step call that called the tool (any
    /// step call of its loop when none did) with the feedback, and writes a new description. The
    /// best program shows its tools so, and saves them (see [`crate::module::TOOL_DESCRIPTIONS`]).
    pub fn with_tool_descriptions(mut self, on: bool) -> Self {
        self.settings.tool_descriptions = on;
        self
    }

    /// Turns merging on or off (on by default, as in DSPy).
    pub fn with_merge(mut self, merge: bool) -> Self {
        self.settings.merge = merge;
        self
    }

    /// At most `n` merges kept (default 5).
    pub fn with_max_merges(mut self, n: usize) -> Self {
        self.settings.max_merges = n;
        self
    }

    /// Whether an iteration whose parent is perfect on its minibatch is skipped (default yes),
    /// and what counts as perfect (default 1.0).
    pub fn with_skip_perfect_score(mut self, skip: bool, perfect: f64) -> Self {
        self.settings.skip_perfect_score = skip;
        self.settings.perfect_score = perfect;
        self
    }

    /// The score of an example whose run failed (default 0).
    pub fn with_failure_score(mut self, score: f64) -> Self {
        self.settings.failure_score = score;
        self
    }

    /// The seed of every random choice (default 0).
    pub fn with_seed(mut self, seed: i64) -> Self {
        self.settings.seed = seed;
        self
    }

    /// Examples run at once in each evaluation (default 8).
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.settings.concurrency = n.max(1);
        self
    }

    /// Stops with [`OptimizeError::TooManyErrors`] when more than `n` examples of one evaluation
    /// fail (a dead endpoint fails fast instead of scoring 0 everywhere).
    pub fn with_max_errors(mut self, n: usize) -> Self {
        self.settings.max_errors = Some(n);
        self
    }

    /// Also stops once the program's and the reflection LM's calls in this run reach `n` (checked
    /// before each iteration, like the metric-call budget).
    pub fn with_max_lm_calls(mut self, n: u64) -> Self {
        self.settings.max_lm_calls = Some(n);
        self
    }

    /// Keeps the run's state in `dir` (`gepa_state.json`, `run_log.jsonl`, `candidates.json`):
    /// a run given a directory that holds a state of the same run continues it, and creating
    /// `gepa.stop` there stops the run at its next iteration.
    ///
    /// The same run means the same predictors and validation set size, and the same
    /// fingerprint: the training and validation data (hashed by content), the metric's name (see
    /// [`with_metric_name`](Self::with_metric_name)), the program's saved JSON and the models
    /// (each predictor's and the reflection model). A state of another run, or one damaged (an
    /// index out of range), is refused with [`OptimizeError::RunLog`], never used.
    pub fn with_log_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.settings.log_dir = Some(dir.into());
        self
    }

    /// The metric's name in the saved state's fingerprint (default: its Rust type name, which
    /// names the function or, for a closure, the function it is written in). Change it when the
    /// metric's scoring changes, so that scores of the old one are not reused; set it to keep
    /// resuming a state after the metric moved.
    pub fn with_metric_name(mut self, name: impl Into<String>) -> Self {
        self.settings.metric_name = Some(name.into());
        self
    }

    /// How progress is shown (one step per metric call).
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.settings.progress = progress;
        self
    }

    /// Optimizes `student`'s instructions: minibatches from `trainset`, candidates scored on
    /// `valset` (the training set when `valset` is empty, as in DSPy).
    pub async fn compile<P>(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, GepaReport>, OptimizeError>
    where
        P: Module + Clone,
        M: Metric<P::Output>,
        F: PredictorFeedback<P::Output>,
    {
        Run::start(self, student, trainset, valset)
            .await?
            .go()
            .await
    }

    /// [`compile`](Self::compile) from sync code (see [`crate::blocking`] for the rule).
    pub fn compile_blocking<P>(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, GepaReport>, OptimizeError>
    where
        P: Module + Clone,
        M: Metric<P::Output>,
        F: PredictorFeedback<P::Output>,
    {
        crate::blocking::block_on(self.compile(student, trainset, valset))?
    }
}

/// What a component of a candidate is.
#[derive(Debug, Clone)]
enum Component {
    /// The instructions of the predictor at this index.
    Instructions(usize),
    /// The description of `tool` in the ReAct loop whose step predictor is at index `step`.
    Tool {
        /// The component's name (`tools.search`).
        name: String,
        step: usize,
        tool: String,
        arguments: Value,
    },
}

/// The components GEPA rewrites in `student`, with their current texts: each predictor's
/// instructions, then, with `tools`, each ReAct tool's description.
fn components<P: Predictors>(student: &P, tools: bool) -> Vec<(String, Component, String)> {
    let predictors = student.named_predictors();
    let mut all: Vec<(String, Component, String)> = predictors
        .iter()
        .enumerate()
        .map(|(i, (name, p))| (name.clone(), Component::Instructions(i), p.instructions()))
        .collect();
    if !tools {
        return all;
    }
    for (path, core) in student.named_react_loops() {
        let step_path = match path.as_str() {
            "self" => "react".to_owned(),
            _ => crate::module::join_path(&path, "react".to_owned()),
        };
        let Some(step) = predictors.iter().position(|(name, _)| *name == step_path) else {
            continue;
        };
        for tool in core.tool_list() {
            let name = crate::module::tool_component(&path, tool.name());
            all.push((
                name.clone(),
                Component::Tool {
                    name,
                    step,
                    tool: tool.name().to_owned(),
                    arguments: tool.args_schema().clone(),
                },
                tool.description().to_owned(),
            ));
        }
    }
    all
}

/// A copy of `student` with these texts, in component order (the predictors' instructions
/// first, so a tool's line in a step's new instructions follows its description).
fn build<P: Predictors + Clone>(student: &P, components: &[Component], texts: &[String]) -> P {
    let mut program = student.clone();
    for ((_, predictor), text) in program.named_predictors_mut().into_iter().zip(texts) {
        predictor.set_instructions(text.clone());
    }
    for (component, text) in components.iter().zip(texts) {
        if let Component::Tool { name, .. } = component {
            // The names come from this program's own tools.
            if let Err(error) = program.set_named_tool_description(name, text) {
                tracing::error!("GEPA: {error}");
            }
        }
    }
    program
}

/// GEPA's epoch-shuffled minibatches: the training set shuffled once per epoch, padded with its
/// least-used examples to a multiple of the minibatch size, and read in order.
struct Minibatches {
    size: usize,
    order: Vec<usize>,
    epoch: Option<usize>,
}

impl Minibatches {
    fn next(&mut self, iteration: usize, train: usize, random: &mut PyRandom) -> Vec<usize> {
        let base = iteration * self.size;
        let epoch = match self.epoch {
            None => 0,
            Some(_) => base / self.order.len().max(1),
        };
        if self.order.is_empty() || self.epoch.is_none_or(|e| epoch > e) {
            self.epoch = Some(epoch);
            let mut order: Vec<usize> = (0..train).collect();
            random.shuffle(&mut order);
            let mut uses: Vec<(usize, usize)> = order.iter().map(|i| (*i, 1)).collect();
            let padding = (self.size - train % self.size) % self.size;
            for _ in 0..padding {
                // The least-used example; of equals, the last in first-use order.
                let least = uses.iter().map(|(_, n)| *n).min().unwrap_or(0);
                let Some(at) = uses.iter().rposition(|(_, n)| *n == least) else {
                    break;
                };
                uses[at].1 += 1;
                order.push(uses[at].0);
            }
            self.order = order;
        }
        let start = base % self.order.len();
        self.order[start..(start + self.size).min(self.order.len())].to_vec()
    }
}

/// One optimization run.
struct Run<'a, M, F, P: Module> {
    gepa: &'a Gepa<M, F>,
    student: &'a P,
    trainset: &'a [Example],
    valset: &'a [Example],
    state: State,
    random: PyRandom,
    reflection_random: PyRandom,
    minibatches: Minibatches,
    merges: merge::Merges,
    report: GepaReport,
    bar: Bar,
    /// What each component is (state.components holds their names).
    kinds: Vec<Component>,
}

/// An evaluation's scores and the program it ran.
struct Scored<P: Module> {
    program: P,
    report: Report<P::Output>,
}

impl<P: Module> Scored<P> {
    fn scores(&self) -> Vec<f64> {
        self.report.results.iter().map(|r| r.score.value).collect()
    }
}

impl<'a, M, F, P> Run<'a, M, F, P>
where
    P: Module + Clone,
    M: Metric<P::Output>,
    F: PredictorFeedback<P::Output>,
{
    async fn start(
        gepa: &'a Gepa<M, F>,
        student: &'a P,
        trainset: &'a [Example],
        valset: &'a [Example],
    ) -> Result<Run<'a, M, F, P>, OptimizeError> {
        if trainset.is_empty() {
            return Err(OptimizeError::Settings {
                reason: "GEPA needs at least one training example".into(),
            });
        }
        let found = components(student, gepa.settings.tool_descriptions);
        let names: Vec<String> = found.iter().map(|(name, _, _)| name.clone()).collect();
        if names.is_empty() {
            return Err(OptimizeError::Settings {
                reason: "the program has no predictors: there are no instructions to optimize"
                    .into(),
            });
        }
        let budget = gepa
            .settings
            .budget
            .metric_calls(names.len(), trainset.len(), valset.len());
        let valset = if valset.is_empty() { trainset } else { valset };
        let (kinds, seed): (Vec<Component>, Vec<String>) = found
            .into_iter()
            .map(|(_, kind, text)| (kind, text))
            .unzip();
        let fingerprint = run_fingerprint::fingerprint(
            trainset,
            valset,
            &run_fingerprint::metric_name::<M>(gepa.settings.metric_name.as_deref()),
            &student.to_saved_json(),
            json!({
                "task": run_fingerprint::task_models(student),
                "reflection": gepa.settings.reflection_lm.model(),
            }),
        );
        let saved = match &gepa.settings.log_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| OptimizeError::RunLog {
                    path: dir.clone(),
                    reason: e.to_string(),
                })?;
                State::load(dir, &names, valset.len(), &fingerprint)?
            }
            None => None,
        };
        let resumed = saved.is_some();
        let report = GepaReport {
            candidates: Vec::new(),
            best: 0,
            fronts: Vec::new(),
            metric_calls: 0,
            budget,
            iterations: 0,
            proposed: 0,
            accepted: 0,
            merges_tried: 0,
            merges_accepted: 0,
            proposal_failures: 0,
            usage: Usage::default(),
            reflection_usage: Usage::default(),
            resumed,
            stopped: GepaStop::Budget,
        };
        let bar = Bar::new(gepa.settings.progress, "gepa", budget);
        let mut run = Run {
            gepa,
            student,
            trainset,
            valset,
            state: State::new(
                Vec::new(),
                Vec::new(),
                Vec::new(),
                &PyRandom::new(0),
                Value::Null,
            ),
            random: PyRandom::new(gepa.settings.seed),
            reflection_random: PyRandom::new(gepa.settings.seed),
            minibatches: Minibatches {
                size: gepa.settings.minibatch_size,
                order: Vec::new(),
                epoch: None,
            },
            merges: merge::Merges::default(),
            report,
            bar,
            kinds,
        };
        run.state = match saved {
            Some(state) => {
                if let Some(random) = state.reflection_random() {
                    run.reflection_random = random;
                }
                tracing::info!(
                    candidates = state.candidates.len(),
                    metric_calls = state.metric_calls,
                    "GEPA: resuming a saved run"
                );
                state
            }
            None => {
                let scored = run.score(&seed, valset, false).await?;
                let scores = scored.scores();
                run.advance(scores.len());
                State::new(names, seed, scores, &run.reflection_random, fingerprint)
            }
        };
        Ok(run)
    }

    /// Runs `instructions` over `examples` (traces kept when `traces`).
    async fn score(
        &mut self,
        instructions: &[String],
        examples: &[Example],
        traces: bool,
    ) -> Result<Scored<P>, OptimizeError> {
        let program = build(self.student, &self.kinds, instructions);
        let mut evaluation = Evaluate::new(examples, Borrowed(&self.gepa.metric))
            .with_concurrency(self.gepa.settings.concurrency)
            .with_failure_score(self.gepa.settings.failure_score)
            .with_progress(Progress::Off)
            .with_traces(traces);
        if let Some(n) = self.gepa.settings.max_errors {
            evaluation = evaluation.with_max_errors(n);
        }
        let report = evaluation.run(&program).await?;
        self.report.usage += report.usage;
        Ok(Scored { program, report })
    }

    /// Counts `n` metric calls.
    fn advance(&mut self, n: usize) {
        self.state.metric_calls += n;
        let best = self
            .state
            .averages()
            .into_iter()
            .fold(f64::NEG_INFINITY, f64::max);
        let message = if best.is_finite() {
            format!(
                "{} candidates, best average {best:.3}",
                self.state.candidates.len()
            )
        } else {
            "scoring the starting program".to_owned()
        };
        for _ in 0..n {
            self.bar.advance(|| message.clone());
        }
    }

    fn save(&mut self) -> Result<(), OptimizeError> {
        if let Some(dir) = &self.gepa.settings.log_dir {
            self.state.set_reflection_random(&self.reflection_random);
            self.state.save(dir)?;
        }
        Ok(())
    }

    fn log(&self, entry: &Value) -> Result<(), OptimizeError> {
        match &self.gepa.settings.log_dir {
            Some(dir) => state::append_log(dir, entry),
            None => Ok(()),
        }
    }

    fn stop_requested(&self) -> bool {
        self.gepa
            .settings
            .log_dir
            .as_deref()
            .is_some_and(|dir: &Path| dir.join(state::STOP_FILE).exists())
    }

    async fn go(mut self) -> Result<Compiled<P, GepaReport>, OptimizeError> {
        loop {
            if self.state.metric_calls >= self.report.budget {
                self.report.stopped = GepaStop::Budget;
                break;
            }
            if self.stop_requested() {
                self.report.stopped = GepaStop::StopFile;
                break;
            }
            let lm_calls = self.report.usage.lm_calls + self.report.reflection_usage.lm_calls;
            if self
                .gepa
                .settings
                .max_lm_calls
                .is_some_and(|max| lm_calls >= max)
            {
                self.report.stopped = GepaStop::LmCalls;
                break;
            }
            self.save()?;
            self.state.iteration += 1;
            let mut entry = json!({"i": self.state.iteration});
            if self.gepa.settings.merge && self.merges.due > 0 && self.merges.last_found_new {
                let plan = self.merges.plan(&self.state, &mut self.random);
                self.merges.last_found_new = false;
                entry["invoked_merge"] = json!(true);
                if let Some(plan) = plan {
                    self.merge(plan, &mut entry).await?;
                    entry["metric_calls"] = json!(self.state.metric_calls);
                    self.log(&entry)?;
                    continue;
                }
            }
            self.merges.last_found_new = false;
            self.reflect(&mut entry).await?;
            entry["metric_calls"] = json!(self.state.metric_calls);
            self.log(&entry)?;
        }
        self.save()?;
        self.bar.finish();
        Ok(self.finish())
    }

    /// Scores a merge on its subsample, and on the whole validation set when it does at least
    /// as well as the better parent there.
    async fn merge(&mut self, plan: merge::Plan, entry: &mut Value) -> Result<(), OptimizeError> {
        self.report.merges_tried += 1;
        let examples: Vec<Example> = plan
            .subsample
            .iter()
            .map(|v| self.valset[*v].clone())
            .collect();
        let scored = self.score(&plan.instructions, &examples, false).await?;
        let scores = scored.scores();
        self.advance(examples.len());
        let sum_of = |candidate: usize| -> Vec<f64> {
            plan.subsample
                .iter()
                .map(|v| self.state.val_scores[candidate][*v])
                .collect()
        };
        let (first, second) = (sum_of(plan.first), sum_of(plan.second));
        entry["merged"] = json!(true);
        entry["merged_entities"] = json!([plan.first, plan.second, plan.ancestor]);
        entry["subsample_ids"] = json!(plan.subsample);
        entry["id1_subsample_scores"] = json!(first);
        entry["id2_subsample_scores"] = json!(second);
        entry["new_program_subsample_scores"] = json!(scores);
        let new: f64 = scores.iter().sum();
        let best_parent = first.iter().sum::<f64>().max(second.iter().sum());
        if new >= best_parent {
            let index = self
                .add_candidate(plan.instructions, vec![plan.first, plan.second])
                .await?;
            self.merges.due = self.merges.due.saturating_sub(1);
            self.merges.accepted += 1;
            self.report.merges_accepted += 1;
            entry["new_program_idx"] = json!(index);
        } else {
            tracing::info!(
                first = plan.first,
                second = plan.second,
                "GEPA: the merge is worse than both parents on its subsample"
            );
        }
        Ok(())
    }

    /// Scores `instructions` on the whole validation set and adds them as a candidate.
    async fn add_candidate(
        &mut self,
        instructions: Vec<String>,
        parents: Vec<usize>,
    ) -> Result<usize, OptimizeError> {
        let scored = self.score(&instructions, self.valset, false).await?;
        let scores = scored.scores();
        let discovered_at = self.state.metric_calls;
        self.advance(scores.len());
        let index = self.state.add(instructions, parents, scores, discovered_at);
        tracing::info!(
            candidate = index,
            average = self.state.averages()[index],
            "GEPA: new candidate"
        );
        Ok(index)
    }

    /// One reflective iteration: a parent, a minibatch, a proposal, a child scored beside it.
    async fn reflect(&mut self, entry: &mut Value) -> Result<(), OptimizeError> {
        let averages = self.state.averages();
        let parent = match self.gepa.settings.selection {
            CandidateSelection::Pareto => {
                pareto::select_from_front(&self.state.fronts, &averages, &mut self.random)
            }
            CandidateSelection::CurrentBest => pareto::best_index(&averages),
        };
        let iteration = usize::try_from(self.state.iteration).unwrap_or(0);
        let ids = self
            .minibatches
            .next(iteration, self.trainset.len(), &mut self.random);
        let minibatch: Vec<Example> = ids.iter().map(|i| self.trainset[*i].clone()).collect();
        let parent_instructions = self.state.candidates[parent].clone();
        let before = self.score(&parent_instructions, &minibatch, true).await?;
        let before_scores = before.scores();
        self.advance(minibatch.len());
        entry["selected_program_candidate"] = json!(parent);
        entry["subsample_ids"] = json!(ids);
        entry["subsample_scores"] = json!(before_scores);
        if self.gepa.settings.skip_perfect_score
            && before_scores
                .iter()
                .all(|s| *s >= self.gepa.settings.perfect_score)
        {
            entry["outcome"] = json!("skipped: perfect on the minibatch");
            return Ok(());
        }
        if before.report.results.iter().all(|r| r.error.is_some()) {
            entry["outcome"] = json!("skipped: every run on the minibatch failed");
            return Ok(());
        }
        let components: Vec<usize> = match self.gepa.settings.components {
            ComponentSelection::All => (0..self.state.components.len()).collect(),
            ComponentSelection::RoundRobin => {
                let next = self.state.next_component[parent];
                self.state.next_component[parent] = (next + 1) % self.state.components.len();
                vec![next]
            }
        };
        let ids: Vec<PredictorId> = before
            .program
            .named_predictors()
            .into_iter()
            .map(|(_, p)| p.id())
            .collect();
        let mut datasets: Vec<(usize, Vec<Value>)> = Vec::new();
        for &component in &components {
            let records = self.records(&before, component, &ids);
            if records.is_empty() {
                tracing::info!(
                    predictor = self.state.components[component],
                    "GEPA: no reflective examples for this predictor"
                );
            } else {
                datasets.push((component, records));
            }
        }
        entry["components"] = json!(
            components
                .iter()
                .map(|c| self.state.components[*c].clone())
                .collect::<Vec<_>>()
        );
        if datasets.is_empty() {
            entry["outcome"] = json!("no reflective examples");
            return Ok(());
        }
        let Some(proposals) = self.propose(&parent_instructions, &datasets).await else {
            self.report.proposal_failures += 1;
            entry["outcome"] = json!("the reflection LM gave no instruction");
            return Ok(());
        };
        let mut child = parent_instructions.clone();
        for (component, text) in &proposals {
            child[*component] = text.clone();
        }
        entry["proposals"] = Value::Object(
            proposals
                .iter()
                .map(|(c, t)| (self.state.components[*c].clone(), Value::String(t.clone())))
                .collect(),
        );
        self.report.proposed += 1;
        let after = self.score(&child, &minibatch, false).await?;
        let after_scores = after.scores();
        self.advance(minibatch.len());
        entry["new_subsample_scores"] = json!(after_scores);
        let (old, new): (f64, f64) = (before_scores.iter().sum(), after_scores.iter().sum());
        if new > old {
            self.report.accepted += 1;
            let index = self.add_candidate(child, vec![parent]).await?;
            self.merges.last_found_new = true;
            if self.merges.accepted < self.gepa.settings.max_merges {
                self.merges.due += 1;
            }
            entry["outcome"] = json!("accepted");
            entry["new_program_idx"] = json!(index);
        } else {
            entry["outcome"] = json!("rejected: not better on the minibatch");
        }
        Ok(())
    }

    /// What the reflection LM sees of one component: per run that succeeded, one call of its
    /// predictor (for a tool, one step call that called it, when there is one), with the feedback
    /// on it. `ids`: the predictors' ids in `scored`'s program.
    fn records(&mut self, scored: &Scored<P>, component: usize, ids: &[PredictorId]) -> Vec<Value> {
        let name = &self.state.components[component];
        let (id, tool) = match &self.kinds[component] {
            Component::Instructions(p) => (ids[*p], None),
            Component::Tool { step, tool, .. } => (ids[*step], Some(tool.as_str())),
        };
        let mut records = Vec::new();
        for result in &scored.report.results {
            let (Some(output), None) = (&result.output, &result.error) else {
                continue;
            };
            let picked = match tool {
                None => reflection::pick_call(&result.trace, id, &mut self.reflection_random),
                Some(tool) => {
                    reflection::pick_tool_call(&result.trace, id, tool, &mut self.reflection_random)
                }
            };
            let Some(call) = picked else {
                continue;
            };
            let predicted = Predicted {
                output,
                fields: result.fields(),
                trace: Some(&result.trace),
            };
            let own = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.gepa
                    .feedback
                    .feedback(&result.example, &predicted, name, call)
            }))
            .unwrap_or_else(|panic| {
                tracing::warn!(
                    predictor = name.as_str(),
                    "GEPA: the feedback function panicked ({}); using the metric's feedback",
                    crate::evaluate::panic_text(&*panic)
                );
                None
            });
            let score = own.as_ref().unwrap_or(&result.score);
            let text = score
                .feedback
                .clone()
                .unwrap_or_else(|| gepa_default_feedback(score.value));
            records.push(reflection::record(call, text));
        }
        records
    }

    /// New instructions for each component, or `None` when the reflection LM failed twice.
    async fn propose(
        &mut self,
        current: &[String],
        datasets: &[(usize, Vec<Value>)],
    ) -> Option<Vec<(usize, String)>> {
        for attempt in 0..2 {
            let mut proposals = Vec::new();
            let mut failure = None;
            for (component, records) in datasets {
                let asked = match &self.kinds[*component] {
                    Component::Instructions(_) => reflection::Proposal::Instruction,
                    Component::Tool {
                        tool, arguments, ..
                    } => reflection::Proposal::ToolDescription { tool, arguments },
                };
                match reflection::propose(
                    &self.gepa.settings.reflection_lm,
                    &self.gepa.settings.reflection_options,
                    asked,
                    &current[*component],
                    records.clone(),
                    &mut self.report.reflection_usage,
                )
                .await
                {
                    Ok(text) => proposals.push((*component, text)),
                    Err(error) => {
                        failure = Some(error);
                        break;
                    }
                }
            }
            match failure {
                None => return Some(proposals),
                Some(error) => tracing::warn!(
                    attempt = attempt + 1,
                    "GEPA: the reflection LM's proposal failed: {error}"
                ),
            }
        }
        None
    }

    fn finish(mut self) -> Compiled<P, GepaReport> {
        let averages = self.state.averages();
        let best = pareto::best_index(&averages);
        self.report.candidates = (0..self.state.candidates.len())
            .map(|c| GepaCandidate {
                instructions: self
                    .state
                    .components
                    .iter()
                    .cloned()
                    .zip(self.state.candidates[c].iter().cloned())
                    .collect(),
                parents: self.state.parents[c].clone(),
                val_scores: self.state.val_scores[c].clone(),
                average: averages[c],
                discovered_at: self.state.discovered_at[c],
            })
            .collect();
        self.report.best = best;
        self.report.fronts = self
            .state
            .fronts
            .iter()
            .map(|f| f.iter().copied().collect())
            .collect();
        self.report.metric_calls = self.state.metric_calls;
        self.report.iterations = usize::try_from(self.state.iteration + 1).unwrap_or(0);
        Compiled {
            program: build(self.student, &self.kinds, &self.state.candidates[best]),
            report: self.report,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_budgets_match_dspy() {
        // Values printed by DSPy 3.4.1's GEPA.auto_budget.
        assert_eq!(GepaBudget::Light.metric_calls(1, 0, 10), 420);
        assert_eq!(GepaBudget::Light.metric_calls(1, 0, 50), 580);
        assert_eq!(GepaBudget::Light.metric_calls(1, 0, 100), 780);
        assert_eq!(GepaBudget::Medium.metric_calls(1, 0, 10), 740);
        assert_eq!(GepaBudget::Heavy.metric_calls(1, 0, 10), 1105);
        assert_eq!(GepaBudget::Light.metric_calls(2, 0, 10), 790);
        assert_eq!(GepaBudget::Medium.metric_calls(2, 0, 50), 1390);
        assert_eq!(GepaBudget::Heavy.metric_calls(3, 0, 100), 3040);
        // No validation set: DSPy sizes the presets by the training set, and full passes by it
        // alone.
        assert_eq!(GepaBudget::Light.metric_calls(1, 10, 0), 420);
        assert_eq!(GepaBudget::FullEvals(2).metric_calls(1, 10, 0), 20);
    }

    #[test]
    fn minibatches_follow_gepas_epochs() {
        // Python: Random(0) after one choice over 8 items shuffles range(8) to
        // [7, 5, 1, 3, 4, 2, 0, 6]; padded with the last one to [.., 6, 6].
        let mut random = PyRandom::new(0);
        random.below(8);
        let mut batches = Minibatches {
            size: 3,
            order: Vec::new(),
            epoch: None,
        };
        assert_eq!(batches.next(0, 8, &mut random), [7, 5, 1]);
        assert_eq!(batches.next(1, 8, &mut random), [3, 4, 2]);
        assert_eq!(batches.next(2, 8, &mut random), [0, 6, 6]);
        assert_eq!(batches.next(3, 8, &mut random).len(), 3);
        assert_eq!(batches.epoch, Some(1));
    }

    #[test]
    fn padding_cycles_through_a_tiny_training_set() {
        let mut batches = Minibatches {
            size: 3,
            order: Vec::new(),
            epoch: None,
        };
        assert_eq!(batches.next(0, 1, &mut PyRandom::new(0)), [0, 0, 0]);
    }
}
