//! History mode (DSPy's `dspy.ReActV2`): one predictor whose signature has the inputs, a
//! `history` of earlier turns, the `tools` and the outputs `next_thought` / `tool_calls`. Each turn
//! the model calls any number of tools (a built-in `submit` tool carries the outputs); the turn and
//! its results become a history event that the adapter renders as chat messages on the next call —
//! natively (`tool_calls` and `tool` messages) when the adapter uses native function calling,
//! otherwise as text. After `max_iters` turns, an unreadable reply or a turn without calls, one more
//! call forces `submit` (`tool_choice`).

use super::context_window::WindowRetries;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::answer_stream::AnswerStream;
use super::driver::{
    Ask, Driver, REFUSED, RunState, TurnCall, TurnEnd, TurnProtocol, reject_answer, stopped_call,
};
use super::events::{
    Emitter, Interrupts, SUBMIT_POSTPONED, SUBMIT_UNSEEN_RESULTS, answers_before_results,
};
use super::suspend::{HistoryPosition, HistoryTurn};
use super::{
    DynReAct, Observation, ReActError, ReActEvent, ReActRun, ResumeError, RunFailure, Step,
    StopReason, SuspendedRun, Trajectory,
};
use crate::adapter::{self, Adapter, Fields, History, Tools};
use crate::lm::{Lm, LmError, ToolChoice, Usage};
use crate::module::check::FailedAttempt;
use crate::module::{Error, Resolved};
use crate::signature::{DynSignature, Field, FieldKind, quoted_names};

/// The tool that ends a history-mode run; its arguments are the outputs.
pub const SUBMIT: &str = "submit";

/// The input field that carries the caller's follow-up messages (only in a run that takes them).
const USER_MESSAGE: &str = "user_message";

/// Input names the history-mode signature uses itself.
const RESERVED_INPUTS: [&str; 2] = ["history", "tools"];
/// Output names that would collide with what a history-mode run reports.
const RESERVED_OUTPUTS: [&str; 2] = ["history", "termination_reason"];

/// The history-mode turns: the ReActV2 predictor over the inputs, the conversation so far and the
/// tools; each turn's calls and results become a history event.
pub(super) struct HistoryTurns<'a> {
    agent: &'a DynReAct,
    /// The run's events: a streamed run shows `submit`'s arguments as they are written.
    events: Emitter,
    lm: Arc<dyn Lm>,
    adapter: Arc<dyn Adapter>,
    /// The ReActV2 signature.
    signature: DynSignature,
    /// The tools as sent, `submit` last.
    tools: Vec<Value>,
    /// The input fields the next turn carries (the inputs on the first turn, the caller's
    /// follow-up messages later).
    pending: Fields,
    /// The turns so far, each with its number, as history events.
    history: Vec<(usize, Fields)>,
    /// The thought of the turn in progress.
    thought: Option<Value>,
}

