//! [`GeminiLm`]: Google's Gemini API, `generateContent` and `streamGenerateContent`, on the shared
//! provider layer ([`super::http_provider`]): this module is the wire format.

use std::time::Duration;

use serde_json::Value;

mod events;
mod wire;

use super::http_endpoint::{ApiKey, BuildError};
use super::http_provider::{ClientSettings, Defaults, ProviderClient, WireFormat, client_setters};
use super::{Capabilities, Completion, LmError, LmRequest, ResponseDetails};

/// Gemini's API as the shared layer sees it.
struct Gemini;

impl WireFormat for Gemini {
    type Body = ();
    type Events = events::EventReader;
    const PROVIDER: &'static str = "gcp.gemini";

    fn body(_: &str, _: &(), request: &LmRequest, _: bool) -> Result<Value, LmError> {
        wire::request_body(request)
    }

    fn parse(reply: &Value) -> Result<Completion, LmError> {
        wire::parse_response(reply)
    }

    fn details(reply: &Value) -> ResponseDetails<'_> {
        let mut details =
            ResponseDetails::new(reply["responseId"].as_str(), reply["modelVersion"].as_str());
        details.cached_tokens = reply["usageMetadata"]["cachedContentTokenCount"].as_u64();
        details.reasoning_tokens = reply["usageMetadata"]["thoughtsTokenCount"].as_u64();
        details
    }

    fn classify(status: u16, retry_after: Option<Duration>, body: &str) -> LmError {
        wire::classify(status, retry_after, body)
    }
}

/// Where a Gemini client finds its defaults.
const DEFAULTS: Defaults = Defaults {
    base_url_env: "GEMINI_BASE_URL",
    api_key_env: "GEMINI_API_KEY",
    base_url: "https://generativelanguage.googleapis.com/v1beta",
    home: "generativelanguage.googleapis.com",
    path: "/models/{model}:generateContent",
    stream_path: Some("/models/{model}:streamGenerateContent?alt=sse"),
    key_header: |key| ("x-goog-api-key".to_owned(), ApiKey(key)),
    public_headers: &[],
};

/// A client of Google's Gemini API (`POST {base_url}/models/{model}:generateContent`, and
/// `:streamGenerateContent?alt=sse` for streams).
///
/// The same retries, cache, history, spans, pricing and request limit as the other clients. What
/// maps to what:
/// - system messages become `systemInstruction`; user and assistant messages become `user` and
///   `model` turns of parts (`text`, `inlineData` for inline images and audio, `fileData` for an
///   image URL);
/// - an assistant's tool calls become `functionCall` parts, their results `functionResponse`
///   parts (`{"result": text}`), named after the call they answer;
/// - tools become `functionDeclarations` (`parametersJsonSchema`); the tool choice
///   `functionCallingConfig` (`AUTO`, `ANY` with `allowedFunctionNames`, `NONE`);
/// - a JSON schema [`ResponseFormat`](super::ResponseFormat) becomes `responseMimeType:
///   application/json` with `responseJsonSchema`; JSON mode the MIME type alone;
/// - sampling, `maxOutputTokens`, `stopSequences`, `seed` and the penalties go in
///   `generationConfig`; thought parts become [`Completion::reasoning`];
/// - a 429's `RetryInfo.retryDelay` is the wait before the retry.
///
/// No Gemini server runs here: the client is tested against exchanges written from Google's API
/// reference (`tests/fixtures/gemini/`), not against the service.
///
/// ```no_run
/// use signet::lm::{GeminiLm, Lm, LmRequest, Message};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // The key comes from GEMINI_API_KEY.
/// let gemini = GeminiLm::builder("gemini-2.5-flash").build()?;
/// let reply = gemini.complete(&LmRequest::new(vec![Message::user("Say hi")])).await?;
/// println!("{:?}", reply.text);
/// # Ok(()) }
/// ```
pub struct GeminiLm(ProviderClient<Gemini>);

impl GeminiLm {
    /// A builder for a client of `model` (see [`GeminiLmBuilder`] for the defaults).
    pub fn builder(model: impl Into<String>) -> GeminiLmBuilder {
        GeminiLmBuilder {
            client: ClientSettings::new(model.into(), Capabilities::gemini()),
        }
    }

    /// The JSON body this client sends for `request`, or why the API cannot express it.
    ///
    /// ```
    /// use serde_json::json;
    /// use signet::lm::{GeminiLm, LmRequest, Message};
    ///
    /// let lm = GeminiLm::builder("gemini-2.5-flash").base_url("http://localhost:1/v1beta").build().unwrap();
    /// let mut request = LmRequest::new(vec![Message::system("Be brief."), Message::user("hi")]);
    /// request.options.max_tokens = Some(20);
    /// assert_eq!(lm.request_body(&request).unwrap(), json!({
    ///     "systemInstruction": {"parts": [{"text": "Be brief."}]},
    ///     "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    ///     "generationConfig": {"maxOutputTokens": 20},
    /// }));
    /// ```
    pub fn request_body(&self, request: &LmRequest) -> Result<Value, LmError> {
        self.0.request_body(request, false)
    }
}

crate::lm::http_provider::provider_client!(GeminiLm);

/// Configures a [`GeminiLm`]. Created by [`GeminiLm::builder`].
///
/// Defaults: base URL from `GEMINI_BASE_URL`, else
/// `https://generativelanguage.googleapis.com/v1beta`; API key from `GEMINI_API_KEY` (sent as
/// `x-goog-api-key`, only to Google's API or to the `GEMINI_BASE_URL` it came with), else none;
/// capabilities [`Capabilities::gemini`]; 600 s per attempt and 10 minutes per stream; the default
/// retry policy; no cache; a new [`CallHistory`](super::CallHistory); replies read up to 16 MiB.
///
/// ```
/// use signet::lm::{GeminiLm, Lm};
///
/// let lm = GeminiLm::builder("gemini-2.5-flash").api_key("AIza-secret").max_retries(1).build().unwrap();
/// assert!(lm.capabilities().function_calling && lm.capabilities().response_schema);
/// assert!(!format!("{lm:?}").contains("AIza-secret"));
/// ```
#[derive(Clone, Debug)]
pub struct GeminiLmBuilder {
    client: ClientSettings,
}

impl GeminiLmBuilder {
    client_setters!();

    /// Builds the client, reading `GEMINI_BASE_URL` and `GEMINI_API_KEY` for what was not set.
    pub fn build(self) -> Result<GeminiLm, BuildError> {
        Ok(GeminiLm(self.client.build(&DEFAULTS, ())?))
    }
}
