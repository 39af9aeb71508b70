//! Errors a tool call can end in.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

/// Why a tool call failed. Every variant names the tool and says what went wrong in words a
/// language model can act on: ReAct hands the [`Display`](fmt::Display) text back to the model as
/// the observation.
///
/// ```
/// use serde_json::json;
/// use signet::{Tool, ToolError, tool::FnTool};
///
/// let add = FnTool::builder("add")
///     .schema(json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}))
///     .sync_fn(|args| Ok::<_, String>(args["a"].clone()));
/// let err = add.call_blocking(json!({"a": "1"})).unwrap_err();
/// assert!(matches!(err, ToolError::InvalidArguments { .. }));
/// assert_eq!(err.to_string(), "invalid arguments for tool `add`: argument `a`: expected integer, got string \"1\"");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments did not match the tool's schema (or could not be deserialized into its types).
    #[error("invalid arguments for tool `{tool}`: {}", join(errors))]
    InvalidArguments {
        /// The tool's name.
        tool: String,
        /// Each problem found, in schema order.
        errors: Vec<ArgError>,
    },
    /// The tool ran and returned an error.
    #[error("tool `{tool}` failed: {message}")]
    Failed {
        /// The tool's name.
        tool: String,
        /// The error's `Display` text.
        message: String,
    },
    /// The tool panicked; the panic was caught and the caller keeps running.
    #[error("tool `{tool}` panicked: {message}")]
    Panicked {
        /// The tool's name.
        tool: String,
        /// The panic payload, when it was a string.
        message: String,
    },
    /// A tool that needs a person's approval (`#[tool(confirm)]`) was called outside an
    /// approval: through an agent with an approver, or inside [`approved`](crate::tool::approved).
    #[error(
        "tool `{tool}` needs a person's approval: run it through an agent with an approver, or \
         inside `signet::tool::approved` once a person approved the call"
    )]
    NeedsApproval {
        /// The tool's name.
        tool: String,
    },
    /// The tool did not finish within its time limit.
    #[error("tool `{tool}` timed out after {elapsed:?}")]
    Timeout {
        /// The tool's name.
        tool: String,
        /// How long the call was allowed to run.
        elapsed: Duration,
    },
    /// The tool's return value could not be turned into JSON.
    #[error("tool `{tool}` returned a value that cannot be serialized to JSON: {message}")]
    Output {
        /// The tool's name.
        tool: String,
        /// The serializer's message.
        message: String,
    },
    /// The tool's argument schema is not a valid JSON schema, so arguments cannot be checked.
    #[error("tool `{tool}` has an invalid argument schema: {message}")]
    InvalidSchema {
        /// The tool's name.
        tool: String,
        /// What the schema compiler reported.
        message: String,
    },
    /// [`Tool::call_blocking`](crate::Tool::call_blocking) was called on a thread that is driving a
    /// current-thread tokio runtime, where blocking would deadlock. Use `call(..).await` there.
    #[error(
        "tool `{tool}` was called with call_blocking from inside a current-thread tokio runtime; \
         await Tool::call instead"
    )]
    BlockingInAsyncContext {
        /// The tool's name.
        tool: String,
    },
    /// The tool cannot go on without a person's answer to `question` (a body returns it with
    /// [`ToolError::needs_input`]). A [resumable](crate::module::DynReAct::start) ReAct run
    /// suspends here and the person's answer becomes the observation; elsewhere the model reads
    /// that no one was there to answer.
    #[error("tool `{tool}` needs a person's answer: {question}")]
    NeedsInput {
        /// The tool's name (filled in by the tool when the body leaves it empty).
        tool: String,
        /// What the person is asked.
        question: String,
    },
    /// A tool served elsewhere (for example over MCP) reported an error or could not be reached.
    #[error("tool `{tool}`: {message}")]
    Remote {
        /// The tool's name.
        tool: String,
        /// What the remote side or the transport reported.
        message: String,
    },
    /// A sync tool was not run because `limit` earlier calls of it that were given up on (timed
    /// out, or their run dropped) still hold threads of the blocking pool: a sync body runs to its
    /// end whatever happens to its call. See
    /// [`set_max_blocking_calls_per_tool`](crate::tool::set_max_blocking_calls_per_tool).
    #[error(
        "tool `{tool}` was not run: {limit} earlier calls of it that timed out or were cancelled \
         are still running, and no more may be; try again once they return"
    )]
    Busy {
        /// The tool's name.
        tool: String,
        /// How many given-up calls of one sync tool may still run.
        limit: usize,
    },
}

impl ToolError {
    /// The name of the tool this error came from.
    ///
    /// ```
    /// let err = signet::ToolError::Failed { tool: "add".into(), message: "overflow".into() };
    /// assert_eq!(err.tool(), "add");
    /// ```
    pub fn tool(&self) -> &str {
        match self {
            ToolError::InvalidArguments { tool, .. }
            | ToolError::Failed { tool, .. }
            | ToolError::Panicked { tool, .. }
            | ToolError::NeedsApproval { tool }
            | ToolError::Timeout { tool, .. }
            | ToolError::Output { tool, .. }
            | ToolError::InvalidSchema { tool, .. }
            | ToolError::BlockingInAsyncContext { tool }
            | ToolError::NeedsInput { tool, .. }
            | ToolError::Remote { tool, .. }
            | ToolError::Busy { tool, .. } => tool,
        }
    }

