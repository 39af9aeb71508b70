//! The client's side of the session: what Signet declares in the handshake, and how it answers
//! the server's own requests (sampling, elicitation, roots) and notifications (tool list and
//! resource changes).

#![allow(deprecated)] // sampling and roots are deprecated by SEP-2577 but in wide use

use std::sync::{Arc, RwLock, Weak};

use rmcp::ClientHandler;
use rmcp::Peer;
use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorData, FormElicitationCapability,
    Implementation, ListRootsResult, ProgressNotificationParam, ResourceUpdatedNotificationParam,
    RootsCapabilities, SamplingCapability, UrlElicitationCapability,
};
use rmcp::service::{MaybeSendFuture, NotificationContext, RequestContext, RoleClient};

use super::progress::ProgressRoutes;
use super::sampling::SamplingSpend;
use super::{McpClientBuilder, Root};

/// What the handler needs of the session it answers for: the session's state implements it, and
/// owns the connection this handler serves.
pub(super) trait Session: Send + Sync + 'static {
    /// The server's name in messages.
    fn label(&self) -> &str;
    /// The client's options.
    fn options(&self) -> &McpClientBuilder;
    /// The roots declared to the server (`None`: the capability is not declared).
    fn roots(&self) -> &RwLock<Option<Vec<Root>>>;
    /// Tokens spent answering the server's sampling requests.
    fn sampled(&self) -> &SamplingSpend;
    /// Where the server's progress notifications go.
    fn progress(&self) -> &ProgressRoutes;
    /// A subscribed resource the server says changed.
    fn resource_updated(&self, uri: String);
    /// The server's tool list changed on connection `generation`.
    fn tools_list_changed(self: Arc<Self>, peer: Peer<RoleClient>, generation: u64);
}

/// The rmcp client handler of one connection.
pub(super) struct ClientSide {
    session: Weak<dyn Session>,
    generation: u64,
    capabilities: ClientCapabilities,
}

impl ClientSide {
    /// The handler for connection `generation` of `session`, declaring what its options turn on.
    pub(super) fn new<S: Session>(session: &Arc<S>, generation: u64) -> Self {
        let options = session.options();
        let mut capabilities = ClientCapabilities::default();
        if session.roots().read().is_ok_and(|roots| roots.is_some()) {
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
        let session: Weak<dyn Session> = Arc::downgrade(session) as Weak<S>;
        ClientSide {
            session,
            generation,
            capabilities,
        }
    }

    /// The client's state, or an error for the server's `what` when the client is gone.
    fn session(&self, what: &str) -> Result<Arc<dyn Session>, ErrorData> {
        self.session.upgrade().ok_or_else(|| {
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
        let session = self.session("the sampling request")?;
        let Some(sampling) = &session.options().sampling else {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "this client does not offer sampling (McpClientBuilder::sampling)",
                None,
            ));
        };
        sampling
            .answer(session.label(), session.sampled(), params)
            .await
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let session = self.session("roots/list")?;
        let roots = session
            .roots()
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
        let session = self.session("the elicitation request")?;
        match &session.options().elicitation {
            Some(handler) => handler.answer(session.label(), request).await,
            None => Ok(ElicitResult::new(rmcp::model::ElicitationAction::Decline)),
        }
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        if let Some(session) = self.session.upgrade() {
            session.progress().notify(
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
        if let Some(session) = self.session.upgrade() {
            tracing::debug!(server = %session.label(), uri = %params.uri, "resource updated");
            session.resource_updated(params.uri);
        }
        std::future::ready(())
    }

    fn on_tool_list_changed(
        &self,
        context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        if let Some(session) = self.session.upgrade() {
            session.tools_list_changed(context.peer, self.generation);
        }
        std::future::ready(())
    }
}
