//! An LM that answers from a script: for tests, examples and users' own tests.

use std::collections::VecDeque;
use std::sync::Mutex;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::{Capabilities, Completion, Lm, LmError, LmRequest};

/// Replies in order from a script and records every request it receives, like DSPy's `DummyLM`.
/// A reply can be a completion or an error (to test failure paths). When the script runs out, calls
/// fail with [`LmError::NoMoreReplies`].
///
/// ```
/// use signet::lm::{Completion, Lm, LmError, LmRequest, ScriptedLm};
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
    replies: Mutex<VecDeque<Result<Completion, LmError>>>,
    requests: Mutex<Vec<LmRequest>>,
    capabilities: Capabilities,
    model: String,
}

impl ScriptedLm {
    /// An LM that answers with `replies`, in order.
    pub fn new(replies: impl IntoIterator<Item = Completion>) -> ScriptedLm {
        ScriptedLm {
            replies: Mutex::new(replies.into_iter().map(Ok).collect()),
            requests: Mutex::new(Vec::new()),
            capabilities: Capabilities::default(),
            model: "scripted".to_owned(),
        }
    }

    /// An LM that answers each call with the next text.
    pub fn texts<S: Into<String>>(texts: impl IntoIterator<Item = S>) -> ScriptedLm {
        ScriptedLm::new(texts.into_iter().map(Completion::text))
    }

    /// Appends a reply.
    pub fn then(self, reply: Completion) -> Self {
        self.lock_replies().push_back(Ok(reply));
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

    fn lock_replies(&self) -> std::sync::MutexGuard<'_, VecDeque<Result<Completion, LmError>>> {
        self.replies.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Lm for ScriptedLm {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        let call = {
            let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
            requests.push(request.clone());
            requests.len()
        };
        let reply = self.lock_replies().pop_front();
        async move {
            let mut completion = reply.unwrap_or(Err(LmError::NoMoreReplies { call }))?;
            completion.usage.lm_calls = completion.usage.lm_calls.max(1);
            Ok(completion)
        }
        .boxed()
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn model(&self) -> &str {
        &self.model
    }
}
