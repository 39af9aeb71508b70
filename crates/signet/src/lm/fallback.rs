//! Several LMs tried in order: when one is rate limited, overloaded, failing or unreachable, the
//! next answers ([`FallbackLm`]).

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use tracing::Instrument;
use tracing::field::Empty;

use super::{Capabilities, Completion, Lm, LmError, LmRequest, StreamEvent};
use crate::telemetry::TARGET;

/// Which failures of one LM hand the call to the next one in a [`FallbackLm`]. By default the
/// transient ones: rate limits (`429`), server errors (every `5xx`: `500`, `503`, Anthropic's
/// `529` overload), timeouts and connection failures. A prompt too long for the context window can
/// move on too (to a model with a larger one) when asked; a rejected request (`4xx`), an invalid
/// response or a refusal never does, as the next model would most likely fail the same way.
///
/// ```
/// use signet::lm::{FallbackOn, LmError};
/// let on = FallbackOn::default().with_context_window(true);
/// assert!(on.covers(&LmError::Server { status: 529, message: "overloaded".into() }));
/// assert!(on.covers(&LmError::ContextWindowExceeded { message: String::new() }));
/// assert!(!on.covers(&LmError::Rejected { status: 400, message: String::new() }));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FallbackOn {
    rate_limits: bool,
    server_errors: bool,
    timeouts: bool,
    connection: bool,
    context_window: bool,
}

impl Default for FallbackOn {
    /// Rate limits, server errors, timeouts and connection failures; not the context window.
    fn default() -> Self {
        FallbackOn {
            rate_limits: true,
            server_errors: true,
            timeouts: true,
            connection: true,
            context_window: false,
        }
    }
}

impl FallbackOn {
    crate::shared::setters! {
        /// Whether a rate limit (`429`) moves on.
        fn with_rate_limits(on: bool) { rate_limits = on }

        /// Whether a server error (`5xx`, overload included) moves on.
        fn with_server_errors(on: bool) { server_errors = on }

        /// Whether a timeout moves on.
        fn with_timeouts(on: bool) { timeouts = on }

        /// Whether a connection failure moves on.
        fn with_connection(on: bool) { connection = on }

        /// Whether a prompt too long for the context window moves on (to a model with a larger
        /// window).
        fn with_context_window(on: bool) { context_window = on }
    }

    /// Whether `error` hands the call to the next LM.
    pub fn covers(&self, error: &LmError) -> bool {
        match error {
            LmError::RateLimited { .. } => self.rate_limits,
            LmError::Server { .. } => self.server_errors,
            LmError::Timeout { .. } => self.timeouts,
            LmError::Connect { .. } => self.connection,
            LmError::ContextWindowExceeded { .. } => self.context_window,
            _ => false,
        }
    }
}

/// LMs tried in order: a call goes to the first, and when it fails in a way [`FallbackOn`]
/// covers (by default a rate limit, an overload or other server error, a timeout, a dead
/// connection) to the next, until one answers or the last fails (its error is the call's).
/// Each LM keeps its own retries: an `OpenAiLm` retries its rate limits first, and only then does
/// the next LM take over.
///
/// The [`Completion`] says which model answered ([`Completion::model`]), and so do the call
/// history and the `fallback` span, whose children are every attempt's `chat` span. The
/// capabilities are the ones every LM of the list has (a request formatted for them suits any),
/// the context window the smallest known; [`model`](Lm::model) is the first LM's (token counts
/// and cache keys use it).
///
/// ```
/// use signet::lm::{Completion, FallbackLm, Lm, LmError, LmRequest, Message};
/// use signet::testing::ScriptedLm;
///
/// let primary = ScriptedLm::new([])
///     .with_model("primary")
///     .then_error(LmError::RateLimited { retry_after: None, message: "slow down".into() });
/// let backup = ScriptedLm::new([Completion::text("hello")]).with_model("backup");
/// let lm = FallbackLm::new(primary).then(backup);
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let reply = lm.complete(&LmRequest::new(vec![Message::user("hi")])).await.unwrap();
/// assert_eq!(reply.text.as_deref(), Some("hello"));
/// assert_eq!(reply.model.as_deref(), Some("backup"));
/// assert_eq!(reply.usage.fallbacks, 1);
/// # });
/// ```
#[derive(Clone)]
pub struct FallbackLm {
    lms: Vec<Arc<dyn Lm>>,
    on: FallbackOn,
}

