//! Framework overhead with a zero-latency LM: adapters (format + parse) for a 2-field and a 10-field
//! signature, `#[tool]` validate + deserialize + dispatch, one Predict call and one ReAct run (2 tool
//! steps + `finish` + extract), and the same Predict call and ReAct run with tracing on (Signet's
//! spans through `signet-otel`'s OpenTelemetry pipeline, the export discarded) against off. Run with `cargo bench --bench overhead`; `docs/performance.md` has
//! the figures.

use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::json;
use signet::adapter::{Adapter, ChatAdapter, Fields, JsonAdapter, XmlAdapter};
use signet::testing::ScriptedLm;
use signet::{DynSignature, Tool};

// Each bench binary uses part of the shared workloads.
#[allow(dead_code)]
mod workloads;

use workloads::{
    AddBlockingTool, AddTool, CyclingLm, LookupTool, PREDICT_ANSWER, PREDICT_REPLY, REACT_ANSWER,
    REACT_LM_CALLS, predict, predict_input, react, react_input, react_replies,
};

fn two_fields() -> (DynSignature, Fields) {
    let sig = DynSignature::parse("question -> answer").unwrap();
    let inputs = json!({"question": "What is the capital of France?"})
        .as_object()
        .cloned()
        .unwrap();
    (sig, inputs)
}

/// Three inputs and seven typed outputs (ints, floats, bools, lists, literals, maps, optionals).
fn ten_fields() -> (DynSignature, Fields) {
    let sig = DynSignature::parse(
        "text, context: list[str], language -> count: int, ratio: float, ok: bool, names: list[str], \
         choice: Literal['a', 'b'], scores: dict[str, int], maybe: Optional[int]",
    )
    .unwrap();
    let inputs = json!({"text": "Alice and Bob.", "context": ["one", "two"], "language": "en"})
        .as_object()
        .cloned()
        .unwrap();
    (sig, inputs)
}

const CHAT_REPLY_10: &str = "[[ ## count ## ]]\n2\n\n[[ ## ratio ## ]]\n0.5\n\n[[ ## ok ## ]]\nTrue\n\n\
    [[ ## names ## ]]\n[\"Alice\", \"Bob\"]\n\n[[ ## choice ## ]]\na\n\n[[ ## scores ## ]]\n{\"Alice\": 3}\n\n\
    [[ ## maybe ## ]]\nNone\n\n[[ ## completed ## ]]";
const JSON_REPLY_10: &str = r#"{"count": 2, "ratio": 0.5, "ok": true, "names": ["Alice", "Bob"], "choice": "a", "scores": {"Alice": 3}, "maybe": null}"#;
const XML_REPLY_10: &str = "<count>\n2\n</count>\n<ratio>\n0.5\n</ratio>\n<ok>\nTrue\n</ok>\n\
    <names><item>Alice</item><item>Bob</item></names>\n<choice>\na\n</choice>\n\
    <scores><entry key=\"Alice\">3</entry></scores>\n<maybe>\nNone\n</maybe>";

/// Format and parse benches for one adapter, with a 2-field and a 10-field signature.
fn adapter_benches(c: &mut Criterion, name: &str, adapter: &dyn Adapter, replies: [&str; 2]) {
    let (sig2, inputs2) = two_fields();
    let (sig10, inputs10) = ten_fields();
    for (fields, sig, inputs, reply) in [
        ("2 fields", &sig2, &inputs2, replies[0]),
        ("10 fields", &sig10, &inputs10, replies[1]),
    ] {
        adapter
            .parse(sig, reply)
            .unwrap_or_else(|e| panic!("{name} cannot parse its {fields} reply: {e}"));
        c.bench_function(&format!("{name}/format/{fields}"), |b| {
            b.iter(|| adapter.format(sig, &[], inputs))
        });
        c.bench_function(&format!("{name}/parse/{fields}"), |b| {
            b.iter(|| adapter.parse(sig, reply).unwrap())
        });
    }
}

