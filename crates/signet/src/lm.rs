//! Language models: the [`Lm`] trait, the data it exchanges, and implementations.
//!
//! * [`OpenAiLm`] (feature `openai`, on by default): any OpenAI-compatible chat endpoint (OpenAI,
//!   vLLM, llama.cpp, Ollama), with typed errors, retries, timeouts, a response cache, a call
//!   history and SSE streaming.
//! * [`AnthropicLm`] (feature `anthropic`, on by default): Claude through Anthropic's Messages API.
//! * [`OpenAiResponsesLm`] (feature `openai`): OpenAI's Responses API.
//! * [`GeminiLm`] (feature `gemini`, on by default): Google's Gemini API.
//! * [`RetryLm`], [`CachedLm`], [`HistoryLm`]: the same retries, cache and history around any `Lm`.
//! * [`FallbackLm`]: several LMs tried in order on rate limits, overload, server errors and timeouts.
//! * [`ConstrainedToolCalls`]: native tool calls for small models, through a decoding schema.
//!
//! ```
//! use signet::lm::{Completion, Lm, LmRequest, Message};
//! use signet::testing::ScriptedLm;
//!
//! let lm = ScriptedLm::new([Completion::text("[[ ## answer ## ]]\nParis")]);
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let reply = lm.complete(&LmRequest::new(vec![Message::user("Capital of France?")])).await.unwrap();
//! assert_eq!(reply.text.as_deref(), Some("[[ ## answer ## ]]\nParis"));
//! assert_eq!(lm.requests()[0].messages[0].content, "Capital of France?");
//! # });
//! ```

#[cfg(feature = "anthropic")]
mod anthropic;
mod budget;
mod cache;
mod capabilities;
mod chat_span;
mod constrained_tools;
mod content;
mod fallback;
#[cfg(feature = "gemini")]
mod gemini;
mod history;
#[cfg(any(feature = "anthropic", feature = "gemini", feature = "openai"))]
pub(crate) mod http_endpoint;
#[cfg(any(feature = "anthropic", feature = "gemini", feature = "openai"))]
pub(crate) mod http_provider;
#[cfg(any(feature = "anthropic", feature = "gemini", feature = "openai"))]
mod layers;
#[cfg(feature = "openai")]
mod openai;
mod pricing;
mod provider_state;
#[cfg(feature = "openai")]
mod responses;
mod retry;
mod tokens;
mod types;

use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};

pub use crate::tool::ToolDefinition;
#[cfg(feature = "anthropic")]
pub use anthropic::{AnthropicLm, AnthropicLmBuilder};
pub use budget::{Budget, BudgetExceeded, Spending};
pub use cache::{CachedLm, ResponseCache};
pub use capabilities::Capabilities;
#[cfg(feature = "openai")]
pub(crate) use chat_span::record_openai_body;
#[cfg(any(feature = "anthropic", feature = "gemini", feature = "openai"))]
pub(crate) use chat_span::record_response;
pub(crate) use chat_span::record_usage;
pub use chat_span::{ChatSpan, ResponseDetails};
pub use constrained_tools::ConstrainedToolCalls;
pub use content::Content;
pub use fallback::{FallbackLm, FallbackOn};
#[cfg(feature = "gemini")]
pub use gemini::{GeminiLm, GeminiLmBuilder};
pub use history::{CallHistory, CallRecord, HistoryLm, render_history};
#[cfg(any(feature = "anthropic", feature = "gemini", feature = "openai"))]
pub use http_endpoint::BuildError;
#[cfg(feature = "openai")]
pub(crate) use openai::shared_http as openai_http;
#[cfg(feature = "openai")]
pub use openai::{OpenAiLm, OpenAiLmBuilder};
pub use pricing::Pricing;
pub use provider_state::ProviderState;
#[cfg(feature = "openai")]
pub use responses::{OpenAiResponsesLm, OpenAiResponsesLmBuilder};
pub use retry::{RetryLm, RetryPolicy, parse_retry_after};
pub use tokens::{CHARS_PER_TOKEN_ESTIMATE, MEDIA_TOKEN_ESTIMATE, TokenCount, count_prompt_tokens};
pub use types::{
    Completion, FinishReason, LmError, LmOptions, LmRequest, Message, ResponseFormat, Role,
    StreamAssembler, StreamEvent, ToolCall, ToolChoice, Usage,
};

/// A language model: messages and options in, a completion out.
///
/// Implementations: [`OpenAiLm`] for any OpenAI-compatible endpoint,
/// [`ScriptedLm`](crate::testing::ScriptedLm) for tests, the
/// wrappers ([`RetryLm`], [`CachedLm`], [`HistoryLm`], [`ConstrainedToolCalls`]); `Arc<L>` and
/// `Box<L>` of any `Lm` (`Arc<dyn Lm>` included) are `Lm`s too, so a shared LM can be wrapped and
/// passed wherever one is taken.
pub trait Lm: Send + Sync {
    /// Sends one request and waits for the whole completion.
    fn complete<'a>(&'a self, request: &'a LmRequest)
    -> BoxFuture<'a, Result<Completion, LmError>>;