impl std::fmt::Debug for FallbackLm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FallbackLm")
            .field("models", &self.models())
            .field("on", &self.on)
            .finish()
    }
}

impl FallbackLm {
    /// A list of one LM, `first`; add the others with [`then`](Self::then).
    pub fn new(first: impl Lm + 'static) -> FallbackLm {
        FallbackLm {
            lms: vec![super::shared(first)],
            on: FallbackOn::default(),
        }
    }

    /// Adds `next`, tried when every LM before it failed.
    pub fn then(mut self, next: impl Lm + 'static) -> FallbackLm {
        self.lms.push(super::shared(next));
        self
    }

    crate::shared::setters! {
        /// Which failures move on to the next LM (default [`FallbackOn::default`]).
        fn with_fallback_on(on: FallbackOn) { on = on }
    }

    /// The models of the list, in order.
    pub fn models(&self) -> Vec<&str> {
        self.lms.iter().map(|lm| lm.model()).collect()
    }

    /// The `fallback` span of one call: the models in order, then which one answered and after
    /// how many attempts.
    fn span(&self) -> tracing::Span {
        tracing::info_span!(
            target: TARGET,
            "fallback",
            "signet.fallback.models" = %self.models().join(", "),
            "signet.fallback.model" = Empty,
            "signet.fallback.attempts" = Empty,
        )
    }

    /// Whether the failure of LM `index` hands the call on (there is a next one, and `on` covers
    /// the error); logs it when so.
    fn falls_back(&self, index: usize, error: &LmError) -> bool {
        let Some(next) = self.lms.get(index + 1).filter(|_| self.on.covers(error)) else {
            return false;
        };
        tracing::warn!(
            target: TARGET,
            model = self.lms[index].model(),
            next = next.model(),
            %error,
            "LM failed; falling back to the next one"
        );
        true
    }
}

/// Marks `completion` as answered by `model` after `fallbacks` failed attempts.
fn answered(mut completion: Completion, model: &str, fallbacks: usize) -> Completion {
    completion.model.get_or_insert_with(|| model.to_owned());
    completion.usage.fallbacks = completion
        .usage
        .fallbacks
        .saturating_add(u64::try_from(fallbacks).unwrap_or(u64::MAX));
    completion
}

impl Lm for FallbackLm {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        let span = self.span();
        let recorded = span.clone();
        async move {
            // `falls_back` moves on only when there is a next LM: `index` stays in the list.
            let mut index = 0;
            loop {
                let lm = &self.lms[index];
                match lm.complete(request).await {
                    Ok(completion) => {
                        recorded.record("signet.fallback.model", lm.model());
                        recorded.record(
                            "signet.fallback.attempts",
                            i64::try_from(index + 1).unwrap_or(i64::MAX),
                        );
                        return Ok(answered(completion, lm.model(), index));
                    }
                    Err(error) if self.falls_back(index, &error) => index += 1,
                    Err(error) => {
                        recorded.record(
                            "signet.fallback.attempts",
                            i64::try_from(index + 1).unwrap_or(i64::MAX),
                        );
                        return Err(error);
                    }
                }
            }
        }
        .instrument(span)
        .boxed()
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        // The first LM whose stream does not fail before its first event streams the reply; one
        // that fails midway is not replayed on the next (its text has been shown).
        let first = async move {
            let mut index = 0;
            loop {
                let mut events = self.lms[index].stream(request);
                match events.next().await {
                    Some(Err(error)) if self.falls_back(index, &error) => index += 1,
                    first => return (first, events, index),
                }
            }
        };
        stream::once(first)
            .flat_map(move |(first, rest, index)| {
                let model = self.lms[index].model();
                stream::iter(first)
                    .chain(rest)
                    .map(move |event| match event {
                        Ok(StreamEvent::Done(completion)) => {
                            Ok(StreamEvent::Done(answered(completion, model, index)))
                        }
                        other => other,
                    })
            })
            .boxed()
    }

    fn capabilities(&self) -> Capabilities {
        let all = self.lms.iter().map(|lm| lm.capabilities());
        all.reduce(|a, b| Capabilities {
            function_calling: a.function_calling && b.function_calling,
            response_schema: a.response_schema && b.response_schema,
            json_object: a.json_object && b.json_object,
            json_object_schema: a.json_object_schema && b.json_object_schema,
            context_window: smallest(a.context_window, b.context_window),
            parallel_requests: smallest(a.parallel_requests, b.parallel_requests),
        })
        .unwrap_or_default()
    }

    fn model(&self) -> &str {
        self.lms[0].model()
    }
}

