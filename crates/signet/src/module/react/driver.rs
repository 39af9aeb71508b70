//! The one tool loop. A [`TurnProtocol`] says how a mode asks the model for a turn and how it
//! records the turn's results (ReAct's text mode: DSPy's fields; native mode: tool messages;
//! history mode: ReActV2's conversation; `Predict` with tools: tool messages and an answer in the
//! adapter's format); the [`Driver`] owns everything else, once for every mode: resuming a
//! suspended run, the turn limit, the caller's follow-up messages, running a turn's calls
//! (concurrently, within the per-turn limit, with approvals, events, tracing spans and the
//! journal), suspending at calls that wait for a person, and ending a run that stops early.

use std::future::Future;
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use serde_json::{Value, json};

use super::events::{
    Emitter, FINISH_UNSEEN_RESULTS, Interrupts, answers_before_results, millis, stop_early,
};
use super::suspend::Start;
use super::trajectory::KeptText;
use super::{
    CallMode, Decision, FINISH, FINISH_OBSERVATION, FINISH_POSTPONED, Limits, Observation,
    PendingCall, ReActError, ReActEvent, RunOutcome, Step, StopReason, SuspendedRun, Trajectory,
    Waiting,
};
use crate::adapter::Fields;
use crate::lm::{ToolCall, Usage};
use crate::module::CallConfig;
use crate::module::tool_runner::ToolRunner;

/// What a run has so far: its steps and the LM usage, and the trajectory's text as last written.
#[derive(Default)]
pub(crate) struct RunState {
    pub(crate) trajectory: Trajectory,
    pub(crate) usage: Usage,
    pub(crate) kept: KeptText,
}

impl RunState {
    /// `failure` as the run's error, with the trajectory and usage so far.
    pub(crate) fn fail(&self, failure: impl Into<super::RunFailure>) -> ReActError {
        ReActError::new(failure, &self.trajectory, self.usage)
    }
}

/// What the model asked for in one turn.
pub(crate) enum Ask {
    /// Tools to call; `thought` is shown as a [`ReActEvent::Thought`] when there is one.
    Calls {
        thought: Option<String>,
        calls: Vec<TurnCall>,
    },
    /// The model answered; these are the outputs.
    Answer {
        outputs: Fields,
        reasoning: Option<String>,
    },
    /// The loop ends here, for this reason; the protocol's [conclusion](TurnProtocol::conclude)
    /// still runs.
    Stop(StopReason),
}

/// One tool call of a turn.
pub(crate) struct TurnCall {
    /// The call's id (the provider's, or the protocol's own); `None` in text mode, whose
    /// pending calls are `step_<index>`.
    pub(crate) id: Option<String>,
    pub(crate) name: String,
    pub(crate) args: Value,
    /// The call does not run: this is its result (unreadable arguments, an unknown tool, the
    /// answering tool's checked outputs).
    pub(crate) settled: Option<Observation>,
}

impl TurnCall {
    /// A native tool call as the model sent it; arguments that are not JSON are kept as their
    /// text and the call does not run (its result says why).
    pub(crate) fn sent(call: &ToolCall) -> TurnCall {
        let id = Some(call.id.clone());
        match crate::module::tool_runner::arguments(call) {
            Ok(args) => TurnCall::new(id, call.name.clone(), args),
            Err(observation) => TurnCall {
                settled: Some(observation),
                ..TurnCall::new(id, call.name.clone(), Value::String(call.arguments.clone()))
            },
        }
    }

    /// A call that runs as the model wrote it.
    pub(crate) fn new(id: Option<String>, name: String, args: Value) -> TurnCall {
        TurnCall {
            id,
            name,
            args,
            settled: None,
        }
    }
}

/// How a turn ended.
pub(crate) enum TurnEnd {
    /// The model goes on.
    Next,
    /// The answering tool carried valid outputs.
    Answer(Fields),
    /// The answering tool ran without valid outputs: the conclusion produces them.
    Conclude,
}

/// How one mode talks to the model. Every method has the run's [`Driver`].
pub(crate) trait TurnProtocol: Send {
    /// What a finished run produces.
    type Output;

