//! MIPROv2's settings: the budget presets and the builder of [`MiproV2`].

use std::path::PathBuf;
use std::sync::Arc;

use crate::evaluate::Progress;
use crate::lm::{Lm, LmOptions};
use crate::optimize::run_settings::RunSettings;

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
    pub(super) fn preset(self) -> Option<(usize, usize)> {
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
pub(super) fn trials_for(predictors: usize, zero_shot: bool, candidates: usize) -> usize {
    let variables = if zero_shot {
        predictors
    } else {
        2 * predictors
    } as f64;
    let n = candidates as f64;
    (2.0 * variables * n.log2()).max(1.5 * n) as usize
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
    pub(super) metric: M,
    pub(super) settings: Settings,
}

/// Everything but the metric (see the setters of [`MiproV2`]).
pub(super) struct Settings {
    pub(super) prompt_lm: Arc<dyn Lm>,
    pub(super) prompt_options: LmOptions,
    pub(super) task_lm: Option<Arc<dyn Lm>>,
    pub(super) teacher_lm: Option<Arc<dyn Lm>>,
    pub(super) budget: MiproBudget,
    pub(super) max_bootstrapped_demos: usize,
    pub(super) max_labeled_demos: usize,
    pub(super) minibatch: bool,
    pub(super) minibatch_size: usize,
    pub(super) full_eval_steps: usize,
    pub(super) seed: i64,
    pub(super) temperature: f32,
    pub(super) threshold: Option<f64>,
    pub(super) program_aware: bool,
    pub(super) data_aware: bool,
    pub(super) tips: bool,
    pub(super) fewshot_aware: bool,
    pub(super) view_data_batch_size: usize,
    pub(super) program_code: Option<String>,
    pub(super) max_metric_calls: Option<usize>,
    /// Concurrency, limits, log directory, metric name, progress.
    pub(super) run: RunSettings,
}

impl<M> MiproV2<M> {
    /// MIPROv2 with DSPy's defaults: the light preset, up to 4 bootstrapped and 4 labeled demos,
    /// minibatches of 35 with a full evaluation every 5 trials, seed 9, proposals at temperature
    /// 1.0 from a program-, data- and demo-aware proposer with tips.
    pub fn new(metric: M, prompt_lm: impl Lm + 'static) -> MiproV2<M> {
        MiproV2 {
            metric,
            settings: Settings {
                run: RunSettings::default(),
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
                max_metric_calls: None,
            },
        }
    }

    crate::shared::setters! {
        /// How much to search: a preset or explicit counts.
        fn with_budget(budget: MiproBudget) { settings.budget = budget }

        /// Runs the program (bootstraps and trials) with `lm` instead of each predictor's own LM.
        fn with_task_lm(lm: impl Lm + 'static) { settings.task_lm = Some(crate::lm::shared(lm)) }

        /// Runs the bootstraps' teacher with `lm` (a stronger model writes the demos).
        fn with_teacher_lm(lm: impl Lm + 'static) {
            settings.teacher_lm = Some(crate::lm::shared(lm))
        }

        /// Options of the prompt model's calls (the proposer sets the temperature and the seed), e.g.
        /// a `max_tokens` bound for a model that may run on.
        fn with_prompt_options(options: LmOptions) { settings.prompt_options = options }

        /// Bootstrapped demos per predictor at most (default 4). With no bootstrapped and no labeled
        /// demos the run is zero-shot: only instructions are searched.
        fn with_max_bootstrapped_demos(n: usize) { settings.max_bootstrapped_demos = n }

        /// Demos per predictor at most, labeled and bootstrapped together (default 4).
        fn with_max_labeled_demos(n: usize) { settings.max_labeled_demos = n }

        /// Whether trials run on minibatches (default yes; the presets decide it themselves: on when
        /// the validation set has more than 50 examples).
        fn with_minibatch(minibatch: bool) { settings.minibatch = minibatch }

        /// Validation examples per minibatch (default 35, at least 1).
        fn with_minibatch_size(n: usize) { settings.minibatch_size = n.max(1) }

        /// A full evaluation after every `n` minibatch trials (default 5, at least 1) and after the
        /// last.
        fn with_minibatch_full_eval_steps(n: usize) { settings.full_eval_steps = n.max(1) }

        /// The seed of every random choice (default 9, DSPy's): demo-set shuffles, tips, minibatches
        /// and the TPE sampler. Between 0 and 2^32 - 1.
        fn with_seed(seed: i64) { settings.seed = seed }

        /// The proposals' temperature (default 1.0).
        fn with_init_temperature(temperature: f32) { settings.temperature = temperature }

        /// The bootstraps keep a run scoring at least `threshold` (default: any score above 0).
        fn with_threshold(threshold: f64) { settings.threshold = Some(threshold) }

        /// Whether proposals see the program's code and descriptions of it and of the predictor
        /// (default yes).
        fn with_program_aware(on: bool) { settings.program_aware = on }

        /// Whether proposals see a summary of the training set (default yes).
        fn with_data_aware(on: bool) { settings.data_aware = on }

        /// Whether each proposal gets a random tip (default yes).
        fn with_tips(on: bool) { settings.tips = on }

        /// Whether proposals see bootstrapped demos (default yes).
        fn with_fewshot_aware(on: bool) { settings.fewshot_aware = on }

        /// Training examples per summary call (default 10).
        fn with_view_data_batch_size(n: usize) { settings.view_data_batch_size = n.max(1) }

        /// The program as the proposer sees it (default: its signatures and predictors as DSPy-like
        /// pseudo-code). DSPy shows the program's Python source; pass your own source or a
        /// description.
        fn with_program_code(code: impl Into<String>) { settings.program_code = Some(code.into()) }

        /// Stops the search once `n` metric calls are spent (checked before each trial).
        fn with_max_metric_calls(n: usize) { settings.max_metric_calls = Some(n) }

        /// Logs the run in `dir` (`mipro_log.jsonl`: the demo sets, the instructions and every trial;
        /// `best_program.json`: the best program so far, in DSPy's format, written atomically). A
        /// run given a directory holding a log of the same run continues it without repeating its LM
        /// calls; creating `mipro.stop` there stops it before its next trial.
        ///
        /// The same run means the same settings, predictors and seed, and the same fingerprint: the
        /// training and validation data (hashed by content), the metric's name (see
        /// [`with_metric_name`](Self::with_metric_name)), the program's saved JSON and the models
        /// (each predictor's, the prompt model's, the teacher's). A log of another run is refused
        /// with [`OptimizeError::RunLog`](crate::optimize::OptimizeError::RunLog), never replayed. A torn last line (a run killed while
        /// writing it) is skipped with a warning; a damaged line before it is
        /// [`OptimizeError::RunLog`](crate::optimize::OptimizeError::RunLog) naming the line.
        fn with_log_dir(dir: impl Into<PathBuf>) { settings.run.log_dir = Some(dir.into()) }
    }

    crate::optimize::run_settings::run_setters!(settings.run; resumable);
}
