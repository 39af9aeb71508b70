//! How every tool loop runs one tool call — ReAct's text, native and history modes and
//! `Predict::tool` alike: the tool found by name, `#[tool(confirm)]` asked of the approver (denied
//! when there is none), the time limit, the observation cut to its size, and one wording for each
//! failure (DSPy's `Execution error in <tool>: ...`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::react::{Approval, ApprovalRequest, Approver, Observation};
use crate::tool::{Tool, ToolError};

/// An [`Approver`] from an async closure.
pub(crate) fn approver<F, Fut>(approve: F) -> Approver
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Approval> + Send + 'static,
{
    use futures::FutureExt;
    Arc::new(move |request| approve(request).boxed())
}

/// A borrowed view of a loop's tools and settings (cheap: built for each call).
pub(crate) struct ToolRunner<'a> {
    tools: &'a [Arc<dyn Tool>],
    /// Names the loop handles itself (ReAct's `finish`), listed in the unknown-tool message.
    built_ins: &'a [&'a str],
    approver: Option<&'a Approver>,
    timeout: Option<Duration>,
    max_chars: usize,
}

impl<'a> ToolRunner<'a> {
    /// The runner of `tools`; `built_ins` are names the loop handles itself (listed, not run).
    pub(crate) fn new(
        tools: &'a [Arc<dyn Tool>],
        built_ins: &'a [&'a str],
        approver: Option<&'a Approver>,
        timeout: Option<Duration>,
        max_chars: usize,
    ) -> ToolRunner<'a> {
        ToolRunner {
            tools,
            built_ins,
            approver,
            timeout,
            max_chars,
        }
    }

    /// The tool named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&'a Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Runs `name` with `args`; every failure becomes an observation the model can act on.
    /// `thought` is what the model said before the call (shown to the approver).
    pub(crate) async fn run(&self, name: &str, args: &Value, thought: &str) -> Observation {
        let Some(tool) = self.get(name) else {
            return Observation::Error(format!(
                "Execution error in {name}: there is no tool named `{name}`; the tools are: {}",
                self.tools
                    .iter()
                    .map(|t| t.name())
                    .chain(self.built_ins.iter().copied())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        };
        if tool.requires_confirmation() {
            let request = ApprovalRequest {
                tool: name.to_owned(),
                args: args.clone(),
                thought: thought.to_owned(),
            };
            let approval = match self.approver {
                Some(approver) => approver(request).await,
                None => Approval::Deny(Some("no one is available to approve it".to_owned())),
            };
            if let Approval::Deny(reason) = approval {
                let reason = reason.map(|r| format!(": {r}")).unwrap_or_default();
                return Observation::Error(format!(
                    "Execution error in {name}: this call needs a person's approval and was denied{reason}"
                ));
            }
        }
        let call = tool.call(args.clone());
        let result = match self.timeout {
            Some(limit) => match tokio::time::timeout(limit, call).await {
                Ok(result) => result,
                Err(_) => Err(ToolError::Timeout {
                    tool: name.to_owned(),
                    elapsed: limit,
                }),
            },
            None => call.await,
        };
        let observation = match result {
            Ok(value) => Observation::Output(value),
            Err(error) => Observation::Error(format!("Execution error in {name}: {error}")),
        };
        observation.limited_to(self.max_chars)
    }
}
