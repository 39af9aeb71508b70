//! One trace from the client through a real Restate server to the worker: the ingress request
//! carries the client span's W3C trace context, Restate hands it to the handler, and the durable
//! run's `run {agent}`, `invoke_agent`, `chat` and `execute_tool` spans land in the client's
//! trace, the journaled LM and tool steps nested under the calls that asked for them.

use std::time::Duration;

use opentelemetry::trace::TracerProvider;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SimpleSpanProcessor};
use serde_json::{Value, json};
use signet::lm::LmRequest;
use signet::module::DynReAct;
use signet::testing::FnLm;
use signet::tool::FnTool;
use signet_restate::{Agents, RestateServer, RunRequest, Worker, free_port};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// A step for each turn: `add` once, then `finish`; the extractor answers `3`.
fn reply(request: &LmRequest) -> String {
    let system = &request.messages[0].content;
    if !system.contains("next_tool_name") {
        return "[[ ## reasoning ## ]]\nadded\n\n[[ ## answer ## ]]\n3\n\n[[ ## completed ## ]]"
            .to_owned();
    }
    let last = &request.messages[request.messages.len() - 1].content;
    let (tool, args) = match last.matches("[[ ## observation_").count() {
        0 => ("add", json!({"a": 1, "b": 2})),
        _ => ("finish", json!({})),
    };
    format!(
        "[[ ## next_thought ## ]]\nstep\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
         [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_durable_run_continues_the_clients_trace() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(SimpleSpanProcessor::new(exporter.clone()))
        .build();
    let layer = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("test"))
        .with_location(false)
        .with_threads(false);
    let filter: tracing_subscriber::filter::Targets =
        "signet=info,signet_restate=info,trace_context=info"
            .parse()
            .unwrap();
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(tracing_subscriber::Layer::with_filter(layer, filter)),
    )
    .unwrap();
    signet::telemetry::set_propagator(std::sync::Arc::new(signet_otel::W3cPropagator::default()));

    let server = RestateServer::start()
        .await
        .unwrap_or_else(|e| panic!("the Restate server must start: {e}"));
    let add = FnTool::builder("add")
        .description("Add two integers.")
        .schema(
            json!({"type": "object", "properties": {"a": {"type": "integer"},
                       "b": {"type": "integer"}}, "required": ["a", "b"]}),
        )
        .sync_fn(|args: Value| {
            Ok::<_, String>(args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0))
        });
    let agent = DynReAct::new("question -> answer".parse().unwrap())
        .tool(add)
        .with_lm(FnLm::new(reply));
    let port = free_port().unwrap();
    let worker = Worker::new()
        .agents(Agents::new().agent("adder", agent))
        .identity_key(server.identity_key());
    tokio::spawn(signet_restate::serve(
        format!("127.0.0.1:{port}").parse().unwrap(),
        worker,
    ));
    // The worker's endpoint answers once it is bound.
    let mut registered = Err(String::new());
    for _ in 0..50 {
        registered = server
            .register(&format!("http://127.0.0.1:{port}"))
            .await
            .map_err(|e| e.to_string());
        if registered.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    registered.expect("the worker registers");

    let client = tracing::info_span!("client request");
    let request = RunRequest {
        agent: "adder".into(),
        inputs: json!({"question": "1+2?"}).as_object().unwrap().clone(),
        max_iters: None,
    };
    let result = server
        .ingress()
        .run("trace-1", &request)
        .instrument(client.clone())
        .await
        .unwrap();
    assert_eq!(result.outputs["answer"], "3");
    drop(client);

    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
    let named = |name: &str| {
        spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no span `{name}` among {names:?}"))
    };
    let root = named("client request");
    let trace = root.span_context.trace_id();
    let run = named("run adder");
    assert_eq!(
        run.span_context.trace_id(),
        trace,
        "the worker continues the client's trace"
    );
    assert!(
        run.parent_span_is_remote,
        "its parent came in the request's headers"
    );
    let agent = spans
        .iter()
        .find(|s| s.name.starts_with("invoke_agent") && s.span_context.trace_id() == trace)
        .unwrap_or_else(|| panic!("no agent span in the client's trace among {names:?}"));
    assert_eq!(agent.parent_span_id, run.span_context.span_id());
    let chats: Vec<_> = spans
        .iter()
        .filter(|s| s.name == "chat fn" && s.span_context.trace_id() == trace)
        .collect();
    assert_eq!(
        chats.len(),
        3,
        "two steps and the extractor, journaled: {names:?}"
    );
    for chat in chats {
        assert_eq!(chat.parent_span_id, agent.span_context.span_id());
    }
    let tool = named("execute_tool add");
    assert_eq!(tool.span_context.trace_id(), trace);
    assert_eq!(tool.parent_span_id, agent.span_context.span_id());
}
