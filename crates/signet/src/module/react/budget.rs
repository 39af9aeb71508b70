//! The context budget of a run: how many tokens a prompt may take, and shortening the trajectory
//! (with the run's [`TruncationPolicy`]) until it fits. ReAct's text and native modes and `Predict`
//! with tools keep their prompts within it.

use super::events::Emitter;
use super::{CannotTruncate, Limits, ReActEvent, Trajectory, TruncationPolicy};
use crate::lm::{Lm, LmOptions};

/// The tokens a prompt may take (`None` when the context window is unknown) and the policy that
/// shortens the trajectory.
pub(crate) struct ContextBudget<'a> {
    tokens: Option<usize>,
    policy: &'a dyn TruncationPolicy,
}

impl<'a> ContextBudget<'a> {
    /// The context window ([`Limits::context_window`], else the LM's
    /// [`Capabilities::context_window`](crate::lm::Capabilities::context_window)) less the reply's
    /// room (`max_tokens` when set, else an eighth of the window).
    pub(crate) fn new(
        limits: &Limits,
        lm: &dyn Lm,
        options: &LmOptions,
        policy: &'a dyn TruncationPolicy,
    ) -> ContextBudget<'a> {
        let tokens = limits
            .context_window
            .or(lm.capabilities().context_window)
            .map(|window| {
                let window = window as usize;
                let reply = options.max_tokens.map_or(window / 8, |t| t as usize);
                window.saturating_sub(reply)
            });
        ContextBudget { tokens, policy }
    }

    /// Truncates `trajectory` while the prompt `measure` counts is over the budget, announcing it
    /// with a `compacted` event. `Err` says why it still does not fit.
    pub(crate) async fn fit(
        &self,
        trajectory: &mut Trajectory,
        events: &Emitter,
        measure: &(dyn Fn(&Trajectory) -> usize + Sync),
    ) -> Result<(), String> {
        let Some(budget) = self.tokens else {
            return Ok(());
        };
        let (tokens_before, steps_before) = (measure(trajectory), trajectory.steps.len());
        let mut tokens = tokens_before;
        let mut outcome = Ok(());
        // Each truncation shortens the trajectory; a policy that stops doing so is stopped too.
        for _ in 0..=steps_before {
            if tokens <= budget {
                break;
            }
            if let Err(reason) = self.policy.truncate(trajectory).await {
                outcome = Err(format!(
                    "the prompt needs about {tokens} tokens, more than the {budget} the context \
                     window leaves it, and {reason}"
                ));
                break;
            }
            tokens = measure(trajectory);
        }
        if outcome.is_ok() && tokens > budget {
            outcome = Err(format!(
                "the prompt still needs about {tokens} tokens after truncation, more than the \
                 {budget} the context window leaves it"
            ));
        }
        if tokens < tokens_before || trajectory.steps.len() < steps_before {
            announce(events, steps_before, trajectory, tokens_before, tokens);
        }
        outcome
    }

    /// Truncates `trajectory` once, after the provider refused it as too long.
    pub(crate) async fn compact(
        &self,
        trajectory: &mut Trajectory,
        events: &Emitter,
        measure: &(dyn Fn(&Trajectory) -> usize + Sync),
    ) -> Result<(), CannotTruncate> {
        let (tokens_before, steps_before) = (measure(trajectory), trajectory.steps.len());
        self.policy.truncate(trajectory).await?;
        announce(
            events,
            steps_before,
            trajectory,
            tokens_before,
            measure(trajectory),
        );
        Ok(())
    }
}

fn announce(
    events: &Emitter,
    steps_before: usize,
    trajectory: &Trajectory,
    tokens_before: usize,
    tokens_after: usize,
) {
    events.emit(ReActEvent::Compacted {
        dropped_steps: steps_before.saturating_sub(trajectory.steps.len()),
        tokens_before,
        tokens_after,
    });
}
