//! OpenTelemetry GenAI spans: what Signet reports about agents, LM calls and tool calls, in the
//! names a tracing backend understands.
//!
//! Signet emits [`tracing`] spans named and attributed after the OpenTelemetry GenAI semantic
//! conventions ([`SEMCONV`]), and stays free of exporters: any `tracing` subscriber sees them, and
//! the `signet-otel` crate exports them over OTLP with one call. The spans:
//!
//! | span | OpenTelemetry name | kind | around |
//! |---|---|---|---|
//! | `invoke_agent` | `invoke_agent {gen_ai.agent.name}` | internal | a `Predict`, `ChainOfThought` or `ReAct` call, a module run by `Evaluate` |
//! | `chat` | `chat {gen_ai.request.model}` | client | one request to a model (each retry and each adapter fallback its own span) |
//! | `execute_tool` | `execute_tool {gen_ai.tool.name}` | internal | one tool call of an agent |
//! | `evaluate` | `evaluate {program}` | internal | an `Evaluate` run, one `evaluate_example` child per example |
//! | `optimize` | `optimize {optimizer}` | internal | an optimizer's compile, its evaluations beneath |
//!
//! Prompts, replies, tool arguments and results are **not recorded** unless content capture is
//! on ([`set_capture_content`], or `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`):
//! they may hold personal data. API keys and custom headers are never recorded.
//!
//! ```
//! // Off by default; a deployment that may record prompts turns it on once.
//! signet::telemetry::set_capture_content(true);
//! assert!(signet::telemetry::capture_content());
//! # signet::telemetry::set_capture_content(false);
//! ```

mod capture;
mod propagation;
mod spans;

pub use capture::{CAPTURE_CONTENT_ENV, capture_content, set_capture_content};
pub use propagation::{
    TracePropagator, inject_context, propagator_installed, set_propagator, set_remote_parent,
};
pub use spans::record_error;
pub(crate) use spans::{
    RecordContent, agent_span, evaluate_span, example_span, int, optimize_span, record_usage,
    tool_span,
};

/// The conventions the spans follow: the GenAI semantic conventions of OpenTelemetry
/// (`open-telemetry/semantic-conventions-genai`, Development stability), at this version.
pub const SEMCONV: &str = "semantic-conventions-genai v0.1.0";

/// The `tracing` target of every GenAI span (filter it with `signet::telemetry=off`).
pub const TARGET: &str = "signet::telemetry";

/// A type's name without its module paths (`Ask` for `my_app::Ask`, `Predict<Ask>` for
/// `signet::module::Predict<my_app::Ask>`), as spans and messages name it.
pub(crate) fn short_type_name<T: ?Sized>() -> String {
    let full = std::any::type_name::<T>();
    let mut out = String::with_capacity(full.len());
    for segment in full.split_inclusive(['<', '>', ',', ' ']) {
        let (name, delimiter) = match segment.char_indices().last() {
            Some((at, '<' | '>' | ',' | ' ')) => (&segment[..at], &segment[at..]),
            _ => (segment, ""),
        };
        out.push_str(name.rsplit("::").next().unwrap_or(name));
        out.push_str(delimiter);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::short_type_name;

    mod deep {
        pub(super) struct Ask;
        pub(super) struct Wrap<A, B>(A, B);
    }

    #[test]
    fn type_names_lose_their_module_paths() {
        assert_eq!(short_type_name::<deep::Ask>(), "Ask");
        assert_eq!(
            short_type_name::<deep::Wrap<deep::Ask, Vec<u8>>>(),
            "Wrap<Ask, Vec<u8>>"
        );
        assert_eq!(short_type_name::<i64>(), "i64");
    }
}
