//! MIPROv2: instructions and demo sets searched together, as DSPy 3.4.1's `dspy.MIPROv2` does.
//!
//! 1. Demo sets: none, labeled examples, a bootstrap, then bootstraps on reshuffled training sets.
//! 2. Instructions: a prompt model summarizes the training set, then for each proposal describes
//!    the program and the predictor and writes an instruction from those, a few bootstrapped demos
//!    and a random tip. The first candidate is always the predictor's own instruction.
//! 3. Search: the starting program is scored on the validation set; each trial picks an
//!    (instruction, demo set) per predictor with optuna's seeded TPE sampler and scores it on a
//!    random minibatch; every few trials the combination with the best minibatch average not yet
//!    fully scored is scored on the whole validation set. The best full score wins (ties keep the
//!    earlier program, so the starting program wins a tie).

mod demos;
mod log;
mod proposer;
mod tpe;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use super::{BootstrapFewShot, Compiled, OptimizeError, run_fingerprint};
use crate::adapter::Fields;
use crate::adapter::templates::MIPRO_TIPS;
use crate::data::{Example, PyRandom};
use crate::evaluate::{Bar, Borrowed, Evaluate, Metric, Progress};
use crate::lm::{Lm, LmOptions, Usage};
use crate::module::Module;
pub use demos::DemoSetKind;
use log::{Logged, RunLog};
use proposer::Proposer;

/// How much searching a MIPROv2 run does: DSPy's `auto` presets, or explicit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MiproBudget {
    /// DSPy's `auto="light"`: 6 demo sets, 3 instructions (6 zero-shot), at most 100 validation
    /// examples, trials by the number of predictors (10 for one).
    Light,
    /// DSPy's `auto="medium"`: 12 candidates, at most 300 validation examples.
    Medium,
    /// DSPy's `auto="heavy"`: 18 candidates, at most 1000 validation examples.
    Heavy,
    /// DSPy's `auto=None`: this many instruction candidates and demo sets, this many trials; the
    /// validation set as given.
    Manual {
        /// Instruction candidates and demo sets per predictor.
        candidates: usize,
        /// Search trials (full evaluations come on top).
        trials: usize,
    },
}

impl MiproBudget {
    /// `(candidates, validation cap)` of a preset.
    fn preset(self) -> Option<(usize, usize)> {
        match self {
            MiproBudget::Light => Some((6, 100)),
            MiproBudget::Medium => Some((12, 300)),
            MiproBudget::Heavy => Some((18, 1000)),
            MiproBudget::Manual { .. } => None,
        }
    }

    /// The trials a preset runs for `predictors` predictors, as DSPy sizes them.
    ///
    /// ```
    /// use signet::optimize::MiproBudget;
    /// assert_eq!(MiproBudget::Light.trials(1, false), 10);
    /// assert_eq!(MiproBudget::Light.trials(2, false), 20);
    /// assert_eq!(MiproBudget::Heavy.trials(1, true), 27);
    /// assert_eq!(MiproBudget::Manual { candidates: 3, trials: 7 }.trials(1, false), 7);
    /// ```
    pub fn trials(self, predictors: usize, zero_shot: bool) -> usize {
        match self {
            MiproBudget::Manual { trials, .. } => trials,
            preset => {
                let n = preset.preset().map_or(0, |(n, _)| n);
                trials_for(predictors, zero_shot, n)
            }
        }
    }
}

/// DSPy's `_set_num_trials_from_num_candidates`.
fn trials_for(predictors: usize, zero_shot: bool, candidates: usize) -> usize {
    let variables = if zero_shot {
        predictors
    } else {
        2 * predictors
    } as f64;
    let n = candidates as f64;
    (2.0 * variables * n.log2()).max(1.5 * n) as usize
}

/// What a trial was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TrialKind {
    /// The starting program on the whole validation set (trial 1).
    Default,
    /// A sampled combination on a minibatch.
    Minibatch,
    /// A combination on the whole validation set: a sampled one without minibatches, or the best
    /// minibatch average so far.
    Full,
}

/// One predictor's choice in a trial: an index into its instruction candidates and (unless the
/// run is zero-shot) into its demo sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MiproChoice {
    /// The instruction candidate (0 is the predictor's own instruction).
    pub instruction: usize,
    /// The demo set (0 is no demos), or none in a zero-shot run.
    pub demos: Option<usize>,
}

/// One evaluation of the search.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct MiproTrial {
    /// DSPy's trial number (1 is the starting program; full evaluations take numbers too).
    pub number: usize,
    /// What it was.
    pub kind: TrialKind,
    /// Per predictor, in program order.
    pub choices: Vec<MiproChoice>,
    /// The validation examples it ran on (indices into the validation set used).
    pub examples: Vec<usize>,
    /// Its score in percent.
    pub score: f64,
    /// Examples whose run failed (scored 0).
    pub failures: usize,
    /// Evaluation metric calls so far, this one included.
    pub eval_calls: usize,
}

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MiproStop {
    /// Every trial ran.
    Finished,
    /// Someone created `mipro.stop` in the log directory.
    StopFile,
    /// The LM-call limit was reached.
    LmCalls,
    /// The metric-call limit was reached.
    MetricCalls,
}

