//! History mode (DSPy's `dspy.ReActV2`): one predictor whose signature has the inputs, a
//! `history` of earlier turns, the `tools` and the outputs `next_thought` / `tool_calls`. Each turn
//! the model calls any number of tools (a built-in `submit` tool carries the outputs); the turn and
//! its results become a history event that the adapter renders as chat messages on the next call —
//! natively (`tool_calls` and `tool` messages) when the adapter uses native function calling,
//! otherwise as text. After `max_iters` turns, an unreadable reply or a turn without calls, one more
//! call forces `submit` (`tool_choice`).

use std::time::Duration;

use futures::{StreamExt, stream};
use serde_json::{Map, Value, json};

use super::events::{
    Interrupts, SUBMIT_POSTPONED, SUBMIT_UNSEEN_RESULTS, answers_before_results, stop_early,
};
use super::suspend::{HistoryPosition, HistoryTurn, Resumed, Start};
use super::{
    CallMode, Emitter, Observation, PendingCall, ReActCore, ReActError, ReActEvent, ReActRun,
    ResumeError, RunFailure, RunOutcome, Step, StopReason, SuspendedRun, Trajectory, Waiting,
};
use crate::adapter::{self, Fields, History, Tools};
use crate::lm::{LmError, ToolChoice, Usage};
use crate::module::{Error, Resolved};
use crate::signature::{DynSignature, Field, FieldKind};

/// The tool that ends a history-mode run; its arguments are the outputs.
pub const SUBMIT: &str = "submit";

/// The input field that carries the caller's follow-up messages (only in a run that takes them).
const USER_MESSAGE: &str = "user_message";

/// Input names the history-mode signature uses itself.
const RESERVED_INPUTS: [&str; 2] = ["history", "tools"];
/// Output names that would collide with what a history-mode run reports.
const RESERVED_OUTPUTS: [&str; 2] = ["history", "termination_reason"];

/// One tool call of a turn, its id assigned.
struct TurnCall {
    id: String,
    name: String,
    args: Value,
}

