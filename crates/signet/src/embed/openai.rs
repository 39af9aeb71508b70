//! [`OpenAiEmbedder`]: any OpenAI-compatible `POST {base_url}/embeddings` endpoint, with the chat
//! client's configuration, redirect policy, size cap on replies and secret handling
//! ([`crate::lm::openai_http`]).

use std::fmt;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use reqwest::header::{HeaderName, HeaderValue};
use serde_json::{Value, json};

use super::{DEFAULT_BATCH_SIZE, EmbedError, Embedder, in_batches};
use crate::lm::BuildError;
use crate::lm::openai_http as http;

/// The most bytes of one reply read unless told otherwise: 64 MiB (200 vectors of 3072 numbers
/// written as JSON take about 13 MiB).
const DEFAULT_MAX_RESPONSE_BYTES: usize = 64 << 20;

/// A client for any OpenAI-compatible embeddings endpoint (OpenAI, vLLM, llama.cpp's server,
/// Ollama, ..): DSPy's `dspy.Embedder("openai/text-embedding-3-small")`.
///
/// Texts are sent [`batch_size`](OpenAiEmbedderBuilder::batch_size) at a time (200 by default,
/// as DSPy's), one `POST {base_url}/embeddings` per batch, and the vectors are put back in the
/// order of the texts by each reply item's `index`. A reply is read up to
/// [`max_response_bytes`](OpenAiEmbedderBuilder::max_response_bytes) (64 MiB by default): a larger
/// one is [`EmbedError::ResponseTooLarge`], not read further. Failures are typed [`EmbedError`]s:
/// `RateLimited` (429, with `Retry-After`), `Http` (any other status), `Timeout`, `Transport`
/// (refused, reset, a body cut short), `Malformed`, `WrongCount`, `UnequalDimensions`,
/// `NotFinite`. Calls are not retried: [`EmbedError::is_transient`] says whether to try again.
///
/// Configuration is the chat client's ([`OpenAiLm`](crate::lm::OpenAiLm)): the base URL from the
/// builder, else `OPENAI_BASE_URL`, else `https://api.openai.com/v1`; the API key from the
/// builder, else `OPENAI_API_KEY`, else none; redirects followed only as `307`/`308` within the
/// base URL's origin; the key and custom headers' values never shown by `Debug` or in errors.
///
/// ```
/// use signet::embed::{Embedder, OpenAiEmbedder};
///
/// let embedder = OpenAiEmbedder::builder("text-embedding-3-small")
///     .base_url("http://127.0.0.1:8080/v1")
///     .api_key("sk-not-shown")
///     .dimensions(256)
///     .batch_size(100)
///     .build()
///     .unwrap();
/// assert_eq!(embedder.model(), "text-embedding-3-small");
/// assert!(!format!("{embedder:?}").contains("sk-not-shown"));
/// let texts = ["hello".to_owned()];
/// assert_eq!(
///     embedder.request_body(&texts),
///     serde_json::json!({"model": "text-embedding-3-small", "input": ["hello"], "encoding_format": "float", "dimensions": 256}),
/// );
/// ```
pub struct OpenAiEmbedder {
    http: reqwest::Client,
    model: String,
    url: String,
    headers: reqwest::header::HeaderMap,
    secrets: Vec<String>,
    dimensions: Option<u32>,
    batch_size: usize,
    timeout: Duration,
    max_response_bytes: usize,
}

impl fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbedder")
            .field("model", &self.model)
            .field("url", &http::without_credentials(&self.url))
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("dimensions", &self.dimensions)
            .field("batch_size", &self.batch_size)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Configures an [`OpenAiEmbedder`]. Created by [`OpenAiEmbedder::builder`].
///
/// Defaults: base URL and key as the chat client's (see [`OpenAiEmbedder`]); no `dimensions`
/// (the model's own); 200 texts a request; 600 s a request; replies up to 64 MiB.
///
/// ```
/// use std::time::Duration;
/// use signet::embed::OpenAiEmbedder;
/// let embedder = OpenAiEmbedder::builder("nomic-embed-text")
///     .base_url("http://localhost:11434/v1/")
///     .timeout(Duration::from_secs(30))
///     .max_response_bytes(8 << 20)
///     .build()
///     .unwrap();
/// assert_eq!(embedder.url(), "http://localhost:11434/v1/embeddings");
/// ```
#[derive(Clone)]
pub struct OpenAiEmbedderBuilder {
    model: String,
    base_url: Option<String>,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    dimensions: Option<u32>,
    batch_size: usize,
    timeout: Duration,
    max_response_bytes: usize,
}

