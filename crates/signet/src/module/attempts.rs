//! Several attempts, the best kept: [`BestOfN`] runs a module up to N times at a higher
//! temperature and keeps the output its reward function scores highest, stopping at the first that
//! reaches the threshold (DSPy's `dspy.BestOfN`); [`Refine`] does the same and, between attempts,
//! asks the model for advice to each predictor, which the next attempt's predictors are shown
//! (DSPy's `dspy.Refine`).

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde_json::{Value, json};

use super::hint_adapter::HintAdapter;
use super::{CallConfig, DynPredict, DynReAct, Module, Predictors, prefixed};
use crate::adapter::Fields;
use crate::adapter::templates;
use crate::lm::{Lm, Usage};
use crate::signature::{DynSignature, Field};
use crate::trace::Trace;

/// Scores one attempt: the input and the module's output in, a number out (higher is better).
type Reward<I, O> = Arc<dyn Fn(&I, &O) -> f64 + Send + Sync>;

/// Runs `module` up to `n` times and returns the output `reward` scores highest, or the first
/// whose reward reaches `threshold` (DSPy's `dspy.BestOfN`).
///
/// Each attempt runs a copy of the module whose predictors send `temperature` 1.0 (DSPy's choice;
/// [`with_temperature`](Self::with_temperature)) and a rollout id of their own
/// ([`LmOptions::rollout_id`](crate::lm::LmOptions::rollout_id): 0, 1, .. after the predictor's
/// own), so a response cache does not hand every attempt the first one's reply. An attempt whose
/// module fails, or whose reward panics or is NaN, is a failed attempt: the others go on, and
/// only when none succeeded is the call an error ([`BestOfNError`]), with every attempt's error.
///
/// The copies' predictors keep the original predictors' identities, so a recorded trace (an
/// optimizer bootstrapping demos) holds the calls of the attempt returned, under the paths of
/// this program (`module.<path>`, as DSPy names them); the usage of every attempt is counted.
///
/// ```
/// use signet::module::{BestOfN, Predict};
/// use signet::prelude::*;
/// use signet::testing::ScriptedLm;
///
/// /// Answer in one word.
/// #[derive(Signature)]
/// struct QA { #[input] question: String, #[output] answer: String }
///
/// let reply = |a: &str| format!("[[ ## answer ## ]]\n{a}\n\n[[ ## completed ## ]]");
/// let lm = ScriptedLm::texts([reply("It is Brussels"), reply("Brussels")]);
/// let one_word = |_: &QAInput, out: &QAOutput| (out.answer.split_whitespace().count() == 1) as u8 as f64;
/// let best = BestOfN::new(Predict::<QA>::new().with_lm(lm), 3, one_word, 1.0);
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let run = best.call_full(QAInput { question: "Capital of Belgium?".into() }).await.unwrap();
/// assert_eq!(run.output.answer, "Brussels");
/// assert_eq!((run.chosen, run.attempts.len()), (1, 2));
/// # });
/// ```
pub struct BestOfN<M: Module> {
    module: M,
    n: usize,
    reward: Reward<M::Input, M::Output>,
    threshold: f64,
    fail_count: usize,
    temperature: f32,
}

impl<M: Module + Clone> Clone for BestOfN<M> {
    fn clone(&self) -> Self {
        BestOfN {
            module: self.module.clone(),
            n: self.n,
            reward: self.reward.clone(),
            threshold: self.threshold,
            fail_count: self.fail_count,
            temperature: self.temperature,
        }
    }
}

/// One attempt of a [`BestOfN`] or [`Refine`] run.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The rollout id its requests carried.
    pub rollout_id: u64,
    /// Its reward, or why it has none (the module's error, a reward that panicked or was NaN).
    pub reward: Result<f64, String>,
    /// The LM usage of its calls.
    pub usage: Usage,
}

/// What a [`BestOfN`] or [`Refine`] run returns: the output kept and every attempt made.
#[derive(Debug, Clone, PartialEq)]
pub struct BestOfNRun<O> {
    /// The output of the best attempt.
    pub output: O,
    /// Its reward.
    pub reward: f64,
    /// Its index in [`attempts`](Self::attempts).
    pub chosen: usize,
    /// Every attempt, in order (fewer than N when one reached the threshold).
    pub attempts: Vec<Attempt>,
    /// The advice [`Refine`] asked for between attempts, in order (none for [`BestOfN`]).
    pub feedback: Vec<Feedback>,
    /// The LM usage of all attempts and of the feedback.
    pub usage: Usage,
}

