//! Turning HTTP failures and provider error bodies into typed [`LmError`]s.

use super::*;

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