fn adapters(c: &mut Criterion) {
    let chat_2 = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]";
    adapter_benches(c, "chat", &ChatAdapter::new(), [chat_2, CHAT_REPLY_10]);
    let json_2 = r#"{"answer": "Paris"}"#;
    adapter_benches(c, "json", &JsonAdapter::new(), [json_2, JSON_REPLY_10]);
    let xml_2 = "<answer>\nParis\n</answer>";
    adapter_benches(c, "xml", &XmlAdapter::new(), [xml_2, XML_REPLY_10]);
}

fn tools(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let args = json!({"a": 2, "b": 3});
    c.bench_function("tool/validate+deserialize+dispatch (inline sync)", |b| {
        b.to_async(&runtime).iter(|| AddTool.call(args.clone()))
    });
    c.bench_function("tool/validate+deserialize+dispatch (blocking pool)", |b| {
        b.to_async(&runtime)
            .iter(|| AddBlockingTool.call(args.clone()))
    });
    let name = json!({"name": "Alice"});
    c.bench_function("tool/validate+deserialize+dispatch (async)", |b| {
        b.to_async(&runtime).iter(|| LookupTool.call(name.clone()))
    });
    let bad = json!({"a": "two", "b": 3});
    c.bench_function("tool/invalid arguments error", |b| {
        b.to_async(&runtime).iter(|| AddTool.call(bad.clone()))
    });
}

fn modules(c: &mut Criterion) {
    let runtime = tokio::runtime::Runtime::new().unwrap();

    let predictor = predict(CyclingLm::new(&[PREDICT_REPLY]));
    let output = runtime.block_on(predictor.call(predict_input())).unwrap();
    assert_eq!(output.answer, PREDICT_ANSWER);
    c.bench_function("predict/one call", |b| {
        b.to_async(&runtime)
            .iter(|| predictor.call(predict_input()))
    });
    // The same with `ScriptedLm`, which also records every request (a clone of the messages).
    c.bench_function("predict/one call (ScriptedLm, recording)", |b| {
        b.to_async(&runtime).iter_batched(
            || predict(Arc::new(ScriptedLm::texts([PREDICT_REPLY]))),
            |predictor| async move {
                let output = predictor.call(predict_input()).await;
                (predictor, output) // dropped outside the measurement
            },
            BatchSize::SmallInput,
        )
    });

    let replies = react_replies();
    let agent = react(CyclingLm::new(&replies));
    let output = runtime.block_on(agent.call(react_input())).unwrap();
    assert_eq!(output.output.answer, REACT_ANSWER);
    assert_eq!(output.usage.lm_calls, REACT_LM_CALLS as u64);
    c.bench_function("react/2 tool steps + extract", |b| {
        b.to_async(&runtime).iter(|| agent.call(react_input()))
    });
    c.bench_function(
        "react/2 tool steps + extract (ScriptedLm, recording)",
        |b| {
            b.to_async(&runtime).iter_batched(
                || react(Arc::new(ScriptedLm::texts(replies.clone()))),
                |agent| async move {
                    let output = agent.call(react_input()).await;
                    (agent, output) // dropped outside the measurement
                },
                BatchSize::SmallInput,
            )
        },
    );
}

/// A span exporter that drops what it is given: the pipeline's cost without the network's.
#[derive(Debug)]
struct DiscardExporter;

impl opentelemetry_sdk::trace::SpanExporter for DiscardExporter {
    async fn export(
        &self,
        _batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        Ok(())
    }
}