    /// The tool whose call ends the run (`finish`, `submit`); a call of it beside other calls
    /// waits a turn.
    fn answering_tool(&self) -> Option<&'static str> {
        Some(FINISH)
    }

    /// Takes up a suspended run's position (the history mode's conversation).
    fn resume(&mut self, state: &SuspendedRun) -> Result<(), super::RunFailure> {
        let _ = state;
        Ok(())
    }

    /// Moves the caller's waiting messages into the run before a turn.
    fn receive(&mut self, interrupts: &mut Interrupts, run: &mut RunState, events: &Emitter) {
        interrupts.inject(&mut run.trajectory, events);
    }

    /// Asks the model for turn `turn`.
    fn ask(
        &mut self,
        driver: &Driver<'_>,
        run: &mut RunState,
        turn: usize,
    ) -> impl Future<Output = Result<Ask, ReActError>> + Send;

    /// The step index of the turn's first call.
    fn first_index(&self, trajectory: &Trajectory, turn: usize) -> usize {
        let _ = turn;
        next_index(trajectory)
    }

    /// The observation of a call that ran, as the protocol records it.
    fn reword(&self, name: &str, observation: Observation) -> Observation {
        let _ = name;
        observation
    }

    /// Records a turn's steps (in call order) and says how the turn ended.
    fn end_turn(
        &mut self,
        run: &mut RunState,
        turn: usize,
        steps: Vec<Step>,
        interrupts: &mut Interrupts,
    ) -> TurnEnd;

    /// A suspended run's state with the protocol's own position.
    fn suspend(self, state: SuspendedRun) -> SuspendedRun;

    /// The finished run when the model answered.
    fn answer(
        self,
        driver: &Driver<'_>,
        run: RunState,
        outputs: Fields,
        reasoning: Option<String>,
    ) -> Self::Output;

    /// The run's outputs once the loop ended without an answer (the extractor; the history
    /// mode's forced `submit`; `Predict`'s error).
    fn conclude(
        self,
        driver: &Driver<'_>,
        run: RunState,
        interrupts: &mut Interrupts,
    ) -> impl Future<Output = Result<Self::Output, ReActError>> + Send;
}

/// One run: the tools (with their approver, limits and journal), the inputs, the call's settings
/// and the run's events.
pub(crate) struct Driver<'a> {
    pub(crate) runner: ToolRunner<'a>,
    pub(crate) limits: &'a Limits,
    pub(crate) inputs: &'a Fields,
    pub(crate) call: &'a CallConfig,
    pub(crate) events: &'a Emitter,
    /// Whether a call that needs a person suspends the run.
    pub(crate) resumable: bool,
    /// The most turns the model is asked for.
    pub(crate) max_iters: usize,
}

