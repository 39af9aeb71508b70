//! OpenTelemetry for [Signet](https://docs.rs/signet): its GenAI spans and metrics exported over
//! OTLP (HTTP or gRPC) to any backend — Arize Phoenix, Jaeger, Grafana Tempo, Langfuse, an
//! OpenTelemetry Collector — with one call.
//!
//! Signet's runtime emits [`tracing`] spans named after the OpenTelemetry GenAI semantic
//! conventions ([`signet::telemetry::SEMCONV`]): `invoke_agent` for a module call, `chat` for
//! every model request, `execute_tool` for every tool call, `tools/call` for MCP clients and
//! servers, `evaluate` for an evaluation. This crate turns them into OpenTelemetry spans, derives
//! the conventions' metrics from them (`gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration`), and carries trace context across MCP.
//!
//! ```no_run
//! # async fn run() -> Result<(), signet_otel::OtelError> {
//! // OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318) and _PROTOCOL are honoured.
//! let otel = signet_otel::install("travel-agent")?;
//! // ... run agents: their spans are exported in batches ...
//! otel.shutdown().await?; // flushes what is still queued
//! # Ok(()) }
//! ```
//!
//! Prompts, replies and tool payloads are recorded only with content capture on
//! ([`OtelConfig::capture_content`] or `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`).

mod config;
mod dataset;
mod error;
mod metrics;
mod processor;
mod propagator;
mod reporting;

pub use config::{DEFAULT_FILTER, OtelConfig, OtelGuard, Protocol, install};
pub use dataset::{SpanExample, examples_from_spans};
pub use error::OtelError;
pub use metrics::GenAiMetrics;
pub use processor::GenAiSpanProcessor;
pub use propagator::W3cPropagator;