/// The feedback [`Refine`] asked for after an attempt below the threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Feedback {
    /// The attempt it is about (an index in [`BestOfNRun::attempts`]).
    pub after: usize,
    /// The advice, or why there is none (the LM call failed or its reply was unreadable: the
    /// next attempt then gets the advice before, if any).
    pub advice: Result<Advice, String>,
    /// The LM usage of the feedback call.
    pub usage: Usage,
}

/// What the feedback step of [`Refine`] wrote (DSPy's `OfferFeedback` outputs).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Advice {
    /// Which predictor was to blame, and why.
    pub discussion: String,
    /// Advice per predictor path (`self`, `predict`, `react`, ..); a predictor it does not name
    /// is told `N/A`.
    pub per_module: BTreeMap<String, String>,
}

/// Why one attempt of a [`BestOfN`] or [`Refine`] run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttemptError<E> {
    /// The module failed.
    #[error(transparent)]
    Module(E),
    /// The reward function panicked or returned NaN.
    #[error("the reward function {0}")]
    Reward(String),
}

/// Why a [`BestOfN`] or [`Refine`] run produced no output. Each holds every failed attempt's
/// error, in order.
#[derive(Debug)]
#[non_exhaustive]
pub enum BestOfNError<E> {
    /// Every attempt failed.
    AllFailed {
        /// Each attempt's error.
        errors: Vec<AttemptError<E>>,
    },
    /// More attempts failed than [`with_fail_count`](BestOfN::with_fail_count) allows, and none
    /// succeeded before; the run stopped there.
    TooManyFailures {
        /// The failures allowed.
        allowed: usize,
        /// Each attempt's error.
        errors: Vec<AttemptError<E>>,
    },
}

impl<E> BestOfNError<E> {
    /// Each failed attempt's error, in order.
    pub fn errors(&self) -> &[AttemptError<E>] {
        match self {
            BestOfNError::AllFailed { errors } | BestOfNError::TooManyFailures { errors, .. } => {
                errors
            }
        }
    }
}

