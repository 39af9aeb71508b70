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
use crate::module::check::FailedAttempt;
use crate::module::tool_runner::ToolRunner;

/// What a run has so far: its steps and the LM usage, and the trajectory's text as last written.
#[derive(Default)]
pub(crate) struct RunState {
    pub(crate) trajectory: Trajectory,
    pub(crate) usage: Usage,
    pub(crate) kept: KeptText,
    /// The most turns the run takes: the step limit, raised by re-asks after refused answers.
    pub(crate) limit: usize,
    /// The tools the next turn offers (and the answering tool), after a refused answer whose
    /// checks offered some.
    pub(crate) offer: Option<Vec<String>>,
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

    /// Records that the answer given before turn `next` was refused by the run's output
    /// checks: the model reads `message` before that turn. By default the answering call of the
    /// last turn gets it as its error result, or (an answer in text) it follows the last step
    /// as a user message.
    fn reject(&mut self, run: &mut RunState, next: usize, message: &str) {
        let _ = next;
        reject_answer(&mut run.trajectory, self.answering_tool(), message);
    }

    /// Whether the usage of each LM call is recorded in the trace as it is made (ReAct's turns),
    /// rather than all at once by the protocol's caller (`Predict` with tools).
    fn records_usage(&self) -> bool {
        true
    }

    /// Records an answer a check stopped while it streamed (`attempt`: the fields written so
    /// far), before turn `next`: the model reads `message` then. By default an answer being
    /// written as a call of the answering tool becomes that call, with the fields so far as its
    /// arguments and the refusal as its error result, so the model sees what it wrote; any
    /// other reply (a text answer, the extractor's) is followed by the message as a user
    /// message.
    fn stopped(&mut self, run: &mut RunState, next: usize, attempt: &FailedAttempt, message: &str) {
        match self.answering_tool() {
            Some(tool) => {
                stopped_call(run, next, tool, attempt, message);
            }
            None => reject_answer(&mut run.trajectory, None, message),
        }
    }

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

    /// The run's outputs (and the extractor's reasoning) once the loop ended without an answer
    /// (the extractor; the history mode's forced `submit`; `Predict`'s error). They are checked
    /// like any answer, and the loop may go on after it.
    fn conclude(
        &mut self,
        driver: &Driver<'_>,
        run: &mut RunState,
        interrupts: &mut Interrupts,
    ) -> impl Future<Output = Result<(Fields, Option<String>), ReActError>> + Send;
}

/// An answer of a run, checked.
enum Judged {
    /// Taken: the outputs (a fallback's, when every answer was refused) and the reasoning.
    Taken(Fields, Option<String>),
    /// Refused: the model was told why, and the loop goes on.
    Refused,
}

/// The text the model reads when its answer was refused, before the checks' messages.
pub(crate) const REFUSED: &str = "The answer was not accepted:";

/// The default [`TurnProtocol::reject`]: the last step's answering call (in the last turn) gets
/// `message` as its error; otherwise the message follows the last step as a user message.
pub(crate) fn reject_answer(trajectory: &mut Trajectory, answering: Option<&str>, message: &str) {
    let text = format!("{REFUSED}\n{message}");
    let last_turn = trajectory.steps.last().map(|s| s.turn);
    let answering_step = trajectory
        .steps
        .iter_mut()
        .rev()
        .find(|s| Some(s.turn) == last_turn && answering.is_some_and(|a| s.tool_name == a));
    match answering_step {
        Some(step) => step.observation = Observation::Error(text),
        None => {
            let after = trajectory.steps.last().map(|s| s.index);
            trajectory
                .user_messages
                .push(super::UserMessage { after, text });
        }
    }
}

/// The answering call `tool` that a check stopped while it was written, as a step of the turn
/// before `next`: the fields written so far as its arguments, the refusal as its error.
pub(crate) fn stopped_call(
    run: &mut RunState,
    next: usize,
    tool: &str,
    attempt: &FailedAttempt,
    message: &str,
) -> Step {
    let turn = next.saturating_sub(1);
    let step = Step {
        index: next_index(&run.trajectory),
        thought: String::new(),
        tool_name: tool.to_owned(),
        tool_args: Value::Object(attempt.outputs.clone()),
        observation: Observation::Error(format!("{REFUSED}\n{message}")),
        call_id: Some(format!("call_stopped_{turn}")),
        turn,
        elapsed: Duration::ZERO,
    };
    run.trajectory.steps.push(step.clone());
    step
}

