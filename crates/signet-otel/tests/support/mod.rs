//! An in-memory OpenTelemetry pipeline (Signet's spans through `tracing-opentelemetry` and the
//! [`GenAiSpanProcessor`] into memory) and the agent the tests run.
#![allow(dead_code)]

use opentelemetry::trace::TracerProvider;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    InMemorySpanExporter, SdkTracerProvider, SimpleSpanProcessor, SpanData,
};
use signet::{Signature, tool};
use signet_otel::{GenAiMetrics, GenAiSpanProcessor};
use tracing_subscriber::layer::SubscriberExt;

/// Answer the question using the tools.
#[derive(Signature)]
pub struct Ask {
    /// The question.
    #[input]
    pub question: String,
    /// The answer.
    #[output]
    pub answer: String,
}

/// Add two integers.
#[tool]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A ReAct step reply: a thought, a tool name and its arguments.
pub fn step(thought: &str, tool: &str, args: serde_json::Value) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n[[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

/// An extractor reply.
pub fn extract(answer: &str) -> String {
    format!("[[ ## reasoning ## ]]\ndone\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
}

/// A reply `text` that reports `prompt` and `completion` tokens.
pub fn completion(text: String, prompt: u64, completion: u64) -> signet::lm::Completion {
    let mut reply = signet::lm::Completion::text(text);
    reply.usage.prompt_tokens = prompt;
    reply.usage.completion_tokens = completion;
    reply
}

/// The pipeline: spans and metrics end up in memory.
pub struct Pipeline {
    /// The finished spans.
    pub spans: InMemorySpanExporter,
    /// The exported metrics.
    pub metrics: InMemoryMetricExporter,
    /// The tracer provider (flush it before reading `spans`).
    pub tracer: SdkTracerProvider,
    /// The meter provider (flush it before reading `metrics`).
    pub meter: SdkMeterProvider,
    _default: tracing::subscriber::DefaultGuard,
}

impl Pipeline {
    /// Installs the pipeline as this thread's subscriber (tests run on a current-thread runtime).
    pub fn install() -> Pipeline {
        let spans = InMemorySpanExporter::default();
        let metrics = InMemoryMetricExporter::default();
        let meter = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        use opentelemetry::metrics::MeterProvider;
        let tracer = SdkTracerProvider::builder()
            .with_span_processor(GenAiSpanProcessor::new(
                SimpleSpanProcessor::new(spans.clone()),
                Some(GenAiMetrics::new(&meter.meter("test"))),
            ))
            .build();
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer.tracer("test"))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false);
        let subscriber =
            tracing_subscriber::registry().with(tracing_subscriber::Layer::with_filter(
                layer,
                "warn,signet=info,signet_mcp=info"
                    .parse::<tracing_subscriber::filter::Targets>()
                    .unwrap(),
            ));
        signet::telemetry::set_propagator(std::sync::Arc::new(
            signet_otel::W3cPropagator::default(),
        ));
        Pipeline {
            spans,
            metrics,
            tracer,
            meter,
            _default: tracing::subscriber::set_default(subscriber),
        }
    }

    /// The finished spans.
    pub fn finished(&self) -> Vec<SpanData> {
        self.tracer.force_flush().unwrap();
        self.spans.get_finished_spans().unwrap()
    }
}

/// The span named `name` (panics with the names there are).
pub fn span<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no span `{name}` among {:?}", names(spans)))
}

/// Every span named `name`.
pub fn spans_named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

/// The names of the spans.
pub fn names(spans: &[SpanData]) -> Vec<String> {
    spans.iter().map(|s| s.name.to_string()).collect()
}

/// An attribute of a span.
pub fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv: &&KeyValue| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

/// A string attribute (panics when missing or of another type).
pub fn text(span: &SpanData, key: &str) -> String {
    match attr(span, key) {
        Some(Value::String(s)) => s.to_string(),
        other => panic!("`{}`: `{key}` is {other:?}", span.name),
    }
}

/// An integer attribute.
pub fn int(span: &SpanData, key: &str) -> i64 {
    match attr(span, key) {
        Some(Value::I64(n)) => *n,
        other => panic!("`{}`: `{key}` is {other:?}", span.name),
    }
}