impl<E: std::fmt::Display> std::fmt::Display for BestOfNError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let errors = self.errors();
        match self {
            BestOfNError::AllFailed { .. } => write!(f, "all {} attempts failed", errors.len())?,
            BestOfNError::TooManyFailures { allowed, .. } => write!(
                f,
                "{} attempts failed, more than the {allowed} allowed",
                errors.len()
            )?,
        }
        match errors.last() {
            Some(last) => write!(f, "; the last: {last}"),
            None => Ok(()),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for BestOfNError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.errors()
            .last()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl<M: Module + Clone> BestOfN<M>
where
    M::Input: Clone,
{
    /// Runs `module` up to `n` times (at least once), keeping the output `reward` scores highest
    /// and stopping at the first whose reward is at least `threshold`.
    pub fn new(
        module: M,
        n: usize,
        reward: impl Fn(&M::Input, &M::Output) -> f64 + Send + Sync + 'static,
        threshold: f64,
    ) -> Self {
        let n = n.max(1);
        BestOfN {
            module,
            n,
            reward: Arc::new(reward),
            threshold,
            fail_count: n,
            temperature: 1.0,
        }
    }

    crate::shared::setters! {
        /// Stops once more than `k` attempts failed (default N: every attempt is made). The run
        /// then returns the best output so far, or [`BestOfNError::TooManyFailures`] when there is
        /// none. (DSPy raises the failure even after a good attempt, with an off-by-one rule.)
        fn with_fail_count(k: usize) { fail_count = k }

        /// The temperature every attempt's predictors send (default 1.0, as DSPy).
        fn with_temperature(temperature: f32) { temperature = temperature }
    }

    /// The module each attempt runs.
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The module, to change (its predictors are this program's, under `module`).
    pub fn module_mut(&mut self) -> &mut M {
        &mut self.module
    }

    /// Runs the attempts and returns the best output with every attempt's reward and usage.
    pub async fn call_full(
        &self,
        input: M::Input,
    ) -> Result<BestOfNRun<M::Output>, BestOfNError<M::Error>> {
        self.run(input, None).await
    }

    /// The attempts, with `advisor` asked for advice between them (Refine) or not (BestOfN).
    async fn run(
        &self,
        input: M::Input,
        advisor: Option<&Advisor>,
    ) -> Result<BestOfNRun<M::Output>, BestOfNError<M::Error>> {
        let mut attempts = Vec::new();
        let mut errors = Vec::new();
        let mut feedback = Vec::new();
        let mut usage = Usage::default();
        let mut advice: Option<Advice> = None;
        // The best so far: its index, reward, output and the calls it made.
        let mut best: Option<(usize, f64, M::Output, Trace)> = None;
        for i in 0..self.n {
            let (mut module, rollout_id) = self.attempt(i as u64);
            // As DSPy: advice that names no predictor adds no hint.
            let hinted = advice.clone().filter(|a| !a.per_module.is_empty());
            if let Some(advice) = &hinted {
                give_hints(&mut module, advice);
            }
            let (result, record) = crate::trace::recorded(module.call(input.clone())).await;
            usage += record.usage;
            let scored = result.map_err(AttemptError::Module).and_then(|output| {
                let reward = self.score(&input, &output)?;
                Ok((reward, output))
            });
            attempts.push(Attempt {
                rollout_id,
                reward: scored.as_ref().map(|(r, _)| *r).map_err(|e| e.to_string()),
                usage: record.usage,
            });
            match scored {
                Ok((reward, output)) => {
                    let reached = reward >= self.threshold;
                    if let Some(advisor) = advisor.filter(|_| !reached && i + 1 < self.n) {
                        let attempt = Scored {
                            index: i,
                            trace: &record.trace,
                            outputs: M::output_fields(&output),
                            reward,
                            hinted: hinted.as_ref(),
                        };
                        let given = advisor
                            .advise(&self.module, &input, attempt, self.threshold)
                            .await;
                        usage += given.usage;
                        if let Ok(new) = &given.advice {
                            advice = Some(new.clone());
                        }
                        feedback.push(given);
                    }
                    if best.as_ref().is_none_or(|(_, r, _, _)| reward > *r) {
                        best = Some((i, reward, output, record.trace));
                    }
                    if reached {
                        break;
                    }
                }
                Err(error) => {
                    tracing::warn!(attempt = i + 1, rollout_id, %error, "an attempt failed; the next one runs");
                    errors.push(error);
                    if errors.len() > self.fail_count {
                        break;
                    }
                }
            }
        }
        let (outcome, kept) = match best {
            Some((chosen, reward, output, trace)) => {
                let run = BestOfNRun {
                    output,
                    reward,
                    chosen,
                    attempts,
                    feedback,
                    usage,
                };
                (Ok(run), trace)
            }
            None if errors.len() > self.fail_count && attempts.len() < self.n => {
                let allowed = self.fail_count;
                (
                    Err(BestOfNError::TooManyFailures { allowed, errors }),
                    Trace::new(),
                )
            }
            None => (Err(BestOfNError::AllFailed { errors }), Trace::new()),
        };
        // The enclosing record gets the usage of every attempt, the calls of the one kept.
        let record = crate::trace::Record { trace: kept, usage };
        crate::trace::absorb(record, true);
        outcome
    }

    /// The reward of one output; a panic or NaN is the attempt's failure.
    fn score(&self, input: &M::Input, output: &M::Output) -> Result<f64, AttemptError<M::Error>> {
        match std::panic::catch_unwind(AssertUnwindSafe(|| (self.reward)(input, output))) {
            Ok(reward) if reward.is_nan() => Err(AttemptError::Reward("returned NaN".to_owned())),
            Ok(reward) => Ok(reward),
            Err(panic) => Err(AttemptError::Reward(format!(
                "panicked: {}",
                crate::shared::panic_text(&*panic)
            ))),
        }
    }

    /// The copy attempt `i` runs: the predictors keep their identities and send the attempt's
    /// temperature and rollout id. Returns the first predictor's rollout id.
    fn attempt(&self, i: u64) -> (M, u64) {
        let mut copy = self.module.clone();
        let originals = self.module.named_predictors();
        let mut rollout = None;
        for ((_, original), (_, predictor)) in originals.iter().zip(copy.named_predictors_mut()) {
            predictor.id = original.id;
            let options = predictor.options_mut();
            let id = options.rollout_id.unwrap_or(0) + i;
            options.rollout_id = Some(id);
            options.temperature = Some(self.temperature);
            rollout.get_or_insert(id);
        }
        (copy, rollout.unwrap_or(i))
    }
}

/// The wrapped module's predictors under DSPy's attribute name for it, `module`.
impl<M: Module> Predictors for BestOfN<M> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        prefixed("module".to_owned(), self.module.named_predictors())
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        prefixed("module".to_owned(), self.module.named_predictors_mut())
    }

    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        prefixed("module".to_owned(), self.module.named_react_loops())
    }

    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        prefixed("module".to_owned(), self.module.named_react_loops_mut())
    }
}

