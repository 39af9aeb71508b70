//! Tools built at run time from a closure and an explicit schema.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::dispatch::{run_async, run_blocking};
use super::returns::result_output;
use super::{Tool, ToolError, ToolFuture, ToolSpec};

type Body = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync>;

/// A tool made from a closure: the run-time counterpart of `#[tool]`, for tools whose name or schema
/// is only known at run time.
///
/// ```
/// use serde_json::json;
/// use signet::{Tool, tool::FnTool};
///
/// let shout = FnTool::builder("shout")
///     .description("Upper-case the text.")
///     .schema(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
///     .sync_fn(|args| Ok::<_, String>(args["text"].as_str().unwrap_or_default().to_uppercase()));
/// assert_eq!(shout.call_blocking(json!({"text": "hi"})).unwrap(), "HI");
/// ```
#[derive(Clone)]
pub struct FnTool {
    spec: Arc<ToolSpec>,
    body: Body,
    confirm: bool,
}

impl std::fmt::Debug for FnTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl FnTool {
    /// Starts a tool named `name` with no description and no arguments.
    pub fn builder(name: impl Into<String>) -> FnToolBuilder {
        FnToolBuilder {
            name: name.into(),
            description: String::new(),
            schema: json!({"type": "object", "properties": {}, "required": []}),
            confirm: false,
        }
    }
}

impl Tool for FnTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value) -> ToolFuture<'_> {
        let validated = self.spec.validate(&args);
        let body = self.body.clone();
        let confirm = self.confirm.then(|| self.spec.name().to_owned());
        async move {
            if let Some(name) = confirm {
                super::require_approval(&name)?;
            }
            validated?;
            body(args).await
        }
        .boxed()
    }

    fn requires_confirmation(&self) -> bool {
        self.confirm
    }
}

/// Builder for [`FnTool`]; finish it with [`sync_fn`](Self::sync_fn), [`async_fn`](Self::async_fn)
/// or [`typed_sync_fn`](Self::typed_sync_fn).
#[derive(Debug, Clone)]
pub struct FnToolBuilder {
    name: String,
    description: String,
    schema: Value,
    confirm: bool,
}

impl FnToolBuilder {
    crate::shared::setters! {
        /// What the tool does, in words for the model.
        fn description(description: impl Into<String>) { description = description.into() }

        /// The JSON schema of the argument object. Arguments are validated against it before the body
        /// runs.
        fn schema(schema: Value) { schema = schema }

        /// Require a person's approval before each call.
        fn confirm(confirm: bool) { confirm = confirm }
    }

    /// A sync body. It runs on tokio's blocking pool when called from a runtime.
    pub fn sync_fn<F, T, E>(self, body: F) -> FnTool
    where
        F: Fn(Value) -> Result<T, E> + Send + Sync + 'static,
        T: Serialize + Send + 'static,
        E: Display + Send + 'static,
    {
        let body = Arc::new(body);
        let name: Arc<str> = self.name.as_str().into();
        self.finish(move |args| {
            let body = body.clone();
            let name = name.clone();
            async move {
                let out = run_blocking(&name, move || body(args)).await?;
                result_output(&name, out)
            }
            .boxed()
        })
    }

    /// An async body, awaited on the caller's task.
    pub fn async_fn<F, Fut, T, E>(self, body: F) -> FnTool
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<T, E>> + Send + 'static,
        T: Serialize,
        E: Display + 'static,
    {
        let name: Arc<str> = self.name.as_str().into();
        self.finish(move |args| {
            let future = body(args);
            let name = name.clone();
            async move {
                let out = run_async(&name, future).await?;
                result_output(&name, out)
            }
            .boxed()
        })
    }

    /// A sync body taking typed arguments; the schema is generated from `A` (any schema set with
    /// [`schema`](Self::schema) is replaced).
    ///
    /// ```
    /// use signet::{Tool, tool::FnTool};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Args { a: i64, b: i64 }
    /// let add = FnTool::builder("add").typed_sync_fn(|x: Args| Ok::<_, String>(x.a + x.b));
    /// assert_eq!(add.call_blocking(serde_json::json!({"a": 2, "b": 3})).unwrap(), 5);
    /// ```
    pub fn typed_sync_fn<A, F, T, E>(mut self, body: F) -> FnTool
    where
        A: JsonSchema + DeserializeOwned + Send + 'static,
        F: Fn(A) -> Result<T, E> + Send + Sync + 'static,
        T: Serialize + Send + 'static,
        E: Display + Send + 'static,
    {
        let typed = ToolSpec::for_args::<A>(&self.name, "");
        self.schema = typed.args_schema().clone();
        let tool_name = self.name.clone();
        self.sync_fn(move |args| {
            let args: A = serde_json::from_value(args).map_err(|e| ToolError::Failed {
                tool: tool_name.clone(),
                message: format!("arguments of `{tool_name}` could not be read: {e}"),
            })?;
            body(args).map_err(|e| crate::tool::returns::tool_error(&tool_name, e))
        })
    }

    fn finish(
        self,
        body: impl Fn(Value) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync + 'static,
    ) -> FnTool {
        FnTool {
            spec: Arc::new(ToolSpec::new(self.name, self.description, self.schema)),
            body: Arc::new(body),
            confirm: self.confirm,
        }
    }
}
