//! DSPy's `COPRO`: coordinate ascent over each predictor's instruction and output prefix
//! (DSPy 3.4.1, `teleprompt/copro_optimizer.py`).

use std::sync::Arc;

use serde_json::Value;

use super::run_settings::RunSettings;
use super::{Compiled, OptimizeError, Optimizer};
use crate::adapter::Fields;
use crate::adapter::templates::{
    COPRO_BASIC_GENERATE, COPRO_GENERATE_GIVEN_ATTEMPTS, ProposerSignature, copro_attempt,
};
use crate::data::Example;
use crate::evaluate::{Borrowed, Evaluate, Metric, Progress};
use crate::lm::{Lm, LmOptions, Usage};
use crate::module::{DynPredict, Module};
use crate::python::py_str;

/// DSPy's `COPRO`: for each predictor, a prompt model proposes `breadth` instructions (with a
/// prefix for the last output field), each is scored with the metric, the best is kept, and
/// `depth` times the prompt model sees the best attempts so far with their scores and proposes
/// `breadth` more. Predictors are optimized one after another, each scored with the others' best
/// so far. The best program of all wins.
///
/// As in DSPy: the defaults (`breadth` 10, `depth` 3, temperature 1.4), the prompts (word for
/// word), the order of evaluations and the choice among ties (the first best), and what is
/// scored: the validation set, or the training set when it is empty (DSPy's COPRO has no
/// validation set). Unlike DSPy, which asks for `n` completions in one request, each proposal is
/// its own request (Signet sends no `n`), kept apart in caches by its `rollout_id`; a proposal
/// that fails is left out and named in the report instead of ending the compile. Prefixes are
/// saved with the program (DSPy's format) but, as in DSPy 3, not shown by the Chat, JSON or XML
/// adapters.
///
/// ```
/// use signet::data::Example;
/// use signet::evaluate::exact_match;
/// use signet::optimize::{Copro, Optimizer};
/// use signet::prelude::*;
/// use signet::testing::ScriptedLm;
///
/// /// Answer with one word.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: String }
///
/// let trainset = vec![Example::new(serde_json::json!({"question": "Capital of France?", "answer": "Paris"})).with_inputs(["question"])];
/// // The prompt model proposes one instruction; the program answers right only with it.
/// let proposer = ScriptedLm::texts(["[[ ## proposed_instruction ## ]]\nName the city.\n\n[[ ## proposed_prefix_for_output_field ## ]]\nCity:"]);
/// let program = Predict::<Ask>::new().with_lm(ScriptedLm::texts([
///     "[[ ## answer ## ]]\nParis", // with "Name the city."
///     "[[ ## answer ## ]]\nLyon",  // with its own instruction
/// ]));
/// let compiled = Copro::new(exact_match("answer"))
///     .with_prompt_lm(proposer)
///     .with_breadth(2)
///     .with_depth(1)
///     .with_concurrency(1)
///     .compile_blocking(&program, &trainset, &[])?;
/// assert_eq!(compiled.program.predictor().instructions(), "Name the city.");
/// assert_eq!(compiled.report.candidates[0].score, 100.0);
/// # Ok::<(), signet::optimize::OptimizeError>(())
/// ```
pub struct Copro<M> {
    metric: M,
    prompt_lm: Option<Arc<dyn Lm>>,
    prompt_options: LmOptions,
    breadth: usize,
    depth: usize,
    init_temperature: f32,
    run: RunSettings,
}

/// One instruction and prefix COPRO scored for one predictor.
#[derive(Debug, Clone)]
pub struct CoproCandidate<P> {
    /// The predictor it was proposed for (its path).
    pub predictor: String,
    /// The round it was scored in (0 for the first proposals).
    pub depth: usize,
    /// The instruction.
    pub instruction: String,
    /// The prefix of the predictor's last output field.
    pub prefix: String,
    /// Its score, in percent (the best of its scorings when it was proposed twice).
    pub score: f64,
    /// The whole program it was scored as (the other predictors with their best so far).
    pub program: P,
}

/// What [`Copro`] did.
#[derive(Debug, Clone)]
pub struct CoproReport<P> {
    /// Every candidate scored, best first (ties in the order they were scored), with repeats of
    /// one program at one score dropped (DSPy's `candidate_programs`); the first is the compiled
    /// program.
    pub candidates: Vec<CoproCandidate<P>>,
    /// How many times a program was scored (DSPy's `total_calls`).
    pub evaluations: usize,
    /// Proposals that failed (the prompt model's reply unreadable, its call failed), left out.
    pub proposal_failures: Vec<String>,
    /// Whether the run stopped early at its LM-call limit.
    pub stopped_at_lm_calls: bool,
    /// The LM calls of the compile: the prompt model's and the program's.
    pub usage: Usage,
}

