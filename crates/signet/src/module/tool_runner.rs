//! How every tool loop runs one tool call — ReAct's text, native and history modes and
//! `Predict::tool` alike: the tool found by name, `#[tool(confirm)]` asked of the approver (denied
//! when there is none), the time limit, the observation cut to its size, and one wording for each
//! failure (DSPy's `Execution error in <tool>: ...`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::react::approval::{Approval, ApprovalRequest, Approver, Decision, Waiting};
use super::react::formatting::{HtmlAsText, ObservationFormatter};
use super::react::limits::Limits;
use super::react::trajectory::Observation;
use crate::error::Error;
use crate::journal::{Journal, run_tool};
use crate::lm::ToolCall;
use crate::tool::{Tool, ToolError};

/// Why a tool call has no result. A tool loop shows it to the model as DSPy words a failure,
/// `Execution error in <tool>: <this error>`; [`ToolExecutor::try_execute`](super::ToolExecutor::try_execute)
/// returns it, to branch on.
///
/// ```
/// use signet::module::ToolCallError;
/// let error = ToolCallError::UnknownTool { name: "mul".into(), available: vec!["add".into()] };
/// assert_eq!(error.to_string(), "there is no tool named `mul`; the tools are: add");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolCallError {
    /// No tool of the loop has this name.
    #[error("there is no tool named `{name}`; the tools are: {}", available.join(", "))]
    UnknownTool {
        /// The name the model wrote.
        name: String,
        /// The names it could have written.
        available: Vec<String>,
    },
    /// The arguments, written as text, are not JSON.
    #[error("the arguments are not valid JSON ({reason}): {arguments}")]
    ArgumentsNotJson {
        /// What the JSON parser said.
        reason: String,
        /// The text the model wrote.
        arguments: String,
    },
    /// A `#[tool(confirm)]` call that a person denied, or that no one was there to approve.
    #[error("this call needs a person's approval and was denied{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Denied {
        /// Why, when a reason was given.
        reason: Option<String>,
    },
    /// The tool asked for a person's answer ([`ToolError::NeedsInput`]) and no one was there.
    #[error("the tool needs a person's answer ({question}) and no one is available to give it")]
    NoOneToAnswer {
        /// The tool's question.
        question: String,
    },
    /// The tool ran and failed: invalid arguments, its own error, a timeout, a panic.
    #[error(transparent)]
    Tool(#[from] ToolError),
}

impl ToolCallError {
    /// The observation a model reads: `Execution error in <tool>: <this error>`.
    pub(crate) fn observation(&self, tool: &str) -> Observation {
        Observation::Error(format!("Execution error in {tool}: {self}"))
    }
}

/// What one call came to: an observation of the result, or why there is none.
pub(crate) type Outcome = Result<Observation, ToolCallError>;