    /// Sends one request and streams the reply as it is generated: deltas, then
    /// [`StreamEvent::Done`] with the assembled completion. Errors end the stream.
    ///
    /// The provided implementation calls [`complete`](Lm::complete) and replays its result as
    /// events: the reasoning and the text as one delta each, one delta per tool call, then `Done`.
    /// Implementations that can stream (such as [`OpenAiLm`]) override it.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use signet::lm::{Completion, Lm, LmRequest, StreamEvent};
    /// use signet::testing::ScriptedLm;
    ///
    /// let lm = ScriptedLm::texts(["Hello there"]);
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let request = LmRequest::default();
    /// let events: Vec<StreamEvent> = lm.stream(&request).map(|e| e.unwrap()).collect().await;
    /// let Some(StreamEvent::Done(done)) = events.last() else { panic!("no Done") };
    /// assert_eq!(done.text.as_deref(), Some("Hello there"));
    /// # });
    /// ```
    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        futures::stream::once(self.complete(request))
            .flat_map(|result| {
                let events = match result {
                    Ok(completion) => completion_events(completion),
                    Err(error) => vec![Err(error)],
                };
                futures::stream::iter(events)
            })
            .boxed()
    }

    /// What this LM supports (native tools, structured outputs, ..).
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// The model's name, for logs and history.
    fn model(&self) -> &str;
}

/// Shared and boxed LMs — `Arc<dyn Lm>`, `Arc<OpenAiLm>`, `Box<dyn Lm>` — are LMs themselves
/// (every method is forwarded), so they can be wrapped ([`RetryLm`], [`CachedLm`], ..) or passed
/// wherever an `Lm` is taken.
///
/// ```
/// use std::sync::Arc;
/// use signet::lm::{Lm, RetryLm, RetryPolicy};
/// use signet::testing::ScriptedLm;
/// let shared: Arc<dyn Lm> = Arc::new(ScriptedLm::texts(["hi"]));
/// let retrying = RetryLm::new(shared, RetryPolicy::default());
/// assert_eq!(retrying.model(), "scripted");
/// ```
macro_rules! forward_lm {
    ($($pointer:ident)::+) => {
        impl<L: Lm + ?Sized> Lm for $($pointer)::+<L> {
            fn complete<'a>(
                &'a self,
                request: &'a LmRequest,
            ) -> BoxFuture<'a, Result<Completion, LmError>> {
                (**self).complete(request)
            }
            fn stream<'a>(
                &'a self,
                request: &'a LmRequest,
            ) -> BoxStream<'a, Result<StreamEvent, LmError>> {
                (**self).stream(request)
            }
            fn capabilities(&self) -> Capabilities {
                (**self).capabilities()
            }
            fn model(&self) -> &str {
                (**self).model()
            }
        }
    };
}
forward_lm!(std::sync::Arc);
forward_lm!(Box);

/// `lm` as the shared handle modules keep: an `Arc<dyn Lm>` is kept as it is (so modules given
/// clones of one handle share it), anything else is put in a new `Arc`.
pub(crate) fn shared<L: Lm + 'static>(lm: L) -> std::sync::Arc<dyn Lm> {
    crate::shared::share(lm, |lm| std::sync::Arc::new(lm) as std::sync::Arc<dyn Lm>)
}

/// `events`, calling `on_done` with the final completion as it passes (for caches and histories).
pub(crate) fn on_done<'a>(
    events: BoxStream<'a, Result<StreamEvent, LmError>>,
    mut on_done: impl FnMut(&Completion) + Send + 'a,
) -> BoxStream<'a, Result<StreamEvent, LmError>> {
    events
        .inspect(move |event| {
            if let Ok(StreamEvent::Done(completion)) = event {
                on_done(completion);
            }
        })
        .boxed()
}

/// A whole completion replayed as stream events: reasoning, text, one delta per tool call, `Done`.
pub(crate) fn completion_events(completion: Completion) -> Vec<Result<StreamEvent, LmError>> {
    let mut events = Vec::new();
    if let Some(reasoning) = completion.reasoning.as_ref().filter(|r| !r.is_empty()) {
        events.push(Ok(StreamEvent::ReasoningDelta(reasoning.clone())));
    }
    if let Some(text) = completion.text.as_ref().filter(|t| !t.is_empty()) {
        events.push(Ok(StreamEvent::TextDelta(text.clone())));
    }
    for (index, call) in completion.tool_calls.iter().enumerate() {
        events.push(Ok(StreamEvent::ToolCallDelta {
            index,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: call.arguments.clone(),
        }));
    }
    events.push(Ok(StreamEvent::Done(completion)));
    events
}