/// What a MIPROv2 run did.
#[derive(Debug, Clone)]
pub struct MiproReport {
    /// The predictors' names, in program order.
    pub predictors: Vec<String>,
    /// Per predictor, its instruction candidates (the first is its own instruction).
    pub instructions: Vec<Vec<String>>,
    /// Per predictor, its demo sets (the first is empty); see [`demo_set_kinds`](Self::demo_set_kinds).
    pub demo_sets: Vec<Vec<Vec<Fields>>>,
    /// How each demo set was made.
    pub demo_set_kinds: Vec<DemoSetKind>,
    /// The prompt model's summary of the training set (none when it failed or was not asked).
    pub dataset_summary: Option<String>,
    /// What the prompt model did not answer usably (the dataset summary, proposals), with why;
    /// a failed proposal is left out of the candidates. (The first proposal's calls are made, as
    /// in DSPy, though the predictor's own instruction takes its place.)
    pub proposal_failures: Vec<String>,
    /// Every evaluation, in order.
    pub trials: Vec<MiproTrial>,
    /// The index in `trials` of the returned program's full evaluation.
    pub best: usize,
    /// Its score in percent.
    pub best_score: f64,
    /// Search trials planned (full evaluations not counted).
    pub planned_trials: usize,
    /// Whether trials ran on minibatches.
    pub minibatch: bool,
    /// The validation examples trials ran on, in the order [`MiproTrial::examples`] indexes them:
    /// indices into the validation set given (into the training set when none was given and its
    /// last 80% served). A preset caps and reorders them.
    pub validation: Vec<usize>,
    /// Metric calls: bootstrap runs and evaluations.
    pub metric_calls: usize,
    /// The program's LM usage (bootstraps and evaluations).
    pub usage: Usage,
    /// The prompt model's usage.
    pub prompt_usage: Usage,
    /// Whether the run continued a logged one.
    pub resumed: bool,
    /// Why it stopped.
    pub stopped: MiproStop,
}

/// One line for logs: `9 evaluations, 63 metric calls, 11 prompt-model calls, 3 instruction
/// candidates and 3 demo sets per predictor, 0 prompt-model failures; score 70.0% -> 70.0%` (the
/// candidates listed per predictor when they differ; the stop reason when it did not finish).
impl std::fmt::Display for MiproReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts = |lists: Vec<usize>| -> String {
            match lists.first() {
                Some(first) if lists.iter().all(|n| n == first) => first.to_string(),
                _ => format!("{lists:?}"),
            }
        };
        write!(
            f,
            "{} evaluations, {} metric calls, {} prompt-model calls, {} instruction candidates and \
             {} demo sets per predictor, {} prompt-model failures; ",
            self.trials.len(),
            self.metric_calls,
            self.prompt_usage.lm_calls,
            counts(self.instructions.iter().map(Vec::len).collect()),
            counts(self.demo_sets.iter().map(Vec::len).collect()),
            self.proposal_failures.len(),
        )?;
        if self.stopped != MiproStop::Finished {
            write!(f, "stopped early ({:?}); ", self.stopped)?;
        }
        let start = self.trials.first().map_or(0.0, |t| t.score);
        write!(f, "score {start:.1}% -> {:.1}%", self.best_score)
    }
}

/// MIPROv2, DSPy's joint instruction and demo optimizer: demo sets (none, labeled, bootstrapped,
/// bootstrapped on reshuffled training sets), instructions a prompt model proposes from a
/// summary of the data, the program and bootstrapped demos, then a seeded TPE search over
/// (instruction, demo set) per predictor on minibatches, the most promising scored on the whole
/// validation set; the best full score wins. `prompt_lm` writes the dataset summary and the instructions; the program's own
/// LM (or [`with_task_lm`](Self::with_task_lm)) runs the bootstraps and the trials.
///
/// ```
/// use signet::data::Example;
/// use signet::evaluate::exact_match;
/// use signet::testing::ScriptedLm;
/// use signet::optimize::{MiproBudget, MiproV2};
/// use signet::prelude::*;
///
/// /// Answer.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: String }
///
/// let examples: Vec<Example> = ["a", "b", "c", "d"].iter()
///     .map(|q| Example::new(serde_json::json!({"question": q, "answer": "yes"})).with_inputs(["question"]))
///     .collect();
/// // The task model says "yes" only under the proposed instruction.
/// let task = signet::testing::FnLm::new(|request| {
///     let yes = request.messages[0].content.contains("Say yes.");
///     format!("[[ ## answer ## ]]\n{}", if yes { "yes" } else { "no" })
/// });
/// let prompt = ScriptedLm::texts(["[[ ## proposed_instruction ## ]]\nAnswer.", "[[ ## proposed_instruction ## ]]\nSay yes."]);
/// let compiled = MiproV2::new(exact_match("answer"), prompt)
///     .with_budget(MiproBudget::Manual { candidates: 2, trials: 4 })
///     .with_max_bootstrapped_demos(0)
///     .with_max_labeled_demos(0)
///     .with_minibatch(false)
///     .with_data_aware(false)
///     .with_program_aware(false)
///     .with_tips(false)
///     .with_concurrency(1)
///     .compile_blocking(&Predict::<Ask>::new().with_lm(task), &examples, &examples)
///     .unwrap();
/// assert_eq!(compiled.program.predictor().instructions(), "Say yes.");
/// assert_eq!(compiled.report.best_score, 100.0);
/// // One line for logs: evaluations, calls, candidates, and the score before and after.
/// assert!(compiled.report.to_string().ends_with("score 0.0% -> 100.0%"), "{}", compiled.report);
/// ```
pub struct MiproV2<M> {
    metric: M,
    settings: Settings,
}

