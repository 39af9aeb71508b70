//! A tool shown to the model with another description.

use std::sync::Arc;

use serde_json::Value;

use super::{Tool, ToolError, ToolFuture, ToolSpec};

/// `tool` under a new description: the name, argument schema, validation, confirmation rule and
/// behaviour stay the tool's own; only what the model reads about it changes. Use it to describe an
/// MCP server's tool better than its server does, or to try a description an optimizer proposed
/// ([`ReAct::set_tool_description`](crate::module::DynReAct::set_tool_description) uses it).
///
/// ```
/// use signet::tool::Redescribed;
/// use signet::{Tool, tool};
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 { a + b }
///
/// let add = Redescribed::new(AddTool, "Add two whole numbers; use it for every sum.");
/// assert_eq!(add.name(), "add");
/// assert_eq!(add.description(), "Add two whole numbers; use it for every sum.");
/// assert_eq!(add.inner().description(), "Add two integers.");
/// assert_eq!(add.call_blocking(serde_json::json!({"a": 2, "b": 3})).unwrap(), 5);
/// ```
pub struct Redescribed {
    tool: Arc<dyn Tool>,
    spec: ToolSpec,
}

impl Redescribed {
    /// `tool`, described as `description`.
    pub fn new(tool: impl Tool + 'static, description: impl Into<String>) -> Redescribed {
        let tool = super::share(tool);
        let spec = ToolSpec::new(
            tool.name().to_owned(),
            description,
            tool.args_schema().clone(),
        );
        Redescribed { tool, spec }
    }

    /// The tool with its own description.
    pub fn inner(&self) -> &Arc<dyn Tool> {
        &self.tool
    }
}

impl std::fmt::Debug for Redescribed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redescribed")
            .field("name", &self.spec.name())
            .field("description", &self.spec.description())
            .finish_non_exhaustive()
    }
}

impl Tool for Redescribed {
    fn tool_type(&self) -> super::ToolType {
        self.tool.tool_type()
    }

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value) -> ToolFuture<'_> {
        self.tool.call(args)
    }

    fn call_blocking(&self, args: Value) -> Result<Value, ToolError> {
        self.tool.call_blocking(args)
    }

    fn requires_confirmation(&self) -> bool {
        self.tool.requires_confirmation()
    }

    fn output_schema(&self) -> Option<&Value> {
        self.tool.output_schema()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::FnTool;

    #[tokio::test]
    async fn only_the_description_changes() {
        let schema = json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "format": "uint8"}},
            "required": ["n"]
        });
        let tool = FnTool::builder("double")
            .description("Double it.")
            .schema(schema)
            .sync_fn(|args| Ok::<_, String>(json!(args["n"].as_i64().unwrap_or(0) * 2)));
        let own_spec = tool.to_openai_function();
        let shown = Redescribed::new(tool, "Twice the number n (0 to 255).");
        assert_eq!(shown.call(json!({"n": 4})).await.unwrap(), 8);
        // The tool's own validation still applies (uint8 bounds included).
        assert!(matches!(
            shown.call(json!({"n": 300})).await,
            Err(ToolError::InvalidArguments { .. })
        ));
        let mut expected = own_spec;
        expected["function"]["description"] = json!("Twice the number n (0 to 255).");
        assert_eq!(shown.to_openai_function(), expected);
    }
}
