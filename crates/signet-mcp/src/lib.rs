//! # signet-mcp
//!
//! The user guide (getting started, tutorials, how-to pages and reference) is in the repository:
//! <https://github.com/signet-rs/signet/tree/main/docs>.
//!
//! The [Model Context Protocol](https://modelcontextprotocol.io) bridge for Signet, on the official
//! Rust SDK ([`rmcp`]), both ways:
//!
//! * **Client** — [`McpClient::spawn`] starts a stdio MCP server ([`StdioCommand`]: program,
//!   arguments, and exactly the environment you give it), [`McpClient::connect`] connects to a
//!   streamable-HTTP one. The handle and its tools own the session (closing the handle, or
//!   dropping it and every tool it handed out, stops the server) and
//!   its [`tools`](McpClient::tools) are ordinary `Arc<dyn signet::Tool>`s ([`McpTool`]): hand them
//!   to ReAct next to your `#[tool]` functions. Arguments are validated locally against the
//!   server's schema; results are converted as DSPy does ([`content`]); `isError` results,
//!   protocol errors, timeouts and dead servers are tool errors the agent sees as observations.
//!   Beyond tools, the client reads [resources](McpClient::resources) and
//!   [prompts](McpClient::prompt_messages), offers resources to an agent
//!   ([`resource_tools`](McpClient::resource_tools)), and — when you opt in — answers the
//!   server's [sampling](McpClientBuilder::sampling) with your model,
//!   its [questions to the user](McpClientBuilder::elicitation), and [roots](McpClientBuilder::roots).
//! * **Server** — [`McpServer`] serves any set of Signet tools (the same `#[tool]` functions) over
//!   stdio or streamable HTTP, with their generated schemas and descriptions, and whole modules
//!   (a ReAct agent, a compiled program) as one tool each ([`McpServer::module`]), with progress
//!   notifications and cancellation.
//!
//! Both ways in one program — a `#[tool]` served over streamable HTTP, and used again through
//! the client as an ordinary Signet tool:
//!
//! ```
//! use std::sync::Arc;
//! use signet::{Tool, tool};
//! use signet_mcp::{McpClient, McpServer};
//!
//! /// Add two integers.
//! #[tool]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let http = McpServer::new().tool(AddTool)
//!     .serve_http("127.0.0.1:0")
//!     .await?;
//! let client = McpClient::connect(http.url()).await?;
//! let tools: Vec<Arc<dyn Tool>> = client.tools(); // hand these to ReAct
//! assert_eq!(tools[0].name(), "add");
//! assert_eq!(tools[0].args_schema(), AddTool.args_schema());
//! assert_eq!(tools[0].call(serde_json::json!({"a": 2, "b": 3})).await.unwrap(), "5");
//! client.close().await?;
//! http.shutdown().await.unwrap();
//! # Ok::<(), signet_mcp::Error>(())
//! # }).unwrap();
//! ```
//!
//! A stdio server is one call too:
//!
//! ```no_run
//! use signet_mcp::{McpClient, StdioCommand};
//! # async fn run() -> Result<(), signet_mcp::Error> {
//! let memory = McpClient::spawn(
//!     StdioCommand::new("npx")
//!         .args(["-y", "@modelcontextprotocol/server-memory"])
//!         .inherit_env(["PATH", "HOME"]), // the server gets no other variable
//! )
//! .await?;
//! println!("{:?}", memory.tool_names());
//! memory.close().await?;
//! # Ok(()) }
//! ```
//!
//! See `docs/mcp.md` in the repository for the full guide.

mod auth;
mod client;
pub mod content;
mod error;
mod server;
mod shed;
mod telemetry;

pub use auth::BearerAuth;
pub use client::{
    Elicitation, ElicitationAnswer, ElicitationKind, McpClient, McpClientBuilder, McpTool, Root,
    Sampling, SamplingRequest, StdioCommand,
};
pub use error::Error;
pub use server::http::HttpServer;
pub use server::{HttpMode, McpServer, ServerLoad};

/// The MCP SDK this crate is built on, for its protocol types (`rmcp::model::CallToolResult`, ...).
pub use rmcp;
