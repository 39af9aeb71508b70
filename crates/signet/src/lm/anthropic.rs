//! [`AnthropicLm`]: Claude (or any server of the same API, such as llama.cpp's) through
//! Anthropic's Messages API, `POST {base_url}/v1/messages`, on the shared provider layer
//! ([`super::http_provider`]): this module is the wire format.

use serde_json::Value;

mod events;
mod wire;

use super::http_endpoint::{ApiKey, BuildError};
use super::http_provider::{ClientSettings, Defaults, ProviderClient, WireFormat, client_setters};
use super::{Capabilities, Completion, LmError, LmRequest, ResponseDetails};

/// Anthropic's API as the shared layer sees it.
struct Anthropic;

impl WireFormat for Anthropic {
    type Body = wire::BodySettings;
    type Events = events::EventReader;
    const PROVIDER: &'static str = "anthropic";

    fn body(
        model: &str,
        settings: &wire::BodySettings,
        request: &LmRequest,
        stream: bool,
    ) -> Result<Value, LmError> {
        wire::request_body(model, settings, request, stream)
    }

    fn parse(reply: &Value) -> Result<Completion, LmError> {
        wire::parse_reply(reply)
    }

    fn details(reply: &Value) -> ResponseDetails<'_> {
        let mut details = ResponseDetails::new(reply["id"].as_str(), reply["model"].as_str());
        details.cached_tokens = reply["usage"]["cache_read_input_tokens"].as_u64();
        details
    }
}

/// Where an Anthropic client finds its defaults.
const DEFAULTS: Defaults = Defaults {
    base_url_env: "ANTHROPIC_BASE_URL",
    api_key_env: "ANTHROPIC_API_KEY",
    base_url: "https://api.anthropic.com",
    home: "api.anthropic.com",
    path: "/v1/messages",
    stream_path: None,
    key_header: |key| ("x-api-key".to_owned(), ApiKey(key)),
    public_headers: &[("anthropic-version", "2023-06-01")],
};

/// A client of Anthropic's Messages API (Claude), or of any server that speaks it (llama.cpp's
/// server answers `POST /v1/messages` too).
///
/// Built with [`AnthropicLm::builder`], behind the same wrappers as [`OpenAiLm`](super::OpenAiLm):
/// retries on transient errors (429 with `retry-after`, 529 `overloaded_error`, 5xx, timeouts),
/// an optional [`ResponseCache`](super::ResponseCache), and the [`CallHistory`](super::CallHistory). What maps to what:
/// - system messages become the `system` prompt; user, assistant and tool-result messages become
///   turns of content blocks (`text`, `image`, `tool_use`, `tool_result`), the results of
///   parallel tool calls in one user turn, matched by id;
/// - `cache_control` breakpoints mark the stable prefix (the system prompt, the tool list, the
///   turns before the last: a program's demos), unless
///   [`prompt_caching(false)`](AnthropicLmBuilder::prompt_caching); the reply's cache reads and
///   writes are in [`Usage`](super::Usage) and priced by [`Pricing`](super::Pricing);
/// - a JSON-schema [`ResponseFormat`](super::ResponseFormat) becomes structured outputs
///   (`output_config.format`); the API has no JSON mode, so `JsonObject` is an error;
/// - `thinking` blocks become [`Completion::reasoning`];
/// - [`LmRequest::extra`] keys are sent as they are (`thinking`, `top_k`, `metadata`, ..).
///
/// The API key goes in `x-api-key`, never in `Debug` output, logs or errors.
///
/// ```no_run
/// use signet::lm::{AnthropicLm, Lm, LmRequest, Message};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // The key comes from ANTHROPIC_API_KEY.
/// let claude = AnthropicLm::builder("claude-haiku-4-5").build()?;
/// let reply = claude.complete(&LmRequest::new(vec![Message::user("Say hi")])).await?;
/// println!("{:?}", reply.text);
/// # Ok(()) }
/// ```
pub struct AnthropicLm(ProviderClient<Anthropic>);

