//! The turns of ReAct's step predictor, in text or native mode: how the model is asked
//! ([`ask_text`](DynReAct::ask_text), [`NativeSteps`]), a `finish` that ends the run, and the
//! extractor when it did not carry the outputs.

use super::driver::{
    Ask, Driver, RunState, TurnEnd, TurnProtocol, finish_turn, next_index, reject_answer,
    stopped_call,
};
use super::events::Interrupts;
use super::native::NativeSteps;
use super::{DynReAct, FINISH, ReActError, ReActRun, Step, SuspendedRun, Trajectory};
use crate::adapter::Fields;
use crate::module::Resolved;
use crate::module::check::FailedAttempt;

/// The step predictor's turns: DSPy's text fields, or native tool calls when `native` is set.
pub(super) struct ReActTurns<'a> {
    pub(super) agent: &'a DynReAct,
    /// The step predictor's LM and adapter, resolved once for the run.
    pub(super) resolved: Resolved,
    pub(super) native: Option<NativeSteps>,
}

impl TurnProtocol for ReActTurns<'_> {
    type Output = ReActRun;

    async fn ask(
        &mut self,
        driver: &Driver<'_>,
        run: &mut RunState,
        turn: usize,
    ) -> Result<Ask, ReActError> {
        match &self.native {
            Some(native) => native.ask(self.agent, driver, run, turn).await,
            None => self.agent.ask_text(&self.resolved, driver, run, turn).await,
        }
    }

    /// In text mode one call per step: a step's index is its turn.
    fn first_index(&self, trajectory: &Trajectory, turn: usize) -> usize {
        match self.native {
            Some(_) => next_index(trajectory),
            None => turn,
        }
    }

    fn end_turn(
        &mut self,
        run: &mut RunState,
        turn: usize,
        steps: Vec<Step>,
        interrupts: &mut Interrupts,
    ) -> TurnEnd {
        // A turn adds a step or a few: grown to fit, not to a capacity of four steps (a waiting
        // run holds its trajectory).
        run.trajectory.steps.reserve_exact(steps.len());
        run.trajectory.steps.extend(steps);
        finish_turn(self.agent, &mut run.trajectory, turn, interrupts)
    }

    /// A native `finish` stopped while it was written is kept as that call; in text mode the
    /// stopped reply is the extractor's, and the refusal follows the steps.
    fn stopped(&mut self, run: &mut RunState, next: usize, attempt: &FailedAttempt, message: &str) {
        match self.native {
            Some(_) => {
                stopped_call(run, next, FINISH, attempt, message);
            }
            None => reject_answer(&mut run.trajectory, None, message),
        }
    }

    fn suspend(self, state: SuspendedRun) -> SuspendedRun {
        SuspendedRun {
            native: self.native.is_some(),
            ..state
        }
    }

    fn answer(
        self,
        driver: &Driver<'_>,
        run: RunState,
        outputs: Fields,
        reasoning: Option<String>,
    ) -> ReActRun {
        let RunState {
            trajectory, usage, ..
        } = run;
        if self.native.is_some() {
            self.agent
                .record_native_run(driver.inputs, &trajectory, &outputs);
        }
        ReActRun {
            outputs,
            reasoning,
            trajectory,
            usage,
        }
    }

    async fn conclude(
        &mut self,
        driver: &Driver<'_>,
        run: &mut RunState,
        _interrupts: &mut Interrupts,
    ) -> Result<(Fields, Option<String>), ReActError> {
        self.agent.extract(driver, run).await
    }
}
