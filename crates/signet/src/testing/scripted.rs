//! An LM that answers from a script: for tests, examples and users' own tests.

use std::collections::VecDeque;
use std::sync::Mutex;

use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};

use super::ScriptedReply;
use crate::lm::{Capabilities, ChatSpan, Completion, Lm, LmError, LmRequest, Pricing, StreamEvent};

/// One entry of the script: a fixed completion, or a reply rendered for the request it answers.
#[derive(Debug)]
enum Entry {
    Fixed(Completion),
    Rendered(ScriptedReply),
}

/// Replies in order from a script and records every request it receives, like DSPy's `DummyLM`.
/// A reply can be a completion, an action rendered in the request's own format
/// ([`ScriptedReply`]: one script serves every adapter, text or native mode), or an error (to test
/// failure paths). When the script runs out, calls fail with [`LmError::NoMoreReplies`].
///
/// [`stream`](Lm::stream) takes the next reply too and streams it in small, deterministic pieces:
/// the reasoning and the text word by word (each piece keeps its trailing whitespace, so the
/// pieces concatenate to the exact text), each tool call as a first delta with its id and name
/// followed by its arguments in pieces of at most 8 characters, then [`StreamEvent::Done`] with
/// the reply.
///
/// ```
/// use signet::lm::{Completion, Lm, LmError, LmRequest};
/// use signet::testing::ScriptedLm;
///
/// let lm = ScriptedLm::new([Completion::text("first")])
///     .then_error(LmError::Timeout { after: std::time::Duration::from_secs(1) });
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let request = LmRequest::default();
/// assert_eq!(lm.complete(&request).await.unwrap().text.as_deref(), Some("first"));
/// assert!(matches!(lm.complete(&request).await, Err(LmError::Timeout { .. })));
/// assert!(matches!(lm.complete(&request).await, Err(LmError::NoMoreReplies { call: 3 })));
/// assert_eq!(lm.requests().len(), 3);
/// # });
/// ```
#[derive(Debug)]
pub struct ScriptedLm {
    replies: Mutex<VecDeque<Result<Entry, LmError>>>,
    requests: Mutex<Vec<LmRequest>>,
    capabilities: Capabilities,
    model: String,
    pricing: Option<Pricing>,
}

impl ScriptedLm {
    /// An LM that answers with `replies`, in order.
    pub fn new(replies: impl IntoIterator<Item = Completion>) -> ScriptedLm {
        ScriptedLm {
            replies: Mutex::new(replies.into_iter().map(|c| Ok(Entry::Fixed(c))).collect()),
            requests: Mutex::new(Vec::new()),
            capabilities: Capabilities::default(),
            model: "scripted".to_owned(),
            pricing: None,
        }
    }

    /// An LM that answers each call with the next text.
    pub fn texts<S: Into<String>>(texts: impl IntoIterator<Item = S>) -> ScriptedLm {
        ScriptedLm::new(texts.into_iter().map(Completion::text))
    }

    /// An LM that answers with `replies`, each rendered for the request it answers (see
    /// [`ScriptedReply`]).
    pub fn replies(replies: impl IntoIterator<Item = ScriptedReply>) -> ScriptedLm {
        replies
            .into_iter()
            .fold(ScriptedLm::new([]), ScriptedLm::then_reply)
    }

    /// Appends a reply.
    pub fn then(self, reply: Completion) -> Self {
        self.lock_replies().push_back(Ok(Entry::Fixed(reply)));
        self
    }

    /// Appends a reply rendered for the request it answers.
    pub fn then_reply(self, reply: ScriptedReply) -> Self {
        self.lock_replies().push_back(Ok(Entry::Rendered(reply)));
        self
    }

    /// Appends an error: the call that reaches it fails with `error`.
    pub fn then_error(self, error: LmError) -> Self {
        self.lock_replies().push_back(Err(error));
        self
    }

