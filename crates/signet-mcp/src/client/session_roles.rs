//! The session's state in its two roles: the session the connection's handler answers for (the
//! server's own requests and notifications), and the session a listed tool calls through.

use std::sync::{Arc, RwLock};

use futures::future::BoxFuture;
use rmcp::Peer;
use rmcp::model::CallToolResult;
use rmcp::service::RoleClient;
use serde_json::Value;

use super::progress::ProgressRoutes;
use super::sampling::SamplingSpend;
use super::session::Inner;
use super::{McpClientBuilder, McpTool, Root, handler, tool};
use crate::Error;

impl handler::Session for Inner {
    fn label(&self) -> &str {
        &self.label
    }

    fn options(&self) -> &McpClientBuilder {
        &self.options
    }

    fn roots(&self) -> &RwLock<Option<Vec<Root>>> {
        &self.roots
    }

    fn sampled(&self) -> &SamplingSpend {
        &self.sampled
    }

    fn progress(&self) -> &ProgressRoutes {
        &self.progress
    }

    fn resource_updated(&self, uri: String) {
        // No subscriber is not an error: nobody waits for updates right now.
        let _ = self.updates.send(uri);
    }

    fn tools_list_changed(self: Arc<Self>, peer: Peer<RoleClient>, generation: u64) {
        self.relist_tools(peer, generation);
    }
}

impl tool::Session for Inner {
    fn label(&self) -> &str {
        &self.label
    }

    fn current_tool(&self, remote: &str) -> Option<Arc<McpTool>> {
        Inner::current_tool(self, remote)
    }

    fn call_tool(
        self: Arc<Self>,
        remote: String,
        args: Value,
    ) -> BoxFuture<'static, Result<CallToolResult, Error>> {
        Box::pin(async move { self.call(&remote, args).await })
    }
}