/// The smaller of two known limits, or the one known.
fn smallest(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::{CallHistory, HistoryLm, Message};
    use crate::testing::ScriptedLm;

    fn ask() -> LmRequest {
        LmRequest::new(vec![Message::user("hi")])
    }

    fn server(status: u16) -> LmError {
        LmError::Server {
            status,
            message: format!("HTTP {status}"),
        }
    }

    #[tokio::test]
    async fn each_covered_failure_moves_on_and_the_answer_names_its_model() {
        let first = Arc::new(ScriptedLm::new([]).with_model("primary").then_error(
            LmError::RateLimited {
                retry_after: None,
                message: "slow down".into(),
            },
        ));
        let second = Arc::new(
            ScriptedLm::new([])
                .with_model("secondary")
                .then_error(server(529)),
        );
        let third = Arc::new(ScriptedLm::new([Completion::text("ok")]).with_model("third"));
        let history = Arc::new(CallHistory::new());
        let lm = HistoryLm::new(
            FallbackLm::new(first.clone())
                .then(second.clone())
                .then(third.clone()),
            history.clone(),
        );
        let reply = lm.complete(&ask()).await.unwrap();
        assert_eq!(reply.model.as_deref(), Some("third"));
        assert_eq!(reply.usage.fallbacks, 2);
        assert_eq!(
            (
                first.requests().len(),
                second.requests().len(),
                third.requests().len()
            ),
            (1, 1, 1)
        );
        assert_eq!(history.entries()[0].model, "third");
        assert_eq!(lm.model(), "primary");
    }

    #[tokio::test]
    async fn an_uncovered_failure_or_the_last_one_is_the_calls_error() {
        let rejected = LmError::Rejected {
            status: 400,
            message: "bad request".into(),
        };
        let backup = Arc::new(ScriptedLm::new([Completion::text("unused")]));
        let lm =
            FallbackLm::new(ScriptedLm::new([]).then_error(rejected.clone())).then(backup.clone());
        assert_eq!(lm.complete(&ask()).await.unwrap_err(), rejected);
        assert!(backup.requests().is_empty());

        let lm = FallbackLm::new(ScriptedLm::new([]).then_error(server(503)))
            .then(ScriptedLm::new([]).then_error(server(502)));
        assert_eq!(lm.complete(&ask()).await.unwrap_err(), server(502));

        // Off for server errors: the first error stands.
        let lm = FallbackLm::new(ScriptedLm::new([]).then_error(server(503)))
            .then(ScriptedLm::new([Completion::text("unused")]))
            .with_fallback_on(FallbackOn::default().with_server_errors(false));
        assert_eq!(lm.complete(&ask()).await.unwrap_err(), server(503));
    }

    #[tokio::test]
    async fn a_stream_that_fails_before_its_first_event_moves_on() {
        let lm = FallbackLm::new(ScriptedLm::new([]).with_model("a").then_error(server(503)))
            .then(ScriptedLm::new([Completion::text("streamed")]).with_model("b"));
        let events: Vec<_> = lm.stream(&ask()).collect().await;
        let done = events.iter().find_map(|event| match event {
            Ok(StreamEvent::Done(completion)) => Some(completion.clone()),
            _ => None,
        });
        let done = done.expect("a completed stream");
        assert_eq!(done.text.as_deref(), Some("streamed"));
        assert_eq!(done.model.as_deref(), Some("b"));
        assert_eq!(done.usage.fallbacks, 1);
    }

    #[test]
    fn capabilities_are_what_every_lm_has() {
        let strong = ScriptedLm::new([]).with_capabilities(
            Capabilities::default()
                .with_function_calling(true)
                .with_response_schema(true)
                .with_context_window(128_000),
        );
        let weak = ScriptedLm::new([]).with_capabilities(
            Capabilities::default()
                .with_function_calling(true)
                .with_context_window(8_192),
        );
        let both = FallbackLm::new(strong).then(weak).capabilities();
        assert!(both.function_calling && !both.response_schema && both.json_object);
        assert_eq!(both.context_window, Some(8_192));
    }
}
