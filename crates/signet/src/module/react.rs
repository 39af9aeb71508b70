//! ReAct: the typed tool loop (DSPy's `dspy.ReAct`).
//!
//! Each step asks the model for `next_thought`, `next_tool_name` (one of the tools or `finish`) and
//! `next_tool_args`; the tool runs and its result — or its error, in words the model can act on — is
//! appended to the trajectory as the observation. After `finish` (or `max_iters` steps) an extractor
//! (ChainOfThought over the inputs and the trajectory) produces the outputs, unless `finish` already
//! carried valid outputs.

mod native;
mod truncation;

pub use truncation::{DropOldest, KeepFirst, SlidingWindow, Summarize, TruncationPolicy};

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{CallConfig, Error, Predictor, with_reasoning};
use crate::adapter::{Adapter, Example};
use crate::lm::{Lm, LmError, Usage};
use crate::schema::python_repr;
use crate::signature::{DynSignature, Field, Signature};
use crate::tool::{Tool, ToolError};

/// The name of the tool that ends the loop.
pub const FINISH: &str = "finish";

/// One step of the loop: what the model thought and called, and what came back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The step's number (kept when older steps are truncated away, as DSPy does).
    pub index: usize,
    /// The model's reasoning before the call.
    pub thought: String,
    /// The tool it chose.
    pub tool_name: String,
    /// The arguments it gave.
    pub tool_args: Value,
    /// What came back.
    pub observation: Observation,
    /// The provider's id for the call (native function calling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The model turn the call belongs to (several calls share a turn in native mode).
    #[serde(default)]
    pub turn: usize,
    /// How long the tool took.
    #[serde(with = "duration_ms")]
    pub elapsed: Duration,
}

/// A tool's result, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Observation {
    /// The tool's output.
    Output(Value),
    /// The call failed; the text is what the model reads.
    Error(String),
}

impl Observation {
    /// The value shown to the model.
    pub fn as_value(&self) -> Value {
        match self {
            Observation::Output(value) => value.clone(),
            Observation::Error(text) => Value::String(text.clone()),
        }
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis().try_into().unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

/// The steps so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// The steps, oldest first.
    pub steps: Vec<Step>,
    /// Messages the caller sent while the run was in progress ([`ReActCore::stream_with_interrupts`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_messages: Vec<UserMessage>,
}

/// A message the caller sent during a run, and where it falls in the trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserMessage {
    /// The index of the last step before it (`None`: before the first step).
    pub after: Option<usize>,
    /// What the caller said (several messages sent together are joined by blank lines).
    pub text: String,
}

impl Trajectory {
    /// The trajectory as DSPy keeps it: `thought_i`, `tool_name_i`, `tool_args_i`, `observation_i`.
    pub fn to_example(&self) -> Example {
        let mut out = Map::new();
        let present =
            |after: Option<usize>| after.is_some_and(|i| self.steps.iter().any(|s| s.index == i));
        let insert_where = |out: &mut Example, keep: &dyn Fn(&UserMessage) -> bool| {
            for (n, message) in self
                .user_messages
                .iter()
                .enumerate()
                .filter(|(_, m)| keep(m))
            {
                out.insert(
                    format!("user_message_{n}"),
                    Value::String(message.text.clone()),
                );
            }
        };
        // Messages before the first step, or after steps that were truncated away, come first.
        insert_where(&mut out, &|m| !present(m.after));
        for step in &self.steps {
            let i = step.index;
            out.insert(format!("thought_{i}"), Value::String(step.thought.clone()));
            out.insert(
                format!("tool_name_{i}"),
                Value::String(step.tool_name.clone()),
            );
            out.insert(format!("tool_args_{i}"), step.tool_args.clone());
            out.insert(format!("observation_{i}"), step.observation.as_value());
            insert_where(&mut out, &|m| m.after == Some(i));
        }
        out
    }

