//! Tools: functions a language model can call.
//!
//! Every tool — a `#[tool]` function or method, a closure wrapped in [`FnTool`], a tool served by an
//! MCP server — is used through the same object-safe [`Tool`] trait, as `Arc<dyn Tool>`.
//!
//! ```
//! use signet::{Tool, tool};
//!
//! /// Add two integers and return their sum.
//! #[tool]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! let tool = AddTool;
//! assert_eq!(tool.name(), "add");
//! assert_eq!(tool.description(), "Add two integers and return their sum.");
//! assert_eq!(tool.call_blocking(serde_json::json!({"a": 1, "b": 2})).unwrap(), 3);
//! ```
//!
//! # How tools run
//!
//! * **Async tools** are awaited on the caller's task. A panic inside them is caught and becomes
//!   [`ToolError::Panicked`].
//! * **Sync tools** run on tokio's blocking pool when called from inside a tokio runtime
//!   (multi-thread or current-thread), so a slow sync tool never stalls the executor. Outside tokio
//!   they run on the calling thread. `#[tool(inline)]` opts a cheap, non-blocking function out of
//!   the hop to the blocking pool. A sync body cannot be stopped: a call that times out keeps its
//!   thread until the body returns, so once [`max_blocking_calls_per_tool`] given-up calls of one
//!   tool (16 by default) still run, a new call fails at once with [`ToolError::Busy`].
//! * **Sync callers** use [`Tool::call_blocking`]: sync tools run directly; async tools run on a
//!   per-thread current-thread runtime when there is no runtime on the thread, or through
//!   `block_in_place` on a multi-thread runtime. On a thread that drives a current-thread runtime
//!   blocking would deadlock, so that case is the typed error [`ToolError::BlockingInAsyncContext`].
//!
//! # Tools that need a person's approval
//!
//! A `#[tool(confirm)]` tool (or any tool whose [`Tool::requires_confirmation`] is true) runs only
//! when a person approved the call. The agent loops ask their approver first (ReAct's and
//! [`ToolExecutor`](crate::module::ToolExecutor)'s `with_approver`, or a suspended run a person
//! resumes), and `McpServer::serve_confirm_tools` leaves asking to the MCP client. Called directly,
//! such a tool refuses with [`ToolError::NeedsApproval`]; code that has asked a person itself runs
//! the call inside [`approved`] (or [`approved_blocking`]).

mod approval;
mod args_schema;
mod cancel;
mod definition;
pub(crate) mod dispatch;
mod error;
mod func;
mod kind;
mod progress;
mod redescribed;
mod spec;

use std::fmt::Display;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

pub use approval::{approved, approved_blocking, require_approval};
pub use args_schema::ArgsSchema;
pub use cancel::{CancelToken, is_cancelled};
pub use definition::{DescriptorError, ToolDefinition};
use dispatch::block_on_tool;
pub use dispatch::{
    DEFAULT_MAX_BLOCKING_CALLS_PER_TOOL, max_blocking_calls_per_tool,
    set_max_blocking_calls_per_tool,
};
pub use error::{ArgError, ArgErrorKind, ToolError};
pub use func::{FnTool, FnToolBuilder};
pub use kind::ToolType;
pub use progress::{
    ProgressLog, ProgressSink, progress_listened, progress_sink, report_progress, with_progress,
};
pub use redescribed::Redescribed;
pub use spec::ToolSpec;

/// The future a tool call returns.
pub type ToolFuture<'a> = BoxFuture<'a, Result<Value, ToolError>>;

