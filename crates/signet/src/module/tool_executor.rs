//! Running the tool calls a model wrote, outside a tool loop (DSPy's `ToolCall.execute`).

use std::sync::Arc;

use futures::StreamExt;
use serde_json::Value;

use super::react::{Approver, HtmlAsText, Limits, Observation, ObservationFormatter};
use super::tool_runner::{ToolCallError, ToolRunner, parsed_arguments};
use crate::error::Error;
use crate::lm::ToolCall;
use crate::signature::{ToolCallRecord, ToolCalls};
use crate::tool::Tool;

/// Runs the tool calls of a [`ToolCalls`] output as ReAct and `Predict` with tools run theirs:
/// the tool found by name (an unknown name is an observation listing the tools), the arguments
/// validated, a `#[tool(confirm)]` tool run only when the approver approves, failures worded as
/// DSPy words them (`Execution error in <tool>: ..`), the time and size limits of [`Limits`]. For
/// a loop of your own over a signature with a `ToolCalls` output.
///
/// ```
/// use serde_json::json;
/// use signet::adapter::ToolCalls;
/// use signet::module::{Observation, ToolExecutor};
/// use signet::tool;
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 { a + b }
///
/// let calls: ToolCalls = serde_json::from_value(json!([
///     {"name": "add", "args": {"a": 2, "b": 3}},
///     {"name": "mul", "args": {}},
/// ])).unwrap();
/// let executor = ToolExecutor::new([AddTool]).unwrap();
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let results = executor.execute_all(&calls).await;
/// assert_eq!(results[0], Observation::Output(json!(5)));
/// assert!(matches!(&results[1], Observation::Error(text) if text.starts_with("Execution error in mul: there is no tool named `mul`")));
/// # });
/// ```
#[derive(Clone)]
pub struct ToolExecutor {
    tools: Vec<Arc<dyn Tool>>,
    limits: Limits,
    approver: Option<Approver>,
    formatter: Arc<dyn ObservationFormatter>,
}

impl std::fmt::Debug for ToolExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        f.debug_struct("ToolExecutor")
            .field("tools", &names)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl ToolExecutor {
    /// An executor of `tools` (`Arc<dyn Tool>`s are kept as they are), with the default
    /// [`Limits`] and no approver; two tools of one name are [`Error::ToolNames`].
    pub fn new(
        tools: impl IntoIterator<Item = impl Tool + 'static>,
    ) -> Result<ToolExecutor, Error> {
        let executor = ToolExecutor {
            tools: tools.into_iter().map(crate::tool::share).collect(),
            limits: Limits::default(),
            approver: None,
            formatter: Arc::new(HtmlAsText),
        };
        executor.runner().check_names()?;
        Ok(executor)
    }

    crate::shared::setters! {
        /// The time limit of a call, the size of what a result shows and how many calls of
        /// [`execute_all`](Self::execute_all) run at once (see [`Limits`]).
        fn with_limits(limits: Limits) { limits = limits }

        /// How results are shown (default [`HtmlAsText`]; see [`ObservationFormatter`]).
        fn with_observation_formatter(formatter: impl ObservationFormatter + 'static) {
            formatter = Arc::new(formatter)
        }
    }

    super::tool_runner::approver_setter! {
        /// Asks `approver` before running a `#[tool(confirm)]` tool; without one such tools are
        /// denied (there is no run to suspend here).
    }

    /// Runs one call; every failure is an [`Observation::Error`] in the words a model reads
    /// (`Execution error in <tool>: ..`). [`try_execute`](Self::try_execute) says which failure.
    pub async fn execute(&self, call: &ToolCallRecord) -> Observation {
        let outcome = self.try_execute(call).await;
        outcome.unwrap_or_else(|error| error.observation(&call.name))
    }

    /// Runs one call: the result as the model reads it ([`Observation::Output`], or
    /// [`Observation::Truncated`] when cut or formatted), or the typed reason there is none
    /// (an unknown tool, arguments that are not JSON, a denied approval, the tool's own
    /// [`ToolError`](crate::ToolError)).
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::adapter::ToolCallRecord;
    /// use signet::module::{ToolCallError, ToolExecutor};
    /// use signet::{ToolError, tool};
    ///
    /// /// Divide a by b.
    /// #[tool]
    /// fn divide(a: i64, b: i64) -> Result<i64, String> {
    ///     a.checked_div(b).ok_or_else(|| "division by zero".to_owned())
    /// }
    ///
    /// let executor = ToolExecutor::new([DivideTool]).unwrap();
    /// let call = |name: &str, args| ToolCallRecord { name: name.into(), args, id: None };
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let unknown = executor.try_execute(&call("mul", json!({}))).await;
    /// assert!(matches!(unknown, Err(ToolCallError::UnknownTool { .. })));
    /// let failed = executor.try_execute(&call("divide", json!({"a": 1, "b": 0}))).await;
    /// assert!(matches!(failed, Err(ToolCallError::Tool(ToolError::Failed { .. }))));
    /// let bad = executor.try_execute(&call("divide", json!({"a": "one", "b": 1}))).await;
    /// assert!(matches!(bad, Err(ToolCallError::Tool(ToolError::InvalidArguments { .. }))));
    /// # });
    /// ```
    pub async fn try_execute(&self, call: &ToolCallRecord) -> Result<Observation, ToolCallError> {
        // Arguments the model wrote as text are read as a native call's are.
        let args = match &call.args {
            Value::String(text) => parsed_arguments(&ToolCall::new("", &call.name, text.as_str()))?,
            args => args.clone(),
        };
        self.runner().outcome(&call.name, &args, "").await
    }

    /// Runs every call, at most `max_concurrent_tools` at once, and returns their observations in
    /// the calls' order.
    pub async fn execute_all(&self, calls: &ToolCalls) -> Vec<Observation> {
        futures::stream::iter(&calls.tool_calls)
            .map(|call| self.execute(call))
            .buffered(self.limits.max_concurrent_tools.max(1))
            .collect()
            .await
    }

    fn runner(&self) -> ToolRunner<'_> {
        ToolRunner::new(&self.tools, &[], self.approver.as_ref(), &self.limits)
            .with_formatter(self.formatter.as_ref())
    }
}