impl<M: Module + Clone> Module for BestOfN<M>
where
    M::Input: Clone,
{
    type Input = M::Input;
    type Output = M::Output;
    type Error = BestOfNError<M::Error>;

    async fn call(&self, input: M::Input) -> Result<M::Output, BestOfNError<M::Error>> {
        self.call_full(input).await.map(|run| run.output)
    }

    fn output_fields(output: &M::Output) -> crate::adapter::Fields {
        M::output_fields(output)
    }
}

/// A scored attempt below the threshold, as the feedback step reads it.
struct Scored<'a> {
    index: usize,
    trace: &'a Trace,
    outputs: Fields,
    reward: f64,
    /// The advice the attempt's predictors were shown, if any.
    hinted: Option<&'a Advice>,
}

/// Refine's feedback step: DSPy's `OfferFeedback` predictor and what it is told about the program.
#[derive(Clone)]
struct Advisor {
    lm: Option<Arc<dyn Lm>>,
    program_code: Option<String>,
    reward_code: String,
}

impl Advisor {
    /// Asks for advice on `attempt` of `module` (DSPy's `advise_kwargs`, each value that is not a
    /// string as indented JSON). Its calls are counted but kept out of the run's trace.
    async fn advise<M: Module>(
        &self,
        module: &M,
        input: &M::Input,
        attempt: Scored<'_>,
        threshold: f64,
    ) -> Feedback {
        let predictors = module.named_predictors();
        let name_of = |id| {
            predictors
                .iter()
                .find(|(_, p)| p.id() == id)
                .map_or("", |(name, _)| name.as_str())
        };
        let trajectory: Vec<Value> = attempt
            .trace
            .iter()
            .map(|entry| {
                let name = name_of(entry.predictor);
                let mut inputs = entry.inputs.clone();
                // DSPy's trace holds the hint its adapter added to the inputs.
                if let Some(advice) = attempt.hinted {
                    inputs.insert(hint_name().to_owned(), hint_for(advice, name).into());
                }
                json!({"module_name": name, "inputs": inputs, "outputs": entry.outputs})
            })
            .collect();
        let program_code = self
            .program_code
            .clone()
            .unwrap_or_else(|| super::program_code(module));
        let values = [
            Value::String(program_code),
            Value::String(templates::modules_definition(
                predictors.iter().map(|(n, p)| (n.as_str(), p.signature())),
            )),
            serde_json::to_value(input).unwrap_or(Value::Null),
            Value::Array(trajectory),
            Value::Object(attempt.outputs),
            Value::String(self.reward_code.clone()),
            json!(threshold),
            json!(attempt.reward),
            json!(predictors.iter().map(|(n, _)| n).collect::<Vec<_>>()),
        ];
        let inputs: Fields = templates::REFINE_FEEDBACK_INPUTS
            .iter()
            .zip(values)
            .map(|((name, _), value)| {
                let text = match value {
                    Value::String(text) => text,
                    other => crate::python::json_dumps(&other, Some(2)),
                };
                ((*name).to_owned(), Value::String(text))
            })
            .collect();
        let mut predictor = DynPredict::new(feedback_signature());
        let lm = self.lm.clone().or_else(|| {
            let (_, first) = predictors.first()?;
            first.resolve(&CallConfig::default()).ok().map(|r| r.lm)
        });
        if let Some(lm) = lm {
            predictor.set_lm(lm);
        }
        let mut usage = Usage::default();
        let call = CallConfig::default();
        let (result, _) =
            crate::trace::usage_of(predictor.forward_counting(&inputs, &call, &mut usage)).await;
        let advice = result
            .map(|prediction| read_advice(&prediction.outputs))
            .map_err(|error| error.to_string());
        if let Err(error) = &advice {
            tracing::warn!(after = attempt.index + 1, %error, "Refine: no advice for the next attempt");
        }
        Feedback {
            after: attempt.index,
            advice,
            usage,
        }
    }
}

