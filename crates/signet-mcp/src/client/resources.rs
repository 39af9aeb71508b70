//! Resources: what a server exposes to read (files, records, generated documents), their URI
//! templates, subscriptions to their changes, and the prompts it ships.

#![allow(deprecated)] // resources/subscribe is legacy in the newest protocol, current everywhere else

use std::sync::Arc;

use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, Prompt, ReadResourceRequestParams, Resource,
    ResourceContents, ResourceTemplate, SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde_json::Value;
use signet::lm::Message;
use tokio::sync::broadcast;

use super::McpClient;
use super::session::Inner;
use crate::Error;
use crate::content::prompt_messages;

impl McpClient {
    /// The server's resources (every page of `resources/list`).
    ///
    /// ```no_run
    /// # async fn run(client: signet_mcp::McpClient) -> Result<(), signet_mcp::Error> {
    /// for resource in client.resources().await? {
    ///     println!("{} ({})", resource.uri, resource.name);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn resources(&self) -> Result<Vec<Resource>, Error> {
        self.inner.resources().await
    }

    /// The server's resource templates (URIs with `{placeholders}`, RFC 6570), to fill in and
    /// [read](Self::read_resource).
    pub async fn resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.inner.resource_templates().await
    }

    /// Reads the resource at `uri`: its contents, text or binary (base64). An unknown URI is the
    /// server's [`Error::Protocol`]. [`content::resource_value`](crate::content::resource_value)
    /// turns the contents into one JSON value.
    ///
    /// ```no_run
    /// # async fn run(client: signet_mcp::McpClient) -> Result<(), signet_mcp::Error> {
    /// let contents = client.read_resource("file:///etc/hostname").await?;
    /// println!("{}", signet_mcp::content::resource_value(&contents));
    /// # Ok(()) }
    /// ```
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<ResourceContents>, Error> {
        self.inner.read_resource(uri).await
    }

    /// Asks the server to say when the resource at `uri` changes; the URIs arrive on
    /// [`resource_updates`](Self::resource_updates). Subscriptions end with the session (a
    /// restarted server starts with none).
    pub async fn subscribe(&self, uri: &str) -> Result<(), Error> {
        let params = SubscribeRequestParams::new(uri);
        self.inner
            .request(&format!("resources/subscribe `{uri}`"), |peer| async move {
                peer.subscribe(params).await
            })
            .await
    }

    /// Ends a [subscription](Self::subscribe).
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), Error> {
        let params = UnsubscribeRequestParams::new(uri);
        self.inner
            .request(
                &format!("resources/unsubscribe `{uri}`"),
                |peer| async move { peer.unsubscribe(params).await },
            )
            .await
    }

    /// A receiver of the URIs of subscribed resources that changed, from now on. A receiver that
    /// falls more than 64 updates behind skips the oldest (`RecvError::Lagged`).
    pub fn resource_updates(&self) -> broadcast::Receiver<String> {
        self.inner.updates.subscribe()
    }

    /// The server's prompts: templates of messages, with their arguments.
    pub async fn prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.inner
            .list_pages("prompts/list", |peer, params| async move {
                let page = peer.list_prompts(params).await?;
                Ok((page.prompts, page.next_cursor))
            })
            .await
    }

    /// Fills in the prompt `name` with `arguments` (a JSON object of strings, or `null`). A
    /// missing required argument or an unknown prompt is the server's [`Error::Protocol`].
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<GetPromptResult, Error> {
        let mut params = GetPromptRequestParams::new(name);
        match arguments {
            Value::Object(map) => params = params.with_arguments(map),
            Value::Null => {}
            other => {
                return Err(Error::Unsupported {
                    server: self.inner.label().to_owned(),
                    message: format!("prompt arguments must be a JSON object, got {other}"),
                });
            }
        }
        self.inner
            .request(&format!("prompts/get `{name}`"), |peer| async move {
                peer.get_prompt(params).await
            })
            .await
    }

    /// The prompt `name` filled in, as Signet chat messages ready for an [`Lm`](signet::lm::Lm)
    /// (converted by [`content::prompt_messages`](crate::content::prompt_messages)).
    ///
    /// ```no_run
    /// # async fn run(client: signet_mcp::McpClient) -> Result<(), signet_mcp::Error> {
    /// let messages = client
    ///     .prompt_messages("args-prompt", serde_json::json!({"city": "Paris"}))
    ///     .await?;
    /// let request = signet::lm::LmRequest::new(messages);
    /// # let _ = request;
    /// # Ok(()) }
    /// ```
    pub async fn prompt_messages(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Vec<Message>, Error> {
        Ok(prompt_messages(&self.get_prompt(name, arguments).await?))
    }
}

/// The requests behind both [`McpClient`]'s methods and its [resource tools](McpClient::resource_tools).
impl Inner {
    pub(super) async fn resources(self: &Arc<Self>) -> Result<Vec<Resource>, Error> {
        self.list_pages("resources/list", |peer, params| async move {
            let page = peer.list_resources(params).await?;
            Ok((page.resources, page.next_cursor))
        })
        .await
    }

    pub(super) async fn resource_templates(
        self: &Arc<Self>,
    ) -> Result<Vec<ResourceTemplate>, Error> {
        self.list_pages("resources/templates/list", |peer, params| async move {
            let page = peer.list_resource_templates(params).await?;
            Ok((page.resource_templates, page.next_cursor))
        })
        .await
    }

    pub(super) async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, Error> {
        let params = ReadResourceRequestParams::new(uri);
        let result = self
            .request(&format!("resources/read `{uri}`"), |peer| async move {
                peer.read_resource(params).await
            })
            .await?;
        Ok(result.contents)
    }
}
