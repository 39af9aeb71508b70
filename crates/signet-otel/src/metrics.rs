//! The GenAI client metrics, derived from finished `chat` spans (and `tools/call` client spans for
//! MCP), so the runtime records each call once and the numbers match the traces.

use opentelemetry::metrics::{Histogram, Meter};
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;

/// The conventions' bucket boundaries of `gen_ai.client.token.usage`.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The conventions' bucket boundaries of the duration histograms, in seconds.
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/// The attributes a `chat` span shares with its metrics.
const CHAT_ATTRIBUTES: [&str; 6] = [
    "gen_ai.operation.name",
    "gen_ai.provider.name",
    "gen_ai.request.model",
    "gen_ai.response.model",
    "server.address",
    "server.port",
];

/// The histograms of the OpenTelemetry GenAI client metrics:
///
/// * `gen_ai.client.token.usage` (`{token}`): a chat call's input and output tokens, told apart by
///   `gen_ai.token.type` (`input`, `output`);
/// * `gen_ai.client.operation.duration` (`s`): a chat call's duration, with `error.type` when it
///   failed;
/// * `mcp.client.operation.duration` (`s`): an MCP `tools/call`'s duration.
///
/// Each carries the span's `gen_ai.operation.name`, `gen_ai.provider.name`,
/// `gen_ai.request.model`, `gen_ai.response.model`, `server.address` and `server.port`.
#[derive(Debug, Clone)]
pub struct GenAiMetrics {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    mcp_duration: Histogram<f64>,
}

impl GenAiMetrics {
    /// The histograms, created on `meter`.
    pub fn new(meter: &Meter) -> GenAiMetrics {
        GenAiMetrics {
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_unit("{token}")
                .with_description("Number of input and output tokens used.")
                .with_boundaries(TOKEN_BUCKETS.to_vec())
                .build(),
            operation_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_unit("s")
                .with_description("GenAI operation duration.")
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
            mcp_duration: meter
                .f64_histogram("mcp.client.operation.duration")
                .with_unit("s")
                .with_description(
                    "The duration of the MCP request or notification as observed by the sender.",
                )
                .with_boundaries(DURATION_BUCKETS.to_vec())
                .build(),
        }
    }

    /// Records the metrics a finished span stands for (nothing for other spans).
    pub fn record(&self, span: &SpanData) {
        let attribute = |key: &str| {
            span.attributes
                .iter()
                .find(|kv| kv.key.as_str() == key)
                .map(|kv| &kv.value)
        };
        let seconds = span
            .end_time
            .duration_since(span.start_time)
            .unwrap_or_default()
            .as_secs_f64();
        let error = attribute("error.type").map(|v| KeyValue::new("error.type", v.clone()));
        let is_chat = matches!(attribute("gen_ai.operation.name"), Some(Value::String(op)) if op.as_str() == "chat");
        if is_chat {
            let mut attributes: Vec<KeyValue> = CHAT_ATTRIBUTES
                .iter()
                .filter_map(|key| attribute(key).map(|v| KeyValue::new(*key, v.clone())))
                .collect();
            let mut with_error = attributes.clone();
            with_error.extend(error);
            self.operation_duration.record(seconds, &with_error);
            for (key, kind) in [
                ("gen_ai.usage.input_tokens", "input"),
                ("gen_ai.usage.output_tokens", "output"),
            ] {
                if let Some(Value::I64(tokens)) = attribute(key) {
                    attributes.push(KeyValue::new("gen_ai.token.type", kind));
                    self.token_usage
                        .record(u64::try_from(*tokens).unwrap_or(0), &attributes);
                    attributes.pop();
                }
            }
        } else if attribute("mcp.method.name").is_some()
            && span.span_kind == opentelemetry::trace::SpanKind::Client
        {
            let mut attributes: Vec<KeyValue> = [
                "mcp.method.name",
                "gen_ai.tool.name",
                "network.transport",
                "server.address",
                "server.port",
            ]
            .iter()
            .filter_map(|key| attribute(key).map(|v| KeyValue::new(*key, v.clone())))
            .collect();
            attributes.extend(error);
            self.mcp_duration.record(seconds, &attributes);
        }
    }
}