    /// Renders the trajectory as the adapter renders input fields (an empty string when empty).
    fn render(&self, adapter: &dyn Adapter) -> String {
        let values = self.to_example();
        let mut signature = DynSignature::new("Trajectory");
        for key in values.keys() {
            signature = signature.with_input(Field::str(key));
        }
        adapter.render_fields(&signature.with_output(Field::str("x")), &values)
    }
}

/// The typed result of a ReAct run.
#[derive(Debug, Clone, PartialEq)]
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

/// What happens during a run, in order, for UIs and logs ([`ReActCore::stream`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReActEvent {
    /// A model turn begins.
    StepStarted {
        /// The turn's number.
        turn: usize,
    },
    /// The model's reasoning for this turn.
    Thought {
        /// The turn's number.
        turn: usize,
        /// What it wrote.
        text: String,
    },
    /// A tool call begins.
    ToolCallStarted {
        /// The step's index in the trajectory.
        index: usize,
        /// The tool.
        name: String,
        /// The arguments.
        args: Value,
    },
    /// A tool call ended.
    ToolCallFinished {
        /// The step's index in the trajectory.
        index: usize,
        /// The tool.
        name: String,
        /// What came back (or the error, as the model will read it).
        observation: Observation,
        /// How long it took, in milliseconds.
        elapsed_ms: u64,
    },
    /// A first call picked these tools from a large catalogue; the run offers only them.
    ToolsSelected {
        /// The tools kept.
        names: Vec<String>,
    },
    /// The caller's follow-up messages were added to the conversation.
    UserMessage {
        /// The messages, joined by blank lines.
        text: String,
    },
    /// The extractor runs (the loop ended without outputs from `finish` or a final answer).
    Extracting,
    /// The run finished.
    Done {
        /// Output field values.
        outputs: Example,
        /// LM usage over every call.
        usage: Usage,
        /// Wall time of the run, in milliseconds.
        elapsed_ms: u64,
    },
    /// The run failed.
    Failed {
        /// The error's text.
        error: String,
    },
}

/// Where a run's events go (nowhere for plain calls).
#[derive(Clone, Default)]
pub(crate) struct Emitter(Option<tokio::sync::mpsc::UnboundedSender<ReActEvent>>);

impl Emitter {
    fn emit(&self, event: ReActEvent) {
        if let Some(sender) = &self.0 {
            // A closed receiver means nobody listens any more: the run goes on regardless.
            let _ = sender.send(event);
        }
    }
}

/// The caller's follow-up messages for a run in progress.
#[derive(Default)]
pub(crate) struct Interrupts {
    receiver: Option<tokio::sync::mpsc::UnboundedReceiver<String>>,
    buffer: Vec<String>,
}

impl Interrupts {
    fn new(receiver: Option<tokio::sync::mpsc::UnboundedReceiver<String>>) -> Interrupts {
        Interrupts {
            receiver,
            buffer: Vec::new(),
        }
    }

    /// Whether messages are waiting.
    fn pending(&mut self) -> bool {
        if let Some(receiver) = &mut self.receiver {
            while let Ok(message) = receiver.try_recv() {
                self.buffer.push(message);
            }
        }
        !self.buffer.is_empty()
    }

    /// Appends the waiting messages, combined into one, to the trajectory.
    fn inject(&mut self, trajectory: &mut Trajectory, events: &Emitter) {
        if !self.pending() {
            return;
        }
        let text = std::mem::take(&mut self.buffer).join("\n\n");
        events.emit(ReActEvent::UserMessage { text: text.clone() });
        let after = trajectory.steps.last().map(|s| s.index);
        trajectory.user_messages.push(UserMessage { after, text });
    }
}

/// The observation of a `finish` that waits because the caller sent messages.
const FINISH_POSTPONED: &str = "Finish postponed: the user sent new messages; address them first.";

fn millis(elapsed: Duration) -> u64 {
    elapsed.as_millis().try_into().unwrap_or(u64::MAX)
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
}

/// The untyped ReAct loop over a run-time signature.
#[derive(Clone)]
pub struct ReActCore {
    signature: DynSignature,
    tools: Vec<Arc<dyn Tool>>,
    step: Predictor,
    extract: Predictor,
    max_iters: usize,
    truncation: Arc<dyn TruncationPolicy>,
    tool_timeout: Option<Duration>,
    mode: ReActMode,
    approver: Option<Approver>,
    selection_threshold: usize,
}

