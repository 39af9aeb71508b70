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

mod config;
mod demos;
mod log;
mod proposer;
mod report;
mod tpe;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::{BootstrapFewShot, Compiled, OptimizeError, Optimizer, run_fingerprint};
use crate::adapter::Fields;
use crate::adapter::templates::MIPRO_TIPS;
use crate::data::{Example, PyRandom};
use crate::evaluate::{Bar, Borrowed, Evaluate, Metric, Progress};
use crate::lm::{Lm, Usage};
use crate::module::Module;
pub use config::{MiproBudget, MiproV2};
use config::{Settings, trials_for};
pub use demos::DemoSetKind;
use log::{Logged, RunLog};
use proposer::Proposer;
pub use report::{MiproChoice, MiproReport, MiproStop, MiproTrial, TrialKind};

/// Optimizes `student`: demos from `trainset`, trials scored on `valset` (when it is empty,
/// the last 80% of `trainset`, as in DSPy).
impl<M, P> Optimizer<P> for MiproV2<M>
where
    P: Module + Clone,
    M: Metric<P::Output>,
{
    type Report = MiproReport;

    async fn compile(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, MiproReport>, OptimizeError> {
        let run = async { Run::start(self, student, trainset, valset)?.go().await };
        super::traced("MIPROv2", trainset.len(), valset.len(), run).await
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
        let log = match &settings.run.log_dir {
            Some(dir) => {
                let model = |lm: &Arc<dyn Lm>| lm.model().to_owned();
                let fingerprint = run_fingerprint::of_run::<M, _>(
                    &student,
                    &trainset,
                    &valset,
                    settings.run.metric_name.as_deref(),
                    [
                        ("prompt", json!(model(&settings.prompt_lm))),
                        ("teacher", json!(settings.teacher_lm.as_ref().map(model))),
                    ],
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
            .with_concurrency(settings.run.concurrency)
            .with_progress(Progress::Off);
        bootstrap.threshold = settings.threshold;
        bootstrap.teacher_lm = settings.teacher_lm.clone();
        if let Some(n) = settings.run.max_errors {
            bootstrap = bootstrap.with_max_errors(n);
        }
        let bar = Bar::new(settings.run.progress, "mipro demo sets", plan.len());
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
                        .unwrap_or_else(|| crate::module::program_code(&self.student)),
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
                settings.run.progress,
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
                .run
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
                    .with_concurrency(self.settings.run.concurrency)
                    .with_progress(Progress::Off);
                if let Some(n) = self.settings.run.max_errors {
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
            .run
            .log_dir
            .as_deref()
            .is_some_and(|dir: &Path| dir.join(log::STOP_FILE).exists())
        {
            return Some(MiproStop::StopFile);
        }
        let lm_calls = self.report.usage.lm_calls + self.report.prompt_usage.lm_calls;
        if settings.run.max_lm_calls.is_some_and(|max| lm_calls >= max) {
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
            self.settings.run.progress,
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
        let Some(dir) = &self.settings.run.log_dir else {
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
