//! What a GEPA run reports: its candidates, why it stopped, and the summary line.

use crate::lm::Usage;

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GepaStop {
    /// The metric-call budget was spent.
    Budget,
    /// Someone created `gepa.stop` in the log directory.
    StopFile,
    /// The LM-call limit ([`Gepa::with_max_lm_calls`](super::Gepa::with_max_lm_calls)) was reached.
    LmCalls,
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