/// A request to run a tool that needs a person's approval (`#[tool(confirm)]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    /// The tool.
    pub tool: String,
    /// The arguments the model gave.
    pub args: Value,
    /// The model's reasoning for the call.
    pub thought: String,
}

/// The answer to an [`ApprovalRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run the tool.
    Approve,
    /// Do not run it; the reason (if any) is shown to the model.
    Deny(Option<String>),
}

/// An async callback that approves or denies tool calls.
pub type Approver =
    Arc<dyn Fn(ApprovalRequest) -> futures::future::BoxFuture<'static, Approval> + Send + Sync>;

impl std::fmt::Debug for ReActCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("ReActCore")
            .field("signature", &self.signature.name())
            .field("tools", &tools)
            .field("max_iters", &self.max_iters)
            .finish_non_exhaustive()
    }
}

impl ReActCore {
    /// A ReAct loop for `signature` with `tools` (`finish` is added).
    pub fn new(signature: DynSignature, tools: Vec<Arc<dyn Tool>>) -> ReActCore {
        let (step_signature, parse_signature) = step_signatures(&signature, &tools);
        let mut extract_signature =
            DynSignature::new(signature.name()).with_instructions(signature.instructions());
        for field in signature.inputs() {
            extract_signature = extract_signature.with_input(field.clone());
        }
        extract_signature = extract_signature.with_input(Field::str("trajectory"));
        for field in signature.outputs() {
            extract_signature = extract_signature.with_output(field.clone());
        }
        ReActCore {
            step: Predictor::new(step_signature).with_parse_signature(parse_signature),
            extract: Predictor::new(with_reasoning(&extract_signature)),
            signature,
            tools,
            max_iters: 20,
            truncation: Arc::new(DropOldest),
            tool_timeout: None,
            mode: ReActMode::Auto,
            approver: None,
            selection_threshold: 12,
        }
    }

    /// With more tools than `threshold` (default 12), a first LM call picks the tools relevant to
    /// the inputs from a compact catalogue, and the run sees only those. If that call fails, every
    /// tool is used.
    pub fn with_tool_selection_threshold(mut self, threshold: usize) -> Self {
        self.selection_threshold = threshold;
        self
    }

    /// A copy that offers only the tools named in `keep`.
    fn restricted_to(&self, keep: &[String]) -> ReActCore {
        let tools: Vec<Arc<dyn Tool>> = self
            .tools
            .iter()
            .filter(|t| keep.iter().any(|k| k == t.name()))
            .cloned()
            .collect();
        let (step_signature, parse_signature) = step_signatures(&self.signature, &tools);
        let mut restricted = self.clone();
        restricted.step.signature = step_signature;
        restricted.step.parse_as = Some(parse_signature);
        restricted.tools = tools;
        restricted.selection_threshold = usize::MAX;
        restricted
    }

