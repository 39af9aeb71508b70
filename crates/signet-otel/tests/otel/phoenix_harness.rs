//! The Phoenix harness (`tests/common/phoenix.rs`) proved without any Signet code: a tracer built
//! directly with `opentelemetry_sdk` and `opentelemetry-otlp` exports a parent span and a child
//! span to a real Arize Phoenix, once over OTLP/HTTP (protobuf) and once over OTLP/gRPC, and the
//! spans read back through Phoenix's REST API carry the names, ids, parent link, kinds, status,
//! attributes (string, int, float, bool, string and int arrays) and event that were sent, in the
//! project named by the resource attribute `openinference.project.name`.
//!
//! Export happens on a blocking thread: the HTTP exporter (async `reqwest`, feature
//! `reqwest-client`) runs with the simple span processor, which exports in the thread that ends a
//! span and needs that thread to be inside the Tokio runtime; the default batch processor exports
//! from a thread of its own outside any runtime, where the async `reqwest` client panics ("there
//! is no reactor running") and the spans are lost. The gRPC exporter (tonic) works with the batch
//! processor as long as a multi-threaded runtime keeps running while it flushes.

use crate::common;

use std::time::Duration;

use common::phoenix::{Phoenix, attr, span_named};
use opentelemetry::trace::{
    Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Array, Context, KeyValue, StringValue, Value as OtelValue};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::{Value, json};

const MODEL: &str = "phoenix-harness-model";

/// The OpenTelemetry ids of what [`emit`] exported, as lowercase hex (Phoenix's format).
struct Exported {
    trace_id: String,
    parent_span_id: String,
    child_span_id: String,
}

/// How the spans are handed to the exporter.
enum Processor {
    Simple,
    Batch,
}

/// A parent span (`openinference.span.kind` = `CHAIN`, status OK) and a child span with GenAI
/// attributes of every type, an event and an error status.
fn emit(provider: &SdkTracerProvider) -> Exported {
    let tracer = provider.tracer("phoenix-harness");
    let parent = tracer
        .span_builder("harness.parent")
        .with_kind(SpanKind::Server)
        .with_attributes([
            KeyValue::new("openinference.span.kind", "CHAIN"),
            KeyValue::new("harness.step", "outer"),
        ])
        .start(&tracer);
    let cx = Context::new().with_span(parent);
    let mut child = tracer
        .span_builder("harness.child")
        .with_kind(SpanKind::Client)
        .start_with_context(&tracer, &cx);
    child.set_attribute(KeyValue::new("gen_ai.request.model", MODEL));
    child.set_attribute(KeyValue::new("gen_ai.usage.input_tokens", 42_i64));
    child.set_attribute(KeyValue::new("gen_ai.request.temperature", 0.25_f64));
    child.set_attribute(KeyValue::new("harness.cached", true));
    child.set_attribute(KeyValue::new(
        "gen_ai.response.finish_reasons",
        OtelValue::Array(Array::String(vec![
            StringValue::from("stop"),
            StringValue::from("length"),
        ])),
    ));
    child.set_attribute(KeyValue::new(
        "harness.sizes",
        OtelValue::Array(Array::I64(vec![1, 2, 3])),
    ));
    child.add_event(
        "harness.retry",
        vec![
            KeyValue::new("harness.attempt", 2_i64),
            KeyValue::new("harness.reason", "timeout"),
        ],
    );
    child.set_status(Status::error("upstream failed"));
    let exported = Exported {
        trace_id: child.span_context().trace_id().to_string(),
        parent_span_id: cx.span().span_context().span_id().to_string(),
        child_span_id: child.span_context().span_id().to_string(),
    };
    child.end();
    cx.span().set_status(Status::Ok);
    cx.span().end();
    exported
}

/// Exports [`emit`]'s spans through `exporter` into `project`, then flushes and shuts the
/// provider down (on a blocking thread of the runtime, see the module docs).
async fn export(exporter: SpanExporter, processor: Processor, project: &str) -> Exported {
    let resource = Resource::builder()
        .with_service_name("signet-otel-phoenix-harness")
        .with_attribute(KeyValue::new(
            "openinference.project.name",
            project.to_string(),
        ))
        .build();
    let builder = SdkTracerProvider::builder().with_resource(resource);
    let provider = match processor {
        Processor::Simple => builder.with_simple_exporter(exporter),
        Processor::Batch => builder.with_batch_exporter(exporter),
    }
    .build();
    tokio::task::spawn_blocking(move || {
        let exported = emit(&provider);
        provider.force_flush().expect("flush the spans to Phoenix");
        provider.shutdown().expect("shut the tracer provider down");
        exported
    })
    .await
    .expect("the exporting thread")
}