/// One line: the best score and instruction, how many scorings, what failed.
impl<P> std::fmt::Display for CoproReport<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.candidates.first() {
            Some(best) => write!(
                f,
                "best {:.1} ({}: {:?}), {} scorings, {} LM calls",
                best.score,
                best.predictor,
                best.instruction.chars().take(80).collect::<String>(),
                self.evaluations,
                self.usage.lm_calls
            )?,
            None => write!(f, "nothing scored, {} LM calls", self.usage.lm_calls)?,
        }
        if !self.proposal_failures.is_empty() {
            write!(f, ", {} proposals failed", self.proposal_failures.len())?;
        }
        if self.stopped_at_lm_calls {
            write!(f, ", stopped at the LM-call limit")?;
        }
        Ok(())
    }
}

impl<M> Copro<M> {
    /// COPRO with DSPy's defaults: breadth 10, depth 3, proposals at temperature 1.4, the
    /// proposals written by the LM each proposal call resolves (the [configured](crate::module::configure)
    /// one, as DSPy's `dspy.settings.lm`) unless [`with_prompt_lm`](Self::with_prompt_lm) says.
    pub fn new(metric: M) -> Copro<M> {
        Copro {
            metric,
            prompt_lm: None,
            prompt_options: LmOptions::default(),
            breadth: 10,
            depth: 3,
            init_temperature: 1.4,
            run: RunSettings::default(),
        }
    }

    /// The LM that proposes instructions (DSPy's `prompt_model`).
    pub fn with_prompt_lm(mut self, lm: impl Lm + 'static) -> Self {
        self.prompt_lm = Some(crate::lm::shared(lm));
        self
    }

    crate::shared::setters! {
        /// The prompt model's own options (a `max_tokens` bound, say); the temperature is
        /// [`with_init_temperature`](Self::with_init_temperature)'s.
        fn with_prompt_options(options: LmOptions) { prompt_options = options }

        /// Proposals per round (default 10; at least 2, as DSPy requires: the compile fails with
        /// [`OptimizeError::Settings`] otherwise). The first round proposes `breadth - 1` and adds
        /// the predictor's own instruction.
        fn with_breadth(n: usize) { breadth = n }

        /// Rounds of proposals (default 3; at least 1).
        fn with_depth(n: usize) { depth = n.max(1) }

        /// The temperature of every proposal (default 1.4).
        fn with_init_temperature(temperature: f32) { init_temperature = temperature }
    }

    super::run_settings::run_setters!(run);
}

/// The optimizer's state for one compile.
struct Run<'a, M, P> {
    copro: &'a Copro<M>,
    scored_on: &'a [Example],
    report: CoproReport<P>,
    /// Calls made to propose: each gets its own rollout id.
    proposals: u64,
}

/// A proposal: instruction and prefix as the prompt model wrote them.
type Proposal = (String, String);

impl<M, P> Optimizer<P> for Copro<M>
where
    P: Module + Clone,
    M: Metric<P::Output>,
{
    type Report = CoproReport<P>;

    /// Optimizes `student`'s instructions and last-field prefixes, scoring on `valset` (on
    /// `trainset` when `valset` is empty, as DSPy's COPRO always does).
    async fn compile(
        &self,
        student: &P,
        trainset: &[Example],
        valset: &[Example],
    ) -> Result<Compiled<P, CoproReport<P>>, OptimizeError> {
        let scored_on = if valset.is_empty() { trainset } else { valset };
        let run = async {
            if self.breadth <= 1 {
                return Err(settings("COPRO's breadth must be greater than 1"));
            }
            if scored_on.is_empty() {
                return Err(settings("COPRO has no examples to score on"));
            }
            if student.named_predictors().is_empty() {
                return Err(settings("the program has no predictors to optimize"));
            }
            Run {
                copro: self,
                scored_on,
                report: CoproReport {
                    candidates: Vec::new(),
                    evaluations: 0,
                    proposal_failures: Vec::new(),
                    stopped_at_lm_calls: false,
                    usage: Usage::default(),
                },
                proposals: 0,
            }
            .go(student)
            .await
        };
        super::traced("COPRO", trainset.len(), valset.len(), run).await
    }
}

