//! `ReAct<S>`: the loop over a typed signature.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::{
    Approval, ApprovalRequest, Decision, DynReAct, Limits, ReActError, ReActEvent, ReActMode,
    ReActOutput, RunOutcome, SuspendedRun, TruncationPolicy,
};
use crate::adapter::Adapter;
use crate::lm::Lm;
use crate::module::CallConfig;
use crate::signature::Signature;
use crate::tool::Tool;

/// ReAct over the typed signature `S`: `S::Input` in, [`ReActOutput<S::Output>`] out.
pub struct ReAct<S: Signature> {
    pub(in crate::module) core: DynReAct,
    _signature: std::marker::PhantomData<fn() -> S>,
}

crate::module::typed_fields::typed_module_impls!(ReAct, core);

impl<S: Signature> Default for ReAct<S> {
    fn default() -> Self {
        ReAct::new()
    }
}

impl<S: Signature> ReAct<S> {
    /// A ReAct agent for `S`, with no tools yet: add them with [`tool`](Self::tool) and
    /// [`tools`](Self::tools).
    ///
    /// ```
    /// use signet::prelude::*;
    ///
    /// /// Add two integers.
    /// #[tool]
    /// fn add(a: i64, b: i64) -> i64 { a + b }
    ///
    /// /// Answer with the tools.
    /// #[derive(Signature)]
    /// struct Ask { #[input] question: String, #[output] answer: i64 }
    ///
    /// let agent = ReAct::<Ask>::new()
    ///     .tool(AddTool)
    ///     .with_limits(Limits::default().max_iters(5));
    /// assert_eq!(agent.core().tool_list()[0].name(), "add");
    /// ```
    pub fn new() -> Self {
        ReAct {
            core: DynReAct::new(S::signature().clone()),
            _signature: std::marker::PhantomData,
        }
    }