impl AnthropicLm {
    /// A builder for a client of `model` (see [`AnthropicLmBuilder`] for the defaults).
    pub fn builder(model: impl Into<String>) -> AnthropicLmBuilder {
        AnthropicLmBuilder {
            client: ClientSettings::new(model.into(), Capabilities::anthropic()),
            body: wire::BodySettings {
                max_tokens: 4096,
                prompt_caching: true,
            },
        }
    }

    /// The JSON body this client sends for `request` (with `"stream": true` when `stream`), or why
    /// the Messages API cannot express it.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::lm::{AnthropicLm, LmRequest, Message};
    ///
    /// let lm = AnthropicLm::builder("claude-haiku-4-5").base_url("http://localhost:1").build().unwrap();
    /// let mut request = LmRequest::new(vec![Message::system("Be brief."), Message::user("hi")]);
    /// request.options.temperature = Some(0.5);
    /// assert_eq!(lm.request_body(&request, false).unwrap(), json!({
    ///     "model": "claude-haiku-4-5",
    ///     "max_tokens": 4096,
    ///     "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    ///     "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    ///     "temperature": 0.5,
    /// }));
    /// ```
    pub fn request_body(&self, request: &LmRequest, stream: bool) -> Result<Value, LmError> {
        self.0.request_body(request, stream)
    }
}

crate::lm::http_provider::provider_client!(AnthropicLm);

/// Configures an [`AnthropicLm`]. Created by [`AnthropicLm::builder`].
///
/// Defaults: base URL from `ANTHROPIC_BASE_URL`, else `https://api.anthropic.com`; API key from
/// `ANTHROPIC_API_KEY` (sent only to Anthropic's API or to the `ANTHROPIC_BASE_URL` it came with,
/// never to a base URL set in code for another host), else none (local servers need none);
/// capabilities [`Capabilities::anthropic`]; `max_tokens` 4096 when a request sets none; prompt
/// caching on; 600 s per attempt and 10 minutes per stream; [`RetryPolicy::default`](super::RetryPolicy::default); no cache;
/// a [`CallHistory`](super::CallHistory) of the last 1000 calls; replies read up to 16 MiB.
///
/// ```
/// use std::time::Duration;
/// use signet::lm::{AnthropicLm, Lm, Pricing};
///
/// let lm = AnthropicLm::builder("claude-haiku-4-5")
///     .base_url("http://127.0.0.1:8080/")
///     .api_key("not-needed")
///     .max_tokens(1024)
///     .pricing(Pricing::per_million_tokens(1.0, 5.0).cached_input(0.1).cache_write(1.25))
///     .timeout(Duration::from_secs(30))
///     .build()
///     .unwrap();
/// assert_eq!(lm.base_url(), "http://127.0.0.1:8080");
/// assert!(lm.capabilities().function_calling);
/// assert!(!format!("{lm:?}").contains("not-needed"));
/// ```
#[derive(Clone, Debug)]
pub struct AnthropicLmBuilder {
    client: ClientSettings,
    body: wire::BodySettings,
}

impl AnthropicLmBuilder {
    client_setters!();

    crate::shared::setters! {
        /// The `max_tokens` of a request that sets none (the API requires one; default 4096).
        fn max_tokens(max_tokens: u32) { body.max_tokens = max_tokens.max(1) }

        /// Whether to mark the stable prefix of each prompt — the system prompt, the tool list,
        /// the turns before the last (a program's demos) — with `cache_control` breakpoints, so
        /// that the next call reads it from Anthropic's prompt cache (on by default). A prefix
        /// shorter than the model's minimum (1,024 tokens for most) is simply not cached.
        fn prompt_caching(on: bool) { body.prompt_caching = on }
    }

    /// Builds the client, reading `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` for what was not
    /// set. The base URL is the server's, without `/v1` (`https://api.anthropic.com`,
    /// `http://HOST:PORT` for llama.cpp's server).
    pub fn build(self) -> Result<AnthropicLm, BuildError> {
        Ok(AnthropicLm(self.client.build(&DEFAULTS, self.body)?))
    }
}