impl ReActCore {
    /// The history-mode loop (see the [module docs](self)); a resumable run suspends at a call
    /// that needs a person, its conversation kept in [`SuspendedRun::history`].
    pub(super) async fn forward_history(
        &self,
        inputs: &Fields,
        resolved: Resolved,
        events: &Emitter,
        interrupts: &mut Interrupts,
        max_iters: usize,
        start: Start,
    ) -> Result<RunOutcome<ReActRun>, ReActError> {
        let follow_ups = interrupts.enabled();
        self.check_history_names(follow_ups)
            .map_err(ReActError::before_start)?;
        let signature = self.history_signature_for(follow_ups);
        let mut tools: Vec<Value> = self.tools.iter().map(|t| t.to_openai_function()).collect();
        tools.push(self.submit_descriptor());
        let resumable = start.resumable();
        let (mut pending, mut history, mut trajectory, mut usage, first) = match start {
            Start::Fresh { .. } => (
                self.own_inputs(inputs),
                Vec::new(),
                Trajectory::default(),
                Usage::default(),
                0,
            ),
            Start::Resume { state, decided } => {
                let Some(position) = state.history.clone() else {
                    let failure = RunFailure::Resume(ResumeError::MissingHistory);
                    return Err(ReActError::new(failure, &state.trajectory, state.usage));
                };
                let Resumed {
                    mut trajectory,
                    usage,
                    turn,
                    steps,
                } = match self.carry_out(state, decided, events).await {
                    Ok(resumed) => resumed,
                    Err(state) => return Ok(RunOutcome::Suspended(state)),
                };
                let mut steps = steps;
                postpone_early_submit(&mut steps);
                let (event, finished) = close_turn(&position.inputs, position.thought, &steps);
                trajectory.steps.extend(steps);
                let mut history: Vec<(usize, Fields)> = position
                    .turns
                    .into_iter()
                    .map(|t| (t.turn, t.event))
                    .collect();
                history.push((turn, event));
                if let Some(outputs) = finished {
                    return Ok(RunOutcome::Finished(finish(
                        outputs, history, trajectory, usage,
                    )));
                }
                (
                    Fields::new(),
                    history,
                    trajectory,
                    usage,
                    turn.saturating_add(1),
                )
            }
        };
        let mut reason = None;
        for turn in first..max_iters {
            events.emit(ReActEvent::StepStarted { turn });
            receive_messages(interrupts, &mut pending, &mut trajectory, events);
            let outputs = match self
                .history_call(
                    &signature,
                    &resolved,
                    &pending,
                    &mut history,
                    &tools,
                    false,
                    &mut trajectory,
                    &mut usage,
                )
                .await
            {
                Ok(outputs) => outputs,
                Err(RunFailure::Call(Error::Parse(error))) => {
                    reason = Some(StopReason::UnreadableStep {
                        step: turn,
                        error: error.to_string(),
                    });
                    break;
                }
                Err(RunFailure::TrajectoryTooLong { message }) => {
                    reason = Some(StopReason::ContextWindow { message });
                    break;
                }
                Err(failure) => return Err(ReActError::new(failure, &trajectory, usage)),
            };
            let calls = turn_calls(&outputs, turn);
            if calls.is_empty() {
                reason = Some(StopReason::NoToolCalls { turn });
                break;
            }
            let thought = thought_of(&outputs);
            let steps = match self
                .run_turn(
                    turn,
                    thought.as_ref(),
                    calls,
                    &trajectory,
                    events,
                    resumable,
                )
                .await
            {
                Ok(mut steps) => {
                    postpone_early_submit(&mut steps);
                    if interrupts.pending() {
                        postpone_submit(&mut steps, SUBMIT_POSTPONED);
                    }
                    steps
                }
                Err((settled, waiting)) => {
                    let position = HistoryPosition {
                        turns: history
                            .into_iter()
                            .map(|(turn, event)| HistoryTurn { turn, event })
                            .collect(),
                        inputs: pending,
                        thought,
                    };
                    let state =
                        SuspendedRun::new(false, inputs, trajectory, usage, turn, settled, waiting);
                    return Ok(RunOutcome::Suspended(SuspendedRun {
                        history: Some(position),
                        ..state
                    }));
                }
            };
            let (event, finished) = close_turn(&pending, thought, &steps);
            trajectory.steps.extend(steps);
            history.push((turn, event));
            pending.clear();
            if let Some(outputs) = finished {
                return Ok(RunOutcome::Finished(finish(
                    outputs, history, trajectory, usage,
                )));
            }
        }
        let reason = reason.unwrap_or(StopReason::MaxIters { max_iters });
        let described = break_reason(&reason);
        stop_early(&mut trajectory, events, reason);
        // The forced submit: one more call that must call `submit`.
        let turn = max_iters;
        events.emit(ReActEvent::StepStarted { turn });
        receive_messages(interrupts, &mut pending, &mut trajectory, events);
        let outputs = self
            .history_call(
                &signature,
                &resolved,
                &pending,
                &mut history,
                &tools,
                true,
                &mut trajectory,
                &mut usage,
            )
            .await
            .map_err(|failure| ReActError::new(failure, &trajectory, usage))?;
        let calls: Vec<TurnCall> = turn_calls(&outputs, turn)
            .into_iter()
            .filter(|c| c.name == SUBMIT)
            .collect();
        if calls.is_empty() {
            trajectory.history = history.into_iter().map(|(_, e)| e).collect();
            let failure = RunFailure::NoFinalOutputs {
                message: format!(
                    "ReActV2 failed to produce final outputs after {described}: no submit call."
                ),
            };
            return Err(ReActError::new(failure, &trajectory, usage));
        }
        let thought = thought_of(&outputs);
        // Only `submit` runs here, and it never waits for a person.
        let steps = match self
            .run_turn(turn, thought.as_ref(), calls, &trajectory, events, false)
            .await
        {
            Ok(steps) | Err((steps, _)) => steps,
        };
        let (event, finished) = close_turn(&pending, thought, &steps);
        let errors: Vec<String> = steps
            .iter()
            .filter_map(|step| match &step.observation {
                Observation::Error(text) => Some(text.clone()),
                _ => None,
            })
            .collect();
        trajectory.steps.extend(steps);
        history.push((turn, event));
        match finished {
            Some(outputs) => Ok(RunOutcome::Finished(finish(
                outputs, history, trajectory, usage,
            ))),
            None => {
                trajectory.history = history.into_iter().map(|(_, e)| e).collect();
                let failure = RunFailure::NoFinalOutputs {
                    message: format!(
                        "ReActV2 failed to produce final outputs after {described}: submit failed.\n{}",
                        errors.join("\n")
                    ),
                };
                Err(ReActError::new(failure, &trajectory, usage))
            }
        }
    }

