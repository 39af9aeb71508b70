//! ReAct over native function calling: tools sent as `tools=`, every call of a reply run
//! concurrently, results returned as `tool` messages with their ids, a text answer ends the loop.

use std::sync::Arc;

use futures::{StreamExt, stream};
use serde_json::{Map, Value, json};

use super::answer_stream::AnswerStream;
use super::events::{FINISH_UNSEEN_RESULTS, answers_before_results, stop_early};
use super::suspend::Start;
use super::{
    CallMode, Emitter, FINISH, FINISH_OBSERVATION, FINISH_POSTPONED, Interrupts, Observation,
    PendingCall, ReActCore, ReActError, ReActEvent, ReActRun, RunOutcome, Step, StopReason,
    SuspendedRun, Trajectory, Waiting,
};

/// The key of a native demo's tool turns: a list of turns, each a list of calls
/// `{"name", "args", "observation"}` (the final `finish` is implied by the demo's outputs).
pub const TOOL_TURNS: &str = "tool_turns";
use crate::adapter::{Adapter, Fields, templates};
use crate::lm::{Lm, LmError, LmRequest, Message, ToolCall, ToolChoice, Usage};
use crate::module::{CallConfig, Error, Resolved};

impl ReActCore {
    /// The native-function-calling loop (see the [module docs](self)).
    pub(super) async fn forward_native(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        resolved: Resolved,
        events: &Emitter,
        interrupts: &mut Interrupts,
        start: Start,
    ) -> Result<RunOutcome<ReActRun>, ReActError> {
        let Resolved { lm, adapter } = resolved;
        // A streamed run shows a text answer as it is written. Only with the Chat adapter's field
        // markers: text before them (what a model may write beside its tool calls) is not shown,
        // so a step that calls tools streams nothing. Other adapters' answers arrive whole.
        let step_lm: Arc<dyn Lm> = if events.listening() && adapter.marks_fields() {
            Arc::new(AnswerStream::new(lm.clone(), events.clone(), true))
        } else {
            lm.clone()
        };
        let base = self.base_messages(adapter.as_ref(), inputs);
        let mut tools: Vec<Value> = self.tools.iter().map(|t| t.to_openai_function()).collect();
        tools.push(self.finish_descriptor());
        let resumable = start.resumable();
        let max_iters = self.max_iters(call);
        let mut trajectory = Trajectory::default();
        let mut usage = Usage::default();
        let mut truncations = 0;
        let mut turn = 0;
        let mut done = false;
        if let Start::Resume { state, decided } = start {
            let resumed = match self.carry_out(state, decided, events).await {
                Ok(resumed) => resumed,
                Err(state) => return Ok(RunOutcome::Suspended(state)),
            };
            (trajectory, usage, turn) = (resumed.trajectory, resumed.usage, resumed.turn);
            trajectory.steps.extend(resumed.steps);
            match self.end_of_turn(&mut trajectory, turn, interrupts) {
                TurnEnd::Answer(outputs) => {
                    return Ok(self.native_answer(inputs, trajectory, outputs, None, usage));
                }
                TurnEnd::Extract => done = true,
                TurnEnd::Next => turn = turn.saturating_add(1),
            }
        }
        let measure = |trajectory: &Trajectory| {
            crate::lm::count_prompt_tokens(lm.model(), &conversation(&base, trajectory), &tools)
                .tokens
        };
        let budget = self.prompt_budget(lm.as_ref(), self.step.options());
        while !done && turn < max_iters {
            events.emit(ReActEvent::StepStarted { turn });
            interrupts.inject(&mut trajectory, events);
            if let Err(message) = self
                .fit_budget(budget, &mut trajectory, events, &measure)
                .await
            {
                stop_early(
                    &mut trajectory,
                    events,
                    StopReason::ContextWindow { message },
                );
                break;
            }
            let mut request = LmRequest::new(conversation(&base, &trajectory));
            request.options = self.step.options().clone();
            request.tools = tools.clone();
            request.tool_choice = Some(
                if self.finish_on_last_turn && turn.saturating_add(1) == max_iters {
                    ToolChoice::Function(FINISH.to_owned())
                } else if self.require_tool_calls {
                    ToolChoice::Required
                } else {
                    ToolChoice::Auto
                },
            );
            // The adapter's setting (DSPy's `parallel_tool_calls`), concurrent calls by default.
            request.parallel_tool_calls = Some(adapter.parallel_tool_calls().unwrap_or(true));
            self.limits
                .check_lm_calls(&usage)
                .map_err(|failure| ReActError::new(failure, &trajectory, usage))?;
            let completion = match step_lm.complete(&request).await {
                Ok(completion) => completion,
                Err(LmError::ContextWindowExceeded { message }) => {
                    let refused = Usage {
                        lm_calls: 1,
                        ..Usage::default()
                    };
                    usage += refused;
                    crate::trace::record_usage(refused);
                    truncations += 1;
                    let truncated = self.compact(&mut trajectory, events, &measure).await;
                    if truncations > 3 || truncated.is_err() {
                        stop_early(
                            &mut trajectory,
                            events,
                            StopReason::ContextWindow { message },
                        );
                        break;
                    }
                    continue;
                }
                Err(error) => return Err(ReActError::new(Error::Lm(error), &trajectory, usage)),
            };
            usage += completion.usage;
            crate::trace::record_usage(completion.usage);
            if completion.tool_calls.is_empty() {
                // A text answer is the final answer.
                let text = completion.text.clone().unwrap_or_default();
                match adapter.parse(&self.signature, &text) {
                    Ok(outputs) => {
                        let reasoning = completion.reasoning;
                        return Ok(
                            self.native_answer(inputs, trajectory, outputs, reasoning, usage)
                        );
                    }
                    Err(error) => {
                        stop_early(
                            &mut trajectory,
                            events,
                            StopReason::UnreadableAnswer {
                                error: error.to_string(),
                            },
                        );
                        break;
                    }
                }
            }
            let thought = completion
                .text
                .clone()
                .filter(|t| !t.trim().is_empty())
                .or(completion.reasoning.clone());
            if let Some(text) = &thought {
                events.emit(ReActEvent::Thought {
                    turn,
                    text: text.clone(),
                });
            }
            let first_index = trajectory
                .steps
                .last()
                .map_or(0, |s| s.index.saturating_add(1));
            // Concurrently, at most `max_concurrent_tools` at a time; results in call order.
            let thought_text = thought.as_deref().unwrap_or("");
            // A `finish` beside other calls was written before their results: it does not run.
            let early_finish = answers_before_results(
                completion.tool_calls.iter().map(|c| c.name.as_str()),
                FINISH,
            );
            let refusal = self.limits.refused_call(completion.tool_calls.len());
            let mut calls = Vec::with_capacity(completion.tool_calls.len());
            for (offset, call) in completion.tool_calls.iter().enumerate() {
                let how = if offset >= self.limits.max_tool_calls_per_turn {
                    CallMode::Refused(&refusal)
                } else if early_finish && call.name == FINISH {
                    CallMode::Postponed(FINISH_UNSEEN_RESULTS)
                } else {
                    CallMode::Attempt { resumable }
                };
                calls.push(self.observe_call(
                    first_index.saturating_add(offset),
                    call,
                    thought_text,
                    events,
                    how,
                ));
            }
            let observed: Vec<_> = stream::iter(calls)
                .buffered(events.tool_concurrency(self.limits.max_concurrent_tools))
                .collect()
                .await;
            let mut steps = Vec::with_capacity(observed.len());
            let mut pending = Vec::new();
            for (offset, (tool_call, (args, observed))) in
                completion.tool_calls.iter().zip(observed).enumerate()
            {
                let index = first_index.saturating_add(offset);
                let thought = thought.clone().unwrap_or_default();
                match observed {
                    Ok((observation, elapsed)) => steps.push(Step {
                        index,
                        thought,
                        tool_name: tool_call.name.clone(),
                        tool_args: args,
                        observation,
                        call_id: Some(tool_call.id.clone()),
                        turn,
                        elapsed,
                    }),
                    Err(waiting_for) => pending.push(PendingCall {
                        id: tool_call.id.clone(),
                        index,
                        tool: tool_call.name.clone(),
                        args,
                        thought,
                        waiting_for,
                    }),
                }
            }
            if !pending.is_empty() {
                return Ok(RunOutcome::Suspended(SuspendedRun::new(
                    true, inputs, trajectory, usage, turn, steps, pending,
                )));
            }
            trajectory.steps.extend(steps);
            match self.end_of_turn(&mut trajectory, turn, interrupts) {
                TurnEnd::Answer(outputs) => {
                    return Ok(self.native_answer(inputs, trajectory, outputs, None, usage));
                }
                TurnEnd::Extract => {
                    done = true;
                    break;
                }
                TurnEnd::Next => {}
            }
            turn += 1;
        }
        if !done && trajectory.stopped_early.is_none() {
            stop_early(&mut trajectory, events, StopReason::MaxIters { max_iters });
        }
        let run = self
            .extract(inputs, trajectory, adapter.as_ref(), call, usage, events)
            .await?;
        self.record_native_run(inputs, &run.trajectory, &run.outputs);
        Ok(RunOutcome::Finished(run))
    }

