//! Turning HTTP failures and provider error bodies into typed [`LmError`]s.

use super::*;

/// The longest provider message kept in an error.
pub(super) const MAX_ERROR_MESSAGE: usize = 2000;

/// The typed error for an HTTP failure.
pub(super) fn classify_http(status: u16, retry_after: Option<Duration>, body: &str) -> LmError {
    let (message, code) = provider_message(body);
    let message = if message.is_empty() {
        format!("HTTP {status} with an empty body")
    } else {
        message
    };
    if is_context_error(code.as_deref(), &message) {
        return LmError::ContextWindowExceeded { message };
    }
    match status {
        429 if code.as_deref() == Some("insufficient_quota") => {
            LmError::Rejected { status, message }
        }
        429 => LmError::RateLimited {
            retry_after,
            message,
        },
        400..=499 => LmError::Rejected { status, message },
        500..=599 => LmError::Server { status, message },
        _ => LmError::InvalidResponse {
            message: format!("unexpected HTTP status {status}: {message}"),
        },
    }
}

/// The error for an `error` object inside a 200 response or a stream.
pub(super) fn error_in_body(error: &Value) -> LmError {
    let (message, code) = provider_message(&json!({ "error": error }).to_string());
    if is_context_error(code.as_deref(), &message) {
        LmError::ContextWindowExceeded { message }
    } else {
        LmError::InvalidResponse {
            message: format!("the server reported an error: {message}"),
        }
    }
}

/// The provider's message and code from an error body: OpenAI's `{"error": {"message", "code",
/// "type"}}`, `{"error": "..."}`, `{"message": ..}`, `{"detail": ..}`, or the raw text.
pub(crate) fn provider_message(body: &str) -> (String, Option<String>) {
    let text = |v: Option<&Value>| -> Option<String> {
        match v? {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    };
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        let error = value.get("error").filter(|e| !e.is_null());
        let (message, code) = match error {
            Some(Value::Object(error)) => (
                text(error.get("message")),
                text(error.get("code")).or_else(|| text(error.get("type"))),
            ),
            Some(other) => (text(Some(other)), None),
            None => (
                text(value.get("message")).or_else(|| text(value.get("detail"))),
                text(value.get("code")),
            ),
        };
        if let Some(message) = message {
            return (truncate(message.trim(), MAX_ERROR_MESSAGE), code);
        }
    }
    (truncate(body.trim(), MAX_ERROR_MESSAGE), None)
}

/// Whether a provider error says the prompt does not fit the context window (OpenAI, vLLM,
/// llama.cpp's two servers, and Anthropic-style gateways word it differently).
pub(super) fn is_context_error(code: Option<&str>, message: &str) -> bool {
    if code == Some("context_length_exceeded") {
        return true;
    }
    let message = message.to_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "context window",
        "context length",
        "context size",
        "exceeds the context",
        "exceed context",
        "n_ctx",
        "prompt is too long",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

/// An error and its sources, joined by `: `.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

/// At most `max` bytes of `text`, cut at a character boundary.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