/// A function a language model can call, used as `Arc<dyn Tool>`; `Arc<T>` and `Box<T>` of any tool
/// are tools too.
///
/// Implementors provide [`spec`](Tool::spec) (name, description, argument schema and validator) and
/// [`call`](Tool::call); everything else has a default. `#[tool]` implements this trait for you.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use signet::{Tool, tool::FnTool};
///
/// let echo: Arc<dyn Tool> = Arc::new(
///     FnTool::builder("echo")
///         .description("Repeat the text.")
///         .schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
///         .sync_fn(|args| Ok::<_, String>(args["text"].clone())),
/// );
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// assert_eq!(echo.call(json!({"text": "hi"})).await.unwrap(), "hi");
/// # });
/// ```
pub trait Tool: Send + Sync {
    /// The tool's name, description and argument schema.
    fn spec(&self) -> &ToolSpec;

    /// Validates `args` (a JSON object), runs the tool and returns its result as JSON.
    fn call(&self, args: Value) -> ToolFuture<'_>;

    /// Runs the tool from sync code (see [the dispatch rules](self#how-tools-run)): never call
    /// this on a thread that drives a current-thread tokio runtime (you get
    /// [`ToolError::BlockingInAsyncContext`], not a deadlock).
    fn call_blocking(&self, args: Value) -> Result<Value, ToolError> {
        block_on_tool(self.name(), self.call(args))?
    }

    /// Whether the tool must be approved by a person before it runs (`#[tool(confirm)]`).
    fn requires_confirmation(&self) -> bool {
        false
    }

    /// The tool's name, as the model calls it.
    fn name(&self) -> &str {
        self.spec().name()
    }

    /// What the tool does.
    fn description(&self) -> &str {
        self.spec().description()
    }

    /// The JSON schema of the tool's argument object.
    fn args_schema(&self) -> &Value {
        self.spec().args_schema()
    }

    /// The OpenAI function-calling descriptor (see [`ToolSpec::to_openai_function`]).
    fn to_openai_function(&self) -> Value {
        self.definition().to_value()
    }

    /// The tool as offered for native function calling (see [`ToolSpec::definition`]).
    fn definition(&self) -> ToolDefinition {
        self.spec().definition()
    }

    /// The JSON schema of what the tool returns, when it promises one: a
    /// [module served as a tool](crate::module::ModuleTool) returns its output fields as an
    /// object. An MCP server publishes it as the tool's `outputSchema`. `None` by default.
    fn output_schema(&self) -> Option<&Value> {
        None
    }

    /// What kind of tool it is, as traces record it (`gen_ai.tool.type`):
    /// [`Function`](ToolType::Function) (code in this process, the default),
    /// [`Extension`](ToolType::Extension) (a tool an agent reaches through another service, such
    /// as an MCP server's) or [`Datastore`](ToolType::Datastore).
    fn tool_type(&self) -> ToolType {
        ToolType::Function
    }
}

/// Shared and boxed tools (`Arc<dyn Tool>`, what [`ToolBox::tools`] and MCP clients return,
/// and `Box<T>`) are tools themselves: every method is forwarded.
macro_rules! forward_tool {
    ($pointer:ident) => {
        impl<T: Tool + ?Sized> Tool for $pointer<T> {
            fn spec(&self) -> &ToolSpec {
                (**self).spec()
            }
            fn call(&self, args: Value) -> ToolFuture<'_> {
                (**self).call(args)
            }
            fn call_blocking(&self, args: Value) -> Result<Value, ToolError> {
                (**self).call_blocking(args)
            }
            fn requires_confirmation(&self) -> bool {
                (**self).requires_confirmation()
            }
            fn name(&self) -> &str {
                (**self).name()
            }
            fn description(&self) -> &str {
                (**self).description()
            }
            fn args_schema(&self) -> &Value {
                (**self).args_schema()
            }
            fn to_openai_function(&self) -> Value {
                (**self).to_openai_function()
            }
            fn definition(&self) -> ToolDefinition {
                (**self).definition()
            }
            fn output_schema(&self) -> Option<&Value> {
                (**self).output_schema()
            }
            fn tool_type(&self) -> ToolType {
                (**self).tool_type()
            }
        }
    };
}
forward_tool!(Arc);
forward_tool!(Box);