    /// Declares what the scripted LM supports (adapters choose formats from this).
    pub fn with_capabilities(mut self, capabilities: Capabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Names the model (`scripted` by default): what [`Lm::model`] returns, and what its spans
    /// and a [`FallbackLm`](crate::lm::FallbackLm) name it.
    ///
    /// ```
    /// use signet::lm::Lm;
    /// assert_eq!(signet::testing::ScriptedLm::new([]).with_model("primary").model(), "primary");
    /// ```
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Prices its replies' tokens: each completion's
    /// [`Usage::cost_nanousd`](crate::lm::Usage::cost_nanousd) is set, as an
    /// [`OpenAiLm`](crate::lm::OpenAiLm) with the same [`Pricing`] sets it.
    ///
    /// ```
    /// use signet::lm::{Completion, Lm, LmRequest, Pricing};
    /// use signet::testing::ScriptedLm;
    /// let mut reply = Completion::text("hi");
    /// reply.usage.prompt_tokens = 1_000_000;
    /// let lm = ScriptedLm::new([reply]).with_pricing(Pricing::per_million_tokens(2.5, 10.0));
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let usage = lm.complete(&LmRequest::default()).await.unwrap().usage;
    /// assert_eq!(usage.cost_usd(), 2.5);
    /// # });
    /// ```
    pub fn with_pricing(mut self, pricing: Pricing) -> Self {
        self.pricing = Some(pricing);
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<LmRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many replies are left.
    pub fn remaining(&self) -> usize {
        self.lock_replies().len()
    }

    /// Records `request` and takes the next reply.
    fn next_reply(&self, request: &LmRequest) -> Result<Completion, LmError> {
        let call = {
            let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
            requests.push(request.clone());
            requests.len()
        };
        let reply = self.lock_replies().pop_front();
        let mut completion = match reply.unwrap_or(Err(LmError::NoMoreReplies { call }))? {
            Entry::Fixed(completion) => completion,
            Entry::Rendered(reply) => reply.render(request),
        };
        completion.usage.lm_calls = completion.usage.lm_calls.max(1);
        if let Some(pricing) = &self.pricing {
            pricing.apply(&mut completion.usage);
        }
        Ok(completion)
    }

    fn lock_replies(&self) -> std::sync::MutexGuard<'_, VecDeque<Result<Entry, LmError>>> {
        self.replies.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Lm for ScriptedLm {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        let span = ChatSpan::start("signet.scripted", &self.model, request, false);
        let reply = self.next_reply(request);
        span.run(async move { reply })
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        let span = ChatSpan::start("signet.scripted", &self.model, request, true);
        let events = match self.next_reply(request) {
            Ok(completion) => streamed_events(completion),
            Err(error) => vec![Err(error)],
        };
        span.run_stream(stream::iter(events).boxed())
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn model(&self) -> &str {
        &self.model
    }
}

/// A completion cut into small deltas (see [`ScriptedLm`]), then `Done`.
fn streamed_events(completion: Completion) -> Vec<Result<StreamEvent, LmError>> {
    let mut events = Vec::new();
    if let Some(reasoning) = &completion.reasoning {
        events.extend(words(reasoning).map(|w| Ok(StreamEvent::ReasoningDelta(w.to_owned()))));
    }
    if let Some(text) = &completion.text {
        events.extend(words(text).map(|w| Ok(StreamEvent::TextDelta(w.to_owned()))));
    }
    for (index, call) in completion.tool_calls.iter().enumerate() {
        events.push(Ok(StreamEvent::ToolCallDelta {
            index,
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: String::new(),
        }));
        let chars: Vec<char> = call.arguments.chars().collect();
        for piece in chars.chunks(8) {
            events.push(Ok(StreamEvent::ToolCallDelta {
                index,
                id: None,
                name: None,
                arguments: piece.iter().collect(),
            }));
        }
    }
    events.push(Ok(StreamEvent::Done(completion)));
    events
}

/// `text` split after each run of whitespace: `"a b  c"` -> `"a "`, `"b  "`, `"c"`.
fn words(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let end = rest[word_end..]
            .find(|c: char| !c.is_whitespace())
            .map_or(rest.len(), |i| word_end + i);
        let (piece, tail) = rest.split_at(end);
        rest = tail;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lm::{StreamAssembler, ToolCall};

    #[test]
    fn words_keep_their_whitespace() {
        let pieces: Vec<_> = words(" a b  c\n").collect();
        assert_eq!(pieces, [" ", "a ", "b  ", "c\n"]);
        assert_eq!(words("").count(), 0);
        assert_eq!(words("é ü").collect::<Vec<_>>(), ["é ", "ü"]);
    }

    #[tokio::test]
    async fn streams_in_pieces_that_reassemble() {
        let reply = Completion {
            text: Some("The answer is 42.".into()),
            reasoning: Some("Think first.".into()),
            tool_calls: vec![ToolCall::new("c1", "add", r#"{"a": 20, "b": 22}"#)],
            ..Completion::default()
        };
        let lm = ScriptedLm::new([reply.clone()]);
        let request = LmRequest::default();
        let events: Vec<StreamEvent> = lm
            .stream(&request)
            .map(|e| e.expect("scripted"))
            .collect()
            .await;
        let text_deltas = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::TextDelta(_)))
            .count();
        assert_eq!(text_deltas, 4);
        let mut assembler = StreamAssembler::default();
        for event in &events[..events.len() - 1] {
            assembler.push(event);
        }
        let assembled = assembler.finish();
        assert_eq!(assembled.text, reply.text);
        assert_eq!(assembled.reasoning, reply.reasoning);
        assert_eq!(assembled.tool_calls, reply.tool_calls);
        let Some(StreamEvent::Done(done)) = events.last() else {
            panic!("no Done");
        };
        assert_eq!(done.usage.lm_calls, 1);
        assert!(matches!(
            lm.stream(&request).next().await,
            Some(Err(LmError::NoMoreReplies { call: 2 }))
        ));
    }
}
