//! Sampling: a server borrows the client's model (`sampling/createMessage`), answered by a Signet
//! [`Lm`] with limits the client sets.

#![allow(deprecated)] // sampling is deprecated by SEP-2577 but in wide use

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ErrorCode, ErrorData, SamplingMessage,
    SamplingMessageContentBlock,
};
use signet::lm::{Content, FinishReason, Lm, LmRequest, Message, Role, Usage};
use signet::media::{Audio, ContentPart, Image};

type Approver = Arc<dyn Fn(SamplingRequest) -> BoxFuture<'static, bool> + Send + Sync>;

/// How the client answers a server's sampling requests: with which model, within which limits,
/// and after whose approval. Off unless given to
/// [`McpClientBuilder::sampling`](super::McpClientBuilder::sampling).
///
/// A request is answered only when every check passes, in this order: its messages hold text,
/// and images and audio only in the user's (sent to the model as content parts; no tool use),
/// the approval hook (if any) says yes, and the session's
/// token budget (if any) is not spent. Its `maxTokens` is lowered to [`max_tokens`](Self::max_tokens);
/// its model preferences are ignored: the client chose the model. A refusal reaches the server as
/// an MCP error (code -1) saying why; the tool call that asked usually fails with it.
///
/// ```
/// use signet::testing::ScriptedLm;
/// use signet_mcp::{McpClient, Sampling};
///
/// let sampling = Sampling::new(ScriptedLm::texts(["a short poem"]))
///     .max_tokens(256)
///     .token_budget(10_000)
///     .approve(|request| async move { request.messages.len() < 20 });
/// let builder = McpClient::builder().sampling(sampling);
/// # let _ = builder;
/// ```
#[derive(Clone)]
pub struct Sampling {
    lm: Arc<dyn Lm>,
    max_tokens: u32,
    token_budget: Option<u64>,
    approve: Option<Approver>,
}

impl std::fmt::Debug for Sampling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampling")
            .field("model", &self.lm.model())
            .field("max_tokens", &self.max_tokens)
            .field("token_budget", &self.token_budget)
            .field("approve", &self.approve.is_some())
            .finish()
    }
}

/// A server's sampling request, as the [approval hook](Sampling::approve) sees it and as the
/// model will get it.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingRequest {
    /// The label of the server that asks.
    pub server: String,
    /// The conversation, the server's system prompt first when it sent one.
    pub messages: Vec<Message>,
    /// The reply's length limit: the server's, lowered to the client's cap.
    pub max_tokens: u32,
    /// The server's temperature, if it gave one.
    pub temperature: Option<f32>,
    /// The server's stop sequences.
    pub stop: Vec<String>,
}

impl Sampling {
    /// Answers sampling requests with `lm`, at most 1,024 tokens each, no budget, no approval.
    pub fn new(lm: impl Lm + 'static) -> Sampling {
        Sampling {
            lm: Arc::new(lm),
            max_tokens: 1024,
            token_budget: None,
            approve: None,
        }
    }

    /// The most tokens one reply may have (a request asking for more gets this many).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The tokens (prompt and reply, as the LM reports them) the session may spend on sampling:
    /// once spent, requests are refused. A request that starts under the budget is answered in
    /// full, so the total may pass the budget by one request, and by no more however many arrive
    /// at once: a request being answered counts as its `maxTokens` until the model's reported
    /// usage replaces it, so a request that would start while others use up the rest is
    /// refused.
    pub fn token_budget(mut self, tokens: u64) -> Self {
        self.token_budget = Some(tokens);
        self
    }