fn settings(reason: &str) -> OptimizeError {
    OptimizeError::Settings {
        reason: reason.to_owned(),
    }
}

/// Each predictor's candidates once scored, in the order first scored (DSPy's dict).
type Scored<P> = Vec<CoproCandidate<P>>;

impl<M, P> Run<'_, M, P>
where
    P: Module + Clone,
    M: Metric<P::Output>,
{
    async fn go(mut self, student: &P) -> Result<Compiled<P, CoproReport<P>>, OptimizeError> {
        let copro = self.copro;
        let paths: Vec<String> = student
            .named_predictors()
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        // The first proposals: breadth - 1 from each predictor's own instruction, then it.
        let mut all: Vec<Vec<Proposal>> = Vec::new();
        for (path, predictor) in student.named_predictors() {
            let own = (predictor.instructions(), last_prefix(predictor));
            let inputs =
                Fields::from_iter([("basic_instruction".to_owned(), Value::from(own.0.clone()))]);
            let mut proposals = self
                .propose(&path, &COPRO_BASIC_GENERATE, &inputs, copro.breadth - 1)
                .await;
            proposals.push(own);
            all.push(proposals);
        }
        let mut latest = all.clone();
        let mut scored: Vec<Scored<P>> = vec![Vec::new(); paths.len()];
        let mut program = student.clone();
        'rounds: for depth in 0..copro.depth {
            for index in 0..paths.len() {
                // With several predictors every proposal so far is scored again: the others'
                // best changed since.
                let candidates = if paths.len() > 1 {
                    all[index].clone()
                } else {
                    latest[index].clone()
                };
                for (instruction, prefix) in candidates {
                    if self.out_of_calls() {
                        self.report.stopped_at_lm_calls = true;
                        break 'rounds;
                    }
                    let instruction = instruction.trim_matches('"').trim().to_owned();
                    let prefix = prefix.trim_matches('"').trim().to_owned();
                    set(&mut program, index, &instruction, &prefix);
                    let score = self.score(&program).await?;
                    tracing::info!(predictor = %paths[index], depth, score, "COPRO: candidate scored");
                    let entry = CoproCandidate {
                        predictor: paths[index].clone(),
                        depth,
                        instruction,
                        prefix,
                        score,
                        program: program.clone(),
                    };
                    let seen = scored[index].iter_mut().find(|c| {
                        (&c.instruction, &c.prefix) == (&entry.instruction, &entry.prefix)
                    });
                    match seen {
                        Some(seen) if seen.score >= score => {}
                        Some(seen) => *seen = entry,
                        None => scored[index].push(entry),
                    }
                }
                // The predictor keeps its best (the first best) for the next predictor's scores.
                if let Some(best) = first_best(&scored[index]) {
                    let (instruction, prefix) = (best.instruction.clone(), best.prefix.clone());
                    set(&mut program, index, &instruction, &prefix);
                }
            }
            if depth + 1 == copro.depth {
                break;
            }
            for (index, path) in paths.iter().enumerate() {
                let mut best: Vec<&CoproCandidate<P>> = scored[index].iter().collect();
                best.sort_by(|a, b| b.score.total_cmp(&a.score));
                let shown = best.len().min(copro.breadth);
                // The lowest score shown first, numbered from 1.
                let attempts: Vec<Value> = (0..shown)
                    .rev()
                    .flat_map(|i| {
                        let c = best[i];
                        copro_attempt(shown - i, &c.instruction, &c.prefix, c.score)
                    })
                    .map(Value::from)
                    .collect();
                let inputs = Fields::from_iter([(
                    "attempted_instructions".to_owned(),
                    Value::Array(attempts),
                )]);
                let proposals = self
                    .propose(path, &COPRO_GENERATE_GIVEN_ATTEMPTS, &inputs, copro.breadth)
                    .await;
                all[index].extend(proposals.iter().cloned());
                latest[index] = proposals;
            }
        }
        let mut candidates: Vec<CoproCandidate<P>> = scored.into_iter().flatten().collect();
        candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
        self.report.candidates = drop_repeats(candidates);
        let program = match self.report.candidates.first() {
            Some(best) => best.program.clone(),
            // Stopped at the LM-call limit before anything was scored.
            None => student.clone(),
        };
        Ok(Compiled {
            program,
            report: self.report,
        })
    }

    /// Whether the run's LM calls reached its limit.
    fn out_of_calls(&self) -> bool {
        self.copro
            .run
            .max_lm_calls
            .is_some_and(|max| self.report.usage.lm_calls >= max)
    }

    /// `program`'s score on the scoring set, in percent.
    async fn score(&mut self, program: &P) -> Result<f64, OptimizeError> {
        let run = &self.copro.run;
        let mut evaluation = Evaluate::new(self.scored_on, Borrowed(&self.copro.metric))
            .with_concurrency(run.concurrency)
            .with_progress(run.progress);
        if let Some(n) = run.max_errors {
            evaluation = evaluation.with_max_errors(n);
        }
        let report = evaluation.run(program).await?;
        self.report.usage += report.usage;
        self.report.evaluations += 1;
        Ok(report.score)
    }

    /// `n` proposals of `signature` for the predictor at `path`, one call each at the initial
    /// temperature; failed ones are left out and named in the report.
    async fn propose(
        &mut self,
        path: &str,
        signature: &ProposerSignature,
        inputs: &Fields,
        n: usize,
    ) -> Vec<Proposal> {
        let copro = self.copro;
        let mut proposals = Vec::new();
        for _ in 0..n {
            self.proposals += 1;
            let options = LmOptions {
                temperature: Some(copro.init_temperature),
                rollout_id: Some(self.proposals),
                ..copro.prompt_options.clone()
            };
            let reply = super::ask_prompt_model(
                signature.signature(),
                copro.prompt_lm.as_ref(),
                options,
                inputs,
                &mut self.report.usage,
            )
            .await;
            match reply {
                Ok(outputs) => {
                    let text = |name: &str| outputs.get(name).map(py_str).unwrap_or_default();
                    proposals.push((
                        text("proposed_instruction"),
                        text("proposed_prefix_for_output_field"),
                    ));
                }
                Err(error) => {
                    tracing::warn!(predictor = %path, %error, "COPRO: a proposal failed; it is left out");
                    self.report
                        .proposal_failures
                        .push(format!("{path}, proposal {}: {error}", self.proposals));
                }
            }
        }
        proposals
    }
}