    /// The error a tool body returns when it needs a person's answer before it can go on
    /// ([`NeedsInput`](ToolError::NeedsInput); the tool's name is filled in for you).
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::{Tool, ToolError, tool::FnTool};
    ///
    /// let ask = FnTool::builder("ask_user")
    ///     .sync_fn(|_args| Err::<String, _>(ToolError::needs_input("Which account?")));
    /// let err = ask.call_blocking(json!({})).unwrap_err();
    /// assert_eq!(err, ToolError::NeedsInput { tool: "ask_user".into(), question: "Which account?".into() });
    /// ```
    pub fn needs_input(question: impl Into<String>) -> ToolError {
        ToolError::NeedsInput {
            tool: String::new(),
            question: question.into(),
        }
    }
}

fn join(errors: &[ArgError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One problem with a tool call's arguments: where it is, what was expected and what was received.
///
/// ```
/// use serde_json::json;
/// use signet::tool::{ArgError, ArgErrorKind};
/// let err = ArgError {
///     path: "point.x".into(),
///     kind: ArgErrorKind::WrongType { expected: "integer".into() },
///     received: Some(json!("bad")),
/// };
/// assert_eq!(err.to_string(), "argument `point.x`: expected integer, got string \"bad\"");
/// assert_eq!(err.argument(), "point");
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ArgError {
    /// Dotted path to the offending value: the argument name, then object keys and array indices
    /// (`points.0.x`). Empty when the problem is with the argument object as a whole.
    pub path: String,
    /// What is wrong.
    pub kind: ArgErrorKind,
    /// The value that was received at `path`, when there was one.
    pub received: Option<Value>,
}

impl ArgError {
    /// The top-level argument the error is about (the first segment of [`path`](Self::path)).
    pub fn argument(&self) -> &str {
        self.path.split('.').next().unwrap_or_default()
    }
}

/// The kinds of argument problems, each carrying what the caller needs to fix it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ArgErrorKind {
    /// A required argument (or a required key of a nested object) is absent.
    Missing {
        /// The expected type of the missing value, when the schema says.
        expected: Option<String>,
    },
    /// An argument (or nested key) the tool does not take.
    Unexpected {
        /// The names that are accepted at this level.
        allowed: Vec<String>,
    },
    /// The value has the wrong JSON type.
    WrongType {
        /// The expected JSON type(s), e.g. `integer` or `string or null`.
        expected: String,
    },
    /// The value is not one of the allowed values.
    NotAllowed {
        /// The allowed values.
        allowed: Vec<Value>,
    },
    /// The arguments were not a JSON object at all.
    NotAnObject,
    /// Any other violation (a range, a pattern, a deserializer's own check), described in words.
    Invalid {
        /// What the validator or deserializer reported.
        message: String,
    },
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = &self.path;
        match &self.kind {
            ArgErrorKind::Missing { expected: Some(t) } => {
                write!(f, "missing required argument `{path}` ({t})")
            }
            ArgErrorKind::Missing { expected: None } => {
                write!(f, "missing required argument `{path}`")
            }
            ArgErrorKind::Unexpected { allowed } => {
                write!(f, "unexpected argument `{path}`")?;
                if allowed.is_empty() {
                    write!(f, " (no arguments are accepted here)")
                } else {
                    write!(f, " (accepted: {})", allowed.join(", "))
                }
            }
            ArgErrorKind::WrongType { expected } => {
                write!(f, "argument `{path}`: expected {expected}, got ")?;
                match &self.received {
                    Some(v) => write!(f, "{} {}", json_type(v), short(v)),
                    None => write!(f, "nothing"),
                }
            }
            ArgErrorKind::NotAllowed { allowed } => {
                let allowed: Vec<String> = allowed.iter().map(short).collect();
                write!(
                    f,
                    "argument `{path}`: expected one of {}",
                    allowed.join(", ")
                )?;
                if let Some(v) = &self.received {
                    write!(f, ", got {}", short(v))?;
                }
                Ok(())
            }
            ArgErrorKind::NotAnObject => {
                write!(f, "arguments must be a JSON object")?;
                if let Some(v) = &self.received {
                    write!(f, ", got {} {}", json_type(v), short(v))?;
                }
                Ok(())
            }
            ArgErrorKind::Invalid { message } if path.is_empty() => write!(f, "{message}"),
            ArgErrorKind::Invalid { message } => write!(f, "argument `{path}`: {message}"),
        }
    }
}

/// The JSON type name of a value (`integer` and `number` told apart).
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as compact JSON, cut to a length that keeps error messages readable.
fn short(v: &Value) -> String {
    const MAX: usize = 80;
    let text = v.to_string();
    if text.chars().count() <= MAX {
        return text;
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{cut}…")
}
