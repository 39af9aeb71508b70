//! ReAct over native function calling: tools sent as `tools=`, every call of a reply run
//! concurrently, results returned as `tool` messages with their ids, a text answer ends the loop.

use super::context_window::WindowRetries;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::answer_stream::answer_lm;
use super::budget::ContextBudget;
use super::driver::{Ask, Driver, RunState, TurnCall};
use super::events::{Emitter, FINISH_UNSEEN_RESULTS};
use super::{
    DynReAct, FINISH, FINISH_OBSERVATION, Limits, Observation, ProviderTurn, ReActError, Step,
    StopReason, Trajectory,
};
use crate::adapter::{Adapter, AdapterName, Fields, ParseError, templates};
use crate::lm::{
    Completion, Content, Lm, LmError, LmOptions, LmRequest, Message, ToolCall, ToolChoice,
    ToolDefinition, Usage,
};
use crate::media::ContentPart;
use crate::module::{Error, Resolved};
use crate::signature::{DynSignature, quoted_names};

/// The key of a native demo's tool turns: a list of turns, each a list of calls
/// `{"name", "args", "observation"}` (the final `finish` is implied by the demo's outputs).
pub const TOOL_TURNS: &str = "tool_turns";

/// A native-function-calling conversation: the messages before the first turn, the tools, and
/// how a reply is read. ReAct's native mode and `Predict` with tools ask the model through it.
pub(crate) struct NativeChat {
    /// The LM asked; in a streamed run, one that shows a text answer as it is written.
    pub(crate) lm: Arc<dyn Lm>,
    pub(crate) adapter: Arc<dyn Adapter>,
    /// The messages before the first turn.
    pub(crate) base: Vec<Message>,
    /// The tools as sent.
    pub(crate) tools: Vec<ToolDefinition>,
}

/// A native reply, read.
pub(crate) enum NativeReply {
    /// Tools to call, with the text the model wrote beside them (or its reasoning).
    Calls {
        thought: Option<String>,
        calls: Vec<TurnCall>,
        /// What the provider asked to get back with these calls.
        state: Option<ProviderTurn>,
    },
    /// The answer, in the format of `adapter` (the chat's, or its fallback).
    Answer {
        outputs: Fields,
        completion: Completion,
        adapter: AdapterName,
    },
    /// A text reply that neither format could read.
    Unreadable(ParseError),
}

impl NativeChat {
    /// The request for the next turn: the conversation so far, the tools, `tool_choice`, and the
    /// adapter's `parallel_tool_calls` (DSPy's setting; concurrent calls by default).
    pub(crate) fn request(
        &self,
        trajectory: &Trajectory,
        options: &LmOptions,
        tool_choice: Option<ToolChoice>,
    ) -> LmRequest {
        let mut request = LmRequest::new(conversation(&self.base, trajectory));
        request.options = options.clone();
        if !self.tools.is_empty() {
            request.tools = self.tools.clone();
            request.tool_choice = tool_choice;
            request.parallel_tool_calls = Some(self.adapter.parallel_tool_calls().unwrap_or(true));
        }
        request
    }

    /// Sends `request` and reads the reply: its tool calls, or the answer of `signature` in the
    /// adapter's format. An answer the adapter cannot read is asked for once more in its
    /// [fallback](Adapter::fallback)'s format (DSPy's Chat to JSON), the conversation's base
    /// messages formatted by `rebase`, as every adapted call is; the retry is counted in
    /// [`Usage::adapter_fallbacks`]. Every call's usage is added to `usage`.
    pub(crate) async fn reply(
        &self,
        mut request: LmRequest,
        signature: &DynSignature,
        inputs: &Fields,
        rebase: impl FnOnce(&dyn Adapter) -> Vec<Message>,
        usage: &mut Usage,
    ) -> Result<NativeReply, LmError> {
        let completion = self.lm.complete(&request).await?;
        *usage += completion.usage;
        let error = match read(self.adapter.as_ref(), signature, completion, usage).await? {
            Err(error) => error,
            Ok(reply) => return Ok(reply),
        };
        let Some(fallback) = self.adapter.fallback(signature, inputs) else {
            return Ok(NativeReply::Unreadable(error));
        };
        crate::adapted::note_fallback(self.adapter.as_ref(), fallback.as_ref(), &error, usage);
        let tail = request
            .messages
            .split_off(self.base.len().min(request.messages.len()));
        request.messages = rebase(fallback.as_ref());
        request.messages.extend(tail);
        let completion = self.lm.complete(&request).await?;
        *usage += completion.usage;
        Ok(read(fallback.as_ref(), signature, completion, usage)
            .await?
            .unwrap_or_else(NativeReply::Unreadable))
    }
}