/// Reads the two spans back from `project` and checks every field that was sent.
async fn check(phoenix: &Phoenix, project: &str, exported: &Exported) {
    let spans = phoenix
        .wait_for_spans(project, 2, Duration::from_secs(30))
        .await;
    assert_eq!(spans.len(), 2, "exactly the two spans: {spans:#?}");
    let parent = span_named(&spans, "harness.parent");
    let child = span_named(&spans, "harness.child");

    // Ids: lowercase hex, the same trace, the child linked to the parent.
    assert_eq!(parent["context"]["trace_id"], json!(exported.trace_id));
    assert_eq!(child["context"]["trace_id"], json!(exported.trace_id));
    assert_eq!(parent["context"]["span_id"], json!(exported.parent_span_id));
    assert_eq!(child["context"]["span_id"], json!(exported.child_span_id));
    assert_eq!(child["parent_id"], parent["context"]["span_id"]);
    assert_eq!(parent["parent_id"], Value::Null);

    // Phoenix's span kind is OpenInference's: `openinference.span.kind` when the span has it
    // (and that attribute is then not listed), else inferred from `gen_ai.*` (a request model
    // makes an LLM span). OpenTelemetry's own kind (Server, Client) is not returned.
    assert_eq!(parent["span_kind"], "CHAIN");
    assert_eq!(attr(parent, "openinference.span.kind"), None);
    assert_eq!(child["span_kind"], "LLM");

    assert_eq!(parent["status_code"], "OK");
    assert_eq!(child["status_code"], "ERROR");
    assert_eq!(child["status_message"], "upstream failed");

    // Attributes come back flat, under their dotted keys, with their JSON types.
    assert_eq!(parent["attributes"]["harness.step"], "outer");
    assert_eq!(child["attributes"]["gen_ai.request.model"], MODEL);
    assert_eq!(attr(child, "gen_ai.request.model"), Some(&json!(MODEL)));
    let tokens = attr(child, "gen_ai.usage.input_tokens").expect("input tokens");
    assert_eq!(tokens.as_i64(), Some(42), "an integer: {tokens}");
    let temperature = attr(child, "gen_ai.request.temperature").expect("temperature");
    assert!(temperature.is_f64(), "a float: {temperature}");
    assert_eq!(temperature.as_f64(), Some(0.25));
    assert_eq!(attr(child, "harness.cached"), Some(&json!(true)));
    assert_eq!(
        attr(child, "gen_ai.response.finish_reasons"),
        Some(&json!(["stop", "length"]))
    );
    assert_eq!(attr(child, "harness.sizes"), Some(&json!([1, 2, 3])));
    // Phoenix adds OpenInference attributes derived from the `gen_ai.*` ones.
    assert_eq!(attr(child, "llm.model_name"), Some(&json!(MODEL)));
    assert_eq!(attr(child, "llm.token_count.prompt"), Some(&json!(42)));
    // Resource attributes only choose the project; they are not part of the span.
    assert_eq!(attr(child, "service.name"), None);
    assert_eq!(attr(child, "openinference.project.name"), None);

    let events = child["events"].as_array().expect("an events array");
    assert_eq!(events.len(), 1, "{events:#?}");
    assert_eq!(events[0]["name"], "harness.retry");
    assert_eq!(attr(&events[0], "harness.attempt"), Some(&json!(2)));
    assert_eq!(attr(&events[0], "harness.reason"), Some(&json!("timeout")));
    assert!(events[0]["timestamp"].is_string());
    assert_eq!(parent["events"], json!([]));

    // Nothing landed in the default project, and an unknown project reads as empty.
    assert_eq!(phoenix.spans("default").await, Vec::<Value>::new());
    assert_eq!(phoenix.spans("no-such-project").await, Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_exported_over_http_protobuf_are_read_back() {
    let phoenix = Phoenix::start().await;
    let exporter = SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(phoenix.otlp_http_endpoint())
        .with_timeout(Duration::from_secs(10))
        .build()
        .expect("an OTLP/HTTP exporter");
    let exported = export(exporter, Processor::Simple, "harness-http").await;
    check(&phoenix, "harness-http", &exported).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_exported_over_grpc_are_read_back() {
    let phoenix = Phoenix::start().await;
    let exporter = SpanExporter::builder()
        .with_tonic()
        .with_endpoint(phoenix.otlp_grpc_endpoint())
        .with_timeout(Duration::from_secs(10))
        .build()
        .expect("an OTLP/gRPC exporter");
    let exported = export(exporter, Processor::Batch, "harness-grpc").await;
    check(&phoenix, "harness-grpc", &exported).await;
}
