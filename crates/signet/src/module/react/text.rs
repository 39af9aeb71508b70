//! ReAct in DSPy's text format: each step the model writes `next_thought`, `next_tool_name` and
//! `next_tool_args` as fields; one tool runs per step; the extractor produces the outputs unless
//! `finish` carried them.

use serde_json::Value;

use super::driver::{Ask, Driver, RunState, TurnCall};
use super::{DynReAct, ReActError, RunFailure, StopReason, Where, as_text};
use crate::module::{Error, Resolved};

impl DynReAct {
    /// Asks the step predictor for turn `turn`, over the inputs and the rendered trajectory.
    pub(super) async fn ask_text(
        &self,
        resolved: &Resolved,
        driver: &Driver<'_>,
        run: &mut RunState,
        turn: usize,
    ) -> Result<Ask, ReActError> {
        let at = Where {
            adapter: resolved.adapter.as_ref(),
            call: driver.call,
            events: driver.events,
        };
        let inputs = driver.inputs;
        let prediction = match self
            .call_with_truncation(
                &self.step,
                resolved,
                inputs,
                (&mut run.trajectory, &mut run.kept),
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
}