/// `with_approver`, with the doc comment given, on a builder whose `approver` field holds an
/// `Option<Approver>`: every type that runs tools takes an approver the same way.
macro_rules! approver_setter {
    ($(#[$doc:meta])*) => {
        $(#[$doc])*
        pub fn with_approver<F, Fut>(mut self, approver: F) -> Self
        where
            F: Fn($crate::module::ApprovalRequest) -> Fut + Send + Sync + 'static,
            Fut: ::std::future::Future<Output = $crate::module::Approval> + Send + 'static,
        {
            self.approver = Some($crate::module::tool_runner::approver(approver));
            self
        }
    };
}
pub(crate) use approver_setter;

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
    /// How many bytes of a truncated output's whole value are kept.
    max_kept_bytes: usize,
    journal: Option<&'a Arc<dyn Journal>>,
    /// The calls a person approved with [`Approval::ApproveSame`], run again without asking.
    approved: std::sync::Mutex<Vec<(String, Value)>>,
    /// How a result is shown to the model.
    formatter: &'a dyn ObservationFormatter,
}

impl<'a> ToolRunner<'a> {
    /// The tools it runs.
    pub(crate) fn tools(&self) -> &'a [Arc<dyn Tool>] {
        self.tools
    }

    /// The runner of `tools` within `limits` (time limit, observation size and kept bytes);
    /// `built_ins` are names the loop handles itself (listed, not run).
    pub(crate) fn new(
        tools: &'a [Arc<dyn Tool>],
        built_ins: &'a [&'a str],
        approver: Option<&'a Approver>,
        limits: &Limits,
    ) -> ToolRunner<'a> {
        ToolRunner {
            tools,
            built_ins,
            approver,
            timeout: limits.tool_timeout,
            max_chars: limits.max_observation_chars,
            max_kept_bytes: limits.max_kept_observation_bytes,
            journal: None,
            approved: std::sync::Mutex::default(),
            formatter: &HtmlAsText,
        }
    }

    /// That every tool has a name of its own, none of them one the loop handles itself: DSPy
    /// keeps the last of two tools of one name, which hides the other from the model, and a tool
    /// named `finish` would never run.
    pub(crate) fn check_names(&self) -> Result<(), Error> {
        let mut seen: Vec<&str> = Vec::new();
        for tool in self.tools {
            let name = tool.name();
            if self.built_in(name) {
                return Err(Error::ToolNames {
                    message: format!(
                        "a tool is named `{name}`, which the loop reserves for itself; rename it"
                    ),
                });
            }
            if seen.contains(&name) {
                return Err(Error::ToolNames {
                    message: format!(
                        "two tools are named `{name}`; the model could not say which it calls, so \
                         give each tool a name of its own (an MCP client's `tool_prefix` does so \
                         for a server's tools)"
                    ),
                });
            }
            seen.push(name);
        }
        Ok(())
    }

    /// Whether the loop handles `name` itself (ReAct's `finish`).
    pub(crate) fn built_in(&self, name: &str) -> bool {
        self.built_ins.contains(&name)
    }

    /// Shows results to the model through `formatter` (default [`HtmlAsText`]).
    pub(crate) fn with_formatter(mut self, formatter: &'a dyn ObservationFormatter) -> Self {
        self.formatter = formatter;
        self
    }

    /// Runs the calls through `journal` (see [`crate::journal`]).
    pub(crate) fn with_journal(mut self, journal: Option<&'a Arc<dyn Journal>>) -> Self {
        self.journal = journal;
        self
    }

    /// The tool named `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&'a Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// Runs `name` with `args`; every failure becomes an observation the model can act on — a
    /// call that needs a person is denied (or its question left unanswered) here.
    /// `thought` is what the model said before the call (shown to the approver).
    pub(crate) async fn run(&self, name: &str, args: &Value, thought: &str) -> Observation {
        let outcome = self.outcome(name, args, thought).await;
        outcome.unwrap_or_else(|error| error.observation(name))
    }

    /// [`run`](Self::run) with the failure typed: `Ok` holds the result as the model reads it.
    pub(crate) async fn outcome(&self, name: &str, args: &Value, thought: &str) -> Outcome {
        match self.try_attempt(name, args, thought).await {
            Ok(outcome) => outcome,
            Err(waiting) => Err(unattended(&waiting)),
        }
    }

    /// Runs `name` with `args`, or says what person it waits for: a `#[tool(confirm)]` tool when
    /// there is no approver, a tool that returned [`ToolError::NeedsInput`].
    pub(crate) async fn attempt(
        &self,
        name: &str,
        args: &Value,
        thought: &str,
    ) -> Result<Observation, Waiting> {
        let outcome = self.try_attempt(name, args, thought).await?;
        Ok(outcome.unwrap_or_else(|error| error.observation(name)))
    }

    async fn try_attempt(
        &self,
        name: &str,
        args: &Value,
        thought: &str,
    ) -> Result<Outcome, Waiting> {
        let Some(tool) = self.get(name) else {
            return Ok(Err(ToolCallError::UnknownTool {
                name: name.to_owned(),
                available: self
                    .tools
                    .iter()
                    .map(|t| t.name())
                    .chain(self.built_ins.iter().copied())
                    .map(str::to_owned)
                    .collect(),
            }));
        };
        if tool.requires_confirmation() && !self.remembered(name, args) {
            let Some(approver) = self.approver else {
                return Err(Waiting::Approval);
            };
            let request = ApprovalRequest {
                tool: name.to_owned(),
                args: args.clone(),
                thought: thought.to_owned(),
            };
            match approver(request).await {
                Approval::Approve => {}
                Approval::ApproveSame => {
                    if let Ok(mut approved) = self.approved.lock() {
                        approved.push((name.to_owned(), args.clone()));
                    }
                }
                Approval::Deny(reason) => return Ok(Err(ToolCallError::Denied { reason })),
            }
        }
        self.execute(tool, name, args).await
    }

    /// Whether a person approved this very call earlier in the run with
    /// [`Approval::ApproveSame`].
    fn remembered(&self, name: &str, args: &Value) -> bool {
        self.approved
            .lock()
            .is_ok_and(|approved| approved.iter().any(|(n, a)| n == name && a == args))
    }

    /// Carries out a person's decision on a call that waited for one.
    pub(crate) async fn decided(
        &self,
        name: &str,
        args: &Value,
        decision: &Decision,
    ) -> Result<Observation, Waiting> {
        let args = match decision {
            Decision::Deny(reason) => {
                let denied = ToolCallError::Denied {
                    reason: reason.clone(),
                };
                return Ok(denied.observation(name));
            }
            Decision::Respond(answer) => {
                return Ok(self.limited(Observation::Output(answer.clone())));
            }
            Decision::Approve => args,
            Decision::Edit(edited) => edited,
        };
        match self.get(name) {
            Some(tool) => {
                let outcome = self.execute(tool, name, args).await?;
                Ok(outcome.unwrap_or_else(|error| error.observation(name)))
            }
            None => self.attempt(name, args, "").await,
        }
    }

    /// The observation of a call whose person is not there (a run that cannot wait).
    pub(crate) fn unattended(&self, name: &str, waiting: &Waiting) -> Observation {
        unattended(waiting).observation(name)
    }

    /// Calls the tool within the time limit.
    async fn execute(
        &self,
        tool: &Arc<dyn Tool>,
        name: &str,
        args: &Value,
    ) -> Result<Outcome, Waiting> {
        let result = run_tool(self.journal, tool, args.clone(), self.timeout).await;
        let observation = match result {
            Ok(value) => match self.formatter.format(name, &value) {
                // The model reads the formatted text; the trajectory keeps the result.
                Some(shown) => Observation::Truncated { shown, full: value },
                None => Observation::Output(value),
            },
            Err(ToolError::NeedsInput { question, .. }) => {
                return Err(Waiting::Answer { question });
            }
            Err(error) => return Ok(Err(ToolCallError::Tool(error))),
        };
        Ok(Ok(self.limited(observation)))
    }

    /// The observation cut for the model, its whole value cut to what is kept.
    fn limited(&self, observation: Observation) -> Observation {
        observation
            .limited_to(self.max_chars)
            .kept_within(self.max_kept_bytes)
    }
}

/// Why a call whose person is not there has no result.
fn unattended(waiting: &Waiting) -> ToolCallError {
    match waiting {
        Waiting::Approval => ToolCallError::Denied {
            reason: Some("no one is available to approve it".to_owned()),
        },
        Waiting::Answer { question } => ToolCallError::NoOneToAnswer {
            question: question.clone(),
        },
    }
}

/// A native call's arguments, or what the model reads when they are not JSON.
pub(crate) fn arguments(call: &ToolCall) -> Result<Value, Observation> {
    parsed_arguments(call).map_err(|error| error.observation(&call.name))
}

/// A native call's arguments, or why they are not JSON.
pub(crate) fn parsed_arguments(call: &ToolCall) -> Result<Value, ToolCallError> {
    call.args()
        .map_err(|error| ToolCallError::ArgumentsNotJson {
            reason: error.to_string(),
            arguments: call.arguments.clone(),
        })
}
