//! What kind of tool a tool is, as traces record it.

/// What kind of tool it is, as traces record it (OpenTelemetry's `gen_ai.tool.type`).
///
/// ```
/// use signet::tool::ToolType;
/// assert_eq!(ToolType::default(), ToolType::Function);
/// assert_eq!(ToolType::Extension.as_str(), "extension");
/// assert_eq!(ToolType::Datastore.to_string(), "datastore");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ToolType {
    /// Code in this process (a `#[tool]` function, an `FnTool`, a module served as a tool).
    #[default]
    Function,
    /// A tool an agent reaches through another service, such as an MCP server's.
    Extension,
    /// A search or read over stored data (a retrieval index).
    Datastore,
}

impl ToolType {
    /// The name traces record: `function`, `extension` or `datastore`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolType::Function => "function",
            ToolType::Extension => "extension",
            ToolType::Datastore => "datastore",
        }
    }
}

impl std::fmt::Display for ToolType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