    /// After a turn's calls are in the trajectory: a `finish` among them ends the run (with its
    /// outputs when they are valid, through the extractor otherwise) unless it shares the turn
    /// with other calls (the model has not seen their results yet) or the caller's messages wait;
    /// either postpones it.
    fn end_of_turn(
        &self,
        trajectory: &mut Trajectory,
        turn: usize,
        interrupts: &mut Interrupts,
    ) -> TurnEnd {
        let this_turn = |s: &&mut Step| s.turn == turn;
        let mut steps: Vec<&mut Step> = trajectory
            .steps
            .iter_mut()
            .rev()
            .take_while(this_turn)
            .collect();
        let early = answers_before_results(steps.iter().map(|s| s.tool_name.as_str()), FINISH);
        let Some(finish) = steps.iter_mut().find(|s| s.tool_name == FINISH) else {
            return TurnEnd::Next;
        };
        if early {
            finish.observation = early_finish();
            return TurnEnd::Next;
        }
        if interrupts.pending() {
            // The caller wrote while the model was finishing: let it address the messages.
            finish.observation = Observation::Output(json!(FINISH_POSTPONED));
            return TurnEnd::Next;
        }
        match self.outputs_from_finish(&finish.tool_args) {
            Some(outputs) => TurnEnd::Answer(outputs),
            None => TurnEnd::Extract,
        }
    }