impl Driver<'_> {
    /// The loop, with `protocol` asking the model and recording the turns.
    pub(crate) async fn run<P: TurnProtocol>(
        &self,
        mut protocol: P,
        interrupts: &mut Interrupts,
        start: Start,
    ) -> Result<RunOutcome<P::Output>, ReActError> {
        let mut run = RunState::default();
        let mut turn = 0;
        let mut end = TurnEnd::Next;
        if let Start::Resume { state, decided } = start {
            protocol
                .resume(&state)
                .map_err(|failure| ReActError::new(failure, &state.trajectory, state.usage))?;
            let carried = Box::pin(self.carry_out(&protocol, *state, decided));
            let (state, steps) = match carried.await {
                Ok(resumed) => resumed,
                Err(state) => return Ok(RunOutcome::Suspended(protocol.suspend(state))),
            };
            turn = state.turn;
            run = RunState {
                trajectory: state.trajectory,
                usage: state.usage,
                kept: KeptText::default(),
            };
            end = protocol.end_turn(&mut run, turn, steps, interrupts);
            turn = turn.saturating_add(1);
        }
        loop {
            match end {
                TurnEnd::Answer(outputs) => {
                    let answer = protocol.answer(self, run, outputs, None);
                    return Ok(RunOutcome::Finished(answer));
                }
                TurnEnd::Conclude => break,
                TurnEnd::Next if turn >= self.max_iters => {
                    if run.trajectory.stopped_early.is_none() {
                        let max_iters = self.max_iters;
                        let reason = StopReason::MaxIters { max_iters };
                        stop_early(&mut run.trajectory, self.events, reason);
                    }
                    break;
                }
                TurnEnd::Next => {}
            }
            self.events.emit(ReActEvent::StepStarted { turn });
            protocol.receive(interrupts, &mut run, self.events);
            let (thought, calls) = match protocol.ask(self, &mut run, turn).await? {
                Ask::Calls { thought, calls } => (thought, calls),
                Ask::Answer { outputs, reasoning } => {
                    let answer = protocol.answer(self, run, outputs, reasoning);
                    return Ok(RunOutcome::Finished(answer));
                }
                Ask::Stop(reason) => {
                    stop_early(&mut run.trajectory, self.events, reason);
                    break;
                }
            };
            if let Some(text) = &thought {
                self.events.emit(ReActEvent::Thought {
                    turn,
                    text: text.clone(),
                });
            }
            let first_index = protocol.first_index(&run.trajectory, turn);
            let thought = thought.unwrap_or_default();
            let (steps, pending) = self
                .run_calls(&protocol, turn, first_index, &thought, calls)
                .await;
            if !pending.is_empty() {
                let state =
                    SuspendedRun::new(self.inputs, run.trajectory, run.usage, turn, steps, pending);
                return Ok(RunOutcome::Suspended(protocol.suspend(state)));
            }
            end = protocol.end_turn(&mut run, turn, steps, interrupts);
            turn = turn.saturating_add(1);
        }
        // Boxed: the conclusion's future is the loop's largest, and a run spends most of its life
        // in the turns (each run in flight would otherwise hold its room, ~1 KB, all along).
        let output = Box::pin(protocol.conclude(self, run, interrupts)).await?;
        Ok(RunOutcome::Finished(output))
    }

    /// Runs a turn's calls, at most `max_concurrent_tools` at a time: the steps of the calls
    /// that ran, in call order, and (in a resumable run) the calls that wait for a person. A call
    /// past the turn's limit does not run (its result says so); the answering tool called beside
    /// other calls waits a turn (the model has not seen their results).
    pub(crate) async fn run_calls<P: TurnProtocol>(
        &self,
        protocol: &P,
        turn: usize,
        first_index: usize,
        thought: &str,
        calls: Vec<TurnCall>,
    ) -> (Vec<Step>, Vec<PendingCall>) {
        let limits = self.limits;
        let answering = protocol.answering_tool();
        let early = answering.is_some_and(|answering| {
            answers_before_results(calls.iter().map(|c| c.name.as_str()), answering)
        });
        let refusal = limits.refused_call(calls.len());
        let resumable = self.resumable;
        let mut runs = Vec::with_capacity(calls.len());
        for (offset, call) in calls.iter().enumerate() {
            let index = first_index.saturating_add(offset);
            let how = if offset >= limits.max_tool_calls_per_turn {
                CallMode::Refused(&refusal)
            } else if early && Some(call.name.as_str()) == answering {
                CallMode::Postponed(FINISH_UNSEEN_RESULTS)
            } else {
                CallMode::Attempt { resumable }
            };
            runs.push(async move {
                if let (Some(settled), CallMode::Attempt { .. } | CallMode::Postponed(_)) =
                    (&call.settled, how)
                {
                    return Ok((settled.clone(), Duration::ZERO));
                }
                let (observation, elapsed) = self
                    .observe(
                        index,
                        call.id.as_deref(),
                        &call.name,
                        &call.args,
                        thought,
                        how,
                    )
                    .await?;
                Ok((protocol.reword(&call.name, observation), elapsed))
            });
        }
        let observed: Vec<Result<(Observation, Duration), Waiting>> = if runs.len() == 1 {
            // One call (every text-mode turn): no stream to set up.
            let mut observed = Vec::with_capacity(1);
            for run in runs {
                observed.push(run.await);
            }
            observed
        } else {
            stream::iter(runs)
                .buffered(self.events.tool_concurrency(limits.max_concurrent_tools))
                .collect()
                .await
        };
        let mut steps = Vec::with_capacity(calls.len());
        let mut pending = Vec::new();
        for (offset, (call, observed)) in calls.into_iter().zip(observed).enumerate() {
            let index = first_index.saturating_add(offset);
            let id = call.id;
            match observed {
                Ok((observation, elapsed)) => steps.push(Step {
                    index,
                    thought: thought.to_owned(),
                    tool_name: call.name,
                    tool_args: call.args,
                    observation,
                    call_id: id,
                    turn,
                    elapsed,
                }),
                Err(waiting_for) => pending.push(PendingCall {
                    id: id.unwrap_or_else(|| format!("step_{index}")),
                    index,
                    tool: call.name,
                    args: call.args,
                    thought: thought.to_owned(),
                    waiting_for,
                }),
            }
        }
        (steps, pending)
    }

    /// One tool call inside its `execute_tool` span, with start and finish events: attempted (a
    /// call that waits for a person is `Err` in a resumable run, unattended otherwise) or carried
    /// out as a person decided. A person's decision and a wait are events of the span.
    #[allow(clippy::too_many_arguments)]
    async fn observe(
        &self,
        index: usize,
        call_id: Option<&str>,
        name: &str,
        args: &Value,
        thought: &str,
        how: CallMode<'_>,
    ) -> Result<(Observation, Duration), Waiting> {
        use crate::telemetry::RecordContent;
        use tracing::Instrument;
        self.events.emit(ReActEvent::ToolCallStarted {
            index,
            name: name.to_owned(),
            args: args.clone(),
        });
        let started = Instant::now();
        let runner = &self.runner;
        let tool = runner.get(name);
        let span = crate::telemetry::tool_span(
            name,
            call_id,
            tool.map_or("", |tool| tool.description()),
            tool.map_or("function", |tool| tool.tool_type()),
        );
        span.record_content("gen_ai.tool.call.arguments", || args.to_string());
        let outcome = async {
            match how {
                CallMode::Postponed(reason) => {
                    tracing::info!(target: crate::telemetry::TARGET, reason, "gen_ai.tool.postponed");
                    Ok(Observation::Output(json!(reason)))
                }
                CallMode::Refused(reason) => Ok(Observation::Error(reason.to_owned())),
                _ if runner.built_in(name) => Ok(Observation::Output(json!(FINISH_OBSERVATION))),
                CallMode::Attempt { resumable } => {
                    match runner.attempt(name, args, thought).await {
                        Err(waiting) if !resumable => Ok(runner.unattended(name, &waiting)),
                        Err(waiting) => {
                            tracing::info!(
                                target: crate::telemetry::TARGET,
                                waiting_for = ?waiting,
                                "gen_ai.tool.suspended"
                            );
                            Err(waiting)
                        }
                        outcome => outcome,
                    }
                }
                CallMode::Decided(decision) => {
                    tracing::info!(
                        target: crate::telemetry::TARGET,
                        decision = decision.kind(),
                        "gen_ai.tool.decision"
                    );
                    runner.decided(name, args, decision).await
                }
            }
        }
        .instrument(span.clone())
        .await;
        let elapsed = started.elapsed();
        let observation = outcome?;
        match &observation {
            Observation::Error(message) => {
                crate::telemetry::record_error(&span, "tool_error", message);
            }
            observation => span.record_content("gen_ai.tool.call.result", || {
                observation.as_value().to_string()
            }),
        }
        drop(span);
        self.events.emit(ReActEvent::ToolCallFinished {
            index,
            name: name.to_owned(),
            observation: observation.clone(),
            elapsed_ms: millis(elapsed),
        });
        Ok((observation, elapsed))
    }

    /// Carries out the decisions on a suspended turn (with the events a run emits for its tool
    /// calls): the state and the turn's steps in call order, or the state again when a call
    /// waits for a person once more.
    async fn carry_out<P: TurnProtocol>(
        &self,
        protocol: &P,
        state: SuspendedRun,
        decided: Vec<(PendingCall, Decision)>,
    ) -> Result<(SuspendedRun, Vec<Step>), SuspendedRun> {
        let mut steps = state.settled.clone();
        let mut pending = Vec::new();
        for (call, decision) in decided {
            let args = match &decision {
                Decision::Edit(edited) => edited.clone(),
                _ => call.args.clone(),
            };
            let how = CallMode::Decided(&decision);
            match self
                .observe(
                    call.index,
                    Some(&call.id),
                    &call.tool,
                    &args,
                    &call.thought,
                    how,
                )
                .await
            {
                Ok((observation, elapsed)) => steps.push(Step {
                    observation: protocol.reword(&call.tool, observation),
                    index: call.index,
                    thought: call.thought,
                    tool_name: call.tool,
                    tool_args: args,
                    // Text mode's calls have no ids (a pending one is `step_<index>`).
                    call_id: (state.native || state.history.is_some()).then_some(call.id),
                    turn: state.turn,
                    elapsed,
                }),
                Err(waiting_for) => pending.push(PendingCall {
                    args,
                    waiting_for,
                    ..call
                }),
            }
        }
        steps.sort_by_key(|step| step.index);
        if !pending.is_empty() {
            return Err(SuspendedRun {
                settled: steps,
                pending,
                ..state
            });
        }
        Ok((state, steps))
    }
}

/// The index of the next step: one past the last step's (steps keep their indices when older ones
/// are truncated away).
pub(super) fn next_index(trajectory: &Trajectory) -> usize {
    trajectory
        .steps
        .last()
        .map_or(0, |s| s.index.saturating_add(1))
}

/// After a turn's calls are in the trajectory: a `finish` among them ends the run (with its
/// outputs when they are valid, through the conclusion otherwise) unless it shares the turn with
/// other calls (the model has not seen their results yet) or the caller's messages wait; either
/// postpones it.
pub(super) fn finish_turn(
    agent: &super::DynReAct,
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
        finish.observation = Observation::Output(json!(FINISH_UNSEEN_RESULTS));
        return TurnEnd::Next;
    }
    if interrupts.pending() {
        // The caller wrote while the model was finishing: let it address the messages.
        finish.observation = Observation::Output(json!(FINISH_POSTPONED));
        return TurnEnd::Next;
    }
    match agent.outputs_from_finish(&finish.tool_args) {
        Some(outputs) => TurnEnd::Answer(outputs),
        None => TurnEnd::Conclude,
    }
}