impl fmt::Debug for OpenAiEmbedderBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiEmbedderBuilder")
            .field("model", &self.model)
            .field(
                "base_url",
                &self.base_url.as_deref().map(http::without_credentials),
            )
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("dimensions", &self.dimensions)
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}

impl OpenAiEmbedder {
    /// A builder for a client of `model` (see [`OpenAiEmbedderBuilder`] for the defaults).
    pub fn builder(model: impl Into<String>) -> OpenAiEmbedderBuilder {
        OpenAiEmbedderBuilder {
            model: model.into(),
            base_url: None,
            api_key: None,
            headers: Vec::new(),
            dimensions: None,
            batch_size: DEFAULT_BATCH_SIZE,
            timeout: Duration::from_secs(600),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// The URL requests go to: `{base_url}/embeddings`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The JSON body sent for one batch of `texts`.
    pub fn request_body(&self, texts: &[String]) -> Value {
        let mut body = json!({"model": self.model, "input": texts, "encoding_format": "float"});
        if let Some(dimensions) = self.dimensions {
            body["dimensions"] = json!(dimensions);
        }
        body
    }

    /// One request for one batch, within the time limit.
    async fn embed_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        match tokio::time::timeout(self.timeout, self.send(texts)).await {
            Ok(result) => result.map_err(|error| self.scrub(error)),
            Err(_) => Err(EmbedError::Timeout {
                after: self.timeout,
            }),
        }
    }

    async fn send(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let response = self
            .http
            .post(&self.url)
            .headers(self.headers.clone())
            .json(&self.request_body(texts))
            .send()
            .await
            .map_err(|e| self.transport(&e))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = http::retry_after(response.headers());
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .map(str::to_owned);
            let body = http::read_error_body(response, self.max_response_bytes).await;
            let (message, _) = http::provider_message(&body);
            let message = match (status.is_redirection(), location) {
                (true, Some(to)) => format!(
                    "redirected to {}, which is not followed (only 307/308 within the base URL's \
                     origin are): set the base URL to the endpoint's final address",
                    http::without_credentials(&to)
                ),
                _ if message.is_empty() => format!("HTTP {} with an empty body", status.as_u16()),
                _ => message,
            };
            return Err(if status.as_u16() == 429 {
                EmbedError::RateLimited {
                    retry_after,
                    message,
                }
            } else {
                EmbedError::Http {
                    status: status.as_u16(),
                    message,
                }
            });
        }
        let body = http::capped(response, self.max_response_bytes, None)
            .bytes()
            .await
            .map_err(|e| self.transport(&e))?;
        parse_reply(&body, texts.len())
    }

    /// A reqwest failure as the error it is: a body past the limit, a timeout, or the transport.
    fn transport(&self, error: &reqwest::Error) -> EmbedError {
        if let Some(limit) = http::body_too_large(error) {
            EmbedError::ResponseTooLarge {
                limit: limit as u64,
            }
        } else if error.is_timeout() {
            EmbedError::Timeout {
                after: self.timeout,
            }
        } else {
            EmbedError::Transport {
                message: http::error_chain(error),
            }
        }
    }

    /// `error` with every secret the client sends replaced by `[redacted]`.
    fn scrub(&self, error: EmbedError) -> EmbedError {
        let scrub = |message: String| http::scrub_secrets(&self.secrets, message);
        match error {
            EmbedError::RateLimited {
                retry_after,
                message,
            } => EmbedError::RateLimited {
                retry_after,
                message: scrub(message),
            },
            EmbedError::Http { status, message } => EmbedError::Http {
                status,
                message: scrub(message),
            },
            EmbedError::Transport { message } => EmbedError::Transport {
                message: scrub(message),
            },
            EmbedError::Malformed { message } => EmbedError::Malformed {
                message: scrub(message),
            },
            other => other,
        }
    }
}