/// `tool` as the shared handle modules keep: an `Arc<dyn Tool>` as it is, any other tool in a new
/// `Arc`. Handy for a list of tools of different types.
///
/// ```
/// use signet::tool::share;
/// use signet::{Tool, tool};
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 { a + b }
/// /// Say hello.
/// #[tool]
/// fn hello() -> String { "hello".into() }
///
/// let tools = vec![share(AddTool), share(HelloTool)];
/// assert_eq!(tools[1].name(), "hello");
/// ```
pub fn share<T: Tool + 'static>(tool: T) -> Arc<dyn Tool> {
    crate::shared::share(tool, |t| Arc::new(t) as Arc<dyn Tool>)
}

impl std::fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// A type whose `#[tool]` methods form a set of tools sharing one value (a database handle, a
/// client, a cache). `#[tool]` on an `impl` block implements it.
///
/// ```
/// use std::sync::Arc;
/// use signet::{Tool, ToolBox, tool};
///
/// struct Phonebook { numbers: Vec<(String, String)> }
///
/// #[tool]
/// impl Phonebook {
///     /// Find a person's phone number.
///     #[tool]
///     fn lookup(&self, name: String) -> Option<String> {
///         self.numbers.iter().find(|(n, _)| *n == name).map(|(_, p)| p.clone())
///     }
/// }
///
/// let book = Arc::new(Phonebook { numbers: vec![("Ada".into(), "555".into())] });
/// let tools = Phonebook::tools(&book);
/// assert_eq!(tools[0].name(), "lookup");
/// assert_eq!(tools[0].call_blocking(serde_json::json!({"name": "Ada"})).unwrap(), "555");
/// ```
pub trait ToolBox: Send + Sync + 'static {
    /// One tool per `#[tool]` method, each holding a clone of `this`.
    fn tools(this: &Arc<Self>) -> Vec<Arc<dyn Tool>>;
}

/// Support for the code `#[tool]` generates: turning a tool body's return value into JSON.
///
/// A return type whose last path segment is `Result` (`Result<T, E>`, `io::Result<T>`,
/// `anyhow::Result<T>`) goes through [`result_output`](returns::result_output): `Ok` becomes the
/// output, `Err` (any `E: Display`) becomes [`ToolError::Failed`] — unless `E` is [`ToolError`]
/// itself, which is kept as it is (so a body can return [`ToolError::needs_input`]). Any other type goes through
/// [`plain_output`](returns::plain_output) and must be `Serialize`.
#[doc(hidden)]
pub mod returns {
    use super::*;

    /// `Ok` -> JSON, `Err` -> [`ToolError::Failed`] (a [`ToolError`] is kept, named after `tool`).
    pub fn result_output<T: Serialize, E: Display + 'static>(
        tool: &str,
        value: Result<T, E>,
    ) -> Result<Value, ToolError> {
        match value {
            Ok(v) => plain_output(tool, v),
            Err(e) => Err(tool_error(tool, e)),
        }
    }

    /// A body's error as a [`ToolError`]: a `ToolError` as it is (its tool named `tool` when the
    /// body left the name empty), anything else as [`ToolError::Failed`] with its text.
    pub fn tool_error<E: Display + 'static>(tool: &str, error: E) -> ToolError {
        let any: &dyn std::any::Any = &error;
        match any.downcast_ref::<ToolError>() {
            Some(ToolError::NeedsInput {
                tool: name,
                question,
            }) if name.is_empty() => ToolError::NeedsInput {
                tool: tool.to_owned(),
                question: question.clone(),
            },
            Some(kept) => kept.clone(),
            None => ToolError::Failed {
                tool: tool.to_owned(),
                message: error.to_string(),
            },
        }
    }

    /// The value as JSON.
    pub fn plain_output<T: Serialize>(tool: &str, value: T) -> Result<Value, ToolError> {
        serde_json::to_value(value).map_err(|e| ToolError::Output {
            tool: tool.to_owned(),
            message: e.to_string(),
        })
    }
}
