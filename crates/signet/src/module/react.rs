//! ReAct: the typed tool loop (DSPy's `dspy.ReAct`).
//!
//! Each step asks the model for `next_thought`, `next_tool_name` (one of the tools or `finish`) and
//! `next_tool_args`; the tool runs and its result — or its error, in words the model can act on — is
//! appended to the trajectory as the observation. After `finish` (or `max_iters` steps) an extractor
//! (ChainOfThought over the inputs and the trajectory) produces the outputs, unless `finish` already
//! carried valid outputs.
//!
//! Every mode — DSPy's text fields, native function calling, the history mode (ReActV2) — and
//! `Predict` with tools run in one loop (`driver.rs`): each is a protocol that says how the model
//! is asked for a turn and how the turn is recorded, while the loop owns limits, follow-up
//! messages, concurrent tool calls, approvals, events, the journal and suspend/resume.
//!
//! Every ReAct name is here. [`signet::module`](crate::module) re-exports the entry points
//! ([`ReAct`], [`DynReAct`], their outputs, errors, events and [`ReActMode`]) and the vocabulary
//! `Predict` with tools shares (approvals, [`Limits`], suspension, the [`Trajectory`]); the
//! truncation policies, the reserved tool names ([`FINISH`], [`SUBMIT`], [`TOOL_TURNS`]), a
//! suspended run's parts and the stop reasons are used from here:
//!
//! ```
//! use signet::module::{DynReAct, Limits};
//! use signet::module::react::{FINISH, SlidingWindow};
//!
//! let agent = DynReAct::new("question -> answer".parse().unwrap())
//!     .with_limits(Limits::default())
//!     .with_truncation(SlidingWindow(4));
//! assert_eq!(FINISH, "finish");
//! # let _ = agent;
//! ```

pub(super) mod answer_stream;
pub(super) mod approval;
pub(super) mod budget;
pub(super) mod context_window;
mod descriptions;
pub(super) mod driver;
mod error;
pub(super) mod events;
pub(super) mod formatting;
mod history_mode;
pub(super) mod limits;
pub(super) mod native;
mod prompt;
mod selection;
mod settings;
pub(super) mod suspend;
mod text;
pub(super) mod trajectory;
mod truncation;
mod turns;
pub(super) mod typed;

pub use approval::{Approval, ApprovalRequest, Approver, Decision, Waiting};
use context_window::WindowRetries;
pub use descriptions::UnknownTool;
pub use error::{ReActError, RunFailure};
pub use events::ReActEvent;
pub use formatting::{AsIs, HtmlAsText, ObservationFormatter};
pub use history_mode::SUBMIT;
pub use limits::Limits;
pub use native::TOOL_TURNS;
pub use prompt::tool_listing;
pub use suspend::{
    HistoryPosition, HistoryTurn, PendingCall, ResumeError, RunOutcome, STATE_FORMAT, SuspendedRun,
};
use trajectory::KeptText;
pub use trajectory::{
    AnswerFallback, Observation, ProviderTurn, Step, StopReason, Trajectory, UserMessage,
};
pub use truncation::{
    CannotTruncate, DropOldest, KeepFirst, SlidingWindow, Summarize, TruncationPolicy,
};
pub use typed::ReAct;

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{CallConfig, DynPredict, Error};
use crate::adapter::{Adapter, Fields};
use crate::lm::{Lm, LmError, LmOptions, Usage};
use crate::signature::DynSignature;
use crate::tool::Tool;
use events::{Emitter, FINISH_POSTPONED, Interrupts};
use suspend::Start;

/// The name of the tool that ends the loop.
pub const FINISH: &str = "finish";

/// What `finish` returns (DSPy's text).
const FINISH_OBSERVATION: &str = "Completed.";