/// The vectors of an embeddings reply for `count` texts, in the texts' order (by each item's
/// `index`, else its position).
fn parse_reply(body: &[u8], count: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let malformed = |message: String| EmbedError::Malformed { message };
    let reply: Value = serde_json::from_slice(body).map_err(|e| {
        malformed(format!(
            "the body is not valid JSON ({e}): {}",
            http::truncate(&String::from_utf8_lossy(body), 200)
        ))
    })?;
    if let Some(error) = reply.get("error").filter(|e| !e.is_null()) {
        let (message, _) = http::provider_message(&json!({ "error": error }).to_string());
        return Err(malformed(format!(
            "the server reported an error: {message}"
        )));
    }
    let Some(data) = reply.get("data").and_then(Value::as_array) else {
        return Err(malformed(format!(
            "no `data` list in the reply: {}",
            http::truncate(&reply.to_string(), 200)
        )));
    };
    if data.len() != count {
        return Err(EmbedError::WrongCount {
            expected: count,
            got: data.len(),
        });
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; count];
    for (position, item) in data.iter().enumerate() {
        let index = match item.get("index") {
            None | Some(Value::Null) => position,
            Some(index) => index
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .filter(|i| *i < count)
                .ok_or_else(|| {
                    malformed(format!(
                        "data[{position}].index is {index}, not a position among the {count} texts"
                    ))
                })?,
        };
        let Some(values) = item.get("embedding").and_then(Value::as_array) else {
            return Err(malformed(format!(
                "data[{position}].embedding is not a list of numbers"
            )));
        };
        let vector = values
            .iter()
            .enumerate()
            .map(|(at, value)| {
                value
                    .as_f64()
                    .map(|v| v as f32)
                    .filter(|v| v.is_finite())
                    .ok_or(EmbedError::NotFinite {
                        index,
                        position: at,
                    })
            })
            .collect::<Result<Vec<f32>, EmbedError>>()?;
        if vectors[index].replace(vector).is_some() {
            return Err(malformed(format!(
                "two items of the reply have index {index}"
            )));
        }
    }
    // Every slot is filled: as many items as texts, each index in range and none twice.
    Ok(vectors.into_iter().flatten().collect())
}

impl OpenAiEmbedderBuilder {
    crate::shared::setters! {
        /// The endpoint's base URL, up to and including the version (`.../v1`); a trailing `/` is
        /// ignored.
        fn base_url(base_url: impl Into<String>) { base_url = Some(base_url.into()) }

        /// The API key, sent as `Authorization: Bearer <key>` (instead of `OPENAI_API_KEY`).
        fn api_key(api_key: impl Into<String>) { api_key = Some(api_key.into()) }

        /// Asks for vectors of this length (OpenAI's `text-embedding-3-*` shorten theirs; other
        /// servers may refuse the field).
        fn dimensions(dimensions: u32) { dimensions = Some(dimensions) }

        /// The most texts one request carries (0 counts as 1).
        fn batch_size(batch_size: usize) { batch_size = batch_size.max(1) }

        /// The time limit of one request (connecting, sending, reading the whole reply).
        fn timeout(timeout: Duration) { timeout = timeout }

        /// The most bytes of one reply the client reads (default 64 MiB).
        fn max_response_bytes(bytes: usize) { max_response_bytes = bytes }
    }

