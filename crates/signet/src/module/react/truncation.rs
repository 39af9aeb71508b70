//! Shortening a trajectory that no longer fits the model's context window.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::json;

use super::{Observation, Step, Trajectory};
use crate::adapter::ChatAdapter;
use crate::lm::Lm;
use crate::module::DynPredict;
use crate::signature::{DynSignature, Field};

/// How to shorten a trajectory that no longer fits the model's context window. ReAct calls it (up
/// to 3 times per LM call) when the LM reports `ContextWindowExceeded`.
///
/// ```
/// use futures::future::BoxFuture;
/// use signet::module::Trajectory;
/// use signet::module::react::{CannotTruncate, TruncationPolicy};
///
/// /// Forgets every step but the last.
/// #[derive(Debug)]
/// struct KeepLast;
///
/// impl TruncationPolicy for KeepLast {
///     fn truncate<'a>(
///         &'a self,
///         trajectory: &'a mut Trajectory,
///     ) -> BoxFuture<'a, Result<(), CannotTruncate>> {
///         let len = trajectory.steps.len();
///         let result = if len < 2 {
///             Err(CannotTruncate::OneStep)
///         } else {
///             trajectory.steps.drain(..len - 1);
///             Ok(())
///         };
///         Box::pin(async move { result })
///     }
/// }
/// # let _ = KeepLast;
/// ```
pub trait TruncationPolicy: Send + Sync + std::fmt::Debug {
    /// Shortens `trajectory` in place, or says why it cannot be shortened.
    fn truncate<'a>(
        &'a self,
        trajectory: &'a mut Trajectory,
    ) -> BoxFuture<'a, Result<(), CannotTruncate>>;
}

/// Why a [`TruncationPolicy`] could not shorten a trajectory. Its text ends the run's
/// `TrajectoryTooLong` message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CannotTruncate {
    /// No tool call is left to drop.
    #[error("the trajectory has no tool call left to drop")]
    NothingLeft,
    /// One tool call is left, which the policy keeps (DSPy's rule for its `truncate_trajectory`).
    #[error(
        "the trajectory is too long so your prompt exceeded the context window, but the \
         trajectory cannot be truncated because it only has one tool call"
    )]
    OneStep,
    /// The policy returned without shortening the history (history mode keeps the turns whose
    /// calls remain, and none went).
    #[error("the truncation policy removed no turn")]
    RemovedNothing,
    /// A policy's own reason.
    #[error("{0}")]
    Other(String),
}

/// Drops the oldest step (DSPy's behaviour): a trajectory of one step (or none) cannot be
/// truncated, as DSPy's `truncate_trajectory` refuses at four keys or fewer.
#[derive(Debug, Clone, Copy, Default)]
pub struct DropOldest;

impl TruncationPolicy for DropOldest {
    fn truncate<'a>(
        &'a self,
        trajectory: &'a mut Trajectory,
    ) -> BoxFuture<'a, Result<(), CannotTruncate>> {
        let result = if trajectory.steps.is_empty() {
            Err(CannotTruncate::NothingLeft)
        } else if trajectory.steps.len() == 1 {
            Err(CannotTruncate::OneStep)
        } else {
            trajectory.steps.remove(0);
            Ok(())
        };
        futures::future::ready(result).boxed()
    }
}

/// Keeps the first step (often the plan) and drops the oldest after it.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeepFirst;

impl TruncationPolicy for KeepFirst {
    fn truncate<'a>(
        &'a self,
        trajectory: &'a mut Trajectory,
    ) -> BoxFuture<'a, Result<(), CannotTruncate>> {
        let result = match trajectory.steps.len() {
            0 => Err(CannotTruncate::NothingLeft),
            1 => {
                trajectory.steps.clear();
                Ok(())
            }
            _ => {
                trajectory.steps.remove(1);
                Ok(())
            }
        };
        futures::future::ready(result).boxed()
    }
}

/// Keeps only the most recent steps, at most `n` (and at least one fewer than before).
#[derive(Debug, Clone, Copy)]
pub struct SlidingWindow(pub usize);

impl TruncationPolicy for SlidingWindow {
    fn truncate<'a>(
        &'a self,
        trajectory: &'a mut Trajectory,
    ) -> BoxFuture<'a, Result<(), CannotTruncate>> {
        let len = trajectory.steps.len();
        let result = if len == 0 {
            Err(CannotTruncate::NothingLeft)
        } else {
            let keep = self.0.min(len - 1);
            trajectory.steps.drain(..len - keep);
            Ok(())
        };
        futures::future::ready(result).boxed()
    }
}

