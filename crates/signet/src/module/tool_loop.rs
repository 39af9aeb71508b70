//! `Predict` with tools: native tool calls run (concurrently) until the model answers.

use futures::StreamExt;
use serde_json::Value;

use super::react::{Approval, ApprovalRequest, Limits};
use super::tool_runner::ToolRunner;
use super::{CallConfig, Error, Prediction, Predictor, Resolved};
use crate::adapter::Fields;
use crate::lm::{LmRequest, Message, ToolCall, ToolChoice, Usage};
use crate::tool::Tool;

impl Predictor {
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

    /// Asks `approver` before running a tool that requires confirmation (`#[tool(confirm)]`), as
    /// ReAct does. Without an approver such tools are never run: the model is told the call was
    /// denied.
    pub fn with_approver<F, Fut>(mut self, approver: F) -> Self
    where
        F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Approval> + Send + 'static,
    {
        self.approver = Some(super::tool_runner::approver(approver));
        self
    }

    /// The limits on tool calls, as in ReAct: `tool_timeout` (default 60 s),
    /// `max_observation_chars` and `max_concurrent_tools` apply; the others are ReAct's.
    pub fn with_tool_limits(mut self, limits: Limits) -> Self {
        self.tool_limits = limits;
        self
    }

    pub(super) async fn forward_with_tools(
        &self,
        inputs: &Fields,
        call: &CallConfig,
    ) -> Result<Prediction, Error> {
        let Resolved { lm, adapter } = self.resolve(call)?;
        if !lm.capabilities().function_calling {
            return Err(Error::Unsupported {
                what: format!(
                    "tools were given but the LM `{}` does not declare native function calling; use \
                     ReAct for text-mode tool use",
                    lm.model()
                ),
            });
        }
        let mut messages = adapter.format(&self.signature, &self.demos, inputs);
        let tools: Vec<Value> = self.tools.iter().map(|t| t.to_openai_function()).collect();
        let mut usage = Usage::default();
        for _ in 0..=self.max_tool_turns {
            let mut request = LmRequest::new(messages.clone());
            request.options = self.options.clone();
            request.tools = tools.clone();
            request.tool_choice = Some(ToolChoice::Auto);
            request.parallel_tool_calls = Some(true);
            let completion = lm.complete(&request).await?;
            usage += completion.usage;
            if completion.tool_calls.is_empty() {
                let text = completion.text.clone().unwrap_or_default();
                let outputs = adapter.parse(&self.signature, &text)?;
                return Ok(Prediction {
                    outputs,
                    usage,
                    completion,
                    adapter: adapter.name(),
                });
            }
            let runner = ToolRunner::new(
                &self.tools,
                &[],
                self.approver.as_ref(),
                self.tool_limits.tool_timeout,
                self.tool_limits.max_observation_chars,
            );
            // Concurrently, at most `max_concurrent_tools` at a time; results in call order.
            let thought = completion.text.as_deref().unwrap_or_default();
            let calls: Vec<_> = completion
                .tool_calls
                .iter()
                .map(|call| run_tool(&runner, call, thought))
                .collect();
            let results: Vec<String> = futures::stream::iter(calls)
                .buffered(self.tool_limits.max_concurrent_tools.max(1))
                .collect()
                .await;
            let mut assistant = Message::assistant_tool_calls(completion.tool_calls.clone());
            assistant.content = completion.text.clone().unwrap_or_default();
            messages.push(assistant);
            for (tool_call, result) in completion.tool_calls.iter().zip(results) {
                messages.push(Message::tool_result(&tool_call.id, result));
            }
        }
        Err(Error::TooManyToolTurns {
            turns: self.max_tool_turns,
        })
    }
}

/// One tool call's result as the `tool` message reads it; failures are described, not raised.
async fn run_tool(runner: &ToolRunner<'_>, call: &ToolCall, thought: &str) -> String {
    match super::tool_runner::arguments(call) {
        Ok(args) => runner.run(&call.name, &args, thought).await.as_text(),
        Err(observation) => observation.as_text(),
    }
}