    /// The run's result when the model answered (in text, or with `finish`'s outputs).
    fn native_answer(
        &self,
        inputs: &Fields,
        trajectory: Trajectory,
        outputs: Fields,
        reasoning: Option<String>,
        usage: Usage,
    ) -> RunOutcome<ReActRun> {
        self.record_native_run(inputs, &trajectory, &outputs);
        RunOutcome::Finished(ReActRun {
            outputs,
            reasoning,
            trajectory,
            usage,
        })
    }

    /// The system message of the user's signature with a note on using the tools, the native
    /// demos as earlier conversations, then the user message.
    fn base_messages(&self, adapter: &dyn Adapter, inputs: &Fields) -> Vec<Message> {
        let mut messages = adapter.format(&self.signature, &[], inputs);
        if let Some(system) = messages.first_mut() {
            system.content.push_str(&templates::native_tools_note());
        }
        let demos = self.native_demo_messages(adapter, inputs);
        let at = 1.min(messages.len());
        messages.splice(at..at, demos);
        messages
    }

    /// The step predictor's native demos (those with [`TOOL_TURNS`]) as conversations: the
    /// demo's inputs as a user message, each turn's calls and results, then `finish` with the
    /// demo's outputs. Text-mode demos are not shown in native mode.
    fn native_demo_messages(&self, adapter: &dyn Adapter, inputs: &Fields) -> Vec<Message> {
        let mut messages = Vec::new();
        for (d, demo) in self.step.demos_for(inputs).iter().enumerate() {
            let Some(Value::Array(turns)) = demo.get(TOOL_TURNS) else {
                continue;
            };
            let inputs: Fields = self
                .signature
                .inputs()
                .iter()
                .filter_map(|f| demo.get(f.name()).map(|v| (f.name().to_owned(), v.clone())))
                .collect();
            if let Some(user) = adapter.format(&self.signature, &[], &inputs).pop() {
                messages.push(user);
            }
            let mut n = 0;
            let mut id = || {
                n += 1;
                format!("demo{d}_call_{n}")
            };
            for turn in turns {
                let calls: Vec<(String, &Value)> = turn
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|call| (id(), call))
                    .collect();
                messages.push(Message::assistant_tool_calls(
                    calls
                        .iter()
                        .map(|(id, call)| {
                            ToolCall::new(
                                id,
                                call["name"].as_str().unwrap_or_default(),
                                call["args"].to_string(),
                            )
                        })
                        .collect(),
                ));
                for (id, call) in &calls {
                    let observation = match &call["observation"] {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    messages.push(Message::tool_result(id, observation));
                }
            }
            let outputs: Map<String, Value> = self
                .signature
                .outputs()
                .iter()
                .filter_map(|f| demo.get(f.name()).map(|v| (f.name().to_owned(), v.clone())))
                .collect();
            let finish = id();
            messages.push(Message::assistant_tool_calls(vec![ToolCall::new(
                &finish,
                FINISH,
                Value::Object(outputs).to_string(),
            )]));
            messages.push(Message::tool_result(finish, FINISH_OBSERVATION));
        }
        messages
    }

