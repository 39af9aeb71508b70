//! `Predict` with tools: the driver's native turns without an extractor. Each reply's tool
//! calls run concurrently and their results go back as `tool` messages until the model answers in
//! the adapter's format.

use futures::stream::BoxStream;

use super::check::watch::Watch;
use super::react::answer_stream::answer_lm;
use super::react::budget::ContextBudget;
use super::react::driver::{Ask, Checking, Driver, RunState, TurnEnd, TurnProtocol};
use super::react::events::{Emitter, Interrupts, stream_run};
use super::react::native::{NativeChat, NativeReply, NativeTurn};
use super::react::suspend::{
    Start, check_state, describe_signature, describe_tools, digest, reseal,
};
use super::react::{
    Decision, Limits, ReActError, ReActEvent, ReActRun, RunFailure, RunOutcome, Step, SuspendedRun,
    Trajectory,
};
use super::tool_runner::ToolRunner;
use super::{CallConfig, DynPredict, Error, Prediction, Resolved};
use crate::adapter::{Adapter, AdapterName, Fields};
use crate::lm::{Completion, LmError, ToolChoice, Usage};
use crate::tool::Tool;

impl DynPredict {
    /// Offers `tool` to the model through native function calling: each reply's tool calls run
    /// concurrently and their results go back as `tool` messages, until the model answers in the
    /// adapter's format (at most [`with_max_tool_turns`](Self::with_max_tool_turns) rounds). The
    /// LM must report native function calling.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(crate::tool::share(tool));
        self
    }

    /// Offers each of `tools` (see [`tool`](Self::tool)); `Arc<dyn Tool>`s are kept as they are.
    pub fn tools(mut self, tools: impl IntoIterator<Item = impl Tool + 'static>) -> Self {
        self.tools.extend(tools.into_iter().map(crate::tool::share));
        self
    }

    /// The most tool-call rounds before the call fails with [`Error::TooManyToolTurns`] (default 10).
    pub fn with_max_tool_turns(mut self, turns: usize) -> Self {
        self.max_tool_turns = turns;
        self
    }

    super::tool_runner::approver_setter! {
        /// Asks `approver` before running a tool that requires confirmation (`#[tool(confirm)]`), as
        /// ReAct does. Without an approver such tools are never run: the model is told the call was
        /// denied — or, in a call begun with [`start`](Self::start), the call suspends until a person
        /// decides.
    }

    crate::shared::setters! {
        /// The limits on tool calls, as in ReAct: `tool_timeout` (default 60 s),
        /// `max_observation_chars`, `max_kept_observation_bytes`, `max_concurrent_tools`,
        /// `max_tool_calls_per_turn`, `max_lm_calls` and `context_window` apply; the others are
        /// ReAct's.
        fn with_tool_limits(limits: Limits) { tool_limits = limits }

        /// How to shorten the tool turns when the conversation no longer fits the context window
        /// (default [`DropOldest`](super::react::DropOldest)), as in ReAct: the oldest turns go
        /// before a prompt over the budget is sent ([`Limits::context_window`], else the LM's),
        /// and after the provider refuses one as too long (up to 3 times). A conversation that
        /// still does not fit is [`LmError::ContextWindowExceeded`].
        fn with_truncation(policy: impl super::react::TruncationPolicy + 'static) {
            truncation = std::sync::Arc::new(policy)
        }

        /// How tool results are shown to the model, as in ReAct (default
        /// [`HtmlAsText`](super::react::HtmlAsText)).
        fn with_observation_formatter(
            formatter: impl super::react::ObservationFormatter + 'static
        ) {
            formatter = std::sync::Arc::new(formatter)
        }

        /// Seals every state a call suspends with `key` (an HMAC-SHA256, [`SuspendedRun::seal`]),
        /// and resumes only states sealed with it, as
        /// [`DynReAct::with_state_key`](super::DynReAct::with_state_key) does: a state without a
        /// seal is [`ResumeError::Unsealed`](super::ResumeError::Unsealed), one changed since it was sealed
        /// [`ResumeError::BadSeal`](super::ResumeError::BadSeal). Use a long random key from the service's secrets; it is not
        /// part of the [fingerprint](Self::fingerprint).
        ///
        /// ```
        /// use signet::module::DynPredict;
        /// use signet::signature::DynSignature;
        ///
        /// let signature = DynSignature::parse("question -> answer").unwrap();
        /// let predictor = DynPredict::new(signature).with_state_key(b"a long random key");
        /// ```
        fn with_state_key(key: impl AsRef<[u8]>) {
            state_key = Some(std::sync::Arc::from(key.as_ref()))
        }
    }

    pub(super) async fn forward_with_tools(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        usage: &mut Usage,
    ) -> Result<Prediction, Error> {
        let start = Start::Fresh { resumable: false };
        match self.tool_loop(inputs, call, start, usage).await? {
            RunOutcome::Finished(prediction) => Ok(prediction),
            // A call that is not resumable does not suspend; should one, say so.
            RunOutcome::Suspended(_) => Err(Error::Unsupported {
                what: "a call that waits for a person in `forward`; use `start`".to_owned(),
            }),
        }
    }

    /// Calls the predictor with its tools, suspending where a person is needed: at a
    /// `#[tool(confirm)]` tool when no [approver](Self::with_approver) is set, and at a tool that
    /// returns [`ToolError::NeedsInput`](crate::ToolError::NeedsInput) — as
    /// [`DynReAct::start`](super::DynReAct::start) does, with the same [`SuspendedRun`]. The
    /// calls of the reply that need no one run first; [`resume`](Self::resume) carries out the
    /// decisions and goes on.
    pub async fn start(
        &self,
        inputs: &Fields,
        call: &CallConfig,
    ) -> Result<RunOutcome<Prediction>, Error> {
        let start = Start::Fresh { resumable: true };
        self.tool_loop(inputs, call, start, &mut Usage::default())
            .await
    }

    /// Goes on with a suspended call: a [`Decision`] per pending call id. The predictor must be
    /// built as the one that suspended (same signature, tools and turn limit); it may be in
    /// another process. The state is not trusted as given: a seal is checked when the predictor
    /// has a [state key](Self::with_state_key), and a state that contradicts itself or this
    /// predictor (a ReAct run's state, a pending call of a tool the predictor lacks, two calls
    /// with one id, a round past the limit, ..) is [`ResumeError::Invalid`](super::ResumeError::Invalid).
    pub async fn resume(
        &self,
        state: SuspendedRun,
        decisions: impl IntoIterator<Item = (String, Decision)>,
        call: &CallConfig,
    ) -> Result<RunOutcome<Prediction>, Error> {
        let key = self.state_key.as_deref();
        let decided = check_state(&state, key, &self.fingerprint(), decisions, || {
            state.validate_call(&self.tools, self.max_tool_turns)
        })?;
        let inputs = state.inputs.clone();
        let start = Start::Resume {
            state: Box::new(state),
            decided,
        };
        self.tool_loop(&inputs, call, start, &mut Usage::default())
            .await
    }

    /// A digest of what a resumed call depends on: the signature, the tools and the turn limit.
    pub fn fingerprint(&self) -> String {
        digest(&serde_json::json!({
            "signature": describe_signature(&self.signature),
            "tools": describe_tools(&self.tools),
            "max_tool_turns": self.max_tool_turns,
        }))
    }

    /// Runs the call and yields its events as they happen: each tool call
    /// ([`ReActEvent::ToolCallStarted`], [`ToolCallFinished`](ReActEvent::ToolCallFinished)),
    /// the answer as it is written ([`ReActEvent::AnswerDelta`] per output field, with the Chat
    /// adapter's markers; whole at the end otherwise), then [`ReActEvent::Done`] with the outputs,
    /// the tool calls as its trajectory and the usage — or [`ReActEvent::Failed`]. A predictor
    /// without tools streams its answer the same way. Dropping the stream cancels the call.
    ///
    /// ```no_run
    /// use futures::StreamExt;
    /// use signet::module::{CallConfig, DynPredict, ReActEvent};
    /// use signet::signature::DynSignature;
    ///
    /// # async fn show(inputs: signet::adapter::Fields) {
    /// let predictor = DynPredict::new(DynSignature::parse("question -> answer").unwrap());
    /// let mut events = predictor.stream(inputs, CallConfig::default());
    /// while let Some(event) = events.next().await {
    ///     if let ReActEvent::AnswerDelta { text, .. } = event {
    ///         print!("{text}");
    ///     }
    /// }
    /// # }
    /// ```
    pub fn stream(&self, inputs: Fields, call: CallConfig) -> BoxStream<'_, ReActEvent> {
        stream_run(move |events| async move {
            let start = Start::Fresh { resumable: false };
            if !self.tools.is_empty() {
                let outcome = self.run_tools(&inputs, &call, start, &events).await?;
                return Ok(match outcome {
                    RunOutcome::Finished((prediction, trajectory)) => {
                        RunOutcome::Finished(finished_run(prediction, trajectory))
                    }
                    RunOutcome::Suspended(state) => RunOutcome::Suspended(state),
                });
            }
            let Resolved { lm, adapter } = self.resolve(&call).map_err(ReActError::before_start)?;
            let mut streamed =
                self.same_identity_clone()
                    .with_lm(answer_lm(lm, adapter.as_ref(), &events, true));
            streamed.stream_events = Some(events.clone());
            let mut usage = Usage::default();
            match streamed.forward_counting(&inputs, &call, &mut usage).await {
                Ok(prediction) => Ok(RunOutcome::Finished(finished_run(
                    prediction,
                    Trajectory::default(),
                ))),
                Err(error) => Err(ReActError::new(error, &Trajectory::default(), usage)),
            }
        })
    }

    /// The loop, without events; the usage of a failed call is added to `usage` (a successful
    /// one's is in its prediction).
    async fn tool_loop(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        start: Start,
        usage: &mut Usage,
    ) -> Result<RunOutcome<Prediction>, Error> {
        match self
            .run_tools(
                inputs,
                call,
                start,
                &Emitter::for_module_run(self.id, self.signature.name(), true).unwrap_or_default(),
            )
            .await
        {
            Ok(RunOutcome::Finished((prediction, _))) => Ok(RunOutcome::Finished(prediction)),
            Ok(RunOutcome::Suspended(state)) => Ok(RunOutcome::Suspended(state)),
            Err(error) => {
                *usage += error.usage;
                Err(match error.reason {
                    RunFailure::Call(error) => error,
                    RunFailure::Resume(error) => Error::Resume(error),
                    RunFailure::LmCallLimit { limit } => Error::LmCallLimit { limit },
                    RunFailure::Budget(exceeded) => Error::Budget(exceeded),
                    // The turns below fail in no other way.
                    other => Error::Unsupported {
                        what: other.to_string(),
                    },
                })
            }
        }
    }

    /// The loop: the prediction with the tool calls as a trajectory, or the sealed state of a
    /// call that waits for a person.
    async fn run_tools(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        start: Start,
        events: &Emitter,
    ) -> Result<RunOutcome<(Prediction, Trajectory)>, ReActError> {
        // The call's settings with those of an enclosing `CallConfig::scope`.
        let call = &*call.effective();
        let runner = ToolRunner::new(&self.tools, &[], self.approver.as_ref(), &self.tool_limits)
            .with_formatter(self.formatter.as_ref())
            .with_journal(call.journal.as_ref());
        runner.check_names().map_err(ReActError::before_start)?;
        let Resolved { lm, adapter } = self.resolve(call).map_err(ReActError::before_start)?;
        self.prepare_demos(inputs)
            .await
            .map_err(ReActError::before_start)?;
        if !lm.capabilities().function_calling {
            return Err(ReActError::before_start(Error::Unsupported {
                what: format!(
                    "tools were given but the LM `{}` does not declare native function calling; use \
                     ReAct for text-mode tool use",
                    lm.model()
                ),
            }));
        }
        let events = events.with_journal(call.journal.clone());
        let watch = Watch::of(self.checks.as_ref(), inputs);
        let asked = match &watch {
            Some(watch) => watch.wrap(lm.clone(), None, adapter.marks_fields()),
            None => lm.clone(),
        };
        let driver = Driver {
            runner,
            limits: &self.tool_limits,
            inputs,
            call,
            events: &events,
            resumable: start.resumable(),
            // The last round must answer: after it, the call fails.
            max_iters: self.max_tool_turns.saturating_add(1),
            checking: self.checks.as_ref().map(|checks| Checking {
                checks,
                signature: &self.signature,
                watch,
            }),
        };
        let turns = PredictTurns {
            predictor: self,
            chat: NativeChat {
                tools: self.tools.iter().map(|t| t.definition()).collect(),
                base: adapter.format(&self.signature, &self.demos_for(inputs), inputs),
                lm: answer_lm(asked, adapter.as_ref(), &events, false),
                adapter,
            },
            measured: lm,
            answered: None,
        };
        Ok(
            match driver.run(turns, &mut Interrupts::default(), start).await? {
                RunOutcome::Suspended(mut state) => {
                    state.fingerprint = self.fingerprint();
                    state.signature = self.signature.name().to_owned();
                    reseal(&mut state, self.state_key.as_deref());
                    RunOutcome::Suspended(state)
                }
                finished => finished,
            },
        )
    }
}