    /// Adds a header to every request (`api-key` for Azure, ..). Its value is never shown.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Builds the client, reading `OPENAI_BASE_URL` and `OPENAI_API_KEY` for what was not set.
    pub fn build(self) -> Result<OpenAiEmbedder, BuildError> {
        let base_url_given = self.base_url.is_some();
        let (base_url, parsed) = http::resolve_base_url(self.base_url)?;
        let api_key = http::resolve_api_key(self.api_key, base_url_given, &parsed);
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(key) = &api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| BuildError::InvalidApiKey)?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        for (name, value) in &self.headers {
            let invalid = |reason: String| BuildError::InvalidHeader {
                name: name.clone(),
                reason,
            };
            let header =
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(e.to_string()))?;
            let mut value = HeaderValue::from_str(value).map_err(|e| invalid(e.to_string()))?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(self.timeout)
            .redirect(http::same_origin_redirects())
            .build()
            .map_err(|e| BuildError::HttpClient(http::error_chain(&e)))?;
        let mut secrets: Vec<String> = api_key
            .into_iter()
            .chain(self.headers.into_iter().map(|(_, value)| value))
            .chain(http::url_credentials(&parsed))
            .filter(|secret| !secret.is_empty())
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Ok(OpenAiEmbedder {
            http: client,
            model: self.model,
            url: format!("{base_url}/embeddings"),
            headers,
            secrets,
            dimensions: self.dimensions,
            batch_size: self.batch_size,
            timeout: self.timeout,
            max_response_bytes: self.max_response_bytes,
        })
    }
}

impl Embedder for OpenAiEmbedder {
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        in_batches(texts, self.batch_size, move |batch| {
            self.embed_batch(batch).boxed()
        })
        .boxed()
    }

    fn model(&self) -> &str {
        &self.model
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_put_in_order_and_checked() {
        let reply = br#"{"data": [{"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]}"#;
        assert_eq!(
            parse_reply(reply, 2).unwrap(),
            [vec![1.0, 0.0], vec![0.0, 1.0]]
        );
        let positional = br#"{"data": [{"embedding": [1]}, {"embedding": [2]}]}"#;
        assert_eq!(parse_reply(positional, 2).unwrap(), [vec![1.0], vec![2.0]]);
        let twice =
            br#"{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}"#;
        assert!(
            parse_reply(twice, 2)
                .unwrap_err()
                .to_string()
                .contains("index 0")
        );
        let out_of_range = br#"{"data": [{"index": 5, "embedding": [1]}]}"#;
        assert!(matches!(
            parse_reply(out_of_range, 1),
            Err(EmbedError::Malformed { .. })
        ));
        let text = br#"{"data": [{"index": 0, "embedding": [1, "x"]}]}"#;
        assert_eq!(
            parse_reply(text, 1).unwrap_err(),
            EmbedError::NotFinite {
                index: 0,
                position: 1
            }
        );
        let base64 = br#"{"data": [{"index": 0, "embedding": "AAAA"}]}"#;
        assert!(matches!(
            parse_reply(base64, 1),
            Err(EmbedError::Malformed { .. })
        ));
        let error = br#"{"error": {"message": "model not found"}}"#;
        assert!(
            parse_reply(error, 1)
                .unwrap_err()
                .to_string()
                .contains("model not found")
        );
        assert!(matches!(
            parse_reply(b"[1]", 1),
            Err(EmbedError::Malformed { .. })
        ));
        assert!(matches!(
            parse_reply(br#"{"data": []}"#, 1),
            Err(EmbedError::WrongCount {
                expected: 1,
                got: 0
            })
        ));
    }

    #[test]
    fn bad_configuration_is_an_error() {
        let key = OpenAiEmbedder::builder("m")
            .base_url("http://localhost:1/v1")
            .api_key("bad\nkey")
            .build();
        assert!(matches!(key, Err(BuildError::InvalidApiKey)));
        let url = OpenAiEmbedder::builder("m")
            .base_url("localhost:1/v1")
            .build();
        assert!(matches!(url, Err(BuildError::InvalidBaseUrl { .. })));
        let header = OpenAiEmbedder::builder("m")
            .base_url("http://localhost:1/v1")
            .header("bad header", "x")
            .build();
        assert!(matches!(header, Err(BuildError::InvalidHeader { .. })));
    }

    #[test]
    fn secrets_are_kept_out_of_errors() {
        let embedder = OpenAiEmbedder::builder("m")
            .base_url("http://localhost:1/v1")
            .api_key("sk-secret-1")
            .header("api-key", "hdr-secret-2")
            .build()
            .unwrap();
        let error = embedder.scrub(EmbedError::Http {
            status: 401,
            message: "bad key sk-secret-1 / hdr-secret-2".into(),
        });
        assert_eq!(
            error.to_string(),
            "the embeddings endpoint answered HTTP 401: bad key [redacted] / [redacted]"
        );
        let shown = format!("{embedder:?}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
