//! One trace from the client through Restate to the worker: the ingress client sends the current
//! span's W3C trace context as request headers (Restate hands them to the handler), and a
//! worker's handler continues the trace from them, so a durable run's `invoke_agent`, `chat` and
//! `execute_tool` spans sit under the span that started it.

use tracing::Span;
use tracing::field::Empty;

/// The `tracing` target of the worker's spans.
const TARGET: &str = "signet_restate::telemetry";

/// `request` with the current span's trace context as headers (none without a propagator, as
/// `signet-otel` installs).
pub(crate) fn with_trace_context(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    signet::telemetry::inject_context(&Span::current())
        .into_iter()
        .fold(request, |request, (key, value)| request.header(key, value))
}

/// The span of one execution of a handler (`run {agent}`, `evaluate {program}`), a child of the
/// client's span when the invocation's headers carry its trace context. A run Restate replays
/// (after a worker died, or resuming after a decision) has one such span per execution.
pub(crate) fn handler_span(
    handler: &str,
    target: &str,
    headers: &restate_sdk::context::HeaderMap,
) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "restate_handler",
        "otel.name" = %format_args!("{handler} {target}"),
        "otel.kind" = "server",
        "otel.status_code" = Empty,
        "signet.restate.handler" = handler,
        "signet.restate.target" = target,
    );
    let carried = |key: &str| headers.get(key).cloned();
    signet::telemetry::set_remote_parent(&span, &carried);
    span
}
