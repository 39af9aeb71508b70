//! Output checks: functions over a module's answer — and, for an agent, over its trajectory —
//! that accept it or say what is wrong. A module with checks runs them on every answer; when one
//! fails it **re-asks** the model, showing it the failure's message (as DSPy's `Refine` shows its
//! advice), up to [`max_reasks`](Checks::max_reasks) times (default 2). After the last re-ask
//! the call fails with [`ChecksFailed`], which holds every attempt, unless the module has a
//! [fallback](CheckFallback).
//!
//! * [`Predict`](super::Predict) and [`ChainOfThought`](super::ChainOfThought) re-ask with one
//!   more input, DSPy's `hint_` (the one `Refine` adds), holding the messages.
//! * [`ReAct`](super::ReAct) (every mode) and `Predict` with tools refuse the answer inside the
//!   loop: the answering call (`finish`, `submit`) gets the messages as its error result, or the
//!   model reads them as a user message after a text answer, and the loop goes on for another
//!   turn, so the model can call a tool it had not called. A failure that
//!   [offers tools](CheckFailure::offer_tools) makes that turn call one of them (the turn after
//!   answers).
//! * A program of your own: [`Checked`] runs it again with every predictor given the hint.
//!
//! Checks are typed closures (`with_check` on each module), types of your own ([`Check`]), the
//! built-in [`Grounded`] (every figure of the answer comes from a tool result or the question)
//! and [`NoRepetition`] (the answer does not loop), or a signature's field attributes
//! (`#[output(check = path)]`, `#[output(grounded)]`). A check that can fail on part of an
//! answer ([`Check::watcher`]: a figure already written, a loop already begun) stops the reply
//! **while it streams** and the failure is an event ([`ReActEvent::CheckFailed`](crate::module::ReActEvent::CheckFailed)).
//!
//! Every re-ask counts in [`Usage::reasks`](crate::lm::Usage::reasks), every stopped reply in
//! [`Usage::stopped_replies`](crate::lm::Usage::stopped_replies); each failing check is a
//! `tracing` event on the module's span (`signet.check.failed`).
//!
//! ```
//! use signet::module::Predict;
//! use signet::prelude::*;
//! use signet::testing::ScriptedLm;
//!
//! /// Answer with the year only.
//! #[derive(Signature)]
//! struct Year { #[input] question: String, #[output] year: String }
//!
//! let reply = |y: &str| format!("[[ ## year ## ]]\n{y}\n\n[[ ## completed ## ]]");
//! let lm = std::sync::Arc::new(ScriptedLm::texts([reply("in 1648"), reply("1648")]));
//! let year = Predict::<Year>::new().with_lm(lm.clone()).with_check("a year", |_, out: &YearOutput| {
//!     match out.year.trim().parse::<u16>() {
//!         Ok(_) => Ok(()),
//!         Err(_) => Err(format!("`{}` is not a year: write four digits only", out.year)),
//!     }
//! });
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let out = year.call(YearInput { question: "When was the Peace of Westphalia?".into() }).await.unwrap();
//! assert_eq!(out.year, "1648");
//! // The second request carried the message in DSPy's `hint_` field.
//! assert!(lm.requests()[1].messages[1].content.contains("`in 1648` is not a year"));
//! # });
//! ```

pub mod figures;
mod grounding;
mod module;
mod no_repetition;
pub mod repetition;
pub(crate) mod watch;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::react::trajectory::{Observation, Step, Trajectory, own_failure};
use crate::adapter::Fields;
use crate::signature::{DynSignature, FieldKind};
use crate::tool::Tool;

pub use crate::error::{CheckFailure, ChecksFailed, FailedAttempt};
pub use grounding::Grounded;
pub use module::{Checked, CheckedError};
pub use no_repetition::NoRepetition;

/// The answer a check reads: the output fields, the call's inputs, and for an agent its
/// trajectory (the tool calls and what they returned).
#[derive(Clone, Copy)]
pub struct Answer<'a> {
    /// The output fields (for a reply still streaming: the fields written so far).
    pub outputs: &'a Fields,
    /// The call's inputs.
    pub inputs: &'a Fields,
    /// The agent's steps so far (`None` outside a tool loop).
    pub trajectory: Option<&'a Trajectory>,
    /// The tools the loop offers (none outside a tool loop).
    pub tools: &'a [Arc<dyn Tool>],
}

