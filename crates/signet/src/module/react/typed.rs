//! `ReAct<S>`: the loop over a typed signature.

use std::sync::Arc;
use std::time::Duration;

use super::{
    Approval, ApprovalRequest, ReActCore, ReActEvent, ReActMode, ReActOutput, TruncationPolicy,
};
use crate::adapter::Adapter;
use crate::lm::Lm;
use crate::module::{CallConfig, Error};
use crate::signature::Signature;
use crate::tool::Tool;

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

    /// Bounds on observation size, tool concurrency and LM calls (see [`Limits`](super::Limits)).
    ///
    /// ```
    /// use signet::module::{Limits, ReAct};
    /// # #[derive(signet::Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let agent = ReAct::<Ask>::new(vec![]).with_limits(Limits { max_lm_calls: 12, ..Limits::default() });
    /// assert_eq!(agent.core().limits().max_lm_calls, 12);
    /// ```
    pub fn with_limits(mut self, limits: super::Limits) -> Self {
        self.core = self.core.with_limits(limits);
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

    /// Sampling options (temperature, length limit, ..) for every LM call of a run.
    ///
    /// ```
    /// use signet::lm::LmOptions;
    /// use signet::module::ReAct;
    /// # #[derive(signet::Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let agent = ReAct::<Ask>::new(vec![])
    ///     .with_options(LmOptions { temperature: Some(0.0), ..LmOptions::default() });
    /// assert_eq!(agent.core().step_predictor().options().temperature, Some(0.0));
    /// ```
    pub fn with_options(mut self, options: crate::lm::LmOptions) -> Self {
        self.core = self.core.with_options(options);
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
        let inputs = crate::module::to_example(&input)?;
        Ok(self.core.stream(inputs, CallConfig::default()))
    }

    /// [`stream`](Self::stream) with a channel for follow-up messages (see
    /// [`ReActCore::stream_with_interrupts`]).
    pub fn stream_with_interrupts(
        &self,
        input: S::Input,
        interrupts: tokio::sync::mpsc::UnboundedReceiver<String>,
    ) -> Result<futures::stream::BoxStream<'_, ReActEvent>, Error> {
        let inputs = crate::module::to_example(&input)?;
        Ok(self
            .core
            .stream_with_interrupts(inputs, CallConfig::default(), interrupts))
    }

    /// The typed outputs of a streamed run's [`ReActEvent::Done`] event.
    ///
    /// ```
    /// use signet::module::ReAct;
    /// # #[derive(signet::Signature)]
    /// # struct Ask { #[input] question: String, #[output] answer: String }
    /// let outputs = serde_json::json!({"answer": "42"}).as_object().unwrap().clone();
    /// let output = ReAct::<Ask>::output_of(&outputs).unwrap();
    /// assert_eq!(output.answer, "42");
    /// ```
    pub fn output_of(outputs: &crate::adapter::Example) -> Result<S::Output, Error> {
        crate::module::from_example(outputs)
    }

    /// Runs the agent on `input`.
    pub async fn call(&self, input: S::Input) -> Result<ReActOutput<S::Output>, Error> {
        let inputs = crate::module::to_example(&input)?;
        let run = self.core.forward(&inputs, &CallConfig::default()).await?;
        Ok(ReActOutput {
            output: crate::module::from_example(&run.outputs)?,
            reasoning: run.reasoning,
            trajectory: run.trajectory,
            usage: run.usage,
        })
    }
}
