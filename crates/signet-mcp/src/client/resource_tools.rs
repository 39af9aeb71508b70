//! A server's resources offered to an agent as two tools: one lists them, one reads one.

use std::sync::Arc;

use futures::FutureExt;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use signet::tool::{ToolFuture, ToolSpec};
use signet::{Tool, ToolError};

use super::McpClient;
use super::session::{Inner, SessionOwner};
use crate::content::resource_value;

#[derive(Debug, Clone, Copy)]
enum Kind {
    List,
    Read,
}

/// One of the tools [`McpClient::resource_tools`] makes.
struct ResourceTool {
    spec: ToolSpec,
    kind: Kind,
    /// The client's session, held: the tool works for as long as it is kept.
    session: Arc<SessionOwner>,
}

#[derive(Deserialize)]
struct ReadArgs {
    uri: String,
}

impl McpClient {
    /// The server's resources as two tools for an agent, named with the client's
    /// [prefix](super::McpClientBuilder::tool_prefix): `list_resources` (no arguments; the
    /// resources with their URI, name, description and MIME type, then the URI templates) and
    /// `read_resource` (`uri`; the contents, as [`content::resource_value`](crate::content::resource_value)
    /// gives them). Offered only when asked, since a server's resources can be many and large;
    /// ReAct's observation limits apply to what they return.
    ///
    /// ```
    /// # use signet::{Tool, tool};
    /// # /// Add two integers.
    /// # #[tool]
    /// # fn add(a: i64, b: i64) -> i64 { a + b }
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let http = signet_mcp::McpServer::new().tool(AddTool)
    /// #     .serve_http("127.0.0.1:0").await.unwrap();
    /// let client = signet_mcp::McpClient::connect(http.url()).await?;
    /// let mut tools = client.tools();
    /// tools.extend(client.resource_tools());
    /// let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    /// assert_eq!(names, ["add", "list_resources", "read_resource"]);
    /// # Ok::<(), signet_mcp::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn resource_tools(&self) -> Vec<Arc<dyn Tool>> {
        let prefix = &self.inner.options.tool_prefix;
        let server = self.inner.label().to_owned();
        let make = |kind: Kind, spec: ToolSpec| -> Arc<dyn Tool> {
            Arc::new(ResourceTool {
                spec,
                kind,
                session: self.owner.clone(),
            })
        };
        vec![
            make(
                Kind::List,
                ToolSpec::new(
                    format!("{prefix}list_resources"),
                    format!(
                        "List the resources (documents, files, records) that the `{server}` \
                         server offers to read: their URIs, names and descriptions, then URI \
                         templates whose {{placeholders}} can be filled in."
                    ),
                    json!({"type": "object", "properties": {}}),
                ),
            ),
            make(
                Kind::Read,
                ToolSpec::new(
                    format!("{prefix}read_resource"),
                    format!("Read one resource of the `{server}` server by its URI."),
                    json!({
                        "type": "object",
                        "properties": {"uri": {
                            "type": "string",
                            "description": "The resource's URI, from list_resources."
                        }},
                        "required": ["uri"]
                    }),
                ),
            ),
        ]
    }
}

impl ResourceTool {
    async fn run(&self, client: Arc<Inner>, args: Value) -> Result<Value, ToolError> {
        let name = self.spec.name();
        match self.kind {
            Kind::List => {
                let resources = client
                    .resources()
                    .await
                    .map_err(|e| e.into_tool_error(name))?;
                let templates = client
                    .resource_templates()
                    .await
                    .map_err(|e| e.into_tool_error(name))?;
                let mut listing: Vec<Value> = resources
                    .iter()
                    .map(|r| {
                        entry([
                            ("uri", Some(r.uri.as_str())),
                            ("name", Some(r.name.as_str())),
                            ("description", r.description.as_deref()),
                            ("mimeType", r.mime_type.as_deref()),
                        ])
                    })
                    .collect();
                listing.extend(templates.iter().map(|t| {
                    entry([
                        ("uriTemplate", Some(t.uri_template.as_str())),
                        ("name", Some(t.name.as_str())),
                        ("description", t.description.as_deref()),
                        ("mimeType", t.mime_type.as_deref()),
                    ])
                }));
                Ok(Value::Array(listing))
            }
            Kind::Read => {
                let ReadArgs { uri } = self.spec.parse_args(args)?;
                let contents = client
                    .read_resource(&uri)
                    .await
                    .map_err(|e| e.into_tool_error(name))?;
                Ok(resource_value(&contents))
            }
        }
    }
}

/// A JSON object of the fields that are present.
fn entry<const N: usize>(fields: [(&str, Option<&str>); N]) -> Value {
    let map: Map<String, Value> = fields
        .into_iter()
        .filter_map(|(key, value)| Some((key.to_owned(), Value::String(value?.to_owned()))))
        .collect();
    Value::Object(map)
}

impl Tool for ResourceTool {
    /// Reads an MCP server's resource: `extension` in traces.
    fn tool_type(&self) -> signet::tool::ToolType {
        signet::tool::ToolType::Extension
    }

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value) -> ToolFuture<'_> {
        async move { self.run(self.session.0.clone(), args).await }.boxed()
    }
}
