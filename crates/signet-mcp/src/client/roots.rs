//! Roots: the places (directories, repositories) the client tells a server it may work in.

use super::McpClient;
use crate::Error;

/// One root: a URI (`file:///home/me/project`) and an optional name.
///
/// Declare them with [`McpClientBuilder::roots`](super::McpClientBuilder::roots); change them with
/// [`McpClient::set_roots`]. A server that honours roots (the filesystem server does) confines
/// itself to them; others ignore them. Roots are a statement to the server, not a sandbox.
///
/// ```
/// let root = signet_mcp::Root::directory("/srv/data").unwrap().name("data");
/// assert_eq!(root.uri(), "file:///srv/data");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    uri: String,
    name: Option<String>,
}

impl Root {
    /// A root with this URI, as given.
    pub fn new(uri: impl Into<String>) -> Root {
        Root {
            uri: uri.into(),
            name: None,
        }
    }

    /// The root for a local directory: its absolute path as a `file://` URI, or `None` when the
    /// path is not absolute.
    pub fn directory(path: impl AsRef<std::path::Path>) -> Option<Root> {
        let path = path.as_ref();
        if !path.is_absolute() {
            return None;
        }
        Some(Root::new(format!("file://{}", path.display())))
    }

    /// Gives the root a human-readable name.
    pub fn name(mut self, name: impl Into<String>) -> Root {
        self.name = Some(name.into());
        self
    }

    /// The root's URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    #[allow(deprecated)] // roots are deprecated by SEP-2577 but in wide use
    pub(super) fn to_mcp(&self) -> rmcp::model::Root {
        let root = rmcp::model::Root::new(self.uri.clone());
        match &self.name {
            Some(name) => root.with_name(name.clone()),
            None => root,
        }
    }
}

impl McpClient {
    /// The roots declared to the server (`None` when the client declares no roots capability).
    pub fn roots(&self) -> Option<Vec<Root>> {
        self.inner.roots.read().ok().and_then(|r| r.clone())
    }

    /// Replaces the roots and tells the server (`notifications/roots/list_changed`); it asks for
    /// the new list when it wants it. Fails with [`Error::Unsupported`] when the client was built
    /// without [`roots`](super::McpClientBuilder::roots): the capability is declared in the
    /// handshake, so it cannot be added afterwards.
    pub async fn set_roots(&self, roots: impl IntoIterator<Item = Root>) -> Result<(), Error> {
        {
            let mut slot = self.inner.roots.write().map_err(|_| Error::Closed {
                server: self.inner.label().to_owned(),
            })?;
            let Some(current) = slot.as_mut() else {
                return Err(Error::Unsupported {
                    server: self.inner.label().to_owned(),
                    message: "this client declared no roots; build it with \
                              McpClientBuilder::roots (an empty list is fine) to change them later"
                        .to_owned(),
                });
            };
            *current = roots.into_iter().collect();
        }
        #[allow(deprecated)]
        self.inner
            .request("notifications/roots/list_changed", |peer| async move {
                peer.notify_roots_list_changed().await
            })
            .await
    }
}