    /// A native demo's [`TOOL_TURNS`] value for calls you write yourself: each turn's calls run
    /// through the agent's tools (argument checks and errors as in a run), their results recorded.
    /// Put it on a training example with its outputs (`with_label(TOOL_TURNS, ..)`): labeled demos
    /// that show a teacher how the tools are used, for a model too small to find out alone.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::module::ReActCore;
    /// use signet::tool::FnTool;
    ///
    /// let add = FnTool::builder("add")
    ///     .description("Add two integers.")
    ///     .schema(json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}))
    ///     .sync_fn(|args| Ok::<_, String>(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0))));
    /// let agent = ReActCore::new("question -> answer".parse().unwrap()).tool(add);
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let turns = agent.demo_turns([vec![("add", json!({"a": 2, "b": 3}))]]).await;
    /// assert_eq!(turns, json!([[{"name": "add", "args": {"a": 2, "b": 3}, "observation": 5}]]));
    /// # });
    /// ```
    pub async fn demo_turns<'n>(
        &self,
        turns: impl IntoIterator<Item = Vec<(&'n str, Value)>>,
    ) -> Value {
        let mut recorded = Vec::new();
        for turn in turns {
            let mut calls = Vec::new();
            for (name, args) in turn {
                let observation = self.observe(name, &args, "").await;
                calls.push(
                    json!({"name": name, "args": args, "observation": observation.as_value()}),
                );
            }
            recorded.push(Value::Array(calls));
        }
        Value::Array(recorded)
    }

    /// Records a native run for optimizers: one call of the step predictor whose inputs are the
    /// run's and whose outputs are its tool turns and final outputs (a native demo).
    fn record_native_run(&self, inputs: &Fields, trajectory: &Trajectory, outputs: &Fields) {
        if !crate::trace::recording_calls() {
            return;
        }
        let mut turns: Vec<Vec<Value>> = Vec::new();
        let mut last_turn = None;
        for step in trajectory.steps.iter().filter(|s| s.tool_name != FINISH) {
            let call = json!({
                "name": step.tool_name,
                "args": step.tool_args,
                "observation": step.observation.as_value(),
            });
            match turns.last_mut() {
                Some(turn) if last_turn == Some(step.turn) => turn.push(call),
                _ => turns.push(vec![call]),
            }
            last_turn = Some(step.turn);
        }
        let own_inputs: Fields = self.own_inputs(inputs);
        let mut recorded = Fields::new();
        recorded.insert(TOOL_TURNS.to_owned(), json!(turns));
        recorded.extend(outputs.clone());
        crate::trace::record_call(self.step.id(), &own_inputs, &recorded);
    }

