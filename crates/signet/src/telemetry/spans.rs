//! The spans modules, tools, evaluations and optimizers open (`invoke_agent`, `execute_tool`,
//! `evaluate`, `evaluate_example`, `optimize`), and how content, usage and errors are recorded on
//! any GenAI span.

use tracing::Span;
use tracing::field::Empty;

use super::TARGET;

/// Content (prompts, payloads, inputs and outputs) recorded on a span only with capture on.
pub(crate) trait RecordContent {
    /// Records `value` as JSON text under `key` when content capture is on and the span enabled.
    fn record_content(&self, key: &str, value: impl FnOnce() -> String);
}

impl RecordContent for Span {
    fn record_content(&self, key: &str, value: impl FnOnce() -> String) {
        if !self.is_disabled() && super::capture_content() {
            self.record(key, value());
        }
    }
}

/// The `invoke_agent {name}` span of a module call: `id` tells predictors with one signature
/// apart, `version` is the content hash of the saved program it was loaded from; the name and
/// description are asked for only when the span is enabled.
pub(crate) fn agent_span(
    name: impl FnOnce() -> String,
    id: &dyn std::fmt::Display,
    description: impl FnOnce() -> String,
    version: Option<&str>,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "invoke_agent",
        "otel.name" = Empty,
        "otel.kind" = "internal",
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.agent.name" = Empty,
        "gen_ai.agent.id" = %id,
        "gen_ai.agent.description" = Empty,
        "gen_ai.agent.version" = version,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "signet.usage.lm_calls" = Empty,
        "gen_ai.usage.cost" = Empty,
        "signet.module.inputs" = Empty,
        "signet.module.outputs" = Empty,
        "error.type" = Empty,
    );
    if !span.is_disabled() {
        let name = name();
        span.record("otel.name", format!("invoke_agent {name}"));
        span.record("gen_ai.agent.name", name);
        span.record("gen_ai.agent.description", description());
    }
    span
}

/// The `execute_tool {name}` span of one tool call (`gen_ai.tool.type` is `function` for a Rust
/// tool, `extension` for an MCP server's).
pub(crate) fn tool_span(
    name: &str,
    call_id: Option<&str>,
    description: &str,
    tool_type: &str,
) -> Span {
    tracing::info_span!(
        target: TARGET,
        "execute_tool",
        "otel.name" = %format_args!("execute_tool {name}"),
        "otel.kind" = "internal",
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = name,
        "gen_ai.tool.call.id" = call_id,
        "gen_ai.tool.description" = description,
        "gen_ai.tool.type" = tool_type,
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "error.type" = Empty,
    )
}

/// Marks `span` failed: `error.type` (low cardinality: `timeout`, `429`, `tool_error`, ..) and the
/// span status with `message` (nothing when the span is disabled). For spans of crates built on
/// Signet (its MCP bridge) as for its own.
///
/// ```
/// let span = tracing::info_span!("call", "error.type" = tracing::field::Empty);
/// signet::telemetry::record_error(&span, "timeout", &"no answer within 30 s");
/// ```
pub fn record_error(span: &Span, error_type: &str, message: &dyn std::fmt::Display) {
    if span.is_disabled() {
        return;
    }
    span.record("error.type", error_type);
    span.record("otel.status_code", "error");
    span.record("otel.status_description", tracing::field::display(message));
}

/// Records a module call's token counts and LM calls on its `invoke_agent` span.
pub(crate) fn record_usage(
    span: &Span,
    input_tokens: u64,
    output_tokens: u64,
    lm_calls: u64,
    cost_nanousd: u64,
) {
    span.record("gen_ai.usage.input_tokens", int(input_tokens));
    span.record("gen_ai.usage.output_tokens", int(output_tokens));
    span.record("signet.usage.lm_calls", int(lm_calls));
    if cost_nanousd > 0 {
        span.record("gen_ai.usage.cost", cost_nanousd as f64 / 1e9);
    }
}

/// The `evaluate {program}` span of an `Evaluate` run over `examples` examples; `program` gives
/// the program's name and content hash, asked for only when the span is enabled.
pub(crate) fn evaluate_span(examples: usize, program: impl FnOnce() -> (String, String)) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "evaluate",
        "otel.name" = Empty,
        "otel.kind" = "internal",
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "signet.evaluate.program" = Empty,
        "gen_ai.agent.version" = Empty,
        "signet.evaluate.examples" = int(examples),
        "signet.evaluate.completed" = Empty,
        "signet.evaluate.errors" = Empty,
        "signet.evaluate.score" = Empty,
        "signet.evaluate.cancelled" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "signet.usage.lm_calls" = Empty,
        "gen_ai.usage.cost" = Empty,
        "error.type" = Empty,
    );
    if !span.is_disabled() {
        let (name, version) = program();
        span.record("otel.name", format!("evaluate {name}"));
        span.record("signet.evaluate.program", name);
        span.record("gen_ai.agent.version", version);
    }
    span
}

/// The `evaluate_example` span of one example of an `Evaluate` run.
pub(crate) fn example_span(index: usize) -> Span {
    tracing::info_span!(
        target: TARGET,
        "evaluate_example",
        "otel.name" = "evaluate_example",
        "otel.kind" = "internal",
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "signet.example.index" = int(index),
        "signet.example.score" = Empty,
        "signet.example.feedback" = Empty,
        "signet.example.inputs" = Empty,
        "signet.module.outputs" = Empty,
        "error.type" = Empty,
    )
}

/// A count as the signed 64-bit integer OpenTelemetry attributes hold (`tracing` would export an
/// unsigned one as text); counts past `i64::MAX` saturate.
pub(crate) fn int(count: impl TryInto<i64>) -> i64 {
    count.try_into().unwrap_or(i64::MAX)
}

/// The `optimize {optimizer}` span of a compile over `trainset` and `valset` examples; every
/// evaluation it runs is an `evaluate` span beneath it, each candidate telling itself apart by its
/// `gen_ai.agent.version`.
pub(crate) fn optimize_span(optimizer: &str, trainset: usize, valset: usize) -> Span {
    tracing::info_span!(
        target: TARGET,
        "optimize",
        "otel.name" = %format_args!("optimize {optimizer}"),
        "otel.kind" = "internal",
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "signet.optimize.optimizer" = optimizer,
        "signet.optimize.trainset" = int(trainset),
        "signet.optimize.valset" = int(valset),
        "gen_ai.agent.version" = Empty,
        "error.type" = Empty,
    )
}