/// Replaces the older steps by one summary written by an LM (keeping the `keep_recent` newest
/// steps as they are). If the summary call fails, the oldest step is dropped instead.
#[derive(Clone)]
pub struct Summarize {
    summarizer: DynPredict,
    keep_recent: usize,
}

impl std::fmt::Debug for Summarize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Summarize")
            .field("keep_recent", &self.keep_recent)
            .finish_non_exhaustive()
    }
}

/// The tool name of a summary step.
pub(super) const SUMMARY_STEP: &str = "summary_of_earlier_steps";

impl Summarize {
    /// Summaries written by `lm`, keeping the 2 newest steps.
    pub fn new(lm: Arc<dyn Lm>) -> Summarize {
        let signature = DynSignature::new("SummarizeTrajectory")
            .with_instructions(crate::adapter::templates::trajectory_summary_instructions())
            .with_input(Field::str("trajectory"))
            .with_output(Field::str("summary"));
        Summarize {
            summarizer: DynPredict::new(signature)
                .with_lm(lm)
                .with_adapter(Arc::new(ChatAdapter::new())),
            keep_recent: 2,
        }
    }

    /// How many of the newest steps stay as they are (default 2).
    pub fn keep_recent(mut self, steps: usize) -> Self {
        self.keep_recent = steps;
        self
    }
}

impl TruncationPolicy for Summarize {
    fn truncate<'a>(
        &'a self,
        trajectory: &'a mut Trajectory,
    ) -> BoxFuture<'a, Result<(), CannotTruncate>> {
        async move {
            let len = trajectory.steps.len();
            if len == 0 {
                return Err(CannotTruncate::NothingLeft);
            }
            // At least two steps are folded into the summary, or the trajectory would not shrink.
            let fold = len.saturating_sub(self.keep_recent).max(2.min(len));
            if fold < 2 {
                return DropOldest.truncate(trajectory).await;
            }
            let older = Trajectory { steps: trajectory.steps[..fold].to_vec(), ..Trajectory::default() };
            let inputs = json!({"trajectory": older.render(&ChatAdapter::new())});
            let inputs = inputs.as_object().cloned().unwrap_or_default();
            match self.summarizer.forward(&inputs).await {
                Ok(prediction) => {
                    let summary = prediction.outputs.get("summary").cloned().unwrap_or_default();
                    let first = trajectory.steps[0].index;
                    let last = trajectory.steps[fold - 1].index;
                    trajectory.steps.splice(
                        ..fold,
                        [Step {
                            index: first,
                            thought: format!("Steps {first} to {last}, summarised to save space."),
                            tool_name: SUMMARY_STEP.to_owned(),
                            tool_args: json!({}),
                            observation: Observation::Output(summary),
                            call_id: None,
                            turn: trajectory.steps[0].turn,
                            elapsed: std::time::Duration::ZERO,
                        }],
                    );
                    Ok(())
                }
                Err(error) => {
                    tracing::warn!(%error, "summarising the trajectory failed; dropping the oldest step");
                    DropOldest.truncate(trajectory).await
                }
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(index: usize) -> Step {
        Step {
            index,
            thought: format!("thought {index}"),
            tool_name: "add".to_owned(),
            tool_args: json!({}),
            observation: Observation::Output(json!(index)),
            call_id: None,
            turn: index,
            elapsed: std::time::Duration::ZERO,
        }
    }

    #[tokio::test]
    async fn drop_oldest_keeps_the_last_step_as_dspy() {
        let mut trajectory = Trajectory {
            steps: vec![step(0), step(1)],
            ..Trajectory::default()
        };
        DropOldest.truncate(&mut trajectory).await.unwrap();
        assert_eq!(trajectory.steps.len(), 1);
        assert_eq!(trajectory.steps[0].index, 1);
        // One tool call (four keys in DSPy's trajectory) cannot be truncated.
        let error = DropOldest.truncate(&mut trajectory).await.unwrap_err();
        assert_eq!(error, CannotTruncate::OneStep);
        assert!(
            error.to_string().contains("only has one tool call"),
            "{error}"
        );
        assert_eq!(trajectory.steps.len(), 1);
        trajectory.steps.clear();
        assert_eq!(
            DropOldest.truncate(&mut trajectory).await,
            Err(CannotTruncate::NothingLeft)
        );
    }
}