    /// DSPy rejects names its own fields use (and Signet `user_message` when the caller can send
    /// follow-up messages).
    fn check_history_names(&self, follow_ups: bool) -> Result<(), Error> {
        let clash = |fields: &[Field], reserved: &[&str]| -> Vec<String> {
            fields
                .iter()
                .filter(|f| reserved.contains(&f.name()))
                .map(|f| format!("`{}`", f.name()))
                .collect()
        };
        let reserved: &[&str] = if follow_ups {
            &[RESERVED_INPUTS[0], RESERVED_INPUTS[1], USER_MESSAGE]
        } else {
            &RESERVED_INPUTS
        };
        let inputs = clash(self.signature.inputs(), reserved);
        if !inputs.is_empty() {
            return Err(Error::InvalidSignature {
                message: format!(
                    "input field name(s) {} are reserved by the history mode for its conversation \
                     history and tool list; rename them",
                    inputs.join(", ")
                ),
            });
        }
        let outputs = clash(self.signature.outputs(), &RESERVED_OUTPUTS);
        if !outputs.is_empty() {
            return Err(Error::InvalidSignature {
                message: format!(
                    "output field name(s) {} are reserved by the history mode; rename them",
                    outputs.join(", ")
                ),
            });
        }
        if self.tools.iter().any(|t| t.name() == SUBMIT) {
            return Err(Error::InvalidSignature {
                message: "`submit` is reserved by the history mode as the final-output tool"
                    .to_owned(),
            });
        }
        Ok(())
    }

    /// DSPy's ReActV2 signature: the inputs (each optional), `history`, `tools`, then
    /// `next_thought` and `tool_calls`, with the agent instructions.
    pub fn history_signature(&self) -> DynSignature {
        self.history_signature_for(false)
    }

    /// [`history_signature`](Self::history_signature); with `follow_ups`, an optional
    /// `user_message` input after the signature's own carries the caller's follow-up messages.
    fn history_signature_for(&self, follow_ups: bool) -> DynSignature {
        let names = |fields: &[Field]| {
            fields
                .iter()
                .map(|f| format!("`{}`", f.name()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (inputs, outputs) = (
            names(self.signature.inputs()),
            names(self.signature.outputs()),
        );
        let tool_names: Vec<String> = self
            .tools
            .iter()
            .map(|t| format!("`{}`", t.name()))
            .chain([format!("`{SUBMIT}`")])
            .collect();
        let instructions = [
            self.signature.instructions(),
            format!("You are an Agent. Use the supplied tools to produce {outputs} from {inputs}."),
            "Call tools when more information is needed.".to_owned(),
            format!("When the final answer is ready, call `{SUBMIT}` with {outputs}."),
            format!("The available tools are: {}.", tool_names.join(", ")),
        ]
        .join("\n");
        let mut signature = DynSignature::new(self.signature.name())
            .with_instructions(instructions.trim().to_owned());
        for field in self.signature.inputs() {
            let optional = if adapter::allows_none(field.schema()) {
                field.clone()
            } else {
                let name = format!("Union[{}, NoneType]", field.type_name());
                field.clone().with_type_name(name)
            };
            signature = signature.with_input(optional);
        }
        if follow_ups {
            signature = signature.with_input(
                Field::of::<Option<String>>(USER_MESSAGE)
                    .with_type_name("Union[str, NoneType]")
                    .with_desc(
                        "Messages the user sent while you were working; address them before you \
                         submit.",
                    ),
            );
        }
        signature
            .with_input(Field::of::<History>("history"))
            .with_input(Field::of::<Tools>("tools"))
            // DSPy's `dspy.Reasoning`: a `str` that is not plain text (the reminder names its type).
            .with_output(Field::str("next_thought").with_kind(FieldKind::Value))
            .with_output(
                Field::from_schema("tool_calls", tool_calls_schema())
                    .with_type_name("ToolCalls")
                    .with_kind(FieldKind::ToolCalls),
            )
    }

    /// `submit`: its arguments are the outputs, all required.
    fn submit_descriptor(&self) -> Value {
        let mut properties = Map::new();
        for field in self.signature.outputs() {
            properties.insert(field.name().to_owned(), field.schema().clone());
        }
        let required: Vec<Value> = self
            .signature
            .outputs()
            .iter()
            .map(|f| json!(f.name()))
            .collect();
        json!({
            "type": "function",
            "function": {
                "name": SUBMIT,
                "description": "Submit the final outputs for the task.",
                "parameters": {"type": "object", "properties": properties, "required": required}
            }
        })
    }

    /// The outputs `submit` was called with, or why they are not valid.
    fn submitted_outputs(&self, args: &Value) -> Result<Fields, String> {
        let empty = Map::new();
        let args = match args {
            Value::Object(args) => args,
            Value::Null => &empty,
            other => return Err(format!("the arguments must be a JSON object, got {other}")),
        };
        let missing: Vec<&str> = self
            .signature
            .outputs()
            .iter()
            .map(Field::name)
            .filter(|name| !args.contains_key(*name))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "Missing required final output field(s): {}",
                missing.join(", ")
            ));
        }
        let mut outputs = Fields::new();
        for field in self.signature.outputs() {
            let value = crate::adapter::value::parse_json(field, &args[field.name()])
                .map_err(|e| format!("Arg {} is invalid: {e}", field.name()))?;
            outputs.insert(field.name().to_owned(), value);
        }
        Ok(outputs)
    }