/// DSPy's `OfferFeedback` signature.
fn feedback_signature() -> DynSignature {
    let mut signature = DynSignature::new("OfferFeedback")
        .with_instructions(templates::REFINE_FEEDBACK_INSTRUCTIONS);
    for (name, desc) in templates::REFINE_FEEDBACK_INPUTS {
        let field = match name {
            "target_threshold" | "reward_value" => Field::of::<f64>(name),
            "module_names" => Field::of::<Vec<String>>(name),
            _ => Field::str(name),
        };
        signature = signature.with_input(field.with_desc(desc));
    }
    let [(discussion, discussion_desc), (advice, advice_desc)] = templates::REFINE_FEEDBACK_OUTPUTS;
    signature
        .with_output(Field::str(discussion).with_desc(discussion_desc))
        .with_output(Field::of::<BTreeMap<String, String>>(advice).with_desc(advice_desc))
}

/// The feedback step's outputs as [`Advice`] (a value that is not a string as its JSON text).
fn read_advice(outputs: &Fields) -> Advice {
    let text = |value: &Value| match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    Advice {
        discussion: outputs.get("discussion").map(text).unwrap_or_default(),
        per_module: outputs
            .get("advice")
            .and_then(Value::as_object)
            .map(|advice| advice.iter().map(|(k, v)| (k.clone(), text(v))).collect())
            .unwrap_or_default(),
    }
}

fn hint_name() -> &'static str {
    templates::REFINE_HINT_FIELD.0
}

/// The hint `advice` gives the predictor at `path` (`N/A` when it names another).
fn hint_for(advice: &Advice, path: &str) -> String {
    advice
        .per_module
        .get(path)
        .map_or(templates::REFINE_NO_ADVICE, String::as_str)
        .to_owned()
}

/// Shows every predictor of `module` its hint, through its adapter.
fn give_hints<M: Module>(module: &mut M, advice: &Advice) {
    for (path, predictor) in module.named_predictors_mut() {
        let inner = predictor.adapter_without_call();
        predictor.adapter = Some(Arc::new(HintAdapter {
            inner,
            hint: hint_for(advice, &path),
        }));
    }
}

/// [`BestOfN`] with feedback between attempts (DSPy's `dspy.Refine`): after an attempt whose
/// reward is below the threshold (and before the last), a feedback call is shown the program,
/// its inputs, each predictor's calls and outputs, the reward and the threshold, and writes advice
/// for each predictor; every predictor of the next attempt gets its advice as one more input,
/// `hint_` ("A hint to the module from an earlier run"). The prompts are DSPy's, byte for byte,
/// so a program tuned in DSPy behaves the same here.
///
/// DSPy shows the feedback step the Python source of the program and of the reward function. A
/// compiled Rust program has none: the program is shown as pseudo-code of its signatures and
/// predictors ([`with_program_code`](Self::with_program_code) to write it yourself), and the
/// reward by its Rust type name unless you describe it with
/// [`with_reward_code`](Self::with_reward_code) — do: the advice is only as good as the
/// feedback step's idea of what is rewarded.
///
/// ```
/// use signet::module::{Predict, Refine};
/// use signet::prelude::*;
/// use signet::testing::ScriptedLm;
///
/// /// Answer in one word.
/// #[derive(Signature)]
/// struct QA { #[input] question: String, #[output] answer: String }
///
/// let lm = ScriptedLm::texts([
///     "[[ ## answer ## ]]\nIt is Brussels\n\n[[ ## completed ## ]]",
///     // The feedback step.
///     "[[ ## discussion ## ]]\nToo long.\n\n[[ ## advice ## ]]\n{\"self\": \"Answer with the name only.\"}\n\n[[ ## completed ## ]]",
///     "[[ ## answer ## ]]\nBrussels\n\n[[ ## completed ## ]]",
/// ]);
/// let one_word = |_: &QAInput, out: &QAOutput| (out.answer.split_whitespace().count() == 1) as u8 as f64;
/// let refine = Refine::new(Predict::<QA>::new().with_lm(lm), 3, one_word, 1.0)
///     .with_reward_code("1.0 when the answer is one word, else 0.0");
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let run = refine.call_full(QAInput { question: "Capital of Belgium?".into() }).await.unwrap();
/// assert_eq!(run.output.answer, "Brussels");
/// let advice = run.feedback[0].advice.as_ref().unwrap();
/// assert_eq!(advice.per_module["self"], "Answer with the name only.");
/// # });
/// ```
pub struct Refine<M: Module> {
    attempts: BestOfN<M>,
    advisor: Advisor,
}