impl std::fmt::Debug for Answer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("Answer")
            .field("outputs", self.outputs)
            .field("inputs", self.inputs)
            .field("steps", &self.trajectory.map_or(0, |t| t.steps.len()))
            .field("tools", &tools)
            .finish()
    }
}

impl<'a> Answer<'a> {
    /// The answer of a call without tools.
    pub fn new(outputs: &'a Fields, inputs: &'a Fields) -> Answer<'a> {
        Answer {
            outputs,
            inputs,
            trajectory: None,
            tools: &[],
        }
    }

    /// The same answer, given by a loop offering `tools` after `trajectory`.
    pub fn after(self, trajectory: &'a Trajectory, tools: &'a [Arc<dyn Tool>]) -> Answer<'a> {
        Answer {
            trajectory: Some(trajectory),
            tools,
            ..self
        }
    }

    /// The names of the loop's tools that the run has not called yet, in the loop's order.
    pub fn uncalled_tools(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|t| t.name())
            .filter(|name| !self.called(name))
            .map(str::to_owned)
            .collect()
    }

    /// The output fields as `T`.
    pub fn output<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self.outputs)
    }

    /// The inputs as `T`.
    pub fn input<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(self.inputs)
    }

    /// The steps that called a tool (not the answering `finish` or `submit`), in order.
    pub fn tool_steps(&self) -> impl Iterator<Item = &'a Step> + 'a {
        self.trajectory
            .into_iter()
            .flat_map(|t| t.steps.iter())
            .filter(|s| !is_answering(&s.tool_name))
    }

    /// Whether the run called `tool` (whatever it returned).
    pub fn called(&self, tool: &str) -> bool {
        self.tool_steps().any(|s| s.tool_name == tool)
    }

    /// The text of every tool result the model read (an error's text included), in order.
    pub fn tool_results(&self) -> impl Iterator<Item = String> + 'a {
        self.tool_steps().map(|s| s.observation.as_text())
    }

    /// The text of the input values (strings as they are, other values as JSON).
    pub fn input_texts(&self) -> impl Iterator<Item = String> + 'a {
        self.inputs.values().map(value_text)
    }
}

/// Whether `name` is a loop's answering tool (ReAct's `finish`, history mode's `submit`).
fn is_answering(name: &str) -> bool {
    super::react::trajectory::ANSWERING_TOOLS.contains(&name)
}

/// A value as text: a string as it is, anything else as JSON.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A check of a module's answer. Closures become checks through the modules' `with_check`;
/// implement it for a check of your own, to give it a [`watcher`](Check::watcher) that can stop a
/// streaming reply, or to reuse it across modules.
///
/// ```
/// use signet::module::check::{Answer, Check, CheckFailure};
///
/// /// Refuses an answer that mentions a competitor.
/// struct NoCompetitors;
///
/// impl Check for NoCompetitors {
///     fn name(&self) -> &str { "no competitors" }
///     fn check(&self, answer: &Answer<'_>) -> Result<(), CheckFailure> {
///         for (field, value) in answer.outputs {
///             if value.as_str().is_some_and(|t| t.contains("Acme")) {
///                 return Err(CheckFailure::new(self.name(), "do not name other vendors").on_field(field));
///             }
///         }
///         Ok(())
///     }
/// }
///
/// let outputs = [("answer".to_owned(), "Try Acme".into())].into_iter().collect();
/// let inputs = Default::default();
/// assert!(NoCompetitors.check(&Answer::new(&outputs, &inputs)).is_err());
/// ```
pub trait Check: Send + Sync {
    /// The check's name (in failures, events and spans).
    fn name(&self) -> &str;