/// The typed result of a ReAct run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReActOutput<O> {
    /// The outputs.
    pub output: O,
    /// The extractor's reasoning (`None` when `finish` carried the outputs and no extractor ran).
    pub reasoning: Option<String>,
    /// Every step, with thoughts, calls, observations and timings.
    pub trajectory: Trajectory,
    /// LM usage summed over every call.
    pub usage: Usage,
}

/// How the loop talks to the model about tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReActMode {
    /// Native function calling when the LM supports it, text otherwise (the default).
    #[default]
    Auto,
    /// DSPy's text format: `next_thought` / `next_tool_name` / `next_tool_args` fields.
    Text,
    /// Native function calling: tools sent as `tools=`, calls of one reply run concurrently.
    Native,
    /// DSPy's `dspy.ReActV2`: one predictor over a conversation history. Each turn the model
    /// writes `next_thought` and calls any number of tools; the outputs are the arguments of a
    /// built-in `submit` tool (forced with `tool_choice` after `max_iters` turns). Tools travel
    /// natively or as text according to the adapter (`with_native_function_calling`), and every
    /// earlier turn is re-sent as chat messages. See `docs/react.md`.
    History,
}

/// The untyped ReAct loop over a run-time signature.
#[derive(Clone)]
pub struct DynReAct {
    signature: DynSignature,
    /// The tools as the model is shown them (see [`set_tool_description`](Self::set_tool_description)).
    tools: Vec<Arc<dyn Tool>>,
    /// The same tools with their own descriptions.
    own_tools: Vec<Arc<dyn Tool>>,
    pub(in crate::module) step: DynPredict,
    pub(in crate::module) extract: DynPredict,
    limits: Limits,
    truncation: Arc<dyn TruncationPolicy>,
    mode: ReActMode,
    approver: Option<Approver>,
    selection_threshold: usize,
    selection_limit: usize,
    /// Whether a failed extractor's outputs are taken from the last tool result.
    answer_fallback: bool,
    /// How tool results are shown to the model.
    formatter: Arc<dyn ObservationFormatter>,
    require_tool_calls: bool,
    finish_on_last_turn: bool,
    /// The key suspended states are sealed with and checked against (see
    /// [`with_state_key`](Self::with_state_key)).
    state_key: Option<Arc<[u8]>>,
    /// The checks every answer must pass ([`crate::module::check`]).
    checks: Option<Arc<crate::module::check::Checks>>,
}

impl std::fmt::Debug for DynReAct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Every field is named here, so that no setting can be left out of what Debug shows (the
        // check of DSPy's defaults, tests/interop/dspy_defaults.rs, reads it).
        let DynReAct {
            signature,
            tools,
            own_tools: _,
            step: _,
            extract: _,
            limits,
            truncation,
            mode,
            approver,
            selection_threshold,
            selection_limit,
            answer_fallback,
            formatter,
            require_tool_calls,
            finish_on_last_turn,
            state_key,
            checks,
        } = self;
        let tools: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        f.debug_struct("DynReAct")
            .field("signature", &signature.name())
            .field("tools", &tools)
            .field("limits", limits)
            .field("truncation", truncation)
            .field("mode", mode)
            .field("approver", &approver.as_ref().map(|_| "set"))
            .field("selection_threshold", selection_threshold)
            .field("selection_limit", selection_limit)
            .field("answer_fallback", answer_fallback)
            .field("formatter", formatter)
            .field("require_tool_calls", require_tool_calls)
            .field("finish_on_last_turn", finish_on_last_turn)
            .field("state_key", &state_key.as_ref().map(|_| "[redacted]"))
            .field("checks", &checks.as_ref().map(|_| "set"))
            .finish_non_exhaustive()
    }
}

impl DynReAct {
    /// The step predictor (its signature holds DSPy's ReAct instructions).
    pub fn step_predictor(&self) -> &DynPredict {
        &self.step
    }

