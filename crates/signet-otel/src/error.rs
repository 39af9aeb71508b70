//! What can go wrong setting up or shutting down the export.

/// Why the export could not be set up, flushed or shut down.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The OTLP exporter could not be built (a bad endpoint, a TLS problem).
    #[error("could not build the OTLP {signal} exporter for `{endpoint}`: {message}")]
    Exporter {
        /// `traces` or `metrics`.
        signal: &'static str,
        /// The endpoint it was built for.
        endpoint: String,
        /// What the exporter reported.
        message: String,
    },
    /// A header given for gRPC cannot be sent as gRPC metadata.
    #[error("header `{name}`: {message}")]
    Header {
        /// The header's name.
        name: String,
        /// What is wrong with it.
        message: &'static str,
    },
    /// `OTEL_EXPORTER_OTLP_PROTOCOL` (or the configured protocol) names a protocol this crate
    /// does not speak.
    #[error("unknown OTLP protocol `{0}`: use `http/protobuf` or `grpc`")]
    Protocol(String),
    /// The span filter does not parse.
    #[error("invalid span filter `{filter}`: {message}")]
    Filter {
        /// The filter given.
        filter: String,
        /// What is wrong with it.
        message: String,
    },
    /// Installing needs a Tokio runtime (the exporters run on it) and none is running.
    #[error(
        "signet_otel::install needs a running Tokio runtime (the exporters send from its tasks): \
         call it inside `#[tokio::main]` or `Runtime::block_on`"
    )]
    NoRuntime,
    /// A global `tracing` subscriber is already installed; add [`OtelConfig::layer`](crate::OtelConfig::layer) to it
    /// instead.
    #[error(
        "a global tracing subscriber is already installed ({0}); add `OtelConfig::layer()` to \
         your subscriber instead of calling `install`"
    )]
    SubscriberInstalled(String),
    /// Flushing or shutting down an exporter failed (the backend is down, a timeout).
    #[error("the OTLP export failed while {what}: {message}")]
    Export {
        /// `flushing spans`, `shutting down metrics`, ..
        what: &'static str,
        /// What the SDK reported.
        message: String,
    },
    /// No span of the agent carried its inputs and outputs: content capture was off when they
    /// were recorded.
    #[error(
        "{spans} span(s) of agent `{agent}` carry no inputs and outputs: they were recorded with \
         content capture off (turn it on with OtelConfig::capture_content or \
         OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)"
    )]
    NoContent {
        /// The agent asked for.
        agent: String,
        /// How many of its spans had no content.
        spans: usize,
    },
    /// A span's recorded inputs or outputs are not a JSON object.
    #[error("span {span_id}: {message}")]
    SpanContent {
        /// The span's id.
        span_id: String,
        /// What is wrong.
        message: String,
    },
}