impl<'a> HistoryTurns<'a> {
    /// The turns of `agent` on `inputs`; with `follow_ups`, the caller's messages travel in a
    /// `user_message` input. Names the mode reserves are an error.
    pub(super) fn new(
        agent: &'a DynReAct,
        inputs: &Fields,
        resolved: Resolved,
        events: &Emitter,
        follow_ups: bool,
    ) -> Result<HistoryTurns<'a>, Error> {
        agent.check_history_names(follow_ups)?;
        let mut tools: Vec<Value> = agent.tools.iter().map(|t| t.to_openai_function()).collect();
        tools.push(agent.submit_descriptor());
        let lm: Arc<dyn Lm> = if events.listening() {
            Arc::new(AnswerStream::arguments_of(
                resolved.lm,
                events.clone(),
                SUBMIT,
            ))
        } else {
            resolved.lm
        };
        Ok(HistoryTurns {
            agent,
            events: events.clone(),
            lm,
            adapter: resolved.adapter,
            signature: agent.history_signature_for(follow_ups),
            tools,
            pending: agent.own_inputs(inputs),
            history: Vec::new(),
            thought: None,
        })
    }

    /// One call of the history predictor, the history shortened by the truncation policy (up to 3
    /// times) while it overflows the context window. `force_submit` asks for a `submit` call.
    async fn call(&mut self, run: &mut RunState, force_submit: bool) -> Result<Fields, RunFailure> {
        let agent = self.agent;
        let mut extra = Map::new();
        if force_submit {
            extra.insert("reasoning_effort".to_owned(), Value::Null);
        }
        let mut retries = WindowRetries::new("The history");
        while retries.another_call() {
            agent.limits.check_lm_calls(&run.usage)?;
            let mut inputs = self.pending.clone();
            let turns = History {
                messages: self.history.iter().map(|(_, e)| e.clone()).collect(),
            };
            inputs.insert("history".to_owned(), json!(turns));
            inputs.insert("tools".to_owned(), Value::Array(self.tools.clone()));
            let call = crate::adapted::Call {
                signature: &self.signature,
                parse_as: None,
                demos: &[],
                inputs: &inputs,
                options: agent.step.options(),
                tool_choice: force_submit.then(|| ToolChoice::Function(SUBMIT.to_owned())),
                extra: force_submit.then_some(&extra),
            };
            let mut own = Usage::default();
            let result = crate::adapted::run_counting(
                self.adapter.as_ref(),
                self.lm.as_ref(),
                &call,
                &mut own,
            )
            .await;
            run.usage += own;
            crate::trace::record_usage(own);
            match result {
                Ok(reply) => return Ok(reply.outputs),
                Err(Error::Lm(LmError::ContextWindowExceeded { message })) => {
                    run.usage.lm_calls = run.usage.lm_calls.saturating_add(1);
                    retries.refused(message);
                    if let Err(reason) = agent
                        .truncate_history(&mut self.history, &mut run.trajectory)
                        .await
                    {
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

    /// The calls of a reply, each with an id (`call_<turn>_<index>` when the model gave none);
    /// `submit` and unknown tools do not run: their results are settled here.
    fn calls(&self, outputs: &Fields, turn: usize) -> Vec<TurnCall> {
        turn_calls(outputs, turn)
            .into_iter()
            .map(|mut call| {
                call.settled = self.agent.screen_history_call(&call.name, &call.args);
                call
            })
            .collect()
    }

    /// A turn's history event and, when a `submit` among its steps succeeded, the outputs.
    fn close(&mut self, turn: usize, steps: &[Step]) -> Option<Fields> {
        let (event, finished) = close_turn(&self.pending, self.thought.take(), steps);
        self.history.push((turn, event));
        self.pending.clear();
        finished
    }

    /// The run's steps and usage, the conversation in its trajectory's history.
    fn into_run(self, mut run: RunState) -> RunState {
        run.trajectory.history = self.history.into_iter().map(|(_, e)| e).collect();
        run
    }
}

impl TurnProtocol for HistoryTurns<'_> {
    type Output = ReActRun;

    fn answering_tool(&self) -> Option<&'static str> {
        Some(SUBMIT)
    }

    fn resume(&mut self, state: &SuspendedRun) -> Result<(), RunFailure> {
        let Some(position) = state.history.clone() else {
            return Err(RunFailure::Resume(ResumeError::MissingHistory));
        };
        self.history = position
            .turns
            .into_iter()
            .map(|t| (t.turn, t.event))
            .collect();
        self.pending = position.inputs;
        self.thought = position.thought;
        Ok(())
    }

    fn receive(&mut self, interrupts: &mut Interrupts, run: &mut RunState, events: &Emitter) {
        receive_messages(interrupts, &mut self.pending, &mut run.trajectory, events);
    }

    async fn ask(
        &mut self,
        _driver: &Driver<'_>,
        run: &mut RunState,
        turn: usize,
    ) -> Result<Ask, ReActError> {
        let outputs = match self.call(run, false).await {
            Ok(outputs) => outputs,
            Err(RunFailure::Call(Error::Parse(error))) => {
                return Ok(Ask::Stop(StopReason::UnreadableStep {
                    step: turn,
                    error: error.to_string(),
                }));
            }
            Err(RunFailure::TrajectoryTooLong { message }) => {
                return Ok(Ask::Stop(StopReason::ContextWindow { message }));
            }
            Err(failure) => return Err(run.fail(failure)),
        };
        let calls = self.calls(&outputs, turn);
        if calls.is_empty() {
            return Ok(Ask::Stop(StopReason::NoToolCalls { turn }));
        }
        self.thought = thought_of(&outputs);
        Ok(Ask::Calls {
            thought: self.thought.as_ref().map(super::as_text),
            calls,
        })
    }

    fn reword(&self, name: &str, observation: Observation) -> Observation {
        super::trajectory::reworded(name, observation)
    }

    fn end_turn(
        &mut self,
        run: &mut RunState,
        turn: usize,
        mut steps: Vec<Step>,
        interrupts: &mut Interrupts,
    ) -> TurnEnd {
        postpone_early_submit(&mut steps);
        if interrupts.pending() {
            postpone_submit(&mut steps, SUBMIT_POSTPONED);
        }
        let finished = self.close(turn, &steps);
        run.trajectory.steps.extend(steps);
        match finished {
            Some(outputs) => TurnEnd::Answer(outputs),
            None => {
                // A `submit` streamed this turn was not taken: the answer comes later.
                self.events.forget_answer();
                TurnEnd::Next
            }
        }
    }

    /// The refused `submit`'s result in the conversation becomes the refusal (and the turn's
    /// event no longer carries the outputs). A `submit` stopped while it streamed has no event:
    /// the model is asked again without the message.
    fn reject(&mut self, run: &mut RunState, _next: usize, message: &str) {
        reject_answer(&mut run.trajectory, Some(SUBMIT), message);
        let Some((_, event)) = self.history.last_mut() else {
            return;
        };
        let results = event
            .get_mut("tool_calls")
            .and_then(|t| t.get_mut("tool_call_results"))
            .and_then(Value::as_array_mut);
        let mut refused = false;
        for result in results.into_iter().flatten() {
            if result["name"] == SUBMIT {
                result["value"] = json!(format!("{REFUSED}\n{message}"));
                result["is_error"] = json!(true);
                refused = true;
            }
        }
        if refused {
            for field in self.agent.signature.outputs() {
                event.shift_remove(field.name());
            }
        }
    }

    /// A `submit` stopped while it was written is kept as that call, refused, in a turn of the
    /// conversation of its own.
    fn stopped(&mut self, run: &mut RunState, next: usize, attempt: &FailedAttempt, message: &str) {
        let step = stopped_call(run, next, SUBMIT, attempt, message);
        let (event, _) = close_turn(&self.pending, self.thought.take(), &[step]);
        self.history.push((next.saturating_sub(1), event));
        self.pending.clear();
    }

    fn suspend(self, state: SuspendedRun) -> SuspendedRun {
        let position = HistoryPosition {
            turns: self
                .history
                .into_iter()
                .map(|(turn, event)| HistoryTurn { turn, event })
                .collect(),
            inputs: self.pending,
            thought: self.thought,
        };
        SuspendedRun {
            history: Some(position),
            ..state
        }
    }

    fn answer(
        self,
        _driver: &Driver<'_>,
        run: RunState,
        outputs: Fields,
        _reasoning: Option<String>,
    ) -> ReActRun {
        let RunState {
            trajectory, usage, ..
        } = self.into_run(run);
        ReActRun {
            outputs,
            reasoning: None,
            trajectory,
            usage,
        }
    }

    /// The forced submit: one more call that must call `submit`.
    async fn conclude(
        &mut self,
        driver: &Driver<'_>,
        run: &mut RunState,
        interrupts: &mut Interrupts,
    ) -> Result<(Fields, Option<String>), ReActError> {
        let described = run
            .trajectory
            .stopped_early
            .as_ref()
            .map_or("max_iters", break_reason);
        let turn = run.limit.max(driver.max_iters);
        driver.events.emit(ReActEvent::StepStarted { turn });
        self.receive(interrupts, run, driver.events);
        let outputs = match self.call(run, true).await {
            Ok(outputs) => outputs,
            Err(failure) => return Err(run.fail(failure)),
        };
        let calls: Vec<TurnCall> = self
            .calls(&outputs, turn)
            .into_iter()
            .filter(|c| c.name == SUBMIT)
            .collect();
        if calls.is_empty() {
            let message = format!(
                "ReActV2 failed to produce final outputs after {described}: no submit call."
            );
            return Err(self.fail(run, message));
        }
        self.thought = thought_of(&outputs);
        let thought = self.thought.as_ref().map(super::as_text);
        if let Some(text) = &thought {
            driver.events.emit(ReActEvent::Thought {
                turn,
                text: text.clone(),
            });
        }
        let first_index = self.first_index(&run.trajectory, turn);
        // Only `submit` runs here: its result is settled, it never waits for a person.
        let (steps, _) = driver
            .run_calls(
                &*self,
                turn,
                first_index,
                &thought.unwrap_or_default(),
                calls,
            )
            .await;
        let errors: Vec<String> = steps
            .iter()
            .filter_map(|step| match &step.observation {
                Observation::Error(text) => Some(text.clone()),
                _ => None,
            })
            .collect();
        let finished = self.close(turn, &steps);
        run.trajectory.steps.extend(steps);
        if let Some(outputs) = finished {
            return Ok((outputs, None));
        }
        let message = format!(
            "ReActV2 failed to produce final outputs after {described}: submit failed.\n{}",
            errors.join("\n")
        );
        Err(self.fail(run, message))
    }
}

impl HistoryTurns<'_> {
    /// The run's error when no `submit` succeeded, with the conversation in the trajectory.
    fn fail(&self, run: &RunState, message: String) -> ReActError {
        let mut trajectory = run.trajectory.clone();
        trajectory.history = self.history.iter().map(|(_, e)| e.clone()).collect();
        ReActError::new(
            RunFailure::NoFinalOutputs { message },
            &trajectory,
            run.usage,
        )
    }
}

impl DynReAct {
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
        let (inputs, outputs) = (
            quoted_names(self.signature.inputs()),
            quoted_names(self.signature.outputs()),
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

    /// A history-mode call that does not run: `submit` (its arguments checked as the outputs)
    /// and a tool the agent lacks; `None` for a call that runs.
    fn screen_history_call(&self, name: &str, args: &Value) -> Option<Observation> {
        if name == SUBMIT {
            return Some(match self.submitted_outputs(args) {
                Ok(outputs) => Observation::Output(Value::Object(outputs)),
                Err(message) => {
                    Observation::Error(format!("Execution error in {SUBMIT}: {message}"))
                }
            });
        }
        if !self.tools.iter().any(|t| t.name() == name) {
            return Some(Observation::Error(format!("Unknown tool: {name}")));
        }
        None
    }

    /// Applies the truncation policy to the steps and keeps the history turns whose calls remain;
    /// the inputs of dropped turns move to the first turn kept.
    async fn truncate_history(
        &self,
        history: &mut Vec<(usize, Fields)>,
        trajectory: &mut Trajectory,
    ) -> Result<(), super::CannotTruncate> {
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
            return Err(super::CannotTruncate::RemovedNothing);
        }
        Ok(())
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
/// The calls of a reply, each with an id (`call_<turn>_<index>` when the model gave none).
fn turn_calls(outputs: &Fields, turn: usize) -> Vec<TurnCall> {
    outputs
        .get("tool_calls")
        .and_then(|v| v.get("tool_calls"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(index, call)| {
            let id = call["id"]
                .as_str()
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("call_{turn}_{index}"), str::to_owned);
            let name = call["name"].as_str().unwrap_or_default().to_owned();
            let args = match &call["args"] {
                Value::Null => json!({}),
                args => args.clone(),
            };
            TurnCall::new(Some(id), name, args)
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
