//! Signet's spans as an OpenTelemetry backend receives them (in memory here; `phoenix.rs` checks a
//! real backend): one trace per run, the conventions' names, kinds and attributes, errors, no
//! content unless asked, and the GenAI metrics derived from the spans.

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, Value};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use signet::lm::{FallbackLm, LmError};
use signet::module::{Predict, ReAct};
use signet::testing::ScriptedLm;

use crate::support;
use support::*;

#[tokio::test]
async fn a_react_run_is_one_trace_of_agent_chat_and_tool_spans() {
    let pipeline = Pipeline::install();
    let lm = ScriptedLm::new([
        completion(
            step("add them", "add", serde_json::json!({"a": 1, "b": 2})),
            100,
            10,
        ),
        completion(step("done", "finish", serde_json::json!({})), 120, 8),
        completion(extract("3"), 150, 5),
    ]);
    let agent = ReAct::<Ask>::new().tool(AddTool).with_lm(lm);
    let out = agent
        .call(AskInput {
            question: "1+2?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "3");

    let spans = pipeline.finished();
    let agent_span = spans
        .iter()
        .find(|s| s.name.starts_with("invoke_agent "))
        .unwrap_or_else(|| panic!("no agent span among {:?}", names(&spans)));
    let chats = spans_named(&spans, "chat scripted");
    assert_eq!(chats.len(), 3, "{:?}", names(&spans));
    let tool = span(&spans, "execute_tool add");
    let trace = agent_span.span_context.trace_id();
    for child in chats.iter().copied().chain([tool]) {
        assert_eq!(child.span_context.trace_id(), trace, "{}", child.name);
        assert_eq!(
            child.parent_span_id,
            agent_span.span_context.span_id(),
            "{} is not a child of the agent",
            child.name
        );
    }

    assert_eq!(text(agent_span, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(
        agent_span.name,
        format!("invoke_agent {}", text(agent_span, "gen_ai.agent.name"))
    );
    assert!(!text(agent_span, "gen_ai.agent.id").is_empty());
    assert_eq!(int(agent_span, "gen_ai.usage.input_tokens"), 370);
    assert_eq!(int(agent_span, "gen_ai.usage.output_tokens"), 23);
    assert_eq!(agent_span.span_kind, SpanKind::Internal);

    let first = chats[0];
    assert_eq!(first.span_kind, SpanKind::Client);
    assert_eq!(text(first, "gen_ai.operation.name"), "chat");
    assert_eq!(text(first, "gen_ai.provider.name"), "signet.scripted");
    assert_eq!(text(first, "gen_ai.request.model"), "scripted");
    assert_eq!(int(first, "gen_ai.usage.input_tokens"), 100);
    assert_eq!(int(first, "gen_ai.usage.output_tokens"), 10);
    assert_eq!(
        attr(first, "gen_ai.response.finish_reasons"),
        Some(&Value::Array(Array::String(vec!["stop".into()]))),
        "a typed string array, not JSON text"
    );
    assert_eq!(
        attr(first, "gen_ai.request.stream"),
        Some(&Value::Bool(false))
    );

    assert_eq!(tool.span_kind, SpanKind::Internal);
    assert_eq!(text(tool, "gen_ai.operation.name"), "execute_tool");
    assert_eq!(text(tool, "gen_ai.tool.name"), "add");
    assert_eq!(text(tool, "gen_ai.tool.type"), "function");
    assert_eq!(text(tool, "gen_ai.tool.description"), "Add two integers.");
    assert!(
        attr(tool, "gen_ai.tool.call.id").is_none(),
        "text mode has no call ids"
    );

    // Content is off by default: no prompt, reply, arguments, result, inputs or outputs.
    for span in &spans {
        for key in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
            "signet.module.inputs",
            "signet.module.outputs",
        ] {
            assert!(attr(span, key).is_none(), "{} carries {key}", span.name);
        }
    }
    // `tracing` bookkeeping stays out.
    assert!(attr(first, "otel.name").is_none() && attr(first, "code.filepath").is_none());
}

#[tokio::test]
async fn a_fallback_span_holds_every_attempt_and_names_the_model_that_answered() {
    let pipeline = Pipeline::install();
    let primary = ScriptedLm::new([])
        .with_model("primary")
        .then_error(LmError::RateLimited {
            retry_after: None,
            message: "slow down".into(),
        });
    let backup = ScriptedLm::new([completion("[[ ## answer ## ]]\nParis".into(), 20, 3)])
        .with_model("backup");
    let out = Predict::<Ask>::new()
        .with_lm(FallbackLm::new(primary).then(backup))
        .call(AskInput {
            question: "Capital of France?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.answer, "Paris");
    let spans = pipeline.finished();
    let fallback = span(&spans, "fallback");
    assert_eq!(text(fallback, "signet.fallback.model"), "backup");
    assert_eq!(text(fallback, "signet.fallback.models"), "primary, backup");
    assert_eq!(int(fallback, "signet.fallback.attempts"), 2);
    let (first, second) = (span(&spans, "chat primary"), span(&spans, "chat backup"));
    assert_eq!(text(first, "error.type"), "429");
    assert!(matches!(second.status, Status::Unset | Status::Ok));
    for attempt in [first, second] {
        assert_eq!(attempt.parent_span_id, fallback.span_context.span_id());
    }
    let agent = span(&spans, "invoke_agent Ask");
    assert_eq!(fallback.parent_span_id, agent.span_context.span_id());
}

#[tokio::test]
async fn a_failed_call_records_its_error_type_on_the_chat_and_agent_spans() {
    let pipeline = Pipeline::install();
    let lm = ScriptedLm::new([]).then_error(LmError::RateLimited {
        retry_after: None,
        message: "slow down".into(),
    });
    let error = Predict::<Ask>::new()
        .with_lm(lm)
        .call(AskInput {
            question: "q".into(),
        })
        .await
        .unwrap_err();
    assert!(error.to_string().contains("rate limited"), "{error}");
    let spans = pipeline.finished();
    let chat = span(&spans, "chat scripted");
    assert_eq!(text(chat, "error.type"), "429");
    assert!(
        matches!(&chat.status, Status::Error { description } if description.contains("slow down"))
    );
    let agent = span(&spans, "invoke_agent Ask");
    assert_eq!(text(agent, "error.type"), "429");
    assert!(
        attr(agent, "gen_ai.usage.input_tokens").is_some(),
        "what a failed call spent is recorded too"
    );
    assert!(matches!(agent.status, Status::Error { .. }));
    assert_eq!(chat.parent_span_id, agent.span_context.span_id());
}

#[tokio::test]
async fn chat_spans_feed_the_token_usage_and_duration_histograms() {
    let pipeline = Pipeline::install();
    let lm = ScriptedLm::new([completion(
        "[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]".into(),
        42,
        7,
    )]);
    Predict::<Ask>::new()
        .with_lm(lm)
        .call(AskInput {
            question: "2+2?".into(),
        })
        .await
        .unwrap();
    pipeline.meter.force_flush().unwrap();
    let exported = pipeline.metrics.get_finished_metrics().unwrap();
    let metrics: Vec<_> = exported
        .iter()
        .flat_map(|r| r.scope_metrics())
        .flat_map(|s| s.metrics())
        .collect();
    let find = |name: &str| {
        metrics
            .iter()
            .find(|m| m.name() == name)
            .unwrap_or_else(|| panic!("no metric {name}"))
    };
    let tokens = find("gen_ai.client.token.usage");
    assert_eq!(tokens.unit(), "{token}");
    let AggregatedMetrics::U64(MetricData::Histogram(histogram)) = tokens.data() else {
        panic!("token usage is not a u64 histogram");
    };
    let mut by_type: Vec<(String, u64)> = histogram
        .data_points()
        .map(|point| {
            let kind = point
                .attributes()
                .find(|kv| kv.key.as_str() == "gen_ai.token.type")
                .map(|kv| kv.value.to_string())
                .unwrap_or_default();
            assert!(
                point
                    .attributes()
                    .any(|kv| kv.key.as_str() == "gen_ai.request.model"
                        && kv.value.as_str() == "scripted")
            );
            (kind, point.sum())
        })
        .collect();
    by_type.sort();
    assert_eq!(
        by_type,
        [("input".to_owned(), 42), ("output".to_owned(), 7)]
    );
    let duration = find("gen_ai.client.operation.duration");
    assert_eq!(duration.unit(), "s");
    let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = duration.data() else {
        panic!("duration is not an f64 histogram");
    };
    assert_eq!(histogram.data_points().map(|p| p.count()).sum::<u64>(), 1);
}

#[tokio::test]
async fn an_optimizers_compile_is_a_span_naming_the_program_it_produced() {
    use signet::data::Example;
    use signet::module::Predictors;
    use signet::optimize::KnnFewShot;
    let pipeline = Pipeline::install();
    let trainset: Vec<Example> = ["2+2?", "3+3?"]
        .iter()
        .map(|q| {
            Example::new(serde_json::json!({"question": q, "answer": "x"}))
                .with_inputs(["question"])
        })
        .collect();
    let compiled = KnnFewShot::new(1)
        .compile(&Predict::<Ask>::new(), &trainset)
        .await
        .unwrap();
    let spans = pipeline.finished();
    let optimize = span(&spans, "optimize KNNFewShot");
    assert_eq!(int(optimize, "signet.optimize.trainset"), 2);
    assert_eq!(
        text(optimize, "gen_ai.agent.version"),
        compiled.program.version()
    );
}

#[tokio::test]
async fn priced_calls_carry_their_cost_on_the_chat_and_agent_spans() {
    let pipeline = Pipeline::install();
    let lm = ScriptedLm::new([completion(
        "[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]".into(),
        1_000_000,
        0,
    )])
    .with_pricing(signet::lm::Pricing::per_million_tokens(2.5, 10.0));
    Predict::<Ask>::new()
        .with_lm(lm)
        .call(AskInput {
            question: "2+2?".into(),
        })
        .await
        .unwrap();
    let spans = pipeline.finished();
    for name in ["chat scripted", "invoke_agent Ask"] {
        assert_eq!(
            attr(span(&spans, name), "gen_ai.usage.cost"),
            Some(&Value::F64(2.5)),
            "{name}"
        );
    }
}

/// A program of two predictors.
#[derive(signet::Module)]
struct TwoSteps {
    draft: Predict<Ask>,
    check: Predict<Ask>,
}

impl signet::module::Module for TwoSteps {
    type Input = AskInput;
    type Output = AskOutput;
    type Error = signet::Error;

    async fn call(&self, input: AskInput) -> Result<AskOutput, signet::Error> {
        let draft = self.draft.call(input).await?;
        self.check
            .call(AskInput {
                question: draft.answer,
            })
            .await
    }
}

#[tokio::test]
async fn a_module_of_your_own_is_one_agent_span_its_predictors_named_by_path() {
    let pipeline = Pipeline::install();
    let reply = || "[[ ## answer ## ]]\n4\n\n[[ ## completed ## ]]";
    let program = TwoSteps {
        draft: Predict::<Ask>::new().with_lm(ScriptedLm::texts([reply()])),
        check: Predict::<Ask>::new().with_lm(ScriptedLm::texts([reply()])),
    };
    let out = signet::module::traced(
        &program,
        AskInput {
            question: "2+2?".into(),
        },
    )
    .await
    .unwrap();
    assert_eq!(out.answer, "4");
    let spans = pipeline.finished();
    let module = span(&spans, "invoke_agent TwoSteps");
    assert!(text(module, "gen_ai.agent.version").starts_with("sha256:"));
    for path in ["draft", "check"] {
        let predictor = span(&spans, &format!("invoke_agent {path}"));
        assert_eq!(text(predictor, "gen_ai.agent.name"), path);
        assert_eq!(predictor.parent_span_id, module.span_context.span_id());
    }
}
