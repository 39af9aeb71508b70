//! `Predict` with tools: native tool calls run (concurrently) until the model answers.

use futures::future::join_all;
use serde_json::Value;

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

    pub(super) async fn forward_with_tools(
        &self,
        inputs: &Fields,
        call: &CallConfig,
    ) -> Result<Prediction, Error> {
        let Resolved { lm, adapter } = self.resolve(call)?;
        if !lm.capabilities().function_calling {
            return Err(Error::InvalidSignature {
                message: format!(
                    "tools were given but the LM `{}` does not support native function calling; use ReAct \
                     for text-mode tool use",
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
            let results = join_all(completion.tool_calls.iter().map(|c| self.run_tool(c))).await;
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

    /// One tool call's result as the `tool` message reads it; failures are described, not raised.
    async fn run_tool(&self, call: &ToolCall) -> String {
        let Some(tool) = self.tools.iter().find(|t| t.name() == call.name) else {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
            return format!(
                "Error: there is no tool named `{}`; the tools are: {}",
                call.name,
                names.join(", ")
            );
        };
        let args = match call.args() {
            Ok(args) => args,
            Err(e) => {
                return format!(
                    "Error: the arguments are not valid JSON ({e}): {}",
                    call.arguments
                );
            }
        };
        match tool.call(args).await {
            Ok(Value::String(text)) => text,
            Ok(value) => value.to_string(),
            Err(error) => format!("Error: {error}"),
        }
    }
}
