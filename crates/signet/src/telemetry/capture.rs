//! The content-capture switch: whether spans record prompts, replies, tool arguments and results.

use std::sync::atomic::{AtomicU8, Ordering};

/// The environment variable the OpenTelemetry GenAI instrumentations read: `true` turns content
/// capture on (read once, the first time it is needed, unless [`set_capture_content`] was called).
pub const CAPTURE_CONTENT_ENV: &str = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT";

const UNSET: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;

static CAPTURE: AtomicU8 = AtomicU8::new(UNSET);

/// Whether spans record content: messages (`gen_ai.input.messages`, `gen_ai.output.messages`,
/// `gen_ai.system_instructions`), tool definitions, tool arguments and results, a module's inputs
/// and outputs. Off unless [`set_capture_content`] turned it on or [`CAPTURE_CONTENT_ENV`] is
/// `true` (or `1`).
///
/// ```
/// // Nothing set: off.
/// # if std::env::var_os(signet::telemetry::CAPTURE_CONTENT_ENV).is_none() {
/// assert!(!signet::telemetry::capture_content());
/// # }
/// ```
pub fn capture_content() -> bool {
    match CAPTURE.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => {
            let on = std::env::var(CAPTURE_CONTENT_ENV)
                .map(|value| matches!(value.trim().to_ascii_lowercase().as_str(), "true" | "1"))
                .unwrap_or(false);
            // A concurrent `set_capture_content` wins over the environment.
            let _ = CAPTURE.compare_exchange(
                UNSET,
                if on { ON } else { OFF },
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            CAPTURE.load(Ordering::Relaxed) == ON
        }
    }
}

/// Turns content capture on or off for the whole process, whatever the environment says.
///
/// ```
/// signet::telemetry::set_capture_content(false);
/// assert!(!signet::telemetry::capture_content());
/// ```
pub fn set_capture_content(on: bool) {
    CAPTURE.store(if on { ON } else { OFF }, Ordering::Relaxed);
}
