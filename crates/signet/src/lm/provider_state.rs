//! What a provider asks to get back, unchanged, when a conversation goes on after its reply
//! ([`ProviderState`]).

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Data a provider asked to get back with the assistant turn it wrote, opaque to Signet and
/// named by the provider that wrote it (`"anthropic"`, `"gemini"`, `"openai-responses"`), so that
/// another provider is never sent it. Cloning it is cheap (it is shared, not copied: a tool loop
/// sends a turn's thinking back on every later turn).
///
/// ```
/// use serde_json::json;
/// use signet::lm::ProviderState;
/// let state = ProviderState::new("anthropic", json!([{"type": "thinking", "signature": "s"}]));
/// assert_eq!(state.provider(), "anthropic");
/// assert_eq!(state.data()[0]["signature"], "s");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "ProviderStateFields", into = "ProviderStateFields")]
pub struct ProviderState(Arc<ProviderStateFields>);

/// A [`ProviderState`]'s fields, as it is serialized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ProviderStateFields {
    provider: String,
    data: Value,
}

impl From<ProviderStateFields> for ProviderState {
    fn from(fields: ProviderStateFields) -> ProviderState {
        ProviderState(Arc::new(fields))
    }
}

impl From<ProviderState> for ProviderStateFields {
    fn from(state: ProviderState) -> ProviderStateFields {
        Arc::unwrap_or_clone(state.0)
    }
}

impl ProviderState {
    /// `data` written by `provider`.
    pub fn new(provider: impl Into<String>, data: Value) -> ProviderState {
        ProviderState(Arc::new(ProviderStateFields {
            provider: provider.into(),
            data,
        }))
    }

    /// The provider that wrote it.
    pub fn provider(&self) -> &str {
        &self.0.provider
    }

    /// What it wrote, as it reads it back.
    pub fn data(&self) -> &Value {
        &self.0.data
    }
}
