//! The client's side of the session: what Signet declares in the handshake, and how it answers
//! the server's own requests (sampling, elicitation, roots) and notifications (tool list and
//! resource changes).

#![allow(deprecated)] // sampling and roots are deprecated by SEP-2577 but in wide use

use std::sync::{Arc, Weak};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorData, FormElicitationCapability,
    Implementation, ListRootsResult, ProgressNotificationParam, ResourceUpdatedNotificationParam,
    RootsCapabilities, SamplingCapability, UrlElicitationCapability,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext, RoleClient};

use super::session::Inner;

/// The rmcp client handler of one connection.
pub(super) struct ClientSide {
    inner: Weak<Inner>,
    generation: u64,
    capabilities: ClientCapabilities,
}

impl ClientSide {
    /// The handler for connection `generation` of `inner`, declaring what its options turn on.
    pub(super) fn new(inner: &Arc<Inner>, generation: u64) -> Self {
        let options = &inner.options;
        let mut capabilities = ClientCapabilities::default();
        if inner.roots.read().is_ok_and(|roots| roots.is_some()) {
            let mut roots = RootsCapabilities::default();
            roots.list_changed = Some(true);
            capabilities.roots = Some(roots);
        }
        if options.sampling.is_some() {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        if options.elicitation.is_some() {
            capabilities.elicitation = Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new().with_schema_validation(true))
                    .with_url(UrlElicitationCapability::new()),
            );
        }
        ClientSide {
            inner: Arc::downgrade(inner),
            generation,
            capabilities,
        }
    }

    /// The client's state, or an error for the server's `what` when the client is gone.
    fn inner(&self, what: &str) -> Result<Arc<Inner>, ErrorData> {
        self.inner.upgrade().ok_or_else(|| {
            ErrorData::internal_error(format!("the MCP client was closed before {what}"), None)
        })
    }
}

impl ClientHandler for ClientSide {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            self.capabilities.clone(),
            Implementation::new("signet-mcp", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let inner = self.inner("the sampling request")?;
        let Some(sampling) = &inner.options.sampling else {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "this client does not offer sampling (McpClientBuilder::sampling)",
                None,
            ));
        };
        sampling.answer(&inner, params).await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let inner = self.inner("roots/list")?;
        let roots = inner
            .roots
            .read()
            .map(|roots| roots.iter().flatten().map(super::Root::to_mcp).collect())
            .unwrap_or_default();
        Ok(ListRootsResult::new(roots))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let inner = self.inner("the elicitation request")?;
        match &inner.options.elicitation {
            Some(handler) => handler.answer(inner.label(), request).await,
            None => Ok(ElicitResult::new(rmcp::model::ElicitationAction::Decline)),
        }
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        if let Some(inner) = self.inner.upgrade() {
            inner.progress(
                &params.progress_token,
                params.progress,
                params.total,
                params.message,
            );
        }
        std::future::ready(())
    }

    fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        if let Some(inner) = self.inner.upgrade() {
            tracing::debug!(server = %inner.label(), uri = %params.uri, "resource updated");
            let _ = inner.updates.send(params.uri);
        }
        std::future::ready(())
    }

    fn on_tool_list_changed(
        &self,
        context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        if let Some(inner) = self.inner.upgrade() {
            inner.tools_list_changed(context.peer, self.generation);
        }
        std::future::ready(())
    }
}