    /// Picks the tools relevant to `inputs` (see [`with_tool_selection_threshold`](Self::with_tool_selection_threshold)).
    async fn select_tools(
        &self,
        lm: &dyn Lm,
        inputs: &Example,
        usage: &mut Usage,
    ) -> Option<Vec<String>> {
        use crate::structured::{StructuredRequest, call_structured};
        let names: Vec<Value> = self.tools.iter().map(|t| json!(t.name())).collect();
        let catalogue: Vec<String> = self
            .tools
            .iter()
            .map(|t| {
                format!(
                    "- {}: {}",
                    t.name(),
                    t.description().lines().next().unwrap_or("")
                )
            })
            .collect();
        let task = crate::adapter::templates::user_message(&self.signature, inputs, "", None);
        let request = StructuredRequest::new(
            "select_tools",
            json!({
                "type": "object",
                "properties": {"tools": {"type": "array", "items": {"type": "string", "enum": names}}},
                "required": ["tools"]
            }),
            vec![
                crate::lm::Message::system(crate::adapter::templates::tool_selection_instructions(
                    &self.signature.instructions(),
                    &catalogue.join("\n"),
                )),
                crate::lm::Message::user(task),
            ],
        )
        .with_description("The names of the tools needed for this task.");
        match call_structured(lm, &request).await {
            Ok(selected) => {
                *usage += selected.usage;
                let chosen: Vec<String> = selected.value["tools"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                (!chosen.is_empty()).then_some(chosen)
            }
            Err(error) => {
                tracing::warn!(%error, "tool selection failed; offering every tool");
                None
            }
        }
    }

    /// Asks `approver` before running any tool that requires confirmation (`#[tool(confirm)]`).
    /// Without an approver such tools are never run: the model is told so.
    pub fn with_approver<F, Fut>(mut self, approver: F) -> Self
    where
        F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Approval> + Send + 'static,
    {
        use futures::FutureExt;
        self.approver = Some(Arc::new(move |request| approver(request).boxed()));
        self
    }

    /// Text or native tool calling (default: [`ReActMode::Auto`]).
    pub fn with_mode(mut self, mode: ReActMode) -> Self {
        self.mode = mode;
        self
    }

    /// At most this many steps (default 20).
    pub fn with_max_iters(mut self, max_iters: usize) -> Self {
        self.max_iters = max_iters;
        self
    }

    /// Uses `lm` for the steps and the extractor.
    pub fn with_lm(mut self, lm: Arc<dyn Lm>) -> Self {
        self.step = self.step.with_lm(lm.clone());
        self.extract = self.extract.with_lm(lm);
        self
    }

    /// Uses `adapter` for the steps and the extractor.
    pub fn with_adapter(mut self, adapter: Arc<dyn Adapter>) -> Self {
        self.step = self.step.with_adapter(adapter.clone());
        self.extract = self.extract.with_adapter(adapter);
        self
    }

    /// How to shorten the trajectory when it overflows the context window (default
    /// [`DropOldest`]).
    pub fn with_truncation(mut self, policy: Arc<dyn TruncationPolicy>) -> Self {
        self.truncation = policy;
        self
    }

    /// A time limit for each tool call; a call that exceeds it becomes an observation.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// The step predictor (its signature holds DSPy's ReAct instructions).
    pub fn step_predictor(&self) -> &Predictor {
        &self.step
    }

    /// Runs the loop on `inputs`; the outputs are field values.
    pub async fn forward(&self, inputs: &Example, call: &CallConfig) -> Result<ReActRun, Error> {
        self.run(
            inputs,
            call,
            &Emitter::default(),
            &mut Interrupts::default(),
        )
        .await
    }

    /// Runs the loop and yields its events as they happen, ending with [`ReActEvent::Done`] or
    /// [`ReActEvent::Failed`]. Dropping the stream cancels the run, tool calls in flight included.
    pub fn stream<'a>(
        &'a self,
        inputs: Example,
        call: CallConfig,
    ) -> futures::stream::BoxStream<'a, ReActEvent> {
        self.stream_inner(inputs, call, Interrupts::default())
    }

    /// [`stream`](Self::stream), with a channel for follow-up messages while the run is in
    /// progress. Messages are added between iterations — in native mode after the tool results, so
    /// the tool-message order stays valid — several at once combined into one; a `finish` chosen
    /// while messages wait is postponed so the model can address them.
    pub fn stream_with_interrupts<'a>(
        &'a self,
        inputs: Example,
        call: CallConfig,
        interrupts: tokio::sync::mpsc::UnboundedReceiver<String>,
    ) -> futures::stream::BoxStream<'a, ReActEvent> {
        self.stream_inner(inputs, call, Interrupts::new(Some(interrupts)))
    }

    fn stream_inner<'a>(
        &'a self,
        inputs: Example,
        call: CallConfig,
        mut interrupts: Interrupts,
    ) -> futures::stream::BoxStream<'a, ReActEvent> {
        use futures::StreamExt;
        let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel();
        let emitter = Emitter(Some(sender));
        let run = async move {
            let started = Instant::now();
            let event = match self.run(&inputs, &call, &emitter, &mut interrupts).await {
                Ok(run) => ReActEvent::Done {
                    outputs: run.outputs,
                    usage: run.usage,
                    elapsed_ms: millis(started.elapsed()),
                },
                Err(error) => ReActEvent::Failed {
                    error: error.to_string(),
                },
            };
            emitter.emit(event);
        };
        let events = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx));
        let driver = futures::stream::once(run).filter_map(|()| async { None });
        futures::stream::select(driver, events).boxed()
    }

    async fn run(
        &self,
        inputs: &Example,
        call: &CallConfig,
        events: &Emitter,
        interrupts: &mut Interrupts,
    ) -> Result<ReActRun, Error> {
        let resolved = self.step.resolve(call)?;
        if self.tools.len() > self.selection_threshold {
            let mut usage = Usage::default();
            let selected = self
                .select_tools(resolved.lm.as_ref(), inputs, &mut usage)
                .await;
            if let Some(names) = selected {
                events.emit(ReActEvent::ToolsSelected {
                    names: names.clone(),
                });
                let mut run = Box::pin(
                    self.restricted_to(&names)
                        .run(inputs, call, events, interrupts),
                )
                .await?;
                run.usage += usage;
                return Ok(run);
            }
        }
        let native = match self.mode {
            ReActMode::Auto => resolved.lm.capabilities().function_calling,
            ReActMode::Text => false,
            ReActMode::Native => true,
        };
        if native {
            return self
                .forward_native(inputs, call, resolved, events, interrupts)
                .await;
        }
        let adapter = resolved.adapter;
        let mut trajectory = Trajectory::default();
        let mut usage = Usage::default();
        let mut finished_outputs = None;
        for index in 0..self.max_iters {
            events.emit(ReActEvent::StepStarted { turn: index });
            interrupts.inject(&mut trajectory, events);
            let prediction = match self
                .call_with_truncation(
                    &self.step,
                    inputs,
                    &mut trajectory,
                    adapter.as_ref(),
                    call,
                    &mut usage,
                )
                .await
            {
                Ok(prediction) => prediction,
                Err(Error::TrajectoryTooLong { message, .. }) => {
                    tracing::warn!(%message, "ending the trajectory: it no longer fits the context window");
                    break;
                }
                Err(Error::Parse(error)) => {
                    // As DSPy: a step that cannot be read ends the loop; the extractor still runs.
                    tracing::warn!(%error, "ending the trajectory: the agent's step could not be read");
                    break;
                }
                Err(error) => return Err(error),
            };
            let thought = as_text(&prediction["next_thought"]);
            let tool_name = as_text(&prediction["next_tool_name"]);
            let tool_args = prediction
                .get("next_tool_args")
                .cloned()
                .unwrap_or(Value::Null);
            events.emit(ReActEvent::Thought {
                turn: index,
                text: thought.clone(),
            });
            let (observation, elapsed) = self
                .observe_with_events(index, &tool_name, &tool_args, &thought, events)
                .await;
            let postponed = tool_name == FINISH && interrupts.pending();
            let observation = if postponed {
                Observation::Output(json!(FINISH_POSTPONED))
            } else {
                observation
            };
            if tool_name == FINISH && !postponed {
                finished_outputs = self.outputs_from_finish(&tool_args);
            }
            trajectory.steps.push(Step {
                index,
                thought,
                tool_name: tool_name.clone(),
                tool_args,
                observation,
                call_id: None,
                turn: index,
                elapsed,
            });
            if tool_name == FINISH && !postponed {
                break;
            }
        }
        if let Some(outputs) = finished_outputs {
            return Ok(ReActRun {
                outputs,
                reasoning: None,
                trajectory,
                usage,
            });
        }
        events.emit(ReActEvent::Extracting);
        let mut outputs = self
            .call_with_truncation(
                &self.extract,
                inputs,
                &mut trajectory,
                adapter.as_ref(),
                call,
                &mut usage,
            )
            .await?;
        let reasoning = outputs.shift_remove("reasoning").map(|r| as_text(&r));
        Ok(ReActRun {
            outputs,
            reasoning,
            trajectory,
            usage,
        })
    }

    /// Runs `predictor` with the trajectory, truncating it (up to 3 times) while it overflows the
    /// context window.
    async fn call_with_truncation(
        &self,
        predictor: &Predictor,
        inputs: &Example,
        trajectory: &mut Trajectory,
        adapter: &dyn Adapter,
        call: &CallConfig,
        usage: &mut Usage,
    ) -> Result<Example, Error> {
        let mut last = String::new();
        for _ in 0..3 {
            let mut with_trajectory = inputs.clone();
            with_trajectory.insert(
                "trajectory".to_owned(),
                Value::String(trajectory.render(adapter)),
            );
            let span = tracing::info_span!(
                "react.lm_call",
                signature = predictor.signature().name(),
                steps = trajectory.steps.len()
            );
            match tracing::Instrument::instrument(
                predictor.forward_with(&with_trajectory, call),
                span,
            )
            .await
            {
                Ok(prediction) => {
                    *usage += prediction.usage;
                    return Ok(prediction.outputs);
                }
                Err(Error::Lm(LmError::ContextWindowExceeded { message })) => {
                    usage.lm_calls += 1;
                    tracing::warn!(
                        "Trajectory exceeded the context window, truncating the oldest tool call information."
                    );
                    last = message;
                    if let Err(reason) = self.truncation.truncate(trajectory).await {
                        return Err(Error::TrajectoryTooLong {
                            message: format!("{last}; {reason}"),
                            trajectory: Box::new(trajectory.clone()),
                        });
                    }
                }
                Err(other) => return Err(other),
            }
        }
        Err(Error::TrajectoryTooLong {
            message: format!("the context window was exceeded even after 3 truncations: {last}"),
            trajectory: Box::new(trajectory.clone()),
        })
    }

    /// [`observe`](Self::observe) inside a tracing span, with start and finish events.
    async fn observe_with_events(
        &self,
        index: usize,
        name: &str,
        args: &Value,
        thought: &str,
        events: &Emitter,
    ) -> (Observation, Duration) {
        use tracing::Instrument;
        events.emit(ReActEvent::ToolCallStarted {
            index,
            name: name.to_owned(),
            args: args.clone(),
        });
        let started = Instant::now();
        let span = tracing::info_span!("react.tool_call", tool = name, index);
        let observation = self.observe(name, args, thought).instrument(span).await;
        let elapsed = started.elapsed();
        events.emit(ReActEvent::ToolCallFinished {
            index,
            name: name.to_owned(),
            observation: observation.clone(),
            elapsed_ms: millis(elapsed),
        });
        (observation, elapsed)
    }

    /// Runs the chosen tool; every failure becomes an observation the model can act on.
    async fn observe(&self, name: &str, args: &Value, thought: &str) -> Observation {
        if name == FINISH {
            return Observation::Output(json!("Completed."));
        }
        let Some(tool) = self.tools.iter().find(|t| t.name() == name) else {
            let names: Vec<&str> = self
                .tools
                .iter()
                .map(|t| t.name())
                .chain([FINISH])
                .collect();
            return Observation::Error(format!(
                "Execution error in {name}: there is no tool named `{name}`; the tools are: {}",
                names.join(", ")
            ));
        };
        if tool.requires_confirmation() {
            let request = ApprovalRequest {
                tool: name.to_owned(),
                args: args.clone(),
                thought: thought.to_owned(),
            };
            let approval = match &self.approver {
                Some(approver) => approver(request).await,
                None => Approval::Deny(Some("no one is available to approve it".to_owned())),
            };
            if let Approval::Deny(reason) = approval {
                let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
                return Observation::Error(format!(
                    "Execution error in {name}: this call needs a person's approval and was denied{reason}"
                ));
            }
        }
        let call = tool.call(args.clone());
        let result = match self.tool_timeout {
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(result) => result,
                Err(_) => Err(ToolError::Timeout {
                    tool: name.to_owned(),
                    elapsed: limit,
                }),
            },
            None => call.await,
        };
        match result {
            Ok(value) => Observation::Output(value),
            Err(error) => Observation::Error(format!("Execution error in {name}: {error}")),
        }
    }

    /// When the model passed the outputs to `finish` and they parse into the output types, they are
    /// the result (saving the extractor call).
    fn outputs_from_finish(&self, args: &Value) -> Option<Example> {
        let args = args.as_object()?;
        let mut outputs = Map::new();
        for field in self.signature.outputs() {
            let value = crate::adapter::value::parse_json(field, args.get(field.name())?).ok()?;
            outputs.insert(field.name().to_owned(), value);
        }
        Some(outputs)
    }
}