    /// One call of the history predictor, the history shortened by the truncation policy (up to 3
    /// times) while it overflows the context window. `force_submit` asks for a `submit` call.
    #[allow(clippy::too_many_arguments)]
    async fn history_call(
        &self,
        signature: &DynSignature,
        resolved: &Resolved,
        pending: &Fields,
        history: &mut Vec<(usize, Fields)>,
        tools: &[Value],
        force_submit: bool,
        trajectory: &mut Trajectory,
        usage: &mut Usage,
    ) -> Result<Fields, RunFailure> {
        let mut extra = Map::new();
        if force_submit {
            extra.insert("reasoning_effort".to_owned(), Value::Null);
        }
        let mut last = String::new();
        for _ in 0..3 {
            self.limits.check_lm_calls(usage)?;
            let mut inputs = pending.clone();
            let turns = History {
                messages: history.iter().map(|(_, e)| e.clone()).collect(),
            };
            inputs.insert("history".to_owned(), json!(turns));
            inputs.insert("tools".to_owned(), Value::Array(tools.to_vec()));
            let call = adapter::Call {
                signature,
                parse_as: None,
                demos: &[],
                inputs: &inputs,
                options: self.step.options(),
                tool_choice: force_submit.then(|| ToolChoice::Function(SUBMIT.to_owned())),
                extra: force_submit.then_some(&extra),
            };
            let mut own = Usage::default();
            let span = tracing::info_span!("react.lm_call", turns = history.len());
            let result = tracing::Instrument::instrument(
                adapter::run_counting(
                    resolved.adapter.as_ref(),
                    resolved.lm.as_ref(),
                    &call,
                    &mut own,
                ),
                span,
            )
            .await;
            *usage += own;
            crate::trace::record_usage(own);
            match result {
                Ok(reply) => return Ok(reply.outputs),
                Err(Error::Lm(LmError::ContextWindowExceeded { message })) => {
                    usage.lm_calls = usage.lm_calls.saturating_add(1);
                    tracing::warn!(
                        "The history exceeded the context window, truncating the oldest tool call information."
                    );
                    last = message;
                    if let Err(reason) = self.truncate_history(history, trajectory).await {
                        return Err(RunFailure::TrajectoryTooLong {
                            message: format!("{last}; {reason}"),
                        });
                    }
                }
                Err(other) => return Err(other.into()),
            }
        }
        Err(RunFailure::TrajectoryTooLong {
            message: format!("the context window was exceeded even after 3 truncations: {last}"),
        })
    }

    /// Applies the truncation policy to the steps and keeps the history turns whose calls remain;
    /// the inputs of dropped turns move to the first turn kept.
    async fn truncate_history(
        &self,
        history: &mut Vec<(usize, Fields)>,
        trajectory: &mut Trajectory,
    ) -> Result<(), String> {
        let before = history.len();
        self.truncation.truncate(trajectory).await?;
        let kept: Vec<usize> = trajectory.steps.iter().map(|s| s.turn).collect();
        let mut carried = Fields::new();
        let mut retained = Vec::new();
        for (turn, event) in history.drain(..) {
            if kept.contains(&turn) {
                retained.push((turn, event));
            } else {
                for field in self.signature.inputs() {
                    if let Some(value) = event.get(field.name()) {
                        carried.insert(field.name().to_owned(), value.clone());
                    }
                }
            }
        }
        if let Some((_, first)) = retained.first_mut() {
            carried.extend(std::mem::take(first));
            *first = carried;
        }
        *history = retained;
        if history.len() == before {
            return Err("the truncation policy removed no turn".to_owned());
        }
        Ok(())
    }