/// A streamed call's result as the run [`ReActEvent::Done`] reports.
fn finished_run(prediction: Prediction, trajectory: Trajectory) -> ReActRun {
    ReActRun {
        outputs: prediction.outputs,
        reasoning: None,
        trajectory,
        usage: prediction.usage,
    }
}

/// The turns of `Predict` with tools: the signature's messages with its demos, then each turn's
/// tool calls and results as messages; a reply without tool calls is the answer.
struct PredictTurns<'a> {
    predictor: &'a DynPredict,
    chat: NativeChat,
    /// The LM whose context window the conversation must fit.
    measured: std::sync::Arc<dyn crate::lm::Lm>,
    /// The reply that answered, and the adapter that read it.
    answered: Option<(Completion, AdapterName)>,
}

impl TurnProtocol for PredictTurns<'_> {
    type Output = (Prediction, Trajectory);

    fn answering_tool(&self) -> Option<&'static str> {
        None
    }

    fn records_usage(&self) -> bool {
        false
    }

    async fn ask(
        &mut self,
        driver: &Driver<'_>,
        run: &mut RunState,
        turn: usize,
    ) -> Result<Ask, ReActError> {
        let predictor = self.predictor;
        let inputs = driver.inputs;
        // After a refused answer whose checks offered tools: a turn that calls one of them.
        let only = run.offer.take();
        let asked = NativeTurn {
            signature: &predictor.signature,
            options: &predictor.options,
            tool_choice: match only {
                Some(only) => ToolChoice::OneOf(only),
                None => ToolChoice::Auto,
            },
            budget: ContextBudget::new(
                &predictor.tool_limits,
                self.measured.as_ref(),
                &predictor.options,
                predictor.truncation.as_ref(),
            ),
            limits: &predictor.tool_limits,
            trace_usage: false,
            index: turn,
        };
        let rebase = |adapter: &dyn Adapter| {
            adapter.format(&predictor.signature, &predictor.demos_for(inputs), inputs)
        };
        match self.chat.ask(asked, driver, run, rebase).await? {
            Ok(NativeReply::Calls { thought, calls, .. }) => Ok(Ask::Calls { thought, calls }),
            Ok(NativeReply::Answer {
                outputs,
                completion,
                adapter,
            }) => {
                self.answered = Some((completion, adapter));
                Ok(Ask::Answer {
                    outputs,
                    reasoning: None,
                })
            }
            Ok(NativeReply::Unreadable(error)) => Err(run.fail(Error::Parse(error))),
            Err(message) => Err(run.fail(Error::Lm(LmError::ContextWindowExceeded { message }))),
        }
    }

    fn end_turn(
        &mut self,
        run: &mut RunState,
        _turn: usize,
        steps: Vec<Step>,
        _interrupts: &mut Interrupts,
    ) -> TurnEnd {
        run.trajectory.steps.extend(steps);
        TurnEnd::Next
    }

    fn suspend(self, state: SuspendedRun) -> SuspendedRun {
        SuspendedRun {
            native: true,
            ..state
        }
    }

    fn answer(
        self,
        _driver: &Driver<'_>,
        run: RunState,
        outputs: Fields,
        _reasoning: Option<String>,
    ) -> (Prediction, Trajectory) {
        let (completion, adapter) = self
            .answered
            .unwrap_or_else(|| (Completion::default(), self.chat.adapter.name()));
        let prediction = Prediction {
            outputs,
            usage: run.usage,
            completion,
            adapter,
        };
        (prediction, run.trajectory)
    }

    async fn conclude(
        &mut self,
        _driver: &Driver<'_>,
        run: &mut RunState,
        _interrupts: &mut Interrupts,
    ) -> Result<(Fields, Option<String>), ReActError> {
        Err(run.fail(Error::TooManyToolTurns {
            turns: self.predictor.max_tool_turns,
        }))
    }
}