impl<M: Module + Clone> Clone for Refine<M> {
    fn clone(&self) -> Self {
        Refine {
            attempts: self.attempts.clone(),
            advisor: self.advisor.clone(),
        }
    }
}

impl<M: Module + Clone> Refine<M>
where
    M::Input: Clone,
{
    /// Runs `module` up to `n` times (at least once) with feedback between attempts, keeping the
    /// output `reward` scores highest and stopping at the first whose reward is at least
    /// `threshold`.
    pub fn new<R>(module: M, n: usize, reward: R, threshold: f64) -> Self
    where
        R: Fn(&M::Input, &M::Output) -> f64 + Send + Sync + 'static,
    {
        Refine {
            attempts: BestOfN::new(module, n, reward, threshold),
            advisor: Advisor {
                lm: None,
                program_code: None,
                reward_code: std::any::type_name::<R>().to_owned(),
            },
        }
    }

    crate::shared::forward_builders! {
        attempts;
        /// Stops once more than `k` attempts failed (see [`BestOfN::with_fail_count`]).
        fn with_fail_count(k: usize);
        /// The temperature every attempt's predictors send (default 1.0, as DSPy).
        fn with_temperature(temperature: f32);
    }

    /// What the feedback step is told the reward function does (DSPy shows its source; default:
    /// its Rust type name).
    pub fn with_reward_code(mut self, code: impl Into<String>) -> Self {
        self.advisor.reward_code = code.into();
        self
    }

    /// What the feedback step is shown as the program's code (default: pseudo-code of its
    /// signatures and predictors).
    pub fn with_program_code(mut self, code: impl Into<String>) -> Self {
        self.advisor.program_code = Some(code.into());
        self
    }

    /// The LM of the feedback step (default: the LM the module's first predictor uses).
    pub fn with_feedback_lm(mut self, lm: impl Lm + 'static) -> Self {
        self.advisor.lm = Some(crate::lm::shared(lm));
        self
    }

    /// The module each attempt runs.
    pub fn module(&self) -> &M {
        self.attempts.module()
    }

    /// The module, to change (its predictors are this program's, under `module`).
    pub fn module_mut(&mut self) -> &mut M {
        self.attempts.module_mut()
    }

    /// Runs the attempts with feedback between them and returns the best output with every
    /// attempt and every piece of advice.
    pub async fn call_full(
        &self,
        input: M::Input,
    ) -> Result<BestOfNRun<M::Output>, BestOfNError<M::Error>> {
        self.attempts.run(input, Some(&self.advisor)).await
    }
}

/// The wrapped module's predictors under DSPy's attribute name for it, `module`.
impl<M: Module> Predictors for Refine<M> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        self.attempts.named_predictors()
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        self.attempts.named_predictors_mut()
    }

    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        self.attempts.named_react_loops()
    }

    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        self.attempts.named_react_loops_mut()
    }
}

impl<M: Module + Clone> Module for Refine<M>
where
    M::Input: Clone,
{
    type Input = M::Input;
    type Output = M::Output;
    type Error = BestOfNError<M::Error>;

    async fn call(&self, input: M::Input) -> Result<M::Output, BestOfNError<M::Error>> {
        self.call_full(input).await.map(|run| run.output)
    }

    fn output_fields(output: &M::Output) -> Fields {
        M::output_fields(output)
    }
}