    /// Runs a turn's calls (at most `max_concurrent_tools` at a time), their steps in call
    /// order; in a `resumable` run, the steps that ran and the calls that wait for a person.
    async fn run_turn(
        &self,
        turn: usize,
        thought: Option<&Value>,
        calls: Vec<TurnCall>,
        trajectory: &Trajectory,
        events: &Emitter,
        resumable: bool,
    ) -> Result<Vec<Step>, (Vec<Step>, Vec<PendingCall>)> {
        let thought_text = thought.map(super::as_text).unwrap_or_default();
        if thought.is_some() {
            events.emit(ReActEvent::Thought {
                turn,
                text: thought_text.clone(),
            });
        }
        let first_index = trajectory
            .steps
            .last()
            .map_or(0, |s| s.index.saturating_add(1));
        let refusal = self.limits.refused_call(calls.len());
        let mut runs = Vec::with_capacity(calls.len());
        for (offset, call) in calls.iter().enumerate() {
            let thought = thought_text.as_str();
            let refusal = refusal.as_str();
            runs.push(async move {
                // Beyond the reply's limit of calls: not run, an error result the model reads.
                if offset >= self.limits.max_tool_calls_per_turn {
                    return Ok((Observation::Error(refusal.to_owned()), Duration::ZERO));
                }
                let index = first_index.saturating_add(offset);
                self.history_observe(index, call, thought, events, resumable)
                    .await
            });
        }
        let observed: Vec<Result<(Observation, Duration), Waiting>> = stream::iter(runs)
            .buffered(events.tool_concurrency(self.limits.max_concurrent_tools))
            .collect()
            .await;
        let mut steps = Vec::with_capacity(calls.len());
        let mut waiting = Vec::new();
        for (offset, (call, observed)) in calls.into_iter().zip(observed).enumerate() {
            let index = first_index.saturating_add(offset);
            match observed {
                Ok((observation, elapsed)) => steps.push(Step {
                    index,
                    thought: thought_text.clone(),
                    tool_name: call.name,
                    tool_args: call.args,
                    observation,
                    call_id: Some(call.id),
                    turn,
                    elapsed,
                }),
                Err(waiting_for) => waiting.push(PendingCall {
                    id: call.id,
                    index,
                    tool: call.name,
                    args: call.args,
                    thought: thought_text.clone(),
                    waiting_for,
                }),
            }
        }
        if waiting.is_empty() {
            Ok(steps)
        } else {
            Err((steps, waiting))
        }
    }

    /// One call: `submit` checks the outputs, an unknown name is an error result, any other tool
    /// runs as in the other modes (approval, time limit, errors as results); in a `resumable` run
    /// a call that needs a person waits for one.
    async fn history_observe(
        &self,
        index: usize,
        call: &TurnCall,
        thought: &str,
        events: &Emitter,
        resumable: bool,
    ) -> Result<(Observation, Duration), Waiting> {
        let name = call.name.as_str();
        if name == SUBMIT {
            return Ok(match self.submitted_outputs(&call.args) {
                Ok(outputs) => (Observation::Output(Value::Object(outputs)), Duration::ZERO),
                Err(message) => (
                    Observation::Error(format!("Execution error in {SUBMIT}: {message}")),
                    Duration::ZERO,
                ),
            });
        }
        if !self.tools.iter().any(|t| t.name() == name) {
            return Ok((
                Observation::Error(format!("Unknown tool: {name}")),
                Duration::ZERO,
            ));
        }
        let how = CallMode::Attempt { resumable };
        let (observation, elapsed) = match self
            .observe_with_events(index, name, &call.args, thought, events, how)
            .await
        {
            Ok(observed) => observed,
            Err(waiting) if resumable => return Err(waiting),
            Err(waiting) => (
                self.tool_runner(None).unattended(name, &waiting),
                Duration::ZERO,
            ),
        };
        Ok((super::trajectory::reworded(name, observation), elapsed))
    }
}

/// The thought a turn's outputs carry, if the model wrote one.
fn thought_of(outputs: &Fields) -> Option<Value> {
    outputs
        .get("next_thought")
        .filter(|t| !t.is_null())
        .cloned()
}