    /// Accepts the answer, or says what is wrong.
    fn check(&self, answer: &Answer<'_>) -> Result<(), CheckFailure>;

    /// A watcher of one streaming reply, for a check that can fail before the answer is whole
    /// (its failures hold whatever is written after: a figure already stated, a loop already
    /// begun, a length already passed). `None` (the default): the check sees whole answers only.
    fn watcher(&self) -> Option<Box<dyn Watcher>> {
        None
    }
}

/// Watches one reply as it streams, for a [`Check`] (see [`Check::watcher`]).
pub trait Watcher: Send {
    /// Output field `field` now reads `text`; the part from byte `new_from` on arrived with this
    /// piece. `answer` holds the fields written so far (`field` included) and the inputs and
    /// trajectory. A failure stops the reply: return one only if no text that may follow can
    /// make the answer pass.
    fn push(
        &mut self,
        field: &str,
        text: &str,
        new_from: usize,
        answer: &Answer<'_>,
    ) -> Option<CheckFailure>;
}

/// What a module answers when its answer still fails its checks after the last re-ask.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum CheckFallback {
    /// The call fails with [`ChecksFailed`] (the default).
    #[default]
    Error,
    /// The text output fields say this (other outputs cannot be filled, and the call fails).
    Say(String),
    /// For an agent: the text output fields hold what its tools returned — each result the model
    /// read, a failed tool's own message included, in order, joined by spaces — and say `None`'s
    /// text when no tool returned anything. Every figure in it is a tool's, so it passes a
    /// [`Grounded`] check by construction. Meant for tools that return short sentences (a long
    /// page would be the answer).
    ToolResults {
        /// What the answer says when no tool returned anything.
        none: String,
    },
    /// As [`ToolResults`](CheckFallback::ToolResults), with only the calls whose arguments'
    /// figures come from the inputs or earlier results (see [`Grounded::with_arguments`]): a
    /// call on a figure the model made up does not answer.
    GroundedToolResults {
        /// What the answer says when no such call returned anything.
        none: String,
    },
    /// Your own: the outputs from the failed run (`None`: the call fails).
    Custom(FallbackFn),
}

/// A fallback of your own (see [`CheckFallback::Custom`]).
pub type FallbackFn = Arc<dyn Fn(&FailedRun<'_>) -> Option<Fields> + Send + Sync>;

impl std::fmt::Debug for CheckFallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckFallback::Error => f.write_str("Error"),
            CheckFallback::Say(text) => f.debug_tuple("Say").field(text).finish(),
            CheckFallback::ToolResults { none } => {
                f.debug_struct("ToolResults").field("none", none).finish()
            }
            CheckFallback::GroundedToolResults { none } => f
                .debug_struct("GroundedToolResults")
                .field("none", none)
                .finish(),
            CheckFallback::Custom(_) => f.write_str("Custom(..)"),
        }
    }
}

impl CheckFallback {
    /// [`ToolResults`](CheckFallback::ToolResults) with the note "I could not find that in what
    /// my tools returned." when no tool returned anything.
    pub fn tool_results() -> CheckFallback {
        CheckFallback::ToolResults {
            none: NOT_FOUND.to_owned(),
        }
    }

    /// [`GroundedToolResults`](CheckFallback::GroundedToolResults) with the note of
    /// [`tool_results`](Self::tool_results).
    pub fn grounded_tool_results() -> CheckFallback {
        CheckFallback::GroundedToolResults {
            none: NOT_FOUND.to_owned(),
        }
    }

    /// The fallback's outputs for a run whose attempts all failed, or `None` when it has none
    /// (the run then fails).
    fn outputs(&self, run: &FailedRun<'_>) -> Option<Fields> {
        let (results, none) = match self {
            CheckFallback::Error => return None,
            CheckFallback::Custom(fallback) => return fallback(run),
            CheckFallback::Say(text) => return text_outputs(run.signature, text),
            CheckFallback::ToolResults { none } => (run.tool_results_text(), none),
            CheckFallback::GroundedToolResults { none } => (run.grounded_tool_results_text(), none),
        };
        let text = if results.is_empty() {
            none.clone()
        } else {
            results
        };
        text_outputs(run.signature, &text)
    }
}

/// What an answer says when a fallback found nothing to say.
const NOT_FOUND: &str = "I could not find that in what my tools returned.";