/// Everything but the metric (see the setters of [`MiproV2`]).
struct Settings {
    prompt_lm: Arc<dyn Lm>,
    prompt_options: LmOptions,
    task_lm: Option<Arc<dyn Lm>>,
    teacher_lm: Option<Arc<dyn Lm>>,
    budget: MiproBudget,
    max_bootstrapped_demos: usize,
    max_labeled_demos: usize,
    minibatch: bool,
    minibatch_size: usize,
    full_eval_steps: usize,
    seed: i64,
    temperature: f32,
    threshold: Option<f64>,
    program_aware: bool,
    data_aware: bool,
    tips: bool,
    fewshot_aware: bool,
    view_data_batch_size: usize,
    program_code: Option<String>,
    concurrency: usize,
    max_errors: Option<usize>,
    max_lm_calls: Option<u64>,
    max_metric_calls: Option<usize>,
    log_dir: Option<PathBuf>,
    metric_name: Option<String>,
    progress: Progress,
}

impl<M> MiproV2<M> {
    /// MIPROv2 with DSPy's defaults: the light preset, up to 4 bootstrapped and 4 labeled demos,
    /// minibatches of 35 with a full evaluation every 5 trials, seed 9, proposals at temperature
    /// 1.0 from a program-, data- and demo-aware proposer with tips.
    pub fn new(metric: M, prompt_lm: impl Lm + 'static) -> MiproV2<M> {
        MiproV2 {
            metric,
            settings: Settings {
                prompt_lm: crate::lm::shared(prompt_lm),
                prompt_options: LmOptions::default(),
                task_lm: None,
                teacher_lm: None,
                budget: MiproBudget::Light,
                max_bootstrapped_demos: 4,
                max_labeled_demos: 4,
                minibatch: true,
                minibatch_size: 35,
                full_eval_steps: 5,
                seed: 9,
                temperature: 1.0,
                threshold: None,
                program_aware: true,
                data_aware: true,
                tips: true,
                fewshot_aware: true,
                view_data_batch_size: 10,
                program_code: None,
                concurrency: 8,
                max_errors: None,
                max_lm_calls: None,
                max_metric_calls: None,
                log_dir: None,
                metric_name: None,
                progress: Progress::Auto,
            },
        }
    }

    /// How much to search: a preset or explicit counts.
    pub fn with_budget(mut self, budget: MiproBudget) -> Self {
        self.settings.budget = budget;
        self
    }

    /// Runs the program (bootstraps and trials) with `lm` instead of each predictor's own LM.
    pub fn with_task_lm(mut self, lm: impl Lm + 'static) -> Self {
        self.settings.task_lm = Some(crate::lm::shared(lm));
        self
    }

    /// Runs the bootstraps' teacher with `lm` (a stronger model writes the demos).
    pub fn with_teacher_lm(mut self, lm: impl Lm + 'static) -> Self {
        self.settings.teacher_lm = Some(crate::lm::shared(lm));
        self
    }

    /// Options of the prompt model's calls (the proposer sets the temperature and the seed), e.g.
    /// a `max_tokens` bound for a model that may run on.
    pub fn with_prompt_options(mut self, options: LmOptions) -> Self {
        self.settings.prompt_options = options;
        self
    }

    /// Bootstrapped demos per predictor at most (default 4). With no bootstrapped and no labeled
    /// demos the run is zero-shot: only instructions are searched.
    pub fn with_max_bootstrapped_demos(mut self, n: usize) -> Self {
        self.settings.max_bootstrapped_demos = n;
        self
    }

    /// Demos per predictor at most, labeled and bootstrapped together (default 4).
    pub fn with_max_labeled_demos(mut self, n: usize) -> Self {
        self.settings.max_labeled_demos = n;
        self
    }

    /// Whether trials run on minibatches (default yes; the presets decide it themselves: on when
    /// the validation set has more than 50 examples).
    pub fn with_minibatch(mut self, minibatch: bool) -> Self {
        self.settings.minibatch = minibatch;
        self
    }

    /// Validation examples per minibatch (default 35, at least 1).
    pub fn with_minibatch_size(mut self, n: usize) -> Self {
        self.settings.minibatch_size = n.max(1);
        self
    }

    /// A full evaluation after every `n` minibatch trials (default 5, at least 1) and after the
    /// last.
    pub fn with_minibatch_full_eval_steps(mut self, n: usize) -> Self {
        self.settings.full_eval_steps = n.max(1);
        self
    }

    /// The seed of every random choice (default 9, DSPy's): demo-set shuffles, tips, minibatches
    /// and the TPE sampler. Between 0 and 2^32 - 1.
    pub fn with_seed(mut self, seed: i64) -> Self {
        self.settings.seed = seed;
        self
    }

    /// The proposals' temperature (default 1.0).
    pub fn with_init_temperature(mut self, temperature: f32) -> Self {
        self.settings.temperature = temperature;
        self
    }

    /// The bootstraps keep a run scoring at least `threshold` (default: any score above 0).
    pub fn with_threshold(mut self, threshold: f64) -> Self {
        self.settings.threshold = Some(threshold);
        self
    }

    /// Whether proposals see the program's code and descriptions of it and of the predictor
    /// (default yes).
    pub fn with_program_aware(mut self, on: bool) -> Self {
        self.settings.program_aware = on;
        self
    }

    /// Whether proposals see a summary of the training set (default yes).
    pub fn with_data_aware(mut self, on: bool) -> Self {
        self.settings.data_aware = on;
        self
    }

    /// Whether each proposal gets a random tip (default yes).
    pub fn with_tips(mut self, on: bool) -> Self {
        self.settings.tips = on;
        self
    }

    /// Whether proposals see bootstrapped demos (default yes).
    pub fn with_fewshot_aware(mut self, on: bool) -> Self {
        self.settings.fewshot_aware = on;
        self
    }

