//! GEPA: reflective instruction evolution, as DSPy 3.4.1's `dspy.GEPA` runs it (with the `gepa`
//! 0.1.4 engine it pins).
//!
//! Each iteration picks a parent from the Pareto frontier (the candidates best on at least one
//! validation example), runs it on a small training minibatch while recording each predictor's
//! calls, shows one predictor's inputs, outputs and the metric's feedback to a reflection LM, and
//! asks it for a better instruction. The child is kept when it beats the parent on the same
//! minibatch; kept children are scored on the whole validation set and join the frontier. Merges
//! combine two frontier candidates that improved different predictors of a common ancestor.

mod config;
mod feedback;
mod merge;
mod pareto;
mod reflection;
mod report;
mod state;

use std::path::Path;

use serde_json::{Value, json};

use super::{Compiled, OptimizeError, Optimizer, run_fingerprint};
use crate::adapter::templates::gepa_default_feedback;
use crate::data::{Example, PyRandom};
use crate::evaluate::{Bar, Borrowed, Evaluate, Metric, Predicted, Progress, Report};
use crate::lm::{Lm, Usage};
use crate::module::{Module, Predictors};
use crate::trace::PredictorId;
pub use config::{CandidateSelection, ComponentSelection, Gepa, GepaBudget};
pub use feedback::{MetricFeedback, PredictorFeedback};
pub use report::{GepaCandidate, GepaReport, GepaStop};
use state::State;

/// Optimizes `student`'s instructions: minibatches from `trainset`, candidates scored on
/// `valset` (the training set when `valset` is empty, as in DSPy).
impl<M, F, P> Optimizer<P> for Gepa<M, F>
where
    P: Module + Clone,
    M: Metric<P::Output>,
    F: PredictorFeedback<P::Output>,
{
    type Report = GepaReport;

    async fn compile(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, GepaReport>, OptimizeError> {
        let run = async {
            Run::start(self, student, trainset, valset)
                .await?
                .go()
                .await
        };
        super::traced("GEPA", trainset.len(), valset.len(), run).await
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
        let (saved, fingerprint) = match &gepa.settings.run.log_dir {
            Some(dir) => {
                crate::fs_atomic::create_private_dir_all(dir).map_err(|e| {
                    OptimizeError::RunLog {
                        path: dir.clone(),
                        reason: e.to_string(),
                    }
                })?;
                let fingerprint = run_fingerprint::of_run::<M, _>(
                    student,
                    trainset,
                    valset,
                    gepa.settings.run.metric_name.as_deref(),
                    [("reflection", json!(gepa.settings.reflection_lm.model()))],
                );
                let saved = State::load(dir, &names, valset.len(), &fingerprint)?;
                (saved, fingerprint)
            }
            // Without a log directory nothing is saved, so there is nothing to fingerprint.
            None => (None, Value::Null),
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
        let bar = Bar::new(gepa.settings.run.progress, "gepa", budget);
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
            .with_concurrency(self.gepa.settings.run.concurrency)
            .with_failure_score(self.gepa.settings.failure_score)
            .with_progress(Progress::Off)
            .with_traces(traces);
        if let Some(n) = self.gepa.settings.run.max_errors {
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
        if let Some(dir) = &self.gepa.settings.run.log_dir {
            self.state.set_reflection_random(&self.reflection_random);
            self.state.save(dir)?;
        }
        Ok(())
    }

    fn log(&self, entry: &Value) -> Result<(), OptimizeError> {
        match &self.gepa.settings.run.log_dir {
            Some(dir) => state::append_log(dir, entry),
            None => Ok(()),
        }
    }

    fn stop_requested(&self) -> bool {
        self.gepa
            .settings
            .run
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
                .run
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
