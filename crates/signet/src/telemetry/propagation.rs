//! Trace context across process boundaries (MCP requests, durable steps): W3C `traceparent`,
//! `tracestate` and `baggage`, written and read by whichever exporter is installed.
//!
//! Signet itself knows no OpenTelemetry: `signet-otel` installs a [`TracePropagator`] that reads a
//! span's OpenTelemetry context and sets a remote parent. Without one, nothing is sent or read.

use std::sync::{Arc, RwLock};

/// Reads and writes trace context for [`tracing`] spans (`signet-otel` installs one).
pub trait TracePropagator: Send + Sync {
    /// The context of `span` as carrier entries (`traceparent`, and `tracestate`/`baggage` when
    /// present).
    fn inject(&self, span: &tracing::Span) -> Vec<(String, String)>;

    /// Makes the context in `carrier` (looked up by key) the parent of `span`, if it holds a valid
    /// one; a missing or forged `traceparent` leaves `span` as it is.
    fn set_parent(&self, span: &tracing::Span, carrier: &dyn Fn(&str) -> Option<String>);
}

static PROPAGATOR: RwLock<Option<Arc<dyn TracePropagator>>> = RwLock::new(None);

/// Installs the propagator MCP clients and servers use (`signet-otel` calls this).
pub fn set_propagator(propagator: Arc<dyn TracePropagator>) {
    *PROPAGATOR.write().unwrap_or_else(|e| e.into_inner()) = Some(propagator);
}

/// Whether a propagator is installed.
pub fn propagator_installed() -> bool {
    PROPAGATOR
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .is_some()
}

fn installed() -> Option<Arc<dyn TracePropagator>> {
    PROPAGATOR.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The trace context of `span` to send with a request (empty without a propagator or when the
/// span is disabled).
///
/// ```
/// // No propagator installed: nothing to send.
/// assert!(signet::telemetry::inject_context(&tracing::Span::current()).is_empty());
/// ```
pub fn inject_context(span: &tracing::Span) -> Vec<(String, String)> {
    if span.is_disabled() {
        return Vec::new();
    }
    installed().map_or_else(Vec::new, |p| p.inject(span))
}

/// Makes the trace context a request carried the parent of `span` (nothing without a
/// propagator).
pub fn set_remote_parent(span: &tracing::Span, carrier: &dyn Fn(&str) -> Option<String>) {
    if span.is_disabled() {
        return;
    }
    if let Some(propagator) = installed() {
        propagator.set_parent(span, carrier);
    }
}