    /// Training examples per summary call (default 10).
    pub fn with_view_data_batch_size(mut self, n: usize) -> Self {
        self.settings.view_data_batch_size = n.max(1);
        self
    }

    /// The program as the proposer sees it (default: its signatures and predictors as DSPy-like
    /// pseudo-code). DSPy shows the program's Python source; pass your own source or a
    /// description.
    pub fn with_program_code(mut self, code: impl Into<String>) -> Self {
        self.settings.program_code = Some(code.into());
        self
    }

    /// Examples run at once in bootstraps and evaluations (default 8).
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.settings.concurrency = n.max(1);
        self
    }

    /// Stops with [`OptimizeError::TooManyErrors`] when more than `n` runs of one evaluation or
    /// bootstrap fail (a dead endpoint fails fast instead of scoring 0 everywhere). Without it an
    /// evaluation's failed runs score 0 and are counted in each trial's `failures`; bootstraps
    /// allow 10.
    pub fn with_max_errors(mut self, n: usize) -> Self {
        self.settings.max_errors = Some(n);
        self
    }

    /// Stops the search once the program's and the prompt model's LM calls reach `n` (checked
    /// before each trial); the best program so far is returned.
    pub fn with_max_lm_calls(mut self, n: u64) -> Self {
        self.settings.max_lm_calls = Some(n);
        self
    }

    /// Stops the search once `n` metric calls are spent (checked before each trial).
    pub fn with_max_metric_calls(mut self, n: usize) -> Self {
        self.settings.max_metric_calls = Some(n);
        self
    }

    /// Logs the run in `dir` (`mipro_log.jsonl`: the demo sets, the instructions and every trial;
    /// `best_program.json`: the best program so far, in DSPy's format, written atomically). A
    /// run given a directory holding a log of the same run continues it without repeating its LM
    /// calls; creating `mipro.stop` there stops it before its next trial.
    ///
    /// The same run means the same settings, predictors and seed, and the same fingerprint: the
    /// training and validation data (hashed by content), the metric's name (see
    /// [`with_metric_name`](Self::with_metric_name)), the program's saved JSON and the models
    /// (each predictor's, the prompt model's, the teacher's). A log of another run is refused
    /// with [`OptimizeError::RunLog`], never replayed. A torn last line (a run killed while
    /// writing it) is skipped with a warning; a damaged line before it is
    /// [`OptimizeError::RunLog`] naming the line.
    pub fn with_log_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.settings.log_dir = Some(dir.into());
        self
    }

    /// The metric's name in the run log's fingerprint (default: its Rust type name, which names
    /// the function or, for a closure, the function it is written in). Change it when the
    /// metric's scoring changes, so that a log scored by the old one is not replayed; set it to
    /// keep resuming a log after the metric moved.
    pub fn with_metric_name(mut self, name: impl Into<String>) -> Self {
        self.settings.metric_name = Some(name.into());
        self
    }

    /// How progress is shown (one step per evaluation metric call).
    pub fn with_progress(mut self, progress: Progress) -> Self {
        self.settings.progress = progress;
        self
    }

    /// Optimizes `student`: demos from `trainset`, trials scored on `valset` (when it is empty,
    /// the last 80% of `trainset`, as in DSPy).
    pub async fn compile<P>(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, MiproReport>, OptimizeError>
    where
        P: Module + Clone,
        M: Metric<P::Output>,
    {
        Run::start(self, student, trainset, valset)?.go().await
    }

    /// [`compile`](Self::compile) from sync code (see [`crate::blocking`] for the rule).
    pub fn compile_blocking<P>(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, MiproReport>, OptimizeError>
    where
        P: Module + Clone,
        M: Metric<P::Output>,
    {
        crate::blocking::block_on(self.compile(student, trainset, valset))?
    }
}

fn settings_error(reason: impl Into<String>) -> OptimizeError {
    OptimizeError::Settings {
        reason: reason.into(),
    }
}

/// A combination: one choice per predictor.
type Combo = Vec<MiproChoice>;

/// One optimization run.
struct Run<'a, M, P> {
    mipro: &'a MiproV2<M>,
    settings: &'a Settings,
    student: P,
    trainset: Vec<Example>,
    valset: Vec<Example>,
    names: Vec<String>,
    zero_shot: bool,
    instruction_count: usize,
    demo_set_count: usize,
    trials: usize,
    minibatch: bool,
    /// The validated seed: the random stream's and the TPE sampler's.
    seed: u32,
    random: PyRandom,
    log: Option<RunLog>,
    report: MiproReport,
    bar: Option<Bar>,
}