    /// Asks `approve` before each request reaches the model; `false` refuses it. The hook may
    /// wait (for a person, say); the server waits with it, within its own time limit.
    pub fn approve<F, Fut>(mut self, approve: F) -> Self
    where
        F: Fn(SamplingRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = bool> + Send + 'static,
    {
        self.approve = Some(Arc::new(move |request| approve(request).boxed()));
        self
    }

    /// Answers one `sampling/createMessage` from the server `label`, counting what it spends in
    /// `spent`.
    pub(super) async fn answer(
        &self,
        label: &str,
        spent: &SamplingSpend,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let request = self.request(label, params)?;
        if let Some(approve) = &self.approve
            && !approve(request.clone()).await
        {
            tracing::info!(server = %label, "sampling request refused by the approval hook");
            return Err(refused(
                "the client's user declined the sampling request".into(),
            ));
        }
        let _in_flight = match self.token_budget {
            Some(budget) => Some(
                spent
                    .reserve(budget, u64::from(request.max_tokens))
                    .map_err(refused)?,
            ),
            None => None,
        };
        let mut lm_request = LmRequest::new(request.messages);
        lm_request.options.max_tokens = Some(request.max_tokens);
        lm_request.options.temperature = request.temperature;
        lm_request.options.stop = request.stop;
        let completion = self.lm.complete(&lm_request).await.map_err(|e| {
            ErrorData::internal_error(format!("the client's model failed: {e}"), None)
        })?;
        spent.charge(completion.usage);
        tracing::debug!(
            server = %label,
            tokens = completion.usage.total_tokens(),
            "answered a sampling request"
        );
        let stop_reason = match &completion.finish_reason {
            Some(FinishReason::Length) => CreateMessageResult::STOP_REASON_END_MAX_TOKEN,
            Some(FinishReason::ToolCalls) => CreateMessageResult::STOP_REASON_TOOL_USE,
            _ => CreateMessageResult::STOP_REASON_END_TURN,
        };
        let text = completion.text.unwrap_or_default();
        Ok(CreateMessageResult::new(
            SamplingMessage::new(
                rmcp::model::Role::Assistant,
                SamplingMessageContentBlock::text(text),
            ),
            self.lm.model().to_owned(),
        )
        .with_stop_reason(stop_reason))
    }

    /// The request in Signet's terms, or why it cannot be answered.
    fn request(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> Result<SamplingRequest, ErrorData> {
        let mut messages = Vec::with_capacity(params.messages.len() + 1);
        if let Some(system) = params.system_prompt.filter(|s| !s.is_empty()) {
            messages.push(Message::system(system));
        }
        for (index, message) in params.messages.into_iter().enumerate() {
            let role = match message.role {
                rmcp::model::Role::User => Role::User,
                rmcp::model::Role::Assistant => Role::Assistant,
            };
            let mut parts: Vec<ContentPart> = Vec::new();
            for block in message.content.into_vec() {
                let media = match block {
                    SamplingMessageContentBlock::Text(t) => {
                        // Text blocks in a row are one text, a line apart (as before images).
                        match parts.last_mut() {
                            Some(ContentPart::Text(last)) => {
                                last.push('\n');
                                last.push_str(&t.text);
                            }
                            _ => parts.push(ContentPart::Text(t.text)),
                        }
                        continue;
                    }
                    SamplingMessageContentBlock::Image(image) if role == Role::User => {
                        Image::from_url(format!("data:{};base64,{}", image.mime_type, image.data))
                            .map(ContentPart::Image)
                    }
                    SamplingMessageContentBlock::Audio(audio) if role == Role::User => {
                        let format = audio.mime_type.strip_prefix("audio/").unwrap_or_default();
                        Audio::from_base64(audio.data, format).map(ContentPart::Audio)
                    }
                    other => {
                        let kind = match other {
                            SamplingMessageContentBlock::Image(_) => "an image from the assistant",
                            SamplingMessageContentBlock::Audio(_) => "audio from the assistant",
                            SamplingMessageContentBlock::ToolUse(_) => "a tool use",
                            SamplingMessageContentBlock::ToolResult(_) => "a tool result",
                            _ => "content of an unknown kind",
                        };
                        return Err(ErrorData::invalid_params(
                            format!(
                                "message {index} of the sampling request holds {kind}; this \
                                 client sends the model text, and images and audio from the user"
                            ),
                            None,
                        ));
                    }
                };
                let part = media.map_err(|error| {
                    ErrorData::invalid_params(
                        format!("message {index} of the sampling request: {error}"),
                        None,
                    )
                })?;
                parts.push(part);
            }
            messages.push(Message::new(role, Content::from_parts(parts)));
        }
        Ok(SamplingRequest {
            server: server.to_owned(),
            messages,
            max_tokens: params.max_tokens.min(self.max_tokens),
            temperature: params.temperature,
            stop: params.stop_sequences.unwrap_or_default(),
        })
    }
}

/// The error a refused sampling request gets (code -1, as the MCP specification's example).
fn refused(message: String) -> ErrorData {
    ErrorData::new(ErrorCode(-1), message, None)
}

/// What a session spent answering sampling requests, and what the requests being answered may
/// still spend (checked and reserved under one lock, so concurrent requests cannot all pass a
/// check made before any of them is charged).
#[derive(Debug, Default)]
pub(super) struct SamplingSpend {
    state: std::sync::Mutex<Spend>,
}

#[derive(Debug, Default)]
struct Spend {
    used: Usage,
    in_flight: u64,
}

/// A request being answered: its reservation ends when it is dropped (answered, failed or
/// cancelled).
pub(super) struct InFlight<'a> {
    spend: &'a SamplingSpend,
    tokens: u64,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut state = self.spend.lock();
        state.in_flight = state.in_flight.saturating_sub(self.tokens);
    }
}

