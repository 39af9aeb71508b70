//! ReAct in DSPy's text format: each step the model writes `next_thought`, `next_tool_name` and
//! `next_tool_args` as fields; one tool runs per step; the extractor produces the outputs unless
//! `finish` carried them.

use serde_json::{Value, json};

use super::events::stop_early;
use super::suspend::{Resumed, Start};
use super::{
    CallMode, Emitter, FINISH, FINISH_POSTPONED, Interrupts, Observation, PendingCall, ReActCore,
    ReActError, ReActEvent, ReActRun, RunFailure, RunOutcome, Step, StopReason, SuspendedRun,
    Trajectory, Where, as_text,
};
use crate::adapter::Fields;
use crate::lm::Usage;
use crate::module::{CallConfig, Error, Resolved};

impl ReActCore {
    /// The text-format loop (see the [module docs](self)).
    pub(super) async fn forward_text(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        resolved: Resolved,
        events: &Emitter,
        interrupts: &mut Interrupts,
        start: Start,
    ) -> Result<RunOutcome<ReActRun>, ReActError> {
        let adapter = resolved.adapter;
        let resumable = start.resumable();
        let max_iters = self.max_iters(call);
        let (mut trajectory, mut usage, first) = match start {
            Start::Fresh { .. } => (Trajectory::default(), Usage::default(), 0),
            Start::Resume { state, decided } => {
                match self.carry_out(state, decided, events).await {
                    Ok(Resumed {
                        mut trajectory,
                        usage,
                        turn,
                        steps,
                    }) => {
                        trajectory.steps.extend(steps);
                        (trajectory, usage, turn.saturating_add(1))
                    }
                    Err(state) => return Ok(RunOutcome::Suspended(state)),
                }
            }
        };
        let mut finished_outputs = None;
        let mut finished = false;
        for index in first..max_iters {
            events.emit(ReActEvent::StepStarted { turn: index });
            interrupts.inject(&mut trajectory, events);
            let prediction = match self
                .call_with_truncation(
                    &self.step,
                    inputs,
                    &mut trajectory,
                    Where {
                        adapter: adapter.as_ref(),
                        call,
                        events,
                    },
                    &mut usage,
                )
                .await
            {
                Ok(prediction) => prediction,
                Err(RunFailure::TrajectoryTooLong { message }) => {
                    stop_early(
                        &mut trajectory,
                        events,
                        StopReason::ContextWindow { message },
                    );
                    break;
                }
                Err(RunFailure::Call(Error::Parse(error))) => {
                    // As DSPy: a step that cannot be read ends the loop; the extractor still runs.
                    stop_early(
                        &mut trajectory,
                        events,
                        StopReason::UnreadableStep {
                            step: index,
                            error: error.to_string(),
                        },
                    );
                    break;
                }
                Err(failure) => return Err(ReActError::new(failure, &trajectory, usage)),
            };
            let fields = &prediction.outputs;
            let mut thought = as_text(fields.get("next_thought").unwrap_or(&Value::Null));
            // A reasoning model may think in `reasoning_content` and leave the field empty.
            if thought.trim().is_empty()
                && let Some(reasoning) = &prediction.completion.reasoning
            {
                thought = reasoning.trim().to_owned();
            }
            let tool_name = as_text(fields.get("next_tool_name").unwrap_or(&Value::Null));
            let tool_args = fields.get("next_tool_args").cloned().unwrap_or(Value::Null);
            events.emit(ReActEvent::Thought {
                turn: index,
                text: thought.clone(),
            });
            let how = CallMode::Attempt { resumable };
            let observed = self
                .observe_with_events(index, &tool_name, &tool_args, &thought, events, how)
                .await;
            let (observation, elapsed) = match observed {
                Ok(observed) => observed,
                Err(waiting_for) => {
                    return Ok(RunOutcome::Suspended(SuspendedRun::new(
                        false,
                        inputs,
                        trajectory,
                        usage,
                        index,
                        Vec::new(),
                        vec![PendingCall {
                            id: format!("step_{index}"),
                            index,
                            tool: tool_name,
                            args: tool_args,
                            thought,
                            waiting_for,
                        }],
                    )));
                }
            };
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
                finished = true;
                break;
            }
        }
        if !finished && trajectory.stopped_early.is_none() {
            stop_early(&mut trajectory, events, StopReason::MaxIters { max_iters });
        }
        if let Some(outputs) = finished_outputs {
            return Ok(RunOutcome::Finished(ReActRun {
                outputs,
                reasoning: None,
                trajectory,
                usage,
            }));
        }
        let run = self
            .extract(inputs, trajectory, adapter.as_ref(), call, usage, events)
            .await?;
        Ok(RunOutcome::Finished(run))
    }
}