    /// `finish`, whose optional arguments are the outputs.
    fn finish_descriptor(&self) -> Value {
        let mut properties = Map::new();
        for field in self.signature.outputs() {
            let mut schema = crate::schema::inline_refs(field.schema());
            if let (Value::Object(map), Some(desc)) = (&mut schema, field.desc()) {
                map.insert("description".to_owned(), json!(desc));
            }
            // The field's bounds, so a decoding constraint keeps the answer within them.
            for constraint in field.constraints() {
                constraint.apply_to(&mut schema);
            }
            properties.insert(field.name().to_owned(), schema);
        }
        json!({
            "type": "function",
            "function": {
                "name": FINISH,
                "description": templates::native_finish_description(&self.output_names()),
                "parameters": {"type": "object", "properties": properties, "required": []}
            }
        })
    }

    fn output_names(&self) -> String {
        self.signature
            .outputs()
            .iter()
            .map(|f| format!("`{}`", f.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// One tool call: its arguments (parsed, or the raw text) and what came back — or, in a
    /// resumable run, the person it waits for.
    async fn observe_call(
        &self,
        index: usize,
        call: &ToolCall,
        thought: &str,
        events: &Emitter,
        how: CallMode<'_>,
    ) -> (Value, Result<(Observation, std::time::Duration), Waiting>) {
        let args = match crate::module::tool_runner::arguments(call) {
            Ok(args) => args,
            Err(observation) => {
                let raw = Value::String(call.arguments.clone());
                return (raw, Ok((observation, std::time::Duration::ZERO)));
            }
        };
        let observed = self
            .observe_with_events(index, &call.name, &args, thought, events, how)
            .await;
        (args, observed)
    }
}

/// How a native turn ended.
enum TurnEnd {
    /// The model goes on.
    Next,
    /// `finish` carried valid outputs.
    Answer(Fields),
    /// `finish` without valid outputs: the extractor produces them.
    Extract,
}

/// The messages for the next turn: the base messages, then each turn's tool calls (one assistant
/// message) followed by their results (`tool` messages, in call order).
fn conversation(base: &[Message], trajectory: &Trajectory) -> Vec<Message> {
    let mut messages = base.to_vec();
    let present =
        |after: Option<usize>| after.is_some_and(|i| trajectory.steps.iter().any(|s| s.index == i));
    // The caller's messages go after the tool results of the step they followed (or first, when
    // that step is gone), never between a tool call and its result.
    for message in trajectory
        .user_messages
        .iter()
        .filter(|m| !present(m.after))
    {
        messages.push(Message::user(message.text.clone()));
    }
    let mut steps = trajectory.steps.iter().peekable();
    while let Some(first) = steps.next() {
        let mut group = vec![first];
        while let Some(next) = steps.next_if(|s| s.turn == first.turn) {
            group.push(next);
        }
        // A `finish` written beside other calls was not taken: the model is shown its turn as
        // if it had made only the other calls, so it reads their results and answers again (a
        // small model would copy a "postponed" note into its answer).
        let shown: Vec<&Step> = group
            .iter()
            .copied()
            .filter(|s| !is_early_finish(s))
            .collect();
        let calls = shown
            .iter()
            .map(|s| ToolCall::new(call_id(s), &s.tool_name, s.tool_args.to_string()))
            .collect();
        let mut assistant = Message::assistant_tool_calls(calls);
        assistant.content = first.thought.clone();
        messages.push(assistant);
        for step in &shown {
            messages.push(Message::tool_result(
                call_id(step),
                step.observation.as_text(),
            ));
        }
        for step in &group {
            for message in trajectory
                .user_messages
                .iter()
                .filter(|m| m.after == Some(step.index))
            {
                messages.push(Message::user(message.text.clone()));
            }
        }
    }
    messages
}

/// The observation a `finish` written beside other calls is recorded with.
fn early_finish() -> Observation {
    Observation::Output(json!(FINISH_UNSEEN_RESULTS))
}

/// Whether `step` is a `finish` that was not taken because it shared its reply with other calls.
fn is_early_finish(step: &Step) -> bool {
    step.tool_name == FINISH
        && matches!(&step.observation, Observation::Output(Value::String(text)) if text == FINISH_UNSEEN_RESULTS)
}

fn call_id(step: &Step) -> String {
    step.call_id
        .clone()
        .unwrap_or_else(|| format!("call_{}", step.index))
}