/// The prefix of a predictor's last field (its last output).
fn last_prefix(predictor: &DynPredict) -> String {
    predictor
        .signature()
        .fields()
        .last()
        .map(|field| field.prefix())
        .unwrap_or_default()
}

/// Sets the instruction and last-field prefix of `program`'s predictor number `index`.
fn set<P: Module>(program: &mut P, index: usize, instruction: &str, prefix: &str) {
    if let Some((_, predictor)) = program.named_predictors_mut().into_iter().nth(index) {
        predictor.set_instructions(instruction);
        let signature = predictor.signature_mut();
        let last = signature.fields().last().map(|f| f.name().to_owned());
        if let Some(last) = last {
            // The field exists: it was just read.
            let _ = signature.update_field(&last, |field| {
                *field = field.clone().with_prefix(prefix);
            });
        }
    }
}

/// The first candidate with the best score (Python's `max` keeps the first of equals).
fn first_best<P>(candidates: &[CoproCandidate<P>]) -> Option<&CoproCandidate<P>> {
    candidates
        .iter()
        .fold(None, |best: Option<&CoproCandidate<P>>, c| match best {
            Some(best) if best.score >= c.score => Some(best),
            _ => Some(c),
        })
}

/// What a candidate program says: each predictor's instruction and last-field prefix.
fn identity<P: Module>(program: &P) -> Vec<(String, String)> {
    program
        .named_predictors()
        .into_iter()
        .map(|(_, p)| (p.instructions(), last_prefix(p)))
        .collect()
}

/// DSPy's `_drop_duplicates`: among candidates of one score (sorted, so adjacent), a program
/// equal to one already kept is dropped.
fn drop_repeats<P: Module>(candidates: Vec<CoproCandidate<P>>) -> Vec<CoproCandidate<P>> {
    let mut kept: Vec<CoproCandidate<P>> = Vec::new();
    let mut batch: Vec<Vec<(String, String)>> = Vec::new();
    let mut batch_score = None;
    for candidate in candidates {
        let seen = identity(&candidate.program);
        if batch_score == Some(candidate.score) {
            if batch.contains(&seen) {
                continue;
            }
            batch.push(seen);
        } else {
            batch = vec![seen];
            batch_score = Some(candidate.score);
        }
        kept.push(candidate);
    }
    kept
}
