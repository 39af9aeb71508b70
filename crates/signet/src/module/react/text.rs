//! ReAct in DSPy's text format: each step the model writes `next_thought`, `next_tool_name` and
//! `next_tool_args` as fields; one tool runs per step; the extractor produces the outputs unless
//! `finish` carried them.

use std::sync::Arc;

use serde_json::Value;

use super::driver::{Ask, Driver, RunState, TurnCall, TurnEnd, TurnProtocol, finish_turn};
use super::events::Interrupts;
use super::{
    ReActCore, ReActRun, RunFailure, Step, StopReason, SuspendedRun, Trajectory, Where, as_text,
};
use crate::adapter::{Adapter, Fields};
use crate::module::Error;

/// The text-format turns: the step predictor over the inputs and the rendered trajectory.
pub(super) struct TextTurns<'a> {
    pub(super) agent: &'a ReActCore,
    pub(super) adapter: Arc<dyn Adapter>,
}

impl TurnProtocol for TextTurns<'_> {
    type Output = ReActRun;

    /// Text mode's calls have no ids: a pending call is `step_<index>`.
    fn keeps_call_ids(&self) -> bool {
        false
    }

    async fn ask(
        &mut self,
        driver: &Driver<'_>,
        run: &mut RunState,
        turn: usize,
    ) -> Result<Ask, super::ReActError> {
        let agent = self.agent;
        let at = Where {
            adapter: self.adapter.as_ref(),
            call: driver.call,
            events: driver.events,
        };
        let prediction = match agent
            .call_with_truncation(
                &agent.step,
                driver.inputs,
                &mut run.trajectory,
                at,
                &mut run.usage,
            )
            .await
        {
            Ok(prediction) => prediction,
            Err(RunFailure::TrajectoryTooLong { message }) => {
                return Ok(Ask::Stop(StopReason::ContextWindow { message }));
            }
            // As DSPy: a step that cannot be read ends the loop; the extractor still runs.
            Err(RunFailure::Call(Error::Parse(error))) => {
                return Ok(Ask::Stop(StopReason::UnreadableStep {
                    step: turn,
                    error: error.to_string(),
                }));
            }
            Err(failure) => return Err(run.fail(failure)),
        };
        let fields = &prediction.outputs;
        let mut thought = as_text(fields.get("next_thought").unwrap_or(&Value::Null));
        // A reasoning model may think in `reasoning_content` and leave the field empty.
        if thought.trim().is_empty()
            && let Some(reasoning) = &prediction.completion.reasoning
        {
            thought = reasoning.trim().to_owned();
        }
        let name = as_text(fields.get("next_tool_name").unwrap_or(&Value::Null));
        let args = fields.get("next_tool_args").cloned().unwrap_or(Value::Null);
        Ok(Ask::Calls {
            thought: Some(thought),
            calls: vec![TurnCall::new(None, name, args)],
        })
    }

    /// One call per step: a step's index is its turn.
    fn first_index(&self, _trajectory: &Trajectory, turn: usize) -> usize {
        turn
    }

    fn end_turn(
        &mut self,
        run: &mut RunState,
        turn: usize,
        steps: Vec<Step>,
        interrupts: &mut Interrupts,
    ) -> TurnEnd {
        run.trajectory.steps.extend(steps);
        finish_turn(self.agent, &mut run.trajectory, turn, interrupts)
    }

    fn suspend(self, state: SuspendedRun) -> SuspendedRun {
        state
    }

    fn answer(
        self,
        _driver: &Driver<'_>,
        run: RunState,
        outputs: Fields,
        reasoning: Option<String>,
    ) -> ReActRun {
        ReActRun {
            outputs,
            reasoning,
            trajectory: run.trajectory,
            usage: run.usage,
        }
    }

    async fn conclude(
        self,
        driver: &Driver<'_>,
        run: RunState,
        _interrupts: &mut Interrupts,
    ) -> Result<ReActRun, super::ReActError> {
        let RunState { trajectory, usage } = run;
        self.agent
            .extract(
                driver.inputs,
                trajectory,
                self.adapter.as_ref(),
                driver.call,
                usage,
                driver.events,
            )
            .await
    }
}