/// What an untyped ReAct run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct ReActRun {
    /// Output field values.
    pub outputs: Example,
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

/// How a tool is listed in ReAct's instructions, as DSPy's `str(tool)` writes it:
/// `name, whose description is <desc>..</desc>. It takes arguments {..}.`
///
/// ```
/// use signet::{Tool, tool};
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 { a + b }
/// assert_eq!(
///     signet::module::tool_listing(&AddTool),
///     "add, whose description is <desc>Add two integers.</desc>. It takes arguments {'a': {'type': 'integer'}, 'b': {'type': 'integer'}}."
/// );
/// ```
pub fn tool_listing(tool: &dyn Tool) -> String {
    let args = tool
        .args_schema()
        .get("properties")
        .cloned()
        .unwrap_or_else(|| json!({}));
    describe_tool(tool.name(), tool.description(), &args)
}

fn describe_tool(name: &str, description: &str, args: &Value) -> String {
    let desc = if description.is_empty() {
        ".".to_owned()
    } else {
        format!(", whose description is <desc>{description}</desc>.").replace('\n', "  ")
    };
    format!("{name}{desc} It takes arguments {}.", python_repr(args))
}

/// The step signature shown to the model (DSPy's exact instructions and fields) and the one replies
/// are read with (the tool name as free text, so an unknown name becomes an observation).
fn step_signatures(
    signature: &DynSignature,
    tools: &[Arc<dyn Tool>],
) -> (DynSignature, DynSignature) {
    let names = |fields: &[Field]| {
        fields
            .iter()
            .map(|f| format!("`{}`", f.name()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let inputs = names(signature.inputs());
    let outputs = names(signature.outputs());
    let mut lines = vec![
        format!("{}\n", signature.instructions()),
        format!(
            "You are an Agent. In each episode, you will be given the fields {inputs} as input. And you can see \
             your past trajectory so far."
        ),
        format!(
            "Your goal is to use one or more of the supplied tools to collect any necessary information for \
             producing {outputs}.\n"
        ),
        "To do this, you will interleave next_thought, next_tool_name, and next_tool_args in each turn, and also \
         when finishing the task."
            .to_owned(),
        "After each tool call, you receive a resulting observation, which gets appended to your trajectory.\n"
            .to_owned(),
        "When writing next_thought, you may reason about the current situation and plan for future steps."
            .to_owned(),
        "When selecting the next_tool_name and its next_tool_args, the tool must be one of:\n".to_owned(),
    ];
    let finish_desc = format!(
        "Marks the task as complete. That is, signals that all information for producing the outputs, i.e. \
         {outputs}, are now available to be extracted."
    );
    let mut described: Vec<String> = tools.iter().map(|t| tool_listing(t.as_ref())).collect();
    described.push(describe_tool(FINISH, &finish_desc, &json!({})));
    for (i, text) in described.iter().enumerate() {
        lines.push(format!("({}) {text}", i + 1));
    }
    lines.push(
        "When providing `next_tool_args`, the value inside the field must be in JSON format"
            .to_owned(),
    );

    let tool_names: Vec<Value> = tools
        .iter()
        .map(|t| json!(t.name()))
        .chain([json!(FINISH)])
        .collect();
    let mut step = DynSignature::new(signature.name()).with_instructions(lines.join("\n"));
    for field in signature.inputs() {
        step = step.with_input(field.clone());
    }
    step = step.with_input(Field::str("trajectory"));
    let args_field = Field::from_schema(
        "next_tool_args",
        json!({"type": "object", "additionalProperties": true}),
    );
    let shown = step
        .clone()
        .with_output(Field::str("next_thought"))
        .with_output(Field::from_schema(
            "next_tool_name",
            json!({"type": "string", "enum": tool_names}),
        ))
        .with_output(args_field.clone());
    let read = step
        .with_output(Field::str("next_thought"))
        .with_output(Field::str("next_tool_name"))
        .with_output(args_field);
    (shown, read)
}

/// ReAct over the typed signature `S`: `S::Input` in, [`ReActOutput<S::Output>`] out.
#[derive(Debug, Clone)]
pub struct ReAct<S: Signature> {
    core: ReActCore,
    _signature: std::marker::PhantomData<fn() -> S>,
}

impl<S: Signature> ReAct<S> {
    /// A ReAct agent for `S` with `tools`.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        ReAct {
            core: ReActCore::new(S::signature().clone(), tools),
            _signature: std::marker::PhantomData,
        }
    }

    /// At most this many steps (default 20).
    pub fn with_max_iters(mut self, max_iters: usize) -> Self {
        self.core = self.core.with_max_iters(max_iters);
        self
    }

    /// Uses `lm` for every call.
    pub fn with_lm(mut self, lm: Arc<dyn Lm>) -> Self {
        self.core = self.core.with_lm(lm);
        self
    }

    /// Uses `adapter` for every call.
    pub fn with_adapter(mut self, adapter: Arc<dyn Adapter>) -> Self {
        self.core = self.core.with_adapter(adapter);
        self
    }

    /// The truncation policy for context-window overflows.
    pub fn with_truncation(mut self, policy: Arc<dyn TruncationPolicy>) -> Self {
        self.core = self.core.with_truncation(policy);
        self
    }

    /// A time limit for each tool call.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.core = self.core.with_tool_timeout(timeout);
        self
    }

    /// Text or native tool calling (default: native when the LM supports it).
    pub fn with_mode(mut self, mode: ReActMode) -> Self {
        self.core = self.core.with_mode(mode);
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

    /// Above this many tools (default 12) a first call selects the relevant ones.
    pub fn with_tool_selection_threshold(mut self, threshold: usize) -> Self {
        self.core = self.core.with_tool_selection_threshold(threshold);
        self
    }

    /// The untyped loop inside.
    pub fn core(&self) -> &ReActCore {
        &self.core
    }

    /// Runs the agent on `input`, yielding its events as they happen (see [`ReActCore::stream`]).
    /// Dropping the stream cancels the run.
    pub fn stream(
        &self,
        input: S::Input,
    ) -> Result<futures::stream::BoxStream<'_, ReActEvent>, Error> {
        let inputs = super::to_example(&input)?;
        Ok(self.core.stream(inputs, CallConfig::default()))
    }

    /// [`stream`](Self::stream) with a channel for follow-up messages (see
    /// [`ReActCore::stream_with_interrupts`]).
    pub fn stream_with_interrupts(
        &self,
        input: S::Input,
        interrupts: tokio::sync::mpsc::UnboundedReceiver<String>,
    ) -> Result<futures::stream::BoxStream<'_, ReActEvent>, Error> {
        let inputs = super::to_example(&input)?;
        Ok(self
            .core
            .stream_with_interrupts(inputs, CallConfig::default(), interrupts))
    }

    /// Runs the agent on `input`.
    pub async fn call(&self, input: S::Input) -> Result<ReActOutput<S::Output>, Error> {
        let inputs = super::to_example(&input)?;
        let run = self.core.forward(&inputs, &CallConfig::default()).await?;
        Ok(ReActOutput {
            output: super::from_example(&run.outputs)?,
            reasoning: run.reasoning,
            trajectory: run.trajectory,
            usage: run.usage,
        })
    }
}