/// What a run checks its answers with: the checks, the signature of the outputs (for a
/// fallback), and the watch that stops a reply while it streams (when a check watches).
pub(crate) struct Checking<'a> {
    pub(crate) checks: &'a std::sync::Arc<crate::module::check::Checks>,
    pub(crate) signature: &'a crate::signature::DynSignature,
    pub(crate) watch: Option<std::sync::Arc<crate::module::check::watch::Watch>>,
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
    /// The run's output checks, if it has any.
    pub(crate) checking: Option<Checking<'a>>,
}

impl Driver<'_> {
    /// The loop, with `protocol` asking the model and recording the turns.
    pub(crate) async fn run<P: TurnProtocol>(
        &self,
        mut protocol: P,
        interrupts: &mut Interrupts,
        start: Start,
    ) -> Result<RunOutcome<P::Output>, ReActError> {
        let mut run = RunState {
            limit: self.max_iters,
            ..RunState::default()
        };
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
            run.trajectory = state.trajectory;
            run.usage = state.usage;
            end = protocol.end_turn(&mut run, turn, steps, interrupts);
            turn = turn.saturating_add(1);
        }
        loop {
            // `turn` is the next turn's number; `end` says how the last one ended.
            let answer = match std::mem::replace(&mut end, TurnEnd::Next) {
                TurnEnd::Answer(outputs) => Some(Ok((outputs, None))),
                TurnEnd::Conclude => {
                    Some(self.conclude(&mut protocol, &mut run, interrupts).await?)
                }
                TurnEnd::Next if turn >= run.limit => {
                    if run.trajectory.stopped_early.is_none() {
                        let max_iters = self.max_iters;
                        let reason = StopReason::MaxIters { max_iters };
                        stop_early(&mut run.trajectory, self.events, reason);
                    }
                    Some(self.conclude(&mut protocol, &mut run, interrupts).await?)
                }
                TurnEnd::Next => None,
            };
            if let Some(answer) = answer {
                match self
                    .judge(&mut protocol, &mut run, turn, answer)
                    .map_err(|e| *e)?
                {
                    Judged::Taken(outputs, reasoning) => {
                        let answer = protocol.answer(self, run, outputs, reasoning);
                        return Ok(RunOutcome::Finished(answer));
                    }
                    Judged::Refused => continue,
                }
            }
            self.events.emit(ReActEvent::StepStarted { turn });
            protocol.receive(interrupts, &mut run, self.events);
            self.watch_next(&run);
            let asked = protocol.ask(self, &mut run, turn).await;
            if let Some(stopped) = self.stopped() {
                turn = turn.saturating_add(1);
                match self
                    .judge(&mut protocol, &mut run, turn, Err(stopped))
                    .map_err(|e| *e)?
                {
                    Judged::Taken(outputs, reasoning) => {
                        let answer = protocol.answer(self, run, outputs, reasoning);
                        return Ok(RunOutcome::Finished(answer));
                    }
                    Judged::Refused => continue,
                }
            }
            let (thought, calls) = match asked? {
                Ask::Calls { thought, calls } => (thought, calls),
                Ask::Answer { outputs, reasoning } => {
                    turn = turn.saturating_add(1);
                    end = TurnEnd::Next;
                    match self
                        .judge(&mut protocol, &mut run, turn, Ok((outputs, reasoning)))
                        .map_err(|e| *e)?
                    {
                        Judged::Taken(outputs, reasoning) => {
                            let answer = protocol.answer(self, run, outputs, reasoning);
                            return Ok(RunOutcome::Finished(answer));
                        }
                        Judged::Refused => continue,
                    }
                }
                Ask::Stop(reason) => {
                    stop_early(&mut run.trajectory, self.events, reason);
                    turn = turn.saturating_add(1);
                    end = TurnEnd::Conclude;
                    continue;
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
    }

    /// The protocol's conclusion (the extractor, ..): its outputs, or the attempt a check's
    /// watcher stopped while the answer streamed.
    async fn conclude<P: TurnProtocol>(
        &self,
        protocol: &mut P,
        run: &mut RunState,
        interrupts: &mut Interrupts,
    ) -> Result<Result<(Fields, Option<String>), FailedAttempt>, ReActError> {
        self.watch_next(run);
        // Boxed: the conclusion's future is the loop's largest, and a run spends most of its
        // life in the turns (each run in flight would otherwise hold its room, ~1 KB, all along).
        let concluded = Box::pin(protocol.conclude(self, run, interrupts)).await;
        if let Some(stopped) = self.stopped() {
            return Ok(Err(stopped));
        }
        concluded.map(Ok)
    }

    /// Before a reply that may be the answer: the watch reads the run so far.
    fn watch_next(&self, run: &RunState) {
        if let Some(watch) = self.checking.as_ref().and_then(|c| c.watch.as_ref()) {
            watch.set_trajectory(&run.trajectory, self.runner.tools());
        }
    }

    /// The attempt a check's watcher stopped while it streamed, if one was (the reply's own
    /// result is then not used).
    fn stopped(&self) -> Option<FailedAttempt> {
        let stopped = self.checking.as_ref()?.watch.as_ref()?.take_stopped()?;
        Some(stopped)
    }

    /// An answer of the run — its outputs, or an attempt a watcher already refused — checked:
    /// taken when it passes (or the run has no checks); refused while re-asks remain (the model
    /// is told why before turn `next`, which the run gets, with one more when the checks offer
    /// tools); after the last, the fallback's outputs, or the run fails with
    /// [`ChecksFailed`](crate::module::check::ChecksFailed).
    fn judge<P: TurnProtocol>(
        &self,
        protocol: &mut P,
        run: &mut RunState,
        next: usize,
        answer: Result<(Fields, Option<String>), FailedAttempt>,
    ) -> Result<Judged, Box<ReActError>> {
        use crate::module::check::{Answer, FailedRun};
        let Some(checking) = &self.checking else {
            return Ok(match answer {
                Ok((outputs, reasoning)) => Judged::Taken(outputs, reasoning),
                // No checks, no watch: nothing stops a reply.
                Err(attempt) => Judged::Taken(attempt.outputs, None),
            });
        };
        let refused = match answer {
            Ok((outputs, reasoning)) => {
                let judged =
                    Answer::new(&outputs, self.inputs).after(&run.trajectory, self.runner.tools());
                let failures = checking.checks.judge(&judged);
                if failures.is_empty() {
                    return Ok(Judged::Taken(outputs, reasoning));
                }
                FailedAttempt::new(outputs, failures)
            }
            Err(stopped) => {
                // The stopped call counts; its tokens are unknown (a stream reports them at its
                // end).
                let stopped_call = Usage {
                    lm_calls: 1,
                    stopped_replies: 1,
                    ..Usage::default()
                };
                run.usage += stopped_call;
                if protocol.records_usage() {
                    crate::trace::record_usage(stopped_call);
                }
                stopped
            }
        };
        let message = refused.message();
        let mut offered: Vec<String> = Vec::new();
        for tool in refused.failures.iter().flat_map(|f| &f.offer_tools) {
            if !offered.contains(tool) {
                offered.push(tool.clone());
            }
        }
        let stopped_early = refused.stopped_early;
        run.trajectory.refused_answers.push(refused);
        let attempts = &run.trajectory.refused_answers;
        let reask = attempts.len() <= checking.checks.max_reasks();
        crate::module::predict_checks::report_refused(Some(self.events), attempts, reask);
        if reask {
            let reasked = Usage {
                reasks: 1,
                ..Usage::default()
            };
            run.usage += reasked;
            if protocol.records_usage() {
                crate::trace::record_usage(reasked);
            }
            if stopped_early {
                let attempt = run.trajectory.refused_answers.last().cloned();
                if let Some(attempt) = attempt {
                    protocol.stopped(run, next, &attempt, &message);
                }
            } else {
                protocol.reject(run, next, &message);
            }
            let turns = if offered.is_empty() { 1 } else { 2 };
            run.offer = (!offered.is_empty()).then_some(offered);
            run.limit = run.limit.max(next.saturating_add(turns));
            run.trajectory.stopped_early = None;
            return Ok(Judged::Refused);
        }
        let failed = FailedRun {
            signature: checking.signature,
            inputs: self.inputs,
            trajectory: Some(&run.trajectory),
            attempts,
        };
        match checking.checks.fall_back(&failed) {
            Some(outputs) => {
                tracing::warn!(
                    attempts = attempts.len(),
                    "the answer failed its checks on every attempt; the fallback answers"
                );
                self.events.emit(ReActEvent::CheckFallback {
                    attempts: attempts.len(),
                });
                run.trajectory.check_fallback = true;
                Ok(Judged::Taken(outputs, None))
            }
            None => {
                let attempts = std::mem::take(&mut run.trajectory.refused_answers);
                let failure = crate::module::check::ChecksFailed::new(attempts.clone());
                run.trajectory.refused_answers = attempts;
                Err(Box::new(run.fail(crate::error::Error::Checks(failure))))
            }
        }
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
            tool.map_or(crate::tool::ToolType::Function, |tool| tool.tool_type())
                .as_str(),
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
