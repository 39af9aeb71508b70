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

use super::events::stop_early;
use super::{
    CallMode, Emitter, Observation, ReActCore, ReActError, ReActEvent, ReActRun, RunFailure, Step,
    StopReason, Trajectory,
};
use crate::adapter::{self, Fields, History, Tools};
use crate::lm::{LmError, ToolChoice, Usage};
use crate::module::{Error, Resolved};
use crate::signature::{DynSignature, Field, FieldKind};

/// The tool that ends a history-mode run; its arguments are the outputs.
pub const SUBMIT: &str = "submit";

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
    /// The history-mode loop (see the [module docs](self)).
    pub(super) async fn forward_history(
        &self,
        inputs: &Fields,
        resolved: Resolved,
        events: &Emitter,
        max_iters: usize,
    ) -> Result<ReActRun, ReActError> {
        self.check_history_names()
            .map_err(ReActError::before_start)?;
        let signature = self.history_signature();
        let mut tools: Vec<Value> = self.tools.iter().map(|t| t.to_openai_function()).collect();
        tools.push(self.submit_descriptor());
        let mut pending: Fields = self.own_inputs(inputs);
        let mut history: Vec<(usize, Fields)> = Vec::new();
        let mut trajectory = Trajectory::default();
        let mut usage = Usage::default();
        let mut reason = None;
        for turn in 0..max_iters {
            events.emit(ReActEvent::StepStarted { turn });
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
            let (event, finished) = self
                .run_turn(turn, &pending, &outputs, calls, &mut trajectory, events)
                .await;
            history.push((turn, event));
            pending.clear();
            if let Some(outputs) = finished {
                trajectory.history = history.into_iter().map(|(_, e)| e).collect();
                return Ok(ReActRun {
                    outputs,
                    reasoning: None,
                    trajectory,
                    usage,
                });
            }
        }
        let reason = reason.unwrap_or(StopReason::MaxIters { max_iters });
        let described = break_reason(&reason);
        stop_early(&mut trajectory, events, reason);
        // The forced submit: one more call that must call `submit`.
        let turn = max_iters;
        events.emit(ReActEvent::StepStarted { turn });
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
        let (event, finished) = self
            .run_turn(turn, &pending, &outputs, calls, &mut trajectory, events)
            .await;
        let errors: Vec<String> = event["tool_calls"]["tool_call_results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r["is_error"] == json!(true))
            .map(|r| crate::adapter::python::py_str(&r["value"]))
            .collect();
        history.push((turn, event));
        trajectory.history = history.into_iter().map(|(_, e)| e).collect();
        match finished {
            Some(outputs) => Ok(ReActRun {
                outputs,
                reasoning: None,
                trajectory,
                usage,
            }),
            None => {
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

    /// DSPy rejects names its own fields use.
    fn check_history_names(&self) -> Result<(), Error> {
        let clash = |fields: &[Field], reserved: &[&str]| -> Vec<String> {
            fields
                .iter()
                .filter(|f| reserved.contains(&f.name()))
                .map(|f| format!("`{}`", f.name()))
                .collect()
        };
        let inputs = clash(self.signature.inputs(), &RESERVED_INPUTS);
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
                    usage.lm_calls += 1;
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

    /// Runs a turn's calls (at most `max_concurrent_tools` at a time, results in call order) and
    /// builds its history event; the outputs when `submit` succeeded.
    async fn run_turn(
        &self,
        turn: usize,
        pending: &Fields,
        outputs: &Fields,
        calls: Vec<TurnCall>,
        trajectory: &mut Trajectory,
        events: &Emitter,
    ) -> (Fields, Option<Fields>) {
        let thought = outputs
            .get("next_thought")
            .filter(|t| !t.is_null())
            .cloned();
        let thought_text = thought.as_ref().map(super::as_text).unwrap_or_default();
        if thought.is_some() {
            events.emit(ReActEvent::Thought {
                turn,
                text: thought_text.clone(),
            });
        }
        let first_index = trajectory.steps.last().map_or(0, |s| s.index + 1);
        let mut runs = Vec::with_capacity(calls.len());
        for (offset, call) in calls.iter().enumerate() {
            let thought = thought_text.as_str();
            runs.push(async move {
                self.history_observe(first_index + offset, call, thought, events)
                    .await
            });
        }
        let observed: Vec<(Observation, Duration, Option<Fields>)> = stream::iter(runs)
            .buffered(self.limits.max_concurrent_tools.max(1))
            .collect()
            .await;
        let mut finished = None;
        let mut results = Vec::new();
        for (offset, (call, (observation, elapsed, submitted))) in
            calls.iter().zip(observed).enumerate()
        {
            let is_error = matches!(observation, Observation::Error(_));
            results.push(json!({
                "call_id": call.id,
                "name": call.name,
                "value": observation.as_value(),
                "is_error": is_error,
            }));
            if submitted.is_some() {
                finished = submitted;
            }
            trajectory.steps.push(Step {
                index: first_index + offset,
                thought: thought_text.clone(),
                tool_name: call.name.clone(),
                tool_args: call.args.clone(),
                observation,
                call_id: Some(call.id.clone()),
                turn,
                elapsed,
            });
        }
        let mut event = pending.clone();
        if let Some(thought) = thought {
            event.insert("next_thought".to_owned(), thought);
        }
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| json!({"id": c.id, "name": c.name, "args": c.args}))
            .collect();
        event.insert(
            "tool_calls".to_owned(),
            json!({"tool_calls": calls, "tool_call_results": results}),
        );
        if let Some(outputs) = &finished {
            event.extend(outputs.clone());
        }
        (event, finished)
    }

    /// One call: `submit` checks the outputs, an unknown name is an error result, any other tool
    /// runs as in the other modes (approval, time limit, errors as results).
    async fn history_observe(
        &self,
        index: usize,
        call: &TurnCall,
        thought: &str,
        events: &Emitter,
    ) -> (Observation, Duration, Option<Fields>) {
        let name = call.name.as_str();
        if name == SUBMIT {
            return match self.submitted_outputs(&call.args) {
                Ok(outputs) => (
                    Observation::Output(Value::Object(outputs.clone())),
                    Duration::ZERO,
                    Some(outputs),
                ),
                Err(message) => (
                    Observation::Error(format!("Execution error in {SUBMIT}: {message}")),
                    Duration::ZERO,
                    None,
                ),
            };
        }
        if !self.tools.iter().any(|t| t.name() == name) {
            return (
                Observation::Error(format!("Unknown tool: {name}")),
                Duration::ZERO,
                None,
            );
        }
        let unattended = CallMode::Attempt { resumable: false };
        let (observation, elapsed) = self
            .observe_with_events(index, name, &call.args, thought, events, unattended)
            .await
            .unwrap_or_else(|waiting| {
                (
                    self.tool_runner().unattended(name, &waiting),
                    Duration::ZERO,
                )
            });
        // The tool's own message after DSPy's prefix (as Python's traceback ends with it).
        let observation = match observation {
            Observation::Error(text) => {
                let wrapped = format!("Execution error in {name}: tool `{name}` failed: ");
                match text.strip_prefix(&wrapped) {
                    Some(message) => {
                        Observation::Error(format!("Execution error in {name}: {message}"))
                    }
                    None => Observation::Error(text),
                }
            }
            other => other,
        };
        (observation, elapsed, None)
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