/// What one native turn is asked with.
pub(crate) struct NativeTurn<'a> {
    pub(crate) signature: &'a DynSignature,
    pub(crate) options: &'a LmOptions,
    pub(crate) tool_choice: ToolChoice,
    /// Where the prompt must fit.
    pub(crate) budget: ContextBudget<'a>,
    /// The run's limits (its LM-call budget is checked before each call).
    pub(crate) limits: &'a Limits,
    /// Whether each call's usage is recorded in the trace here (ReAct's steps), or with the
    /// whole call by its caller (`Predict` with tools).
    pub(crate) trace_usage: bool,
    /// The turn's number: the provider's state of its calls is kept under it.
    pub(crate) index: usize,
}

impl NativeChat {
    /// Asks for the next turn, keeping the conversation within the budget and truncating it while
    /// the provider reports the context window exceeded (three calls in all, [`WindowRetries`]); `Ok(Err(message))`
    /// when it cannot be made to fit. `rebase` formats the base messages for the adapter's
    /// fallback.
    pub(crate) async fn ask(
        &self,
        turn: NativeTurn<'_>,
        driver: &Driver<'_>,
        run: &mut RunState,
        rebase: impl Fn(&dyn Adapter) -> Vec<Message>,
    ) -> Result<Result<NativeReply, String>, ReActError> {
        let model = self.lm.model();
        let measure = |trajectory: &Trajectory| {
            let messages = conversation(&self.base, trajectory);
            crate::lm::count_prompt_tokens(model, &messages, &self.tools).tokens
        };
        let mut retries = WindowRetries::new("Trajectory");
        while retries.another_call() {
            if let Err(message) = turn
                .budget
                .fit(&mut run.trajectory, driver.events, &measure)
                .await
            {
                return Ok(Err(message));
            }
            let request = self.request(
                &run.trajectory,
                turn.options,
                Some(turn.tool_choice.clone()),
            );
            turn.limits
                .check_lm_calls(&run.usage)
                .map_err(|failure| run.fail(failure))?;
            let mut own = Usage::default();
            let reply = self
                .reply(request, turn.signature, driver.inputs, &rebase, &mut own)
                .await;
            run.usage += own;
            if turn.trace_usage {
                crate::trace::record_usage(own);
            }
            match reply {
                Ok(mut reply) => {
                    if let NativeReply::Calls { state, .. } = &mut reply {
                        run.trajectory.keep_provider_state(turn.index, state.take());
                    }
                    return Ok(Ok(reply));
                }
                Err(LmError::ContextWindowExceeded { message }) => {
                    let refused = Usage {
                        lm_calls: 1,
                        ..Usage::default()
                    };
                    run.usage += refused;
                    if turn.trace_usage {
                        crate::trace::record_usage(refused);
                    }
                    retries.refused(message);
                    let truncated = turn
                        .budget
                        .compact(&mut run.trajectory, driver.events, &measure)
                        .await;
                    if let Err(reason) = truncated {
                        return Ok(Err(retries.cannot_truncate(reason)));
                    }
                }
                Err(error) => return Err(run.fail(Error::Lm(error))),
            }
        }
        Ok(Err(retries.exhausted()))
    }
}

/// A reply's tool calls, or its text read by `adapter` as the outputs of `signature` (by its
/// extraction model for a [`TwoStepAdapter`](crate::adapter::TwoStepAdapter), whose usage is added
/// to `usage`).
async fn read(
    adapter: &dyn Adapter,
    signature: &DynSignature,
    completion: Completion,
    usage: &mut Usage,
) -> Result<Result<NativeReply, ParseError>, LmError> {
    if !completion.tool_calls.is_empty() {
        let calls = completion.tool_calls.iter().map(TurnCall::sent).collect();
        let said = completion.text.filter(|t| !t.trim().is_empty());
        let state = completion.provider_state.map(|state| ProviderTurn {
            state,
            spoken: said.is_some(),
        });
        return Ok(Ok(NativeReply::Calls {
            thought: said.or(completion.reasoning),
            calls,
            state,
        }));
    }
    let text = completion.text.as_deref().unwrap_or_default();
    let outputs =
        match crate::adapted::read_outputs(adapter, signature, signature, text, usage).await? {
            Ok(outputs) => outputs,
            Err(error) => return Ok(Err(error)),
        };
    Ok(Ok(NativeReply::Answer {
        outputs,
        completion,
        adapter: adapter.name(),
    }))
}

/// ReAct's native turns: the signature's system message with a note on the tools, the native
/// demos, the user message, then each turn's tool calls and their results as messages.
pub(super) struct NativeSteps {
    chat: NativeChat,
    /// The LM whose context window the prompt must fit.
    measured: Arc<dyn Lm>,
}

impl NativeSteps {
    pub(super) fn new(
        agent: &DynReAct,
        inputs: &Fields,
        resolved: Resolved,
        events: &Emitter,
    ) -> NativeSteps {
        let Resolved { lm, adapter } = resolved;
        // A streamed run shows a text answer as it is written (with the Chat adapter's markers;
        // a step that calls tools streams nothing).
        let asked = answer_lm(lm.clone(), adapter.as_ref(), events, false);
        let mut tools: Vec<ToolDefinition> = agent.tools.iter().map(|t| t.definition()).collect();
        tools.push(agent.finish_descriptor());
        NativeSteps {
            chat: NativeChat {
                base: agent.base_messages(adapter.as_ref(), inputs),
                lm: asked,
                adapter,
                tools,
            },
            measured: lm,
        }
    }

