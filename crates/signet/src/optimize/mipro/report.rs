//! What a MIPROv2 run reports: each trial, why the run stopped, and the summary line.

use super::DemoSetKind;
use crate::adapter::Fields;
use crate::lm::Usage;

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
