//! W3C trace context for Signet's MCP client and server (`params._meta`).

use std::collections::HashMap;

use opentelemetry::propagation::{TextMapCompositePropagator, TextMapPropagator};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Writes and reads `traceparent`, `tracestate` and `baggage` for
/// [`signet::telemetry`]'s MCP spans; [`install`](crate::install) sets it up.
pub struct W3cPropagator {
    inner: TextMapCompositePropagator,
}

impl std::fmt::Debug for W3cPropagator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("W3cPropagator")
    }
}

impl Default for W3cPropagator {
    fn default() -> Self {
        W3cPropagator {
            inner: TextMapCompositePropagator::new(vec![
                Box::new(TraceContextPropagator::new()),
                Box::new(BaggagePropagator::new()),
            ]),
        }
    }
}

impl signet::telemetry::TracePropagator for W3cPropagator {
    fn inject(&self, span: &tracing::Span) -> Vec<(String, String)> {
        let mut carrier = HashMap::new();
        self.inner.inject_context(&span.context(), &mut carrier);
        let mut entries: Vec<(String, String)> = carrier.into_iter().collect();
        entries.sort();
        entries
    }

    fn set_parent(&self, span: &tracing::Span, carrier: &dyn Fn(&str) -> Option<String>) {
        let mut found = HashMap::new();
        for key in self.inner.fields() {
            if let Some(value) = carrier(key) {
                found.insert(key.to_owned(), value);
            }
        }
        if found.is_empty() {
            return;
        }
        let context = self.inner.extract(&found);
        use opentelemetry::trace::TraceContextExt;
        // A forged or malformed `traceparent` extracts no valid span: the span keeps its parent.
        if context.span().span_context().is_valid() {
            let _ = span.set_parent(context);
        }
    }
}