    crate::shared::forward_builders! {
        core;
        /// Adds a tool (see [`DynReAct::tool`]).
        fn tool(tool: impl Tool + 'static);
        /// Adds tools (see [`DynReAct::tool`]).
        fn tools(tools: impl IntoIterator<Item = impl Tool + 'static>);
        /// Bounds on steps, LM calls, tool time, observation size and concurrency (see [`Limits`]).
        fn with_limits(limits: Limits);
        /// Uses `lm` for every call.
        fn with_lm(lm: impl Lm + 'static);
        /// Uses `adapter` for every call.
        fn with_adapter(adapter: impl Adapter + 'static);
        /// Sampling options (temperature, length limit, ..) for every LM call of a run.
        fn with_options(options: crate::lm::LmOptions);
        /// The truncation policy for context-window overflows (default [`DropOldest`](super::DropOldest)).
        fn with_truncation(policy: impl TruncationPolicy + 'static);
        /// Whether the extractor reasons first (ChainOfThought, the default) or answers
        /// directly (see [`DynReAct::with_extractor_reasoning`]).
        fn with_extractor_reasoning(on: bool);
        /// How tool results are shown to the model (see
        /// [`DynReAct::with_observation_formatter`]).
        fn with_observation_formatter(formatter: impl super::ObservationFormatter + 'static);
        /// Uses `adapter` for the steps only (see [`DynReAct::with_step_adapter`]).
        fn with_step_adapter(adapter: impl Adapter + 'static);
        /// The steps and the extractor use the model registered under `name` (see
        /// [`DynReAct::with_model_hint`]).
        fn with_model_hint(name: impl Into<String>);
        /// The steps use the model registered under `name` (see
        /// [`DynReAct::with_step_model_hint`]).
        fn with_step_model_hint(name: impl Into<String>);
        /// The extractor uses the model registered under `name` (see
        /// [`DynReAct::with_extractor_model_hint`]).
        fn with_extractor_model_hint(name: impl Into<String>);
        /// Text or native tool calling (default: native when the LM supports it).
        fn with_mode(mode: ReActMode);
        /// A failed extractor's outputs taken from the last tool result (see
        /// [`DynReAct::with_answer_fallback`]).
        fn with_answer_fallback(on: bool);
        /// Above this many tools (default 12) a first call selects the relevant ones.
        fn with_tool_selection_threshold(threshold: usize);
        /// Tool selection keeps at most `n` tools (see [`DynReAct::with_tool_selection_limit`]).
        fn with_tool_selection_limit(n: usize);
        /// Native mode: every turn calls a tool, the answer is `finish` (see
        /// [`DynReAct::with_required_tool_calls`]).
        fn with_required_tool_calls(required: bool);
        /// Native mode: the last turn the step limit allows must call `finish` (see
        /// [`DynReAct::with_finish_on_last_turn`]).
        fn with_finish_on_last_turn(on: bool);
        /// Seals suspended states with `key` and resumes only sealed ones (see
        /// [`DynReAct::with_state_key`]).
        fn with_state_key(key: impl AsRef<[u8]>);
        /// Checks every answer with `check` too (see [`DynReAct::with_output_check`]).
        fn with_output_check(check: impl crate::module::check::Check + 'static);
        /// At most `n` re-asks after refused answers (see [`DynReAct::with_max_reasks`]).
        fn with_max_reasks(n: usize);
        /// What the run answers when every answer was refused (see
        /// [`DynReAct::with_check_fallback`]).
        fn with_check_fallback(fallback: crate::module::check::CheckFallback);
    }

    /// Checks every answer: `check` takes the typed input, the typed output and the trajectory
    /// (the tools called and what they returned), and accepts them or says what is wrong. A
    /// refused answer is not taken; the model reads the message and goes on (see
    /// [`DynReAct::with_output_check`]).
    ///
    /// ```
    /// use signet::prelude::*;
    ///
    /// /// Look up a word.
    /// #[tool]
    /// fn define(word: String) -> String { format!("{word}: a word") }
    ///
    /// /// Answer with the tools.
    /// #[derive(Signature)]
    /// struct Ask { #[input] question: String, #[output] answer: String }
    ///
    /// let agent = ReAct::<Ask>::new().tool(DefineTool).with_check(
    ///     "looked up",
    ///     |_, _, trajectory| match trajectory.steps.iter().any(|s| s.tool_name == "define") {
    ///         true => Ok(()),
    ///         false => Err("look the word up with `define` first".into()),
    ///     },
    /// );
    /// assert_eq!(agent.core().checks().unwrap().list()[0].name(), "looked up");
    /// ```
    pub fn with_check(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&S::Input, &S::Output, &super::Trajectory) -> Result<(), String>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        let empty = super::Trajectory::default();
        let typed = crate::module::check::TypedCheck::<S::Input, S::Output>::new(
            name,
            move |input, output, trajectory| check(input, output, trajectory.unwrap_or(&empty)),
        );
        self.core = self.core.with_output_check(typed);
        self
    }

    /// Asks `approver` before running tools that require confirmation (`#[tool(confirm)]`).
    pub fn with_approver<F, Fut>(mut self, approver: F) -> Self
    where
        F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Approval> + Send + 'static,
    {
        self.core = self.core.with_approver(approver);
        self
    }

    /// A native demo's tool turns for calls you write yourself (see [`DynReAct::demo_turns`]).
    pub async fn demo_turns<'n>(
        &self,
        turns: impl IntoIterator<Item = Vec<(&'n str, serde_json::Value)>>,
    ) -> serde_json::Value {
        self.core.demo_turns(turns).await
    }

    /// The untyped loop inside.
    pub fn core(&self) -> &DynReAct {
        &self.core
    }

    /// Shows `tool` to the model described as `description` (see
    /// [`DynReAct::set_tool_description`]).
    pub fn set_tool_description(
        &mut self,
        tool: &str,
        description: impl Into<String>,
    ) -> Result<(), super::UnknownTool> {
        self.core.set_tool_description(tool, description)
    }

    /// Runs the agent on `input`, yielding its events as they happen (see [`DynReAct::stream`]);
    /// the last one is [`ReActEvent::Done`] with the typed output, or [`ReActEvent::Failed`].
    /// Dropping the stream cancels the run.
    pub fn stream(&self, input: S::Input) -> BoxStream<'_, ReActEvent<S::Output>> {
        self.stream_with(input, CallConfig::default())
    }

    /// [`stream`](Self::stream) with per-call settings: the LM, the adapter, the step limit
    /// ([`CallConfig`]). For a stream polled elsewhere (an SSE response), the settings must be
    /// given here: a [`CallConfig::scope`] holds only where the stream is polled.
    pub fn stream_with(
        &self,
        input: S::Input,
        call: CallConfig,
    ) -> BoxStream<'_, ReActEvent<S::Output>> {
        typed_stream(&input, |inputs| self.core.stream(inputs, call))
    }

    /// [`stream`](Self::stream) with a channel for follow-up messages (see
    /// [`DynReAct::stream_with_interrupts`]).
    pub fn stream_with_interrupts(
        &self,
        input: S::Input,
        interrupts: tokio::sync::mpsc::UnboundedReceiver<String>,
    ) -> BoxStream<'_, ReActEvent<S::Output>> {
        typed_stream(&input, |inputs| {
            self.core
                .stream_with_interrupts(inputs, CallConfig::default(), interrupts)
        })
    }

    /// Runs the agent on `input`. A failure carries the steps and usage so far. From sync code,
    /// [`Module::call_blocking`](crate::module::Module::call_blocking) (in the prelude) runs it to
    /// the end.
    ///
    /// ```
    /// use signet::prelude::*;
    /// use signet::testing::ScriptedLm;
    ///
    /// /// Answer.
    /// #[derive(Signature)]
    /// struct Ask { #[input] question: String, #[output] answer: String }
    ///
    /// let agent = ReAct::<Ask>::new().with_mode(ReActMode::Text).with_lm(ScriptedLm::texts([
    ///     "[[ ## next_thought ## ]]\nEasy.\n[[ ## next_tool_name ## ]]\nfinish\n[[ ## next_tool_args ## ]]\n{\"answer\": \"4\"}",
    /// ]));
    /// let out = agent.call_blocking(AskInput { question: "2 + 2?".into() }).unwrap();
    /// assert_eq!(out.output.answer, "4");
    /// ```
    pub async fn call(&self, input: S::Input) -> Result<ReActOutput<S::Output>, ReActError> {
        self.call_with(input, &CallConfig::default()).await
    }

    /// [`call`](Self::call) with per-call settings: the LM, the adapter, the step limit
    /// ([`CallConfig::with_max_iters`]).
    pub async fn call_with(
        &self,
        input: S::Input,
        call: &CallConfig,
    ) -> Result<ReActOutput<S::Output>, ReActError> {
        let inputs = crate::module::to_fields(&input).map_err(ReActError::before_start)?;
        let run = self.core.forward(&inputs, call).await?;
        typed_output(run).map_err(|error| *error)
    }

    /// Runs the agent on `input`, suspending where a person is needed (see
    /// [`DynReAct::start`]): a `#[tool(confirm)]` tool with no approver set, a tool that returns
    /// [`ToolError::NeedsInput`](crate::ToolError::NeedsInput).
    ///
    /// ```
    /// use signet::prelude::*;
    /// use signet::module::{Decision, RunOutcome, SuspendedRun};
    /// use signet::testing::ScriptedLm;
    ///
    /// /// Send money.
    /// #[tool(confirm)]
    /// fn pay(to: String, amount: u32) -> String { format!("paid {amount} to {to}") }
    ///
    /// /// Do what is asked.
    /// #[derive(Signature)]
    /// struct Task { #[input] task: String, #[output] report: String }
    ///
    /// let agent = |reply: &str| {
    ///     ReAct::<Task>::new().tool(PayTool).with_mode(ReActMode::Text).with_lm(ScriptedLm::texts([reply]))
    /// };
    /// let call_pay = "[[ ## next_thought ## ]]\nPay Ada.\n[[ ## next_tool_name ## ]]\npay\n\
    ///     [[ ## next_tool_args ## ]]\n{\"to\": \"Ada\", \"amount\": 5}\n[[ ## completed ## ]]";
    /// let finish = "[[ ## next_thought ## ]]\nDone.\n[[ ## next_tool_name ## ]]\nfinish\n\
    ///     [[ ## next_tool_args ## ]]\n{\"report\": \"paid\"}\n[[ ## completed ## ]]";
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let RunOutcome::Suspended(state) = agent(call_pay).start(TaskInput { task: "Pay Ada 5".into() }).await.unwrap() else { panic!() };
    /// assert_eq!(state.pending[0].tool, "pay");
    /// let saved = serde_json::to_string(&state).unwrap();
    /// // .. later, perhaps in another process, once someone approved:
    /// let state: SuspendedRun = serde_json::from_str(&saved).unwrap();
    /// let decisions = state.decide_all(Decision::Approve);
    /// let RunOutcome::Finished(done) = agent(finish).resume(state, decisions).await.unwrap() else { panic!() };
    /// assert_eq!(done.output.report, "paid");
    /// assert_eq!(done.trajectory.steps[0].observation.as_text(), "paid 5 to Ada");
    /// # });
    /// ```
    pub async fn start(
        &self,
        input: S::Input,
    ) -> Result<RunOutcome<ReActOutput<S::Output>>, ReActError> {
        let inputs = crate::module::to_fields(&input).map_err(ReActError::before_start)?;
        let outcome = self.core.start(&inputs, &CallConfig::default()).await?;
        typed_outcome(outcome).map_err(|error| *error)
    }

    /// Goes on with a suspended run, with a [`Decision`] per pending call's id (see
    /// [`DynReAct::resume`]).
    pub async fn resume(
        &self,
        state: SuspendedRun,
        decisions: impl IntoIterator<Item = (String, Decision)>,
    ) -> Result<RunOutcome<ReActOutput<S::Output>>, ReActError> {
        let outcome = self
            .core
            .resume(state, decisions, &CallConfig::default())
            .await?;
        typed_outcome(outcome).map_err(|error| *error)
    }

    /// [`start`](Self::start) as a stream of events, ending with [`ReActEvent::Done`],
    /// [`ReActEvent::Suspended`] or [`ReActEvent::Failed`].
    pub fn stream_start(&self, input: S::Input) -> BoxStream<'_, ReActEvent<S::Output>> {
        typed_stream(&input, |inputs| {
            self.core.stream_start(inputs, CallConfig::default())
        })
    }

    /// [`resume`](Self::resume) as a stream of events.
    pub fn stream_resume(
        &self,
        state: SuspendedRun,
        decisions: impl IntoIterator<Item = (String, Decision)>,
    ) -> BoxStream<'_, ReActEvent<S::Output>> {
        self.core
            .stream_resume(state, decisions, CallConfig::default())
            .map(ReActEvent::typed)
            .boxed()
    }
}

/// A finished run with its outputs as `O` (boxed error: the callers unbox it).
fn typed_output<O: serde::de::DeserializeOwned>(
    run: super::ReActRun,
) -> Result<ReActOutput<O>, Box<ReActError>> {
    let output = crate::module::from_fields(&run.outputs)
        .map_err(|error| Box::new(ReActError::new(error, &run.trajectory, run.usage)))?;
    Ok(ReActOutput {
        output,
        reasoning: run.reasoning,
        trajectory: run.trajectory,
        usage: run.usage,
    })
}

fn typed_outcome<O: serde::de::DeserializeOwned>(
    outcome: RunOutcome<super::ReActRun>,
) -> Result<RunOutcome<ReActOutput<O>>, Box<ReActError>> {
    Ok(match outcome {
        RunOutcome::Finished(run) => RunOutcome::Finished(typed_output(run)?),
        RunOutcome::Suspended(state) => RunOutcome::Suspended(state),
    })
}

/// A stream of one event: the run failed before it started.
/// The typed events of a run over `input`'s fields: `run` starts the untyped stream; an input
/// that does not serialize is one [`ReActEvent::Failed`].
pub(in crate::module) fn typed_stream<'a, O: serde::de::DeserializeOwned + Send + 'a>(
    input: &impl serde::Serialize,
    run: impl FnOnce(crate::adapter::Fields) -> BoxStream<'a, ReActEvent>,
) -> BoxStream<'a, ReActEvent<O>> {
    match crate::module::to_fields(input) {
        Ok(inputs) => run(inputs).map(ReActEvent::typed).boxed(),
        Err(error) => failed(error),
    }
}

fn failed<'a, O: Send + 'a>(error: crate::module::Error) -> BoxStream<'a, ReActEvent<O>> {
    futures::stream::once(async move {
        ReActEvent::Failed {
            error: Arc::new(ReActError::before_start(error)),
        }
    })
    .boxed()
}