    /// Asks the model for turn `turn` (see [`NativeChat::ask`]); `finish` is forced on the last
    /// turn when the agent says so.
    pub(super) async fn ask(
        &self,
        agent: &DynReAct,
        driver: &Driver<'_>,
        run: &mut RunState,
        turn: usize,
    ) -> Result<Ask, ReActError> {
        // After a refused answer whose checks offered tools: a turn that calls one of those
        // (the next turn answers).
        let only = run.offer.take();
        let tool_choice = if agent.finish_on_last_turn && turn.saturating_add(1) >= run.limit {
            ToolChoice::Function(FINISH.to_owned())
        } else if let Some(only) = only {
            ToolChoice::OneOf(only)
        } else if agent.require_tool_calls {
            ToolChoice::Required
        } else {
            ToolChoice::Auto
        };
        let options = agent.step.options();
        let asked = NativeTurn {
            signature: &agent.signature,
            options,
            tool_choice,
            budget: agent.budget(self.measured.as_ref(), options),
            limits: &agent.limits,
            trace_usage: true,
            index: turn,
        };
        let rebase = |adapter: &dyn Adapter| agent.base_messages(adapter, driver.inputs);
        Ok(match self.chat.ask(asked, driver, run, rebase).await? {
            Err(message) => Ask::Stop(StopReason::ContextWindow { message }),
            Ok(NativeReply::Calls { thought, calls, .. }) => Ask::Calls { thought, calls },
            // A text answer is the final answer.
            Ok(NativeReply::Answer {
                outputs,
                completion,
                ..
            }) => Ask::Answer {
                outputs,
                reasoning: completion.reasoning,
            },
            Ok(NativeReply::Unreadable(error)) => Ask::Stop(StopReason::UnreadableAnswer {
                error: error.to_string(),
            }),
        })
    }
}

impl DynReAct {
    /// The system message of the user's signature with a note on using the tools, the native
    /// demos as earlier conversations, then the user message.
    pub(super) fn base_messages(&self, adapter: &dyn Adapter, inputs: &Fields) -> Vec<Message> {
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
    /// use signet::module::DynReAct;
    /// use signet::tool::FnTool;
    ///
    /// let add = FnTool::builder("add")
    ///     .description("Add two integers.")
    ///     .schema(json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}))
    ///     .sync_fn(|args| Ok::<_, String>(json!(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0))));
    /// let agent = DynReAct::new("question -> answer".parse().unwrap()).tool(add);
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
    pub(super) fn record_native_run(
        &self,
        inputs: &Fields,
        trajectory: &Trajectory,
        outputs: &Fields,
    ) {
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
    fn finish_descriptor(&self) -> ToolDefinition {
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
        ToolDefinition::new(
            FINISH,
            templates::native_finish_description(&quoted_names(self.signature.outputs())),
            json!({"type": "object", "properties": properties, "required": []}),
        )
    }
}

/// The messages for the next turn: the base messages, then each turn's tool calls (one assistant
/// message) followed by their results (`tool` messages, in call order).
pub(crate) fn conversation(base: &[Message], trajectory: &Trajectory) -> Vec<Message> {
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
        let kept = trajectory.provider_turns.get(&first.turn);
        // A thought that is the model's reasoning goes back inside the provider's state, not
        // again as the turn's text.
        if kept.is_none_or(|kept| kept.spoken) {
            assistant.content = first.thought.clone().into();
        }
        assistant.provider_state = kept.map(|kept| kept.state.clone());
        messages.push(assistant);
        let mut media = Vec::new();
        for step in &shown {
            messages.push(Message::tool_result(
                call_id(step),
                tool_result_text(step, &mut media),
            ));
        }
        if !media.is_empty() {
            // A `tool` message holds text only: what the tools returned follows as the user's.
            messages.push(Message::user(Content::from_parts(media)));
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

/// A step's observation as its `tool` message says it: each image or audio the tool returned
/// as `[image]` / `[audio]`, kept in `media` (introduced by the call's id) for a user message of
/// its own.
fn tool_result_text(step: &Step, media: &mut Vec<ContentPart>) -> String {
    let Observation::Output(value) = &step.observation else {
        return step.observation.as_text();
    };
    let mut parts = Vec::new();
    let Some(shown) = crate::media::replace_tool_media(value, &mut |part| {
        let text = crate::media::placeholder(&part);
        parts.push(part);
        Value::String(text.to_owned())
    }) else {
        return step.observation.as_text();
    };
    media.push(ContentPart::Text(format!(
        "What `{}` returned ({}):",
        step.tool_name,
        call_id(step)
    )));
    media.extend(parts);
    Observation::Output(shown).as_text()
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