impl<'a, M, P> Run<'a, M, P>
where
    P: Module + Clone,
    M: Metric<P::Output>,
{
    /// Checks the settings and data (before any LM call) and sizes the run.
    fn start(
        mipro: &'a MiproV2<M>,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Run<'a, M, P>, OptimizeError> {
        let settings = &mipro.settings;
        let mut student = student.clone();
        if let Some(lm) = &settings.task_lm {
            for (_, predictor) in student.named_predictors_mut() {
                predictor.set_lm(lm.clone());
            }
        }
        let names: Vec<String> = student
            .named_predictors()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        if names.is_empty() {
            return Err(settings_error(
                "the program has no predictors: there is nothing for MIPROv2 to optimize",
            ));
        }
        if trainset.is_empty() {
            return Err(settings_error(
                "MIPROv2 needs at least one training example",
            ));
        }
        let seed = u32::try_from(settings.seed).map_err(|_| {
            settings_error(format!(
                "the seed {} is out of range: the TPE sampler takes 0 to 2^32 - 1",
                settings.seed
            ))
        })?;
        let given = valset.len();
        let (trainset, valset) = if valset.is_empty() {
            if trainset.len() < 2 {
                return Err(settings_error(
                    "with no validation set MIPROv2 scores on the last 80% of the training set, \
                     which needs at least 2 examples",
                ));
            }
            let val = ((trainset.len() as f64 * 0.8) as usize).clamp(1, 1000);
            let cut = trainset.len() - val;
            (trainset[..cut].to_vec(), trainset[cut..].to_vec())
        } else {
            (trainset.to_vec(), valset.to_vec())
        };
        // Indices of the validation examples in the set they came from.
        let offset = if given == 0 { trainset.len() } else { 0 };
        let mut validation: Vec<usize> = (offset..offset + valset.len()).collect();
        let zero_shot = settings.max_bootstrapped_demos == 0 && settings.max_labeled_demos == 0;
        let mut random = PyRandom::new(i64::from(seed));
        let (instruction_count, demo_set_count, trials, minibatch, valset) =
            match settings.budget.preset() {
                Some((n, cap)) => {
                    // DSPy always reorders the validation set here (the first random draw).
                    let picked = random.sample_indices(valset.len(), cap.min(valset.len()));
                    validation = picked.iter().map(|i| validation[*i]).collect();
                    let valset: Vec<Example> =
                        picked.into_iter().map(|i| valset[i].clone()).collect();
                    let instructions = if zero_shot { n } else { n / 2 };
                    let minibatch = valset.len() > 50;
                    let trials = trials_for(names.len(), zero_shot, n);
                    (instructions, n, trials, minibatch, valset)
                }
                None => {
                    let MiproBudget::Manual { candidates, trials } = settings.budget else {
                        unreachable!("every other budget is a preset")
                    };
                    if candidates == 0 {
                        return Err(settings_error(
                            "MIPROv2 needs at least 1 candidate per predictor (the predictor's \
                             own instruction is the first)",
                        ));
                    }
                    (candidates, candidates, trials, settings.minibatch, valset)
                }
            };
        if minibatch && settings.minibatch_size > valset.len() {
            return Err(settings_error(format!(
                "the minibatch size ({}) is larger than the validation set ({} examples): lower \
                 it with with_minibatch_size or turn minibatches off",
                settings.minibatch_size,
                valset.len()
            )));
        }
        if !zero_shot && settings.max_bootstrapped_demos == 0 && demo_set_count > 3 {
            return Err(settings_error(format!(
                "{demo_set_count} demo sets need bootstrapped demos (sets after the third are \
                 bootstraps of 1 to max_bootstrapped_demos demos), but max_bootstrapped_demos \
                 is 0: allow some, or use 3 candidates at most"
            )));
        }
        let log = match &settings.log_dir {
            Some(dir) => {
                let model = |lm: &Arc<dyn Lm>| lm.model().to_owned();
                let fingerprint = run_fingerprint::fingerprint(
                    &trainset,
                    &valset,
                    &run_fingerprint::metric_name::<M>(settings.metric_name.as_deref()),
                    &student.to_saved_json(),
                    json!({
                        "task": run_fingerprint::task_models(&student),
                        "prompt": model(&settings.prompt_lm),
                        "teacher": settings.teacher_lm.as_ref().map(model),
                    }),
                );
                Some(RunLog::open(
                    dir,
                    json!({
                        "predictors": names,
                        "train": trainset.len(),
                        "val": valset.len(),
                        "seed": seed,
                        "instruction_candidates": instruction_count,
                        "demo_sets": demo_set_count,
                        "trials": trials,
                        "minibatch": minibatch,
                        "minibatch_size": settings.minibatch_size,
                        "full_eval_steps": settings.full_eval_steps,
                        "max_bootstrapped_demos": settings.max_bootstrapped_demos,
                        "max_labeled_demos": settings.max_labeled_demos,
                        "fingerprint": fingerprint,
                    }),
                )?)
            }
            None => None,
        };
        let report = MiproReport {
            predictors: names.clone(),
            instructions: Vec::new(),
            demo_sets: Vec::new(),
            demo_set_kinds: Vec::new(),
            dataset_summary: None,
            proposal_failures: Vec::new(),
            trials: Vec::new(),
            best: 0,
            best_score: 0.0,
            planned_trials: trials,
            minibatch,
            validation,
            metric_calls: 0,
            usage: Usage::default(),
            prompt_usage: Usage::default(),
            resumed: log.as_ref().is_some_and(RunLog::resumed),
            stopped: MiproStop::Finished,
        };
        Ok(Run {
            mipro,
            settings,
            student,
            trainset,
            valset,
            names,
            zero_shot,
            instruction_count,
            demo_set_count,
            trials,
            minibatch,
            seed,
            random,
            log,
            report,
            bar: None,
        })
    }

    async fn go(mut self) -> Result<Compiled<P, MiproReport>, OptimizeError> {
        let sets = self.demo_sets().await?;
        self.propose(&sets).await?;
        self.report.demo_sets = sets;
        let best = self.search().await?;
        if let Some(bar) = &self.bar {
            bar.finish();
        }
        let program = self.build(&self.report.trials[best].choices.clone(), best == 0);
        self.report.best = best;
        self.report.best_score = self.report.trials[best].score;
        Ok(Compiled {
            program,
            report: self.report,
        })
    }

    /// Step 1: the demo sets, built or read from the log.
    async fn demo_sets(&mut self) -> Result<Vec<Vec<Vec<Fields>>>, OptimizeError> {
        let settings = self.settings;
        // A zero-shot run still bootstraps (3 demos at most, none labeled) to show the proposer.
        let (labeled, bootstrapped) = if self.zero_shot {
            (0, 3)
        } else {
            (settings.max_labeled_demos, settings.max_bootstrapped_demos)
        };
        let plan = demos::plan(
            self.demo_set_count,
            self.trainset.len(),
            labeled,
            bootstrapped,
            &mut self.random,
        );
        self.report.demo_set_kinds = plan.iter().map(|(kind, _)| *kind).collect();
        match self.log.as_mut().and_then(RunLog::next) {
            // As many sets per predictor as planned: the search draws set indices below that.
            Some(Logged::DemoSets { sets })
                if sets.len() == self.names.len() && sets.iter().all(|s| s.len() == plan.len()) =>
            {
                return Ok(sets);
            }
            Some(Logged::DemoSets { .. }) => {
                return Err(self.mismatch(&format!(
                    "the logged demo sets are not {} sets for each of {} predictors",
                    plan.len(),
                    self.names.len()
                )));
            }
            Some(_) => return Err(self.mismatch("the demo sets were expected first")),
            None => {}
        }
        let mut bootstrap = BootstrapFewShot::new(Borrowed(&self.mipro.metric))
            .with_max_bootstrapped_demos(bootstrapped)
            .with_max_labeled_demos(labeled)
            .with_concurrency(settings.concurrency)
            .with_progress(Progress::Off);
        bootstrap.threshold = settings.threshold;
        bootstrap.teacher_lm = settings.teacher_lm.clone();
        if let Some(n) = settings.max_errors {
            bootstrap = bootstrap.with_max_errors(n);
        }
        let bar = Bar::new(settings.progress, "mipro demo sets", plan.len());
        let built = demos::build(&bootstrap, &self.student, &self.trainset, &plan, &bar).await?;
        self.report.usage += built.usage;
        self.report.metric_calls += built.attempts;
        if let Some(log) = &mut self.log {
            log.append(&Logged::DemoSets {
                sets: built.sets.clone(),
            })?;
        }
        Ok(built.sets)
    }

    /// Step 2: the instruction candidates, proposed or read from the log.
    async fn propose(&mut self, sets: &[Vec<Vec<Fields>>]) -> Result<(), OptimizeError> {
        let settings = self.settings;
        let logged = match self.log.as_mut().and_then(RunLog::next) {
            Some(Logged::Instructions {
                candidates,
                summary,
                failures,
            }) => Some((candidates, summary, failures)),
            Some(_) => return Err(self.mismatch("the instructions were expected next")),
            None => None,
        };
        let mut proposer = Proposer {
            lm: settings.prompt_lm.clone(),
            options: settings.prompt_options.clone(),
            temperature: settings.temperature,
            program_code: None,
            summary: None,
            usage: Usage::default(),
        };
        if logged.is_none() {
            if settings.program_aware {
                proposer.program_code = Some(
                    settings
                        .program_code
                        .clone()
                        .unwrap_or_else(|| proposer::program_code(&self.student)),
                );
            }
            if settings.data_aware {
                tracing::info!("MIPROv2: summarizing the training set");
                match proposer
                    .summarize(&self.trainset, settings.view_data_batch_size)
                    .await
                {
                    Ok(summary) => proposer.summary = Some(summary),
                    Err(error) => {
                        tracing::warn!(%error, "MIPROv2: no dataset summary; proposing without it");
                        self.report
                            .proposal_failures
                            .push(format!("dataset summary: {error}"));
                    }
                }
            }
        }
        let proposals = self.instruction_count.min(self.demo_set_count);
        let bar = logged.is_none().then(|| {
            Bar::new(
                settings.progress,
                "mipro proposals",
                proposals * self.names.len(),
            )
        });
        let mut candidates: Vec<Vec<String>> = Vec::new();
        for (p, (name, predictor)) in self.student.named_predictors().into_iter().enumerate() {
            let mut own = vec![predictor.instructions()];
            for set in 0..proposals {
                let tip = if settings.tips {
                    MIPRO_TIPS[self.random.below(MIPRO_TIPS.len())].1
                } else {
                    ""
                };
                let rollout = self.random.randint(0, 1_000_000_000);
                if logged.is_some() {
                    continue;
                }
                tracing::info!(predictor = %name, proposal = set + 1, of = proposals, "MIPROv2: proposing an instruction");
                let shown = settings.fewshot_aware.then_some(sets[p].as_slice());
                let proposed = proposer.propose(predictor, shown, set, tip, rollout).await;
                if let Some(bar) = &bar {
                    bar.advance(|| format!("{name}, proposal {}", set + 1));
                }
                match proposed {
                    // The first proposal is replaced by the predictor's own instruction, as in
                    // DSPy (its call is made all the same).
                    Ok(_) if set == 0 => {}
                    Ok(text) => own.push(text),
                    Err(error) => {
                        tracing::warn!(predictor = %name, %error, "MIPROv2: a proposal failed; it is left out");
                        self.report
                            .proposal_failures
                            .push(format!("{name}, proposal {}: {error}", set + 1));
                    }
                }
            }
            candidates.push(own);
        }
        if let Some(bar) = &bar {
            bar.finish();
        }
        self.report.prompt_usage += proposer.usage;
        match logged {
            Some((logged, summary, failures)) => {
                if logged.len() != self.names.len() {
                    return Err(self.mismatch("the instructions are for another program"));
                }
                // The predictor's own instruction and at most one per proposal after the first:
                // the search draws candidate indices below the count.
                if logged
                    .iter()
                    .any(|c| c.is_empty() || c.len() > proposals.max(1))
                {
                    return Err(self.mismatch(&format!(
                        "each predictor has 1 to {} instruction candidates, the log has {:?}",
                        proposals.max(1),
                        logged.iter().map(Vec::len).collect::<Vec<_>>()
                    )));
                }
                self.report.instructions = logged;
                self.report.dataset_summary = summary;
                self.report.proposal_failures = failures;
            }
            None => {
                self.report.instructions = candidates;
                self.report.dataset_summary = proposer.summary;
                if let Some(log) = &mut self.log {
                    log.append(&Logged::Instructions {
                        candidates: self.report.instructions.clone(),
                        summary: self.report.dataset_summary.clone(),
                        failures: self.report.proposal_failures.clone(),
                    })?;
                }
            }
        }
        Ok(())
    }

    fn mismatch(&self, reason: &str) -> OptimizeError {
        OptimizeError::RunLog {
            path: self
                .settings
                .log_dir
                .as_deref()
                .map(|d| d.join(log::LOG_FILE))
                .unwrap_or_default(),
            reason: format!("the log does not match this run: {reason}"),
        }
    }

    /// The program for a combination (`default`: the student as it is).
    fn build(&self, choices: &[MiproChoice], default: bool) -> P {
        let mut program = self.student.clone();
        if default {
            return program;
        }
        for (p, ((_, predictor), choice)) in program
            .named_predictors_mut()
            .into_iter()
            .zip(choices)
            .enumerate()
        {
            predictor.set_instructions(self.report.instructions[p][choice.instruction].clone());
            if let Some(d) = choice.demos {
                predictor.set_demos(self.report.demo_sets[p][d].clone());
            }
        }
        program
    }

    /// Scores `choices` on the validation examples `examples` (or reads the score from the log).
    async fn evaluate(
        &mut self,
        number: usize,
        kind: TrialKind,
        choices: Combo,
        examples: Vec<usize>,
    ) -> Result<f64, OptimizeError> {
        let logged = match self.log.as_mut().and_then(RunLog::next) {
            Some(Logged::Trial(trial)) => Some(trial),
            Some(_) => return Err(self.mismatch("a trial was expected next")),
            None => None,
        };
        let from_log = logged.is_some();
        let (score, failures) = match logged {
            Some(trial) => {
                if trial.number != number || trial.choices != choices || trial.examples != examples
                {
                    return Err(self.mismatch(&format!(
                        "trial {number} chose {choices:?} on {} examples; the log has trial {} \
                         choosing {:?} on {} examples",
                        examples.len(),
                        trial.number,
                        trial.choices,
                        trial.examples.len()
                    )));
                }
                (trial.score, trial.failures)
            }
            None => {
                let program = self.build(&choices, kind == TrialKind::Default);
                let batch: Vec<Example> =
                    examples.iter().map(|i| self.valset[*i].clone()).collect();
                let mut evaluation = Evaluate::new(&batch, Borrowed(&self.mipro.metric))
                    .with_concurrency(self.settings.concurrency)
                    .with_progress(Progress::Off);
                if let Some(n) = self.settings.max_errors {
                    evaluation = evaluation.with_max_errors(n);
                }
                let report = evaluation.run(&program).await?;
                self.report.usage += report.usage;
                (report.score, report.errors().count())
            }
        };
        let eval_calls = self.report.trials.last().map_or(0, |t| t.eval_calls) + examples.len();
        self.report.metric_calls += examples.len();
        if let Some(bar) = &self.bar {
            for _ in 0..examples.len() {
                bar.advance(|| format!("trial {number}: {score:.1}"));
            }
        }
        let trial = MiproTrial {
            number,
            kind,
            choices,
            examples,
            score,
            failures,
            eval_calls,
        };
        tracing::info!(number, ?kind, score, "MIPROv2: trial scored");
        if let Some(log) = self.log.as_mut().filter(|_| !from_log) {
            log.append(&Logged::Trial(trial.clone()))?;
        }
        self.report.trials.push(trial);
        Ok(score)
    }

    /// Why the search should stop before its next trial, if it should.
    fn stop(&self) -> Option<MiproStop> {
        let settings = self.settings;
        if settings
            .log_dir
            .as_deref()
            .is_some_and(|dir: &Path| dir.join(log::STOP_FILE).exists())
        {
            return Some(MiproStop::StopFile);
        }
        let lm_calls = self.report.usage.lm_calls + self.report.prompt_usage.lm_calls;
        if settings.max_lm_calls.is_some_and(|max| lm_calls >= max) {
            return Some(MiproStop::LmCalls);
        }
        if settings
            .max_metric_calls
            .is_some_and(|max| self.report.metric_calls >= max)
        {
            return Some(MiproStop::MetricCalls);
        }
        None
    }

    /// Step 3: the search. Returns the index of the best full evaluation.
    async fn search(&mut self) -> Result<usize, OptimizeError> {
        let v = self.valset.len();
        let size = self.settings.minibatch_size;
        let steps = self.settings.full_eval_steps;
        let trials = self.trials;
        let full_evals = if self.minibatch {
            trials.div_ceil(steps)
        } else {
            0
        };
        let per_trial = if self.minibatch { size.min(v) } else { v };
        self.bar = Some(Bar::new(
            self.settings.progress,
            "mipro",
            v + trials * per_trial + full_evals * v,
        ));
        let adjusted = if self.minibatch {
            trials + trials / steps + 1 + usize::from(!trials.is_multiple_of(steps))
        } else {
            trials
        };
        let demos = !self.zero_shot;
        let default: Combo = vec![
            MiproChoice {
                instruction: 0,
                demos: demos.then_some(0),
            };
            self.names.len()
        ];
        let all: Vec<usize> = (0..v).collect();
        let mut tpe = tpe::Tpe::new(self.seed);
        let default_score = self
            .evaluate(1, TrialKind::Default, default.clone(), all.clone())
            .await?;
        tpe.tell(params(&default), default_score);
        let mut best = (default_score, 0);
        self.save_best(0)?;
        let mut space: Vec<(String, usize)> = Vec::new();
        for p in 0..self.names.len() {
            space.push((
                format!("{p}_predictor_instruction"),
                self.report.instructions[p].len(),
            ));
            if demos {
                space.push((
                    format!("{p}_predictor_demos"),
                    self.report.demo_sets[p].len(),
                ));
            }
        }
        // Minibatch averages per combination, in first-seen order, and those fully scored.
        let mut averages: Vec<(Combo, Vec<f64>)> = Vec::new();
        let mut fully: Vec<Combo> = Vec::new();
        for _ in 0..trials {
            // Logged trials replay whatever the limits; a limit stops the next new trial.
            let replaying = self.log.as_ref().is_some_and(RunLog::replaying);
            if let Some(stop) = self.stop().filter(|_| !replaying) {
                self.report.stopped = stop;
                break;
            }
            let number = tpe.trials() + 1;
            let ask = tpe.start(&space);
            let mut choices: Combo = Vec::new();
            for p in 0..self.names.len() {
                let instruction = tpe.suggest(
                    &ask,
                    &format!("{p}_predictor_instruction"),
                    self.report.instructions[p].len(),
                );
                let demo = demos.then(|| {
                    tpe.suggest(
                        &ask,
                        &format!("{p}_predictor_demos"),
                        self.report.demo_sets[p].len(),
                    )
                });
                choices.push(MiproChoice {
                    instruction,
                    demos: demo,
                });
            }
            let (kind, examples) = if self.minibatch {
                let examples = if size >= v {
                    all.clone()
                } else {
                    self.random.sample_indices(v, size)
                };
                (TrialKind::Minibatch, examples)
            } else {
                (TrialKind::Full, all.clone())
            };
            let score = self
                .evaluate(number, kind, choices.clone(), examples)
                .await?;
            if kind == TrialKind::Full && score > best.0 {
                best = (score, self.report.trials.len() - 1);
                self.save_best(best.1)?;
            }
            match averages.iter_mut().find(|(c, _)| *c == choices) {
                Some((_, scores)) => scores.push(score),
                None => averages.push((choices.clone(), vec![score])),
            }
            tpe.tell(params(&choices), score);
            if self.minibatch && (number.is_multiple_of(steps + 1) || number == adjusted - 1) {
                let candidate = averages
                    .iter()
                    .filter(|(c, _)| !fully.contains(c))
                    .map(|(c, s)| (c, s.iter().sum::<f64>() / s.len() as f64))
                    .fold(None::<(&Combo, f64)>, |best, (c, mean)| match best {
                        Some((_, top)) if mean <= top => best,
                        _ => Some((c, mean)),
                    })
                    .map(|(c, _)| c.clone());
                // DSPy fails here when every combination is already scored; there is nothing
                // new to score, so the search goes on.
                let Some(candidate) = candidate else { continue };
                let full = self
                    .evaluate(number + 1, TrialKind::Full, candidate.clone(), all.clone())
                    .await?;
                tpe.tell(params(&candidate), full);
                fully.push(candidate);
                if full > best.0 {
                    best = (full, self.report.trials.len() - 1);
                    self.save_best(best.1)?;
                }
            }
        }
        Ok(best.1)
    }

    /// Writes the program of trial `index` as the best so far, when the run is logged.
    fn save_best(&self, index: usize) -> Result<(), OptimizeError> {
        let Some(dir) = &self.settings.log_dir else {
            return Ok(());
        };
        if self.log.as_ref().is_some_and(RunLog::replaying) {
            return Ok(());
        }
        let program = self.build(&self.report.trials[index].choices, index == 0);
        let path = dir.join(log::BEST_FILE);
        program.save(&path).map_err(|e| OptimizeError::RunLog {
            path,
            reason: e.to_string(),
        })
    }
}

/// The sampler's parameters of a combination.
fn params(choices: &[MiproChoice]) -> BTreeMap<String, usize> {
    let mut params = BTreeMap::new();
    for (p, choice) in choices.iter().enumerate() {
        params.insert(format!("{p}_predictor_instruction"), choice.instruction);
        if let Some(d) = choice.demos {
            params.insert(format!("{p}_predictor_demos"), d);
        }
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preset_trials_match_dspy() {
        // DSPy 3.4.1's `_set_num_trials_from_num_candidates` for light / medium / heavy.
        let table = [
            (1, false, [10, 18, 27]),
            (1, true, [9, 18, 27]),
            (2, false, [20, 28, 33]),
            (2, true, [10, 18, 27]),
            (3, false, [31, 43, 50]),
        ];
        for (predictors, zero_shot, expected) in table {
            let got = [MiproBudget::Light, MiproBudget::Medium, MiproBudget::Heavy]
                .map(|b| b.trials(predictors, zero_shot));
            assert_eq!(
                got, expected,
                "{predictors} predictors, zero-shot {zero_shot}"
            );
        }
    }
}