    /// Runs the loop on `inputs`; the outputs are field values. A `#[tool(confirm)]` tool runs
    /// only when the [approver](Self::with_approver) approves it (the model reads a denial when
    /// there is none); for a run that waits for a person instead, see [`start`](Self::start).
    pub async fn forward(
        &self,
        inputs: &Fields,
        call: &CallConfig,
    ) -> Result<ReActRun, ReActError> {
        let outcome = self
            .run(
                inputs,
                call,
                &Emitter::for_module_run(self.step.id, self.step.signature.name(), false)
                    .unwrap_or_default(),
                &mut Interrupts::default(),
                Start::Fresh { resumable: false },
            )
            .await?;
        match outcome {
            RunOutcome::Finished(run) => Ok(run),
            // A run that is not resumable does not suspend; should one, it is an error, not a
            // silent stop.
            RunOutcome::Suspended(state) => Err(ReActError::new(
                Error::Unsupported {
                    what: "a run that waits for a person in `forward`; use `start`".to_owned(),
                },
                &state.trajectory,
                state.usage,
            )),
        }
    }

    /// Runs the loop on `inputs`, suspending where a person is needed: at a `#[tool(confirm)]`
    /// tool when no [approver](Self::with_approver) is set, and at a tool that returns
    /// [`ToolError::NeedsInput`](crate::ToolError::NeedsInput). A suspended run is
    /// [`RunOutcome::Suspended`] with a [`SuspendedRun`] that serialises to JSON; go on with
    /// [`resume`](Self::resume), here or in another process. In every mode; a
    /// [`ReActMode::History`] run keeps its conversation in [`SuspendedRun::history`].
    pub async fn start(
        &self,
        inputs: &Fields,
        call: &CallConfig,
    ) -> Result<RunOutcome<ReActRun>, ReActError> {
        let start = Start::Fresh { resumable: true };
        let mut interrupts = Interrupts::default();
        self.run(
            inputs,
            call,
            &Emitter::for_module_run(self.step.id, self.step.signature.name(), false)
                .unwrap_or_default(),
            &mut interrupts,
            start,
        )
        .await
    }

    /// Goes on with a suspended run: `decisions` pairs each pending call's
    /// [id](PendingCall::id) with a [`Decision`]. The agent must be built as the one that
    /// suspended (same signature, tools and settings; [`ResumeError::StaleState`] otherwise); it
    /// may be in another process. The run may suspend again.
    pub async fn resume(
        &self,
        state: SuspendedRun,
        decisions: impl IntoIterator<Item = (String, Decision)>,
        call: &CallConfig,
    ) -> Result<RunOutcome<ReActRun>, ReActError> {
        let (inputs, start) = self
            .resume_start(state, decisions)
            .map_err(|error| *error)?;
        let mut interrupts = Interrupts::default();
        self.run(
            &inputs,
            call,
            &Emitter::for_module_run(self.step.id, self.step.signature.name(), false)
                .unwrap_or_default(),
            &mut interrupts,
            start,
        )
        .await
    }