/// Every output field set to `text`, when all of them are text; `None` otherwise.
fn text_outputs(signature: &DynSignature, text: &str) -> Option<Fields> {
    let outputs = signature.outputs();
    if outputs.is_empty() || outputs.iter().any(|f| f.kind() != FieldKind::Text) {
        return None;
    }
    Some(
        outputs
            .iter()
            .map(|f| (f.name().to_owned(), Value::String(text.to_owned())))
            .collect(),
    )
}

/// A run whose answer failed its checks on every attempt, as a [fallback](CheckFallback) sees it.
#[derive(Debug, Clone, Copy)]
pub struct FailedRun<'a> {
    /// The signature of the outputs.
    pub signature: &'a DynSignature,
    /// The call's inputs.
    pub inputs: &'a Fields,
    /// The agent's steps (`None` outside a tool loop).
    pub trajectory: Option<&'a Trajectory>,
    /// Every refused attempt, in order.
    pub attempts: &'a [FailedAttempt],
}

impl FailedRun<'_> {
    /// What the run's tools returned, as the model read it, joined by spaces: each successful
    /// result, and a failed tool's own message (without the `Execution error in ..` wording).
    pub fn tool_results_text(&self) -> String {
        self.results_text(false)
    }

    /// [`tool_results_text`](Self::tool_results_text) of the calls whose arguments' figures come
    /// from the inputs or earlier results (see [`Grounded::with_arguments`]).
    pub fn grounded_tool_results_text(&self) -> String {
        self.results_text(true)
    }

    fn results_text(&self, grounded_only: bool) -> String {
        let steps: Vec<&Step> = self
            .trajectory
            .into_iter()
            .flat_map(|t| t.steps.iter())
            .filter(|s| !is_answering(&s.tool_name))
            .collect();
        let grounded = match grounded_only {
            true => grounding::grounded_calls(
                self.inputs.values().map(value_text),
                steps.iter().copied(),
            ),
            false => vec![true; steps.len()],
        };
        let mut parts: Vec<String> = Vec::new();
        for (step, _) in steps.into_iter().zip(grounded).filter(|(_, ok)| *ok) {
            let text = match &step.observation {
                Observation::Error(text) => match own_failure(&step.tool_name, text) {
                    Some(message) => message.to_owned(),
                    // Not the tool's own failure (bad arguments, a denial, a time limit).
                    None => continue,
                },
                other => other.as_text(),
            };
            let text = text.trim();
            if !text.is_empty() && !parts.iter().any(|p| p == text) {
                parts.push(text.to_owned());
            }
        }
        parts.join(" ")
    }
}

/// A module's checks: the list, how many re-asks they may cause, and the fallback. Modules keep
/// it behind an `Arc` (none when no check is set: a call without checks does no extra work).
#[derive(Clone, Default)]
pub struct Checks {
    list: Vec<Arc<dyn Check>>,
    max_reasks: usize,
    fallback: CheckFallback,
}

impl std::fmt::Debug for Checks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.list.iter().map(|c| c.name()).collect();
        f.debug_struct("Checks")
            .field("checks", &names)
            .field("max_reasks", &self.max_reasks)
            .field("fallback", &self.fallback)
            .finish()
    }
}

/// How many times a module re-asks by default.
pub const DEFAULT_MAX_REASKS: usize = 2;

impl Checks {
    /// No checks, [`DEFAULT_MAX_REASKS`] re-asks, no fallback.
    pub fn new() -> Checks {
        Checks {
            list: Vec::new(),
            max_reasks: DEFAULT_MAX_REASKS,
            fallback: CheckFallback::Error,
        }
    }

    /// The checks, in the order they run.
    pub fn list(&self) -> &[Arc<dyn Check>] {
        &self.list
    }

    /// How many times an answer that fails is asked for again.
    pub fn max_reasks(&self) -> usize {
        self.max_reasks
    }

    /// What the module answers when the last re-ask fails too.
    pub fn fallback(&self) -> &CheckFallback {
        &self.fallback
    }

    /// Whether any check watches replies as they stream.
    pub(crate) fn watches(&self) -> bool {
        self.list.iter().any(|c| c.watcher().is_some())
    }