/// A turn's history event (its pending input fields, the thought, the calls as they ran and
/// their results) and the outputs when a `submit` among them succeeded.
fn close_turn(inputs: &Fields, thought: Option<Value>, steps: &[Step]) -> (Fields, Option<Fields>) {
    let mut finished = None;
    let mut calls = Vec::with_capacity(steps.len());
    let mut results = Vec::with_capacity(steps.len());
    for step in steps {
        let id = step.call_id.clone().unwrap_or_default();
        calls.push(json!({"id": id, "name": step.tool_name, "args": step.tool_args}));
        results.push(json!({
            "call_id": id,
            "name": step.tool_name,
            "value": step.observation.as_value(),
            "is_error": matches!(step.observation, Observation::Error(_)),
        }));
        if step.tool_name == SUBMIT
            && let Observation::Output(Value::Object(outputs)) = &step.observation
        {
            finished = Some(outputs.clone());
        }
    }
    let mut event = inputs.clone();
    if let Some(thought) = thought {
        event.insert("next_thought".to_owned(), thought);
    }
    event.insert(
        "tool_calls".to_owned(),
        json!({"tool_calls": calls, "tool_call_results": results}),
    );
    if let Some(outputs) = &finished {
        event.extend(outputs.clone());
    }
    (event, finished)
}

/// Moves the caller's waiting follow-up messages into the next call's `user_message` input.
fn receive_messages(
    interrupts: &mut Interrupts,
    pending: &mut Fields,
    trajectory: &mut Trajectory,
    events: &Emitter,
) {
    let Some(text) = interrupts.take(trajectory, events) else {
        return;
    };
    let text = match pending.get(USER_MESSAGE).and_then(Value::as_str) {
        Some(earlier) => format!("{earlier}\n\n{text}"),
        None => text,
    };
    pending.insert(USER_MESSAGE.to_owned(), Value::String(text));
}

/// A `submit` that succeeded while the caller's messages wait does not end the run: the model
/// reads that it was postponed (`why`), and the messages, on its next turn.
fn postpone_submit(steps: &mut [Step], why: &str) {
    for step in steps {
        if step.tool_name == SUBMIT && matches!(step.observation, Observation::Output(_)) {
            step.observation = Observation::Output(json!(why));
        }
    }
}

/// A `submit` in the same turn as other calls was written before their results: the model reads
/// them, and that its submit was postponed, on its next turn (DSPy's ReActV2 takes it at once).
fn postpone_early_submit(steps: &mut [Step]) {
    if answers_before_results(steps.iter().map(|s| s.tool_name.as_str()), SUBMIT) {
        postpone_submit(steps, SUBMIT_UNSEEN_RESULTS);
    }
}

/// A finished run: the outputs `submit` carried and the conversation as its trajectory's history.
fn finish(
    outputs: Fields,
    history: Vec<(usize, Fields)>,
    mut trajectory: Trajectory,
    usage: Usage,
) -> ReActRun {
    trajectory.history = history.into_iter().map(|(_, e)| e).collect();
    ReActRun {
        outputs,
        reasoning: None,
        trajectory,
        usage,
    }
}

/// The calls of a reply, each with an id (`call_<turn>_<index>` when the model gave none).
fn turn_calls(outputs: &Fields, turn: usize) -> Vec<TurnCall> {
    outputs
        .get("tool_calls")
        .and_then(|v| v.get("tool_calls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(index, call)| TurnCall {
            id: call["id"]
                .as_str()
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("call_{turn}_{index}"), str::to_owned),
            name: call["name"].as_str().unwrap_or_default().to_owned(),
            args: match &call["args"] {
                Value::Null => json!({}),
                args => args.clone(),
            },
        })
        .collect()
}

/// DSPy's name for why the loop ended before `submit`.
fn break_reason(reason: &StopReason) -> &'static str {
    match reason {
        StopReason::UnreadableStep { .. } | StopReason::UnreadableAnswer { .. } => "parse_error",
        StopReason::ContextWindow { .. } => "context_window_exceeded",
        StopReason::NoToolCalls { .. } => "empty_tool_calls",
        StopReason::MaxIters { .. } => "max_iters",
    }
}

/// The JSON schema of DSPy's `ToolCalls` (pydantic's, as DSPy prints it).
fn tool_calls_schema() -> Value {
    json!({
        "type": "object",
        "$defs": {"ToolCall": {
            "type": "object",
            "properties": {
                "args": {"type": "object", "additionalProperties": true, "title": "Args"},
                "name": {"type": "string", "title": "Name"}
            },
            "required": ["name", "args"],
            "title": "ToolCall"
        }},
        "properties": {"tool_calls": {
            "type": "array", "items": {"$ref": "#/$defs/ToolCall"}, "title": "Tool Calls"
        }},
        "required": ["tool_calls"],
        "title": "ToolCalls"
    })
}
