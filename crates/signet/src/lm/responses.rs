//! [`OpenAiResponsesLm`]: OpenAI's Responses API, `POST {base_url}/responses`, on the shared
//! provider layer ([`super::http_provider`]): this module is the wire format.

use serde_json::Value;

mod events;
mod wire;

use super::http_endpoint::{ApiKey, BuildError};
use super::http_provider::{ClientSettings, Defaults, ProviderClient, WireFormat, client_setters};
use super::{Capabilities, Completion, LmError, LmRequest, ResponseDetails};

/// OpenAI's Responses API as the shared layer sees it.
struct Responses;

impl WireFormat for Responses {
    type Body = ();
    type Events = events::EventReader;
    const PROVIDER: &'static str = "openai";

    fn body(model: &str, _: &(), request: &LmRequest, stream: bool) -> Result<Value, LmError> {
        wire::request_body(model, request, stream)
    }

    fn parse(reply: &Value) -> Result<Completion, LmError> {
        wire::parse_response(reply)
    }

    fn details(reply: &Value) -> ResponseDetails<'_> {
        let cached = reply["usage"]["input_tokens_details"]["cached_tokens"].as_u64();
        let reasoning = reply["usage"]["output_tokens_details"]["reasoning_tokens"].as_u64();
        let mut details = ResponseDetails::new(reply["id"].as_str(), reply["model"].as_str());
        details.cached_tokens = cached;
        details.reasoning_tokens = reasoning;
        details
    }
}

/// Where a Responses client finds its defaults: OpenAI's.
const DEFAULTS: Defaults = Defaults {
    base_url_env: "OPENAI_BASE_URL",
    api_key_env: "OPENAI_API_KEY",
    base_url: super::openai::OPENAI_API_BASE,
    home: "api.openai.com",
    path: "/responses",
    stream_path: None,
    key_header: |key| ("authorization".to_owned(), ApiKey(format!("Bearer {key}"))),
    public_headers: &[],
};

/// A client of OpenAI's Responses API (`POST {base_url}/responses`): the API OpenAI serves some
/// models through only, and that llama.cpp's server answers too.
///
/// Signet does not choose the API from the model's name (DSPy's `model_type="responses"` is a
/// choice too): use [`OpenAiLm`](super::OpenAiLm) for chat completions, this client for the
/// Responses API. Both read `OPENAI_BASE_URL` and `OPENAI_API_KEY` the same way and have the same
/// retries, cache, history, spans, pricing and request limit. What maps to what:
/// - system messages become `instructions`; user and assistant messages become input messages
///   (`input_text`, `input_image`, `output_text`); an assistant's tool calls become
///   `function_call` items and their results `function_call_output` items, matched by `call_id`;
/// - tools are `function` tools, sent with `strict: false` unless the definition says otherwise
///   (the API's default is strict);
/// - a [`ResponseFormat`](super::ResponseFormat) becomes `text.format` (`json_schema`,
///   `json_object`);
/// - `max_tokens` becomes `max_output_tokens`; the API has no `stop`, `seed` or penalties: a
///   request with stop sequences is an error before sending, the others are not sent;
/// - reasoning summaries become [`Completion::reasoning`]; usage carries the cached tokens.
///
/// ```no_run
/// use signet::lm::{Lm, LmRequest, Message, OpenAiResponsesLm};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let lm = OpenAiResponsesLm::builder("gpt-5-mini").build()?;
/// let reply = lm.complete(&LmRequest::new(vec![Message::user("Say hi")])).await?;
/// println!("{:?}", reply.text);
/// # Ok(()) }
/// ```
pub struct OpenAiResponsesLm(ProviderClient<Responses>);

impl OpenAiResponsesLm {
    /// A builder for a client of `model` (see [`OpenAiResponsesLmBuilder`] for the defaults).
    pub fn builder(model: impl Into<String>) -> OpenAiResponsesLmBuilder {
        OpenAiResponsesLmBuilder {
            client: ClientSettings::new(model.into(), Capabilities::openai()),
        }
    }

    /// The JSON body this client sends for `request` (with `"stream": true` when `stream`), or why
    /// the Responses API cannot express it.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::lm::{LmRequest, Message, OpenAiResponsesLm};
    ///
    /// let lm = OpenAiResponsesLm::builder("gpt-5-mini").base_url("http://localhost:1/v1").build().unwrap();
    /// let mut request = LmRequest::new(vec![Message::system("Be brief."), Message::user("hi")]);
    /// request.options.max_tokens = Some(20);
    /// assert_eq!(lm.request_body(&request, false).unwrap(), json!({
    ///     "model": "gpt-5-mini",
    ///     "instructions": "Be brief.",
    ///     "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
    ///     "max_output_tokens": 20,
    /// }));
    /// ```
    pub fn request_body(&self, request: &LmRequest, stream: bool) -> Result<Value, LmError> {
        self.0.request_body(request, stream)
    }
}

crate::lm::http_provider::provider_client!(OpenAiResponsesLm);

/// Configures an [`OpenAiResponsesLm`]. Created by [`OpenAiResponsesLm::builder`].
///
/// Defaults: base URL from `OPENAI_BASE_URL`, else `https://api.openai.com/v1`; API key from
/// `OPENAI_API_KEY` (sent only to OpenAI's API or to the `OPENAI_BASE_URL` it came with), else
/// none; capabilities [`Capabilities::openai`]; 600 s per attempt and 10 minutes per stream;
/// [`RetryPolicy::default`](crate::lm::RetryPolicy::default); no cache; a new
/// [`CallHistory`](super::CallHistory); replies read up to 16 MiB.
///
/// ```
/// use signet::lm::{Capabilities, Lm, OpenAiResponsesLm};
///
/// let lm = OpenAiResponsesLm::builder("smollm2")
///     .base_url("http://127.0.0.1:8080/v1/")
///     .capabilities(Capabilities::llama_cpp())
///     .max_retries(1)
///     .build()
///     .unwrap();
/// assert_eq!(lm.base_url(), "http://127.0.0.1:8080/v1");
/// assert!(!lm.capabilities().function_calling);
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiResponsesLmBuilder {
    client: ClientSettings,
}

impl OpenAiResponsesLmBuilder {
    client_setters!();

    /// Builds the client, reading `OPENAI_BASE_URL` and `OPENAI_API_KEY` for what was not set.
    /// The base URL includes the version (`https://api.openai.com/v1`, `http://HOST:PORT/v1`).
    pub fn build(self) -> Result<OpenAiResponsesLm, BuildError> {
        Ok(OpenAiResponsesLm(self.client.build(&DEFAULTS, ())?))
    }
}
