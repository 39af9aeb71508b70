//! The span processor between `tracing-opentelemetry` and the exporter: typed array attributes
//! and the GenAI metrics.

use std::time::Duration;

use opentelemetry::{Array, Context, StringValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanProcessor};

use crate::GenAiMetrics;

/// The attributes the conventions type as string arrays, which `tracing` fields carry as JSON
/// text (`["stop"]`).
const STRING_ARRAYS: [&str; 2] = [
    "gen_ai.response.finish_reasons",
    "gen_ai.request.stop_sequences",
];

/// Wraps the processor that exports (a batch processor): restores the string-array attributes
/// the conventions define (`gen_ai.response.finish_reasons`, `gen_ai.request.stop_sequences`)
/// from the JSON text `tracing` carries them as, and records the [`GenAiMetrics`] of each
/// finished span. [`OtelConfig`](crate::OtelConfig) sets it up; use it directly when you build
/// your own tracer provider.
#[derive(Debug)]
pub struct GenAiSpanProcessor<P> {
    inner: P,
    metrics: Option<GenAiMetrics>,
}

impl<P: SpanProcessor> GenAiSpanProcessor<P> {
    /// Processes spans for `inner`, recording `metrics` when given.
    pub fn new(inner: P, metrics: Option<GenAiMetrics>) -> GenAiSpanProcessor<P> {
        GenAiSpanProcessor { inner, metrics }
    }
}

impl<P: SpanProcessor> SpanProcessor for GenAiSpanProcessor<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, mut span: SpanData) {
        for attribute in &mut span.attributes {
            if STRING_ARRAYS.contains(&attribute.key.as_str())
                && let Value::String(text) = &attribute.value
                && let Ok(items) = serde_json::from_str::<Vec<String>>(text.as_str())
            {
                attribute.value = Value::Array(Array::String(
                    items.into_iter().map(StringValue::from).collect(),
                ));
            }
        }
        if let Some(metrics) = &self.metrics {
            metrics.record(&span);
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