/// What `signet_otel::install` sets up, exporting to [`DiscardExporter`]: `tracing-opentelemetry`
/// with Signet's filter, the [`signet_otel::GenAiSpanProcessor`] (array attributes, the GenAI
/// metrics) and a batch processor.
fn traced_subscriber() -> (impl tracing::Subscriber + Send + Sync, impl Drop) {
    use opentelemetry::metrics::MeterProvider;
    use opentelemetry::trace::TracerProvider;
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    let meter = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_span_processor(signet_otel::GenAiSpanProcessor::new(
            opentelemetry_sdk::trace::BatchSpanProcessor::builder(DiscardExporter).build(),
            Some(signet_otel::GenAiMetrics::new(&meter.meter("signet"))),
        ))
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("signet"))
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_filter(
            "warn,signet=info"
                .parse::<tracing_subscriber::filter::Targets>()
                .unwrap(),
        );
    struct Providers(opentelemetry_sdk::trace::SdkTracerProvider);
    impl Drop for Providers {
        fn drop(&mut self) {
            let _ = self.0.shutdown();
        }
    }
    (
        tracing_subscriber::registry().with(layer),
        Providers(provider),
    )
}

/// One Predict call and one ReAct run on a current-thread runtime, with no subscriber and with
/// the OpenTelemetry pipeline installed for the bench's thread.
fn tracing_on_off(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let predictor = predict(CyclingLm::new(&[PREDICT_REPLY]));
    let agent = react(CyclingLm::new(&react_replies()));
    for traced in [false, true] {
        let label = if traced { "tracing on" } else { "tracing off" };
        let (subscriber, providers) = traced_subscriber();
        let _default = traced.then(|| tracing::subscriber::set_default(subscriber));
        c.bench_function(&format!("predict/one call ({label})"), |b| {
            b.to_async(&runtime)
                .iter(|| predictor.call(predict_input()))
        });
        c.bench_function(&format!("react/2 tool steps + extract ({label})"), |b| {
            b.to_async(&runtime).iter(|| agent.call(react_input()))
        });
        drop(_default);
        drop(providers);
    }
}

/// What output checks cost when nothing fails: one Predict call and one ReAct run with no check,
/// with a typed check (a closure over the typed output), and with the built-in checks that watch
/// the answer as it streams (`Grounded` and `NoRepetition`, so the answer is streamed through the
/// watch and its figures read).
fn checks_on_off(c: &mut Criterion) {
    use signet::module::check::{Grounded, NoRepetition};
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let not_empty = |_: &workloads::QAInput, out: &workloads::QAOutput| {
        if out.answer.trim().is_empty() {
            Err("the answer is empty".to_owned())
        } else {
            Ok(())
        }
    };
    let predictors = [
        ("no check", predict(CyclingLm::new(&[PREDICT_REPLY]))),
        (
            "a typed check",
            predict(CyclingLm::new(&[PREDICT_REPLY])).with_check("not empty", not_empty),
        ),
        (
            "grounded + no repetition",
            predict(CyclingLm::new(&[PREDICT_REPLY]))
                .with_output_check(Grounded::new())
                .with_output_check(NoRepetition::new()),
        ),
    ];
    for (label, predictor) in &predictors {
        let output = runtime.block_on(predictor.call(predict_input())).unwrap();
        assert_eq!(output.answer, PREDICT_ANSWER);
        c.bench_function(&format!("predict/one call ({label})"), |b| {
            b.to_async(&runtime)
                .iter(|| predictor.call(predict_input()))
        });
    }
    let replies = react_replies();
    let agents = [
        ("no check", react(CyclingLm::new(&replies))),
        (
            "a typed check",
            react(CyclingLm::new(&replies)).with_check("not empty", move |i, o, _| not_empty(i, o)),
        ),
        (
            "grounded + no repetition",
            react(CyclingLm::new(&replies))
                .with_output_check(Grounded::new())
                .with_output_check(NoRepetition::new()),
        ),
    ];
    for (label, agent) in &agents {
        let output = runtime.block_on(agent.call(react_input())).unwrap();
        assert_eq!(output.output.answer, REACT_ANSWER);
        assert_eq!(output.usage.reasks, 0);
        c.bench_function(&format!("react/2 tool steps + extract ({label})"), |b| {
            b.to_async(&runtime).iter(|| agent.call(react_input()))
        });
    }
}

criterion_group!(
    benches,
    adapters,
    tools,
    modules,
    tracing_on_off,
    checks_on_off
);
criterion_main!(benches);