    /// Every check's failure on `answer` (empty: accepted), each check run once, in order; a
    /// check that panics fails with the panic's message. Each failure is a `tracing` event.
    pub(crate) fn judge(&self, answer: &Answer<'_>) -> Vec<CheckFailure> {
        let mut failures = Vec::new();
        for check in &self.list {
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| check.check(answer)))
                .unwrap_or_else(|panic| {
                    Err(CheckFailure::new(
                        check.name(),
                        format!("the check panicked: {}", crate::shared::panic_text(&*panic)),
                    ))
                });
            if let Err(failure) = result {
                tracing::info!(
                    target: crate::telemetry::TARGET,
                    check = %failure.check,
                    field = failure.field.as_deref(),
                    message = %failure.message,
                    "signet.check.failed"
                );
                failures.push(failure);
            }
        }
        failures
    }

    /// The fallback's outputs for a run whose attempts all failed (`None`: it fails).
    pub(crate) fn fall_back(&self, run: &FailedRun<'_>) -> Option<Fields> {
        self.fallback.outputs(run)
    }
}

/// Builds a module's [`Checks`]: what every module's `with_check`, `with_output_check`,
/// `with_max_reasks` and `with_check_fallback` change.
pub(crate) trait ChecksSlot {
    /// The module's checks, to change (created on first use).
    fn checks_slot(&mut self) -> &mut Option<Arc<Checks>>;

    /// Adds `check`.
    fn add_check(&mut self, check: Arc<dyn Check>) {
        let checks = self
            .checks_slot()
            .get_or_insert_with(|| Arc::new(Checks::new()));
        Arc::make_mut(checks).list.push(check);
    }

    /// Sets how many re-asks a failing answer gets.
    fn set_max_reasks(&mut self, n: usize) {
        let checks = self
            .checks_slot()
            .get_or_insert_with(|| Arc::new(Checks::new()));
        Arc::make_mut(checks).max_reasks = n;
    }

    /// Sets the fallback.
    fn set_check_fallback(&mut self, fallback: CheckFallback) {
        let checks = self
            .checks_slot()
            .get_or_insert_with(|| Arc::new(Checks::new()));
        Arc::make_mut(checks).fallback = fallback;
    }
}

/// A check from a closure over the typed input, the typed output and (in a tool loop) the
/// trajectory: the answer's fields are read as `I` and `O` first (an answer that does not fit
/// them fails the check, saying why).
pub(crate) struct TypedCheck<I, O> {
    name: String,
    check: TypedFn<I, O>,
}

/// A typed check's closure.
type TypedFn<I, O> = Arc<dyn Fn(&I, &O, Option<&Trajectory>) -> Result<(), String> + Send + Sync>;

impl<I: DeserializeOwned + 'static, O: DeserializeOwned + 'static> TypedCheck<I, O> {
    /// The check called `name` running `check`.
    pub(crate) fn new(
        name: impl Into<String>,
        check: impl Fn(&I, &O, Option<&Trajectory>) -> Result<(), String> + Send + Sync + 'static,
    ) -> TypedCheck<I, O> {
        TypedCheck {
            name: name.into(),
            check: Arc::new(check),
        }
    }
}

impl<I, O> Check for TypedCheck<I, O>
where
    I: DeserializeOwned + 'static,
    O: DeserializeOwned + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self, answer: &Answer<'_>) -> Result<(), CheckFailure> {
        let fail = |message: String| CheckFailure::new(&self.name, message);
        let input: I = answer
            .input()
            .map_err(|e| fail(format!("the inputs do not fit the input type: {e}")))?;
        let output: O = answer
            .output()
            .map_err(|e| fail(format!("the answer does not fit its type: {e}")))?;
        (self.check)(&input, &output, answer.trajectory).map_err(fail)
    }
}

/// A check of one output field declared on a signature (`#[output(check = path)]`).
pub(crate) struct FieldCheck {
    name: String,
    field: String,
    check: crate::signature::FieldCheckFn,
}

impl Check for FieldCheck {
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self, answer: &Answer<'_>) -> Result<(), CheckFailure> {
        let value = answer.outputs.get(&self.field).unwrap_or(&Value::Null);
        (self.check)(value)
            .map_err(|message| CheckFailure::new(&self.name, message).on_field(&self.field))
    }
}