    /// Runs the loop and yields its events as they happen, ending with [`ReActEvent::Done`] or
    /// [`ReActEvent::Failed`]. Dropping the stream cancels the run, tool calls in flight included.
    pub fn stream<'a>(
        &'a self,
        inputs: Fields,
        call: CallConfig,
    ) -> futures::stream::BoxStream<'a, ReActEvent> {
        let start = Start::Fresh { resumable: false };
        self.stream_inner(inputs, call, Interrupts::default(), start)
    }

    /// [`start`](Self::start) as a stream of events; a run that waits for a person ends with
    /// [`ReActEvent::Suspended`].
    pub fn stream_start<'a>(
        &'a self,
        inputs: Fields,
        call: CallConfig,
    ) -> futures::stream::BoxStream<'a, ReActEvent> {
        let start = Start::Fresh { resumable: true };
        self.stream_inner(inputs, call, Interrupts::default(), start)
    }

    /// [`resume`](Self::resume) as a stream of events (a state that cannot be resumed is one
    /// [`ReActEvent::Failed`]).
    pub fn stream_resume<'a>(
        &'a self,
        state: SuspendedRun,
        decisions: impl IntoIterator<Item = (String, Decision)>,
        call: CallConfig,
    ) -> futures::stream::BoxStream<'a, ReActEvent> {
        use futures::StreamExt;
        match self.resume_start(state, decisions) {
            Ok((inputs, start)) => self.stream_inner(inputs, call, Interrupts::default(), start),
            Err(error) => futures::stream::once(async move {
                ReActEvent::Failed {
                    error: Arc::new(*error),
                }
            })
            .boxed(),
        }
    }

    /// [`stream`](Self::stream), with a channel for follow-up messages while the run is in
    /// progress. Messages are added between iterations — in native mode after the tool results, so
    /// the tool-message order stays valid — several at once combined into one; a `finish` chosen
    /// while messages wait is postponed so the model can address them. In
    /// [`ReActMode::History`] the messages travel in a `user_message` input field, and a `submit`
    /// is postponed as `finish` is.
    pub fn stream_with_interrupts<'a>(
        &'a self,
        inputs: Fields,
        call: CallConfig,
        interrupts: tokio::sync::mpsc::UnboundedReceiver<String>,
    ) -> futures::stream::BoxStream<'a, ReActEvent> {
        self.stream_inner(
            inputs,
            call,
            Interrupts::new(Some(interrupts)),
            Start::Fresh { resumable: false },
        )
    }

    /// The inputs and start of a resumed run, once the state is checked against this agent.
    fn resume_start(
        &self,
        state: SuspendedRun,
        decisions: impl IntoIterator<Item = (String, Decision)>,
    ) -> Result<(Fields, Start), Box<ReActError>> {
        match state.check(self, decisions) {
            Ok(decided) => {
                let inputs = state.inputs.clone();
                let state = Box::new(state);
                Ok((inputs, Start::Resume { state, decided }))
            }
            Err(error) => Err(Box::new(ReActError::new(
                error,
                &state.trajectory,
                state.usage,
            ))),
        }
    }

    fn stream_inner<'a>(
        &'a self,
        inputs: Fields,
        call: CallConfig,
        mut interrupts: Interrupts,
        start: Start,
    ) -> futures::stream::BoxStream<'a, ReActEvent> {
        events::stream_run(move |emitter| async move {
            self.run(&inputs, &call, &emitter, &mut interrupts, start)
                .await
        })
    }

    /// The run; a state it suspends with carries this agent's fingerprint.
    async fn run(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        events: &Emitter,
        interrupts: &mut Interrupts,
        start: Start,
    ) -> Result<RunOutcome<ReActRun>, ReActError> {
        // The call's settings with those of an enclosing `CallConfig::scope`.
        use crate::telemetry::RecordContent;
        use tracing::Instrument;
        let call = &*call.effective();
        let events = &events.with_journal(call.journal.clone());
        let span = self.step.agent_span(inputs);
        let outcome = self
            .run_unstamped(inputs, call, events, interrupts, start)
            .instrument(span.clone())
            .await;
        if !span.is_disabled() {
            let usage = match &outcome {
                Ok(RunOutcome::Finished(run)) => {
                    span.record_content("signet.module.outputs", || {
                        serde_json::to_string(&run.outputs).unwrap_or_default()
                    });
                    run.usage
                }
                Ok(RunOutcome::Suspended(state)) => {
                    tracing::info!(
                        target: crate::telemetry::TARGET,
                        parent: &span,
                        pending = crate::telemetry::int(state.pending.len()),
                        "gen_ai.agent.suspended"
                    );
                    state.usage
                }
                Err(error) => {
                    crate::telemetry::record_error(&span, &error.reason.error_type(), error);
                    error.usage
                }
            };
            crate::lm::record_usage(&span, &usage);
        }
        Ok(match outcome? {
            RunOutcome::Suspended(mut state) => {
                state.fingerprint = self.fingerprint();
                state.signature = self.signature.name().to_owned();
                suspend::reseal(&mut state, self.state_key.as_deref());
                RunOutcome::Suspended(state)
            }
            finished => finished,
        })
    }

    async fn run_unstamped(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        events: &Emitter,
        interrupts: &mut Interrupts,
        start: Start,
    ) -> Result<RunOutcome<ReActRun>, ReActError> {
        self.tool_runner(None)
            .check_names()
            .map_err(ReActError::before_start)?;
        crate::adapted::check_media_inputs(&self.signature, inputs)
            .map_err(ReActError::before_start)?;
        let resolved = self.step.resolve(call).map_err(ReActError::before_start)?;
        for predictor in [&self.step, &self.extract] {
            predictor
                .prepare_demos(inputs)
                .await
                .map_err(ReActError::before_start)?;
        }
        if self.extract.model_hint().is_some() {
            // A model hint registered nowhere fails before the steps, not after them.
            self.extract
                .resolve(call)
                .map_err(ReActError::before_start)?;
        }
        let (selected, usage) = match &start {
            Start::Resume { state, .. } => (state.selected_tools.clone(), Usage::default()),
            Start::Fresh { .. } if self.tools.len() > self.selection_threshold => {
                events.emit(ReActEvent::SelectingTools {
                    total: self.tools.len(),
                });
                let mut usage = Usage::default();
                let selected = self
                    .select_tools(resolved.lm.as_ref(), inputs, &mut usage)
                    .await;
                if let Some(names) = &selected {
                    events.emit(ReActEvent::ToolsSelected {
                        names: names.clone(),
                    });
                    if self.step_instructions_tuned() {
                        let removed = self
                            .tools
                            .iter()
                            .map(|t| t.name().to_owned())
                            .filter(|name| !names.contains(name))
                            .collect();
                        events.emit(ReActEvent::TunedInstructionsKept { removed });
                    }
                }
                (selected, usage)
            }
            Start::Fresh { .. } => (None, Usage::default()),
        };
        // A selection's LM calls count whether it chose tools or failed (every tool offered).
        let outcome = match &selected {
            Some(names) => {
                Box::pin(
                    self.restricted_to(names)
                        .run_selected(inputs, call, resolved, events, interrupts, start),
                )
                .await
            }
            None => {
                self.run_selected(inputs, call, resolved, events, interrupts, start)
                    .await
            }
        };
        let outcome = outcome.map_err(|mut error| {
            error.usage += usage;
            error
        })?;
        Ok(match outcome {
            RunOutcome::Finished(mut run) => {
                run.usage += usage;
                RunOutcome::Finished(run)
            }
            RunOutcome::Suspended(mut state) => {
                state.usage += usage;
                if selected.is_some() {
                    state.selected_tools = selected;
                }
                RunOutcome::Suspended(state)
            }
        })
    }

    /// The run once the tools are chosen: history, native or text mode.
    async fn run_selected(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        resolved: super::Resolved,
        events: &Emitter,
        interrupts: &mut Interrupts,
        start: Start,
    ) -> Result<RunOutcome<ReActRun>, ReActError> {
        let watch = crate::module::check::watch::Watch::of(self.checks.as_ref(), inputs);
        // The answering turns' replies, watched by the checks that can stop one as it streams
        // (native `finish` arguments or a text answer, history mode's `submit`; text mode's
        // answer is the extractor's, watched there).
        let watched = |answering: &'static str| {
            let mut resolved = resolved.clone();
            if let Some(watch) = &watch {
                let chat_markers = resolved.adapter.marks_fields();
                resolved.lm = watch.wrap(resolved.lm, Some(answering), chat_markers);
            }
            resolved
        };
        let driver = driver::Driver {
            runner: self.tool_runner(events.journal()),
            limits: &self.limits,
            inputs,
            call,
            events,
            resumable: start.resumable(),
            max_iters: self.max_iters(call),
            checking: self.checks.as_ref().map(|checks| driver::Checking {
                checks,
                signature: &self.signature,
                watch: watch.clone(),
            }),
        };
        if self.mode == ReActMode::History {
            let follow_ups = interrupts.enabled();
            let resolved = watched(SUBMIT);
            let turns = history_mode::HistoryTurns::new(self, inputs, resolved, events, follow_ups)
                .map_err(ReActError::before_start)?;
            // Boxed, as the resumption below: rarer paths do not size every run's future.
            return Box::pin(driver.run(turns, interrupts, start)).await;
        }
        let native = match (&start, self.mode) {
            (Start::Resume { state, .. }, _) => state.native,
            (_, ReActMode::Auto) => match self.text_mode_reason(resolved.lm.as_ref()) {
                Some(reason) => {
                    let model = resolved.lm.model().to_owned();
                    tracing::warn!(%model, %reason, "the agent runs in text mode");
                    events.emit(ReActEvent::TextMode { model, reason });
                    false
                }
                None => true,
            },
            (_, ReActMode::Native) => true,
            (_, ReActMode::Text | ReActMode::History) => false,
        };
        let turns = turns::ReActTurns {
            agent: self,
            native: native.then(|| native::NativeSteps::new(self, inputs, watched(FINISH), events)),
            resolved,
        };
        driver.run(turns, interrupts, start).await
    }

    /// The outputs read from the last step whose tool returned a value, when the extractor
    /// failed: with one output field, that value; with several, an object holding each. `None`
    /// when the fallback is off, no tool returned a value, or the value does not fit the outputs.
    fn answer_fallback(&self, trajectory: &Trajectory) -> Option<(usize, Fields)> {
        if !self.answer_fallback {
            return None;
        }
        let (step, value) =
            trajectory
                .steps
                .iter()
                .rev()
                .find_map(|step| match &step.observation {
                    _ if step.tool_name == FINISH => None,
                    Observation::Output(value) | Observation::Truncated { full: value, .. } => {
                        Some((step, value.clone()))
                    }
                    Observation::Error(_) => None,
                })?;
        let fields = self.signature.outputs();
        let mut outputs = Fields::new();
        for field in fields {
            let raw = match (fields.len(), &value) {
                (1, value) => value,
                (_, Value::Object(map)) => map.get(field.name())?,
                _ => return None,
            };
            let parsed = crate::adapter::value::parse_json(field, raw).ok()?;
            outputs.insert(field.name().to_owned(), parsed);
        }
        Some((step.index, outputs))
    }

    /// Why [`ReActMode::Auto`] runs in text mode with `lm`, if it does: the LM reports no native
    /// function calling, or the step predictor carries what was tuned for DSPy's text-mode step
    /// (instructions other than the ones generated for the signature and tools, or text-mode
    /// demos), which native mode's prompt would not show.
    fn text_mode_reason(&self, lm: &dyn Lm) -> Option<String> {
        if !lm.capabilities().function_calling {
            return Some(
                "the LM reports no native function calling (declare the server's capabilities, \
                 or set ReActMode::Text to say so)"
                    .to_owned(),
            );
        }
        if self.step_instructions_tuned() {
            return Some(
                "the step predictor's instructions were tuned (a loaded or optimized program); \
                 native mode would not show them (set ReActMode::Native to run natively anyway)"
                    .to_owned(),
            );
        }
        if self
            .step
            .demos
            .iter()
            .any(|demo| !demo.contains_key(TOOL_TURNS))
        {
            return Some(
                "the step predictor has text-mode demos, which native mode would not show (set \
                 ReActMode::Native to run natively anyway)"
                    .to_owned(),
            );
        }
        None
    }

    /// The extractor (ChainOfThought over the inputs and the trajectory) produces the outputs and
    /// its reasoning; when it fails after the tools ran, the [answer
    /// fallback](Self::with_answer_fallback)'s (recorded in the trajectory) — unless a check's
    /// watcher stopped its reply, which the driver then refuses.
    async fn extract(
        &self,
        driver: &driver::Driver<'_>,
        run: &mut driver::RunState,
    ) -> Result<(Fields, Option<String>), ReActError> {
        let (inputs, call, events) = (driver.inputs, driver.call, driver.events);
        events.emit(ReActEvent::Extracting);
        // A streamed run shows the answer as it is written: the extractor's LM calls go through
        // `Lm::stream`, and their text becomes `AnswerDelta` events.
        let mut resolved = self
            .extract
            .resolve(call)
            .map_err(|error| run.fail(error))?;
        // The extractor's own adapter (the steps may have another: `with_step_adapter`).
        let adapter = resolved.adapter.clone();
        let adapter = adapter.as_ref();
        let mut lm = resolved.lm;
        if let Some(watch) = driver.checking.as_ref().and_then(|c| c.watch.as_ref()) {
            lm = watch.wrap(lm, None, adapter.marks_fields());
        }
        resolved.lm = answer_stream::answer_lm(lm, adapter, events, true);
        let mut usage = run.usage;
        // The answer step reads long results cut shorter than the steps did; the run's
        // trajectory keeps what the steps read.
        let cap = self.limits.max_answer_observation_chars;
        let mut capped = run.trajectory.with_observations_cut_at(cap);
        let mut capped_kept = KeptText::default();
        let (trajectory, kept) = match capped.as_mut() {
            Some(capped) => (capped, &mut capped_kept),
            None => (&mut run.trajectory, &mut run.kept),
        };
        let outputs = self
            .call_with_truncation(
                &self.extract,
                &resolved,
                inputs,
                (trajectory, kept),
                Where {
                    adapter,
                    call,
                    events,
                },
                &mut usage,
            )
            .await;
        run.usage = usage;
        let mut outputs = match outputs {
            Ok(prediction) => prediction.outputs,
            // A reply stopped by a check is refused by the driver, not replaced.
            Err(RunFailure::Call(Error::Lm(LmError::Stopped { reason }))) => {
                return Err(run.fail(Error::Lm(LmError::Stopped { reason })));
            }
            Err(failure) => {
                let Some((step, outputs)) = self.answer_fallback(&run.trajectory) else {
                    return Err(run.fail(failure));
                };
                let error = failure.to_string();
                tracing::warn!(%error, step, "the extractor failed; the outputs are a step's observation");
                events.emit(ReActEvent::AnswerFallback {
                    error: error.clone(),
                    step,
                });
                run.trajectory.answer_fallback = Some(AnswerFallback { error, step });
                outputs
            }
        };
        let reasoning = outputs.shift_remove("reasoning").map(|r| as_text(&r));
        Ok((outputs, reasoning))
    }

    /// Runs `predictor` with the trajectory, keeping it within the prompt budget before the call
    /// ([`Limits::context_window`]) and truncating it (up to 3 times) while the provider still
    /// reports the context window exceeded.
    async fn call_with_truncation(
        &self,
        predictor: &DynPredict,
        resolved: &super::Resolved,
        inputs: &Fields,
        (trajectory, kept): (&mut Trajectory, &mut KeptText),
        at: Where<'_>,
        usage: &mut Usage,
    ) -> Result<super::Prediction, RunFailure> {
        let Where {
            adapter,
            call,
            events,
        } = at;
        let with_text = |text: String| {
            let mut fields = inputs.clone();
            fields.insert("trajectory".to_owned(), Value::String(text));
            fields
        };
        let with_trajectory = |trajectory: &Trajectory| with_text(trajectory.render(adapter));
        let lm = &resolved.lm;
        let measure = |trajectory: &Trajectory| {
            let fields = with_trajectory(trajectory);
            let messages = adapter.format(
                predictor.signature(),
                &predictor.demos_for(&fields),
                &fields,
            );
            crate::lm::count_prompt_tokens(lm.model(), &messages, &[]).tokens
        };
        let budget = self.budget(lm.as_ref(), predictor.options());
        let mut retries = WindowRetries::new("Trajectory");
        while retries.another_call() {
            self.limits.check_lm_calls(usage)?;
            budget
                .fit(trajectory, events, &measure)
                .await
                .map_err(|message| RunFailure::TrajectoryTooLong { message })?;
            match predictor
                .forward_resolved(
                    &with_text(trajectory.render_kept(adapter, kept)),
                    call,
                    Some(resolved),
                    usage,
                )
                .await
            {
                Ok(prediction) => return Ok(prediction),
                Err(Error::Lm(LmError::ContextWindowExceeded { message })) => {
                    usage.lm_calls = usage.lm_calls.saturating_add(1);
                    retries.refused(message);
                    if let Err(reason) = budget.compact(trajectory, events, &measure).await {
                        return Err(RunFailure::TrajectoryTooLong {
                            message: retries.cannot_truncate(reason),
                        });
                    }
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(RunFailure::TrajectoryTooLong {
            message: retries.exhausted(),
        })
    }

    /// The run's context budget for prompts sent to `lm` with `options`.
    fn budget(&self, lm: &dyn Lm, options: &LmOptions) -> budget::ContextBudget<'_> {
        budget::ContextBudget::new(&self.limits, lm, options, self.truncation.as_ref())
    }

    /// Runs the chosen tool; every failure becomes an observation the model can act on.
    async fn observe(&self, name: &str, args: &Value, thought: &str) -> Observation {
        if name == FINISH {
            return Observation::Output(json!(FINISH_OBSERVATION));
        }
        self.tool_runner(None).run(name, args, thought).await
    }

    /// The step limit of a run: the call's, or the agent's.
    fn max_iters(&self, call: &CallConfig) -> usize {
        call.max_iters.unwrap_or(self.limits.max_iters)
    }

    /// The run's tool runner: these tools, `finish`, the approver, the limits and the journal.
    pub(super) fn tool_runner<'a>(
        &'a self,
        journal: Option<&'a Arc<dyn crate::journal::Journal>>,
    ) -> super::tool_runner::ToolRunner<'a> {
        super::tool_runner::ToolRunner::new(
            &self.tools,
            &[FINISH],
            self.approver.as_ref(),
            &self.limits,
        )
        .with_formatter(self.formatter.as_ref())
        .with_journal(journal)
    }

    /// When the model passed the outputs to `finish` and they parse into the output types, they are
    /// the result (saving the extractor call).
    fn outputs_from_finish(&self, args: &Value) -> Option<Fields> {
        let args = args.as_object()?;
        let mut outputs = Map::new();
        for field in self.signature.outputs() {
            let value = crate::adapter::value::parse_json(field, args.get(field.name())?).ok()?;
            outputs.insert(field.name().to_owned(), value);
        }
        Some(outputs)
    }
}

/// Where an LM call of a run happens: the adapter, the call's settings, the run's events.
#[derive(Clone, Copy)]
struct Where<'a> {
    adapter: &'a dyn Adapter,
    call: &'a CallConfig,
    events: &'a Emitter,
}

/// How one tool call is carried out.
#[derive(Clone, Copy)]
enum CallMode<'d> {
    /// As the model wrote it; in a `resumable` run a call that needs a person waits for one.
    Attempt {
        /// Whether the run may suspend.
        resumable: bool,
    },
    /// As a person decided.
    Decided(&'d Decision),
    /// Not run: the answering tool waits a turn, for the reason this text gives the model.
    Postponed(&'static str),
    /// Not run, beyond the reply's limit of calls: this text is its error observation.
    Refused(&'d str),
}

/// What an untyped ReAct run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ReActRun {
    /// Output field values.
    pub outputs: Fields,
    /// The extractor's reasoning, when it ran.
    pub reasoning: Option<String>,
    /// The steps.
    pub trajectory: Trajectory,
    /// LM usage over every call.
    pub usage: Usage,
}

fn as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
