//! A provider that is not OpenAI-compatible, behind Signet's `Lm` trait: a small client for
//! Anthropic's Messages API (text replies; no native tools, no streaming of its own), used by a
//! typed `Predict` with retries around it.
//!
//! ```text
//! ANTHROPIC_API_KEY=... cargo run --example howto_custom_lm
//! ANTHROPIC_MODEL=claude-... ANTHROPIC_API_KEY=... cargo run --example howto_custom_lm
//! ```
//!
//! Without a key it says what to set and exits successfully.

use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use signet::lm::{
    Completion, FinishReason, LmError, LmRequest, RetryLm, RetryPolicy, Role, Usage,
    parse_retry_after,
};
use signet::prelude::*;

const API: &str = "https://api.anthropic.com/v1/messages";

/// Anthropic's Messages API as an `Lm`.
struct Anthropic {
    http: reqwest::Client,
    key: String,
    model: String,
}

impl Anthropic {
    /// The request body: system messages go to the top-level `system`, the others stay in order;
    /// `max_tokens` is required by the API.
    fn body(&self, request: &LmRequest) -> Value {
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let messages: Vec<Value> = request
            .messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| {
                let role = if m.role == Role::Assistant {
                    "assistant"
                } else {
                    "user"
                };
                json!({"role": role, "content": m.content})
            })
            .collect();
        let options = &request.options;
        let mut body = json!({
            "model": self.model,
            "max_tokens": options.max_tokens.unwrap_or(1024),
            "messages": messages,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if let Some(temperature) = options.temperature {
            body["temperature"] = json!(temperature);
        }
        if !options.stop.is_empty() {
            body["stop_sequences"] = json!(options.stop);
        }
        body
    }

    async fn send(&self, request: &LmRequest) -> Result<Completion, LmError> {
        let body = serde_json::to_vec(&self.body(request)).map_err(|e| LmError::Rejected {
            status: 0,
            message: e.to_string(),
        })?;
        let response = self
            .http
            .post(API)
            .header("x-api-key", &self.key)
            .header("anthropic-version", "2023-06-01")
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| LmError::Connect {
                message: e.to_string(),
            })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let bytes = response.bytes().await.map_err(|e| LmError::Connect {
            message: e.to_string(),
        })?;
        let reply: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if status != 200 {
            let message = reply["error"]["message"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
            return Err(match status {
                // The API says so in words when the prompt is too long.
                400 if message.contains("prompt is too long") => {
                    LmError::ContextWindowExceeded { message }
                }
                429 => LmError::RateLimited {
                    retry_after,
                    message,
                },
                // 529: overloaded; retried like any server error.
                500..=599 => LmError::Server { status, message },
                _ => LmError::Rejected { status, message },
            });
        }
        let text: String = reply["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == "text")
            .filter_map(|block| block["text"].as_str())
            .collect();
        let finish_reason = match reply["stop_reason"].as_str() {
            Some("end_turn") | Some("stop_sequence") => Some(FinishReason::Stop),
            Some("max_tokens") => Some(FinishReason::Length),
            Some(other) => Some(FinishReason::Other(other.to_owned())),
            None => None,
        };
        Ok(Completion {
            text: Some(text),
            finish_reason,
            usage: Usage {
                prompt_tokens: reply["usage"]["input_tokens"].as_u64().unwrap_or(0),
                completion_tokens: reply["usage"]["output_tokens"].as_u64().unwrap_or(0),
                lm_calls: 1,
                ..Usage::default()
            },
            ..Completion::default()
        })
    }
}

impl Lm for Anthropic {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        // A time limit per attempt, reported as the transient error it is.
        async move {
            match tokio::time::timeout(Duration::from_secs(120), self.send(request)).await {
                Ok(result) => result,
                Err(_) => Err(LmError::Timeout {
                    after: Duration::from_secs(120),
                }),
            }
        }
        .boxed()
    }

    fn model(&self) -> &str {
        &self.model
    }
}

/// Extract the city and the date from the sentence.
#[derive(Signature)]
struct Extract {
    #[input]
    sentence: String,
    #[output]
    city: String,
    /// The date as YYYY-MM-DD.
    #[output]
    date: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(key) = std::env::var("ANTHROPIC_API_KEY")
        .ok()
        .filter(|k| !k.trim().is_empty())
    else {
        println!(
            "Set ANTHROPIC_API_KEY (and optionally ANTHROPIC_MODEL) to run this example against \
             Anthropic's Messages API."
        );
        return Ok(());
    };
    let model =
        std::env::var("ANTHROPIC_MODEL").unwrap_or_else(|_| "claude-3-5-haiku-latest".to_owned());
    let lm = RetryLm::new(
        Anthropic {
            http: reqwest::Client::new(),
            key,
            model,
        },
        RetryPolicy::default(),
    );
    let extract = Predict::<Extract>::new().with_lm(lm);
    let out = extract
        .call(ExtractInput {
            sentence: "We land in Bergen on the 3rd of March 2027.".into(),
        })
        .await?;
    println!("city: {}, date: {}", out.city, out.date);
    Ok(())
}