/// The checks `signature`'s output fields declare (`#[output(check = ..)]`,
/// `#[output(grounded)]`), in field order: what a module built on it starts with.
pub(crate) fn declared(signature: &DynSignature) -> Option<Arc<Checks>> {
    let mut checks = Checks::new();
    for field in signature.outputs() {
        for declared in field.checks() {
            let check: Arc<dyn Check> = match declared {
                crate::signature::DeclaredCheck::Grounded => {
                    Arc::new(Grounded::new().on_fields([field.name()]))
                }
                crate::signature::DeclaredCheck::Fn { name, check } => Arc::new(FieldCheck {
                    name: name.clone(),
                    field: field.name().to_owned(),
                    check: check.clone(),
                }),
            };
            checks.list.push(check);
        }
    }
    (!checks.list.is_empty()).then(|| Arc::new(checks))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(pairs: &[(&str, Value)]) -> Fields {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    struct Panics;

    impl Check for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        fn check(&self, _: &Answer<'_>) -> Result<(), CheckFailure> {
            panic!("boom")
        }
    }

    #[test]
    fn a_check_that_panics_fails_with_the_panic_message() {
        let mut checks = Checks::new();
        checks.list.push(Arc::new(Panics));
        let outputs = fields(&[("answer", json!("x"))]);
        let inputs = Fields::new();
        let failures = checks.judge(&Answer::new(&outputs, &inputs));
        assert_eq!(failures.len(), 1);
        assert!(failures[0].message.contains("boom"), "{failures:?}");
    }

    #[test]
    fn a_typed_check_reads_the_fields_as_its_types() {
        #[derive(serde::Deserialize)]
        struct Out {
            answer: String,
        }
        let check = TypedCheck::<Value, Out>::new("short", |_, out, _| {
            (out.answer.len() < 5)
                .then_some(())
                .ok_or_else(|| "too long".to_owned())
        });
        let inputs = Fields::new();
        let long = fields(&[("answer", json!("a long answer"))]);
        let failure = check.check(&Answer::new(&long, &inputs)).unwrap_err();
        assert_eq!(failure.to_string(), "check `short`: too long");
        let wrong_type = fields(&[("answer", json!(3))]);
        let failure = check.check(&Answer::new(&wrong_type, &inputs)).unwrap_err();
        assert!(
            failure
                .message
                .starts_with("the answer does not fit its type")
        );
    }

    #[test]
    fn the_tool_results_fallback_says_what_the_tools_returned_and_skips_the_wording() {
        let signature: DynSignature = "question -> answer".parse().unwrap();
        let step = |name: &str, observation: Observation| Step {
            index: 0,
            thought: String::new(),
            tool_name: name.to_owned(),
            tool_args: json!({}),
            observation,
            call_id: None,
            turn: 0,
            elapsed: std::time::Duration::ZERO,
        };
        let trajectory = Trajectory {
            steps: vec![
                step("forecast", Observation::Output(json!("Tomorrow in Oslo: 4 °C."))),
                step(
                    "forecast",
                    Observation::Error(
                        "Execution error in forecast: tool `forecast` failed: There is no forecast for Rome."
                            .into(),
                    ),
                ),
                step(
                    "forecast",
                    Observation::Error("Execution error in forecast: the arguments are not valid".into()),
                ),
                step("finish", Observation::Output(json!("Completed."))),
            ],
            ..Trajectory::default()
        };
        let inputs = Fields::new();
        let run = FailedRun {
            signature: &signature,
            inputs: &inputs,
            trajectory: Some(&trajectory),
            attempts: &[],
        };
        let outputs = CheckFallback::tool_results().outputs(&run).unwrap();
        assert_eq!(
            outputs["answer"],
            "Tomorrow in Oslo: 4 °C. There is no forecast for Rome."
        );
        let none = FailedRun {
            trajectory: None,
            ..run
        };
        assert_eq!(
            CheckFallback::tool_results().outputs(&none).unwrap()["answer"],
            NOT_FOUND
        );
        let numbers: DynSignature = "question -> answer: int".parse().unwrap();
        let typed = FailedRun {
            signature: &numbers,
            ..run
        };
        assert!(CheckFallback::Say("no".into()).outputs(&typed).is_none());
    }
}