impl SamplingSpend {
    fn lock(&self) -> std::sync::MutexGuard<'_, Spend> {
        super::lock(&self.state)
    }

    /// The usage charged so far.
    pub(super) fn usage(&self) -> Usage {
        self.lock().used
    }

    /// Admits a request that may spend `tokens`, when what was spent and what the requests being
    /// answered may spend are under `budget`; the message says why not.
    pub(super) fn reserve(&self, budget: u64, tokens: u64) -> Result<InFlight<'_>, String> {
        let mut state = self.lock();
        let spent = state.used.total_tokens();
        let committed = spent.saturating_add(state.in_flight);
        if committed >= budget {
            return Err(format!(
                "the client's sampling budget for this session ({budget} tokens) is spent \
                 ({spent} used, {} reserved by requests being answered)",
                state.in_flight
            ));
        }
        state.in_flight = state.in_flight.saturating_add(tokens);
        Ok(InFlight {
            spend: self,
            tokens,
        })
    }

    /// Adds a request's reported usage.
    pub(super) fn charge(&self, usage: Usage) {
        self.lock().used += usage;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use signet::testing::ScriptedLm;

    use super::*;

    fn params(messages: serde_json::Value) -> CreateMessageRequestParams {
        serde_json::from_value(json!({"messages": messages, "maxTokens": 100})).unwrap()
    }

    #[test]
    fn requests_at_once_cannot_all_pass_a_budget_check() {
        let spend = SamplingSpend::default();
        let first = spend.reserve(40, 50).expect("under the budget");
        // Nothing is charged yet, but the first request may spend the rest: the others wait out.
        for _ in 0..10 {
            let refused = spend.reserve(40, 50).err().expect("refused");
            assert!(refused.contains("50 reserved"), "{refused}");
        }
        spend.charge(Usage {
            prompt_tokens: 10,
            completion_tokens: 20,
            ..Usage::default()
        });
        drop(first);
        // 30 of 40 spent: one more starts, as before.
        let second = spend.reserve(40, 50).expect("30 of 40 spent");
        drop(second);
        spend.charge(Usage {
            prompt_tokens: 10,
            completion_tokens: 20,
            ..Usage::default()
        });
        let spent = spend.reserve(40, 50).err().expect("spent");
        assert!(spent.contains("60 used"), "{spent}");
    }

    #[test]
    fn user_images_and_audio_become_content_parts_in_order() {
        let sampling = Sampling::new(ScriptedLm::texts(["ok"]));
        let request = sampling
            .request(
                "s",
                params(json!([{"role": "user", "content": [
                    {"type": "text", "text": "Describe"},
                    {"type": "text", "text": "briefly:"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                ]}])),
            )
            .unwrap();
        let content = &request.messages[0].content;
        assert_eq!(content.as_str(), "Describe\nbriefly:");
        let parts: Vec<serde_json::Value> = content.parts().iter().map(|p| p.to_value()).collect();
        assert_eq!(
            parts[1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}})
        );
        assert_eq!(
            parts[2],
            json!({"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}})
        );
    }

    #[test]
    fn assistant_images_and_forged_media_are_refused_with_the_reason() {
        let sampling = Sampling::new(ScriptedLm::texts(["ok"]));
        let assistant = sampling
            .request(
                "s",
                params(json!([{"role": "assistant", "content":
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}}])),
            )
            .unwrap_err();
        assert!(
            assistant
                .message
                .contains("message 0 of the sampling request holds an image from the assistant"),
            "{}",
            assistant.message
        );
        let forged = sampling
            .request(
                "s",
                params(json!([{"role": "user", "content":
                    {"type": "image", "data": "not base64!", "mimeType": "text/html"}}])),
            )
            .unwrap_err();
        assert!(
            forged
                .message
                .starts_with("message 0 of the sampling request: "),
            "{}",
            forged.message
        );
    }
}
