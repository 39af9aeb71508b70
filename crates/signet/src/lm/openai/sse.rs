//! Turning an SSE chat-completions stream into [`StreamEvent`]s.

use super::*;

/// The state of one SSE stream being turned into [`StreamEvent`]s.
pub(super) struct StreamState<'a> {
    pub(super) lm: &'a Endpoint,
    pub(super) chunks: async_openai::types::stream::StreamResponse<Value>,
    pub(super) assembler: StreamAssembler,
    pub(super) pending: VecDeque<Result<StreamEvent, LmError>>,
    pub(super) finished: bool,
    pub(super) saw_choice: bool,
    /// When the whole stream must have ended ([`OpenAiLmBuilder::stream_deadline`]).
    pub(super) deadline: tokio::time::Instant,
    /// Set when the body was cut at the client's limit (the flag given to the transport through
    /// [`BODY_CUT`] when the stream opened).
    pub(super) cut: Arc<std::sync::atomic::AtomicU64>,
    /// The attempt's `chat` span, given the response id and model from the first chunk and the
    /// token details from the usage chunk.
    pub(super) span: tracing::Span,
    pub(super) saw_response_id: bool,
    /// The stream's turn ([`OpenAiLmBuilder::max_concurrent_requests`]), held while it is open.
    pub(super) _turn: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl<'a> StreamState<'a> {
    pub(super) async fn next_event(
        mut self,
    ) -> Option<(Result<StreamEvent, LmError>, StreamState<'a>)> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some((event, self));
            }
            if self.finished {
                return None;
            }
            let now = tokio::time::Instant::now();
            if now >= self.deadline {
                self.fail(self.lm.http.past_deadline());
                continue;
            }
            // Each wait is bounded by the client's timeout, the whole stream by its deadline.
            let wait = self.lm.http.timeout.min(self.deadline - now);
            let next = tokio::time::timeout(wait, self.chunks.next()).await;
            match next {
                Err(_) if tokio::time::Instant::now() >= self.deadline => {
                    self.fail(self.lm.http.past_deadline());
                }
                Err(_) => self.fail(self.lm.http.timed_out()),
                Ok(Some(Err(_))) if self.cut.load(std::sync::atomic::Ordering::Relaxed) > 0 => {
                    self.fail(self.lm.http.too_large());
                }
                Ok(Some(Err(error))) => {
                    let error = self.lm.map_error(error);
                    self.fail(error);
                }
                Ok(Some(Ok(chunk))) => match self.apply_chunk(&chunk) {
                    Ok(()) => {}
                    Err(error) => {
                        let error = self.lm.http.scrub_error(error);
                        self.fail(error);
                    }
                },
                Ok(None) if self.cut.load(std::sync::atomic::Ordering::Relaxed) > 0 => {
                    self.fail(self.lm.http.too_large());
                }
                Ok(None) => {
                    self.finished = true;
                    if self.saw_choice && self.assembler.finish_reason.is_none() {
                        // Every complete reply ends with a `finish_reason`; a stream that ends
                        // without one was cut off (a dropped connection, a crashed server), and
                        // what arrived must not pass for the whole reply.
                        self.pending.push_back(Err(LmError::InvalidResponse {
                            message: "the stream was cut off: it ended before the reply's \
                                      finish_reason"
                                .into(),
                        }));
                    } else if self.saw_choice {
                        let mut completion = std::mem::take(&mut self.assembler).finish();
                        completion.usage.lm_calls = 1;
                        self.lm.http.price(&mut completion);
                        self.pending.push_back(Ok(StreamEvent::Done(completion)));
                    } else {
                        self.pending.push_back(Err(LmError::InvalidResponse {
                            message: "the stream ended without a completion: no server-sent \
                                      event carried a choice (a server that ignores \
                                      `stream: true` answers with a plain JSON body, which holds \
                                      no events)"
                                .into(),
                        }));
                    }
                }
            }
        }
    }

    pub(super) fn fail(&mut self, error: LmError) {
        self.finished = true;
        self.pending.push_back(Err(error));
    }

    /// Turns one chunk into events (queued in `pending`) and folds them into the assembler.
    pub(super) fn apply_chunk(&mut self, chunk: &Value) -> Result<(), LmError> {
        let Some(chunk) = chunk.as_object() else {
            return Err(LmError::InvalidResponse {
                message: format!(
                    "a stream chunk is not a JSON object: {}",
                    truncate(&chunk.to_string(), MAX_ERROR_MESSAGE)
                ),
            });
        };
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(error_in_body(error));
        }
        let usage = chunk.get("usage").filter(|u| u.is_object());
        if !self.span.is_disabled() && (!self.saw_response_id || usage.is_some()) {
            self.saw_response_id = true;
            crate::lm::record_openai_body(&self.span, chunk);
        }
        if let Some(usage) = usage {
            self.assembler.usage = parse_usage(usage);
        }
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| choices.first());
        let Some(choice) = choice else {
            return Ok(());
        };
        self.saw_choice = true;
        let mut events = Vec::new();
        if let Some(delta) = choice.get("delta").and_then(Value::as_object) {
            if let Some(reasoning) = reasoning_of(delta) {
                events.push(StreamEvent::ReasoningDelta(reasoning));
            }
            if let Some(text) = content_text(delta.get("content")).filter(|t| !t.is_empty()) {
                events.push(StreamEvent::TextDelta(text));
            }
            let calls = delta.get("tool_calls").and_then(Value::as_array);
            for (position, call) in calls.into_iter().flatten().enumerate() {
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .and_then(|i| usize::try_from(i).ok())
                    .unwrap_or(position);
                let function = call.get("function");
                let field = |v: Option<&Value>, name: &str| {
                    v.and_then(|v| v.get(name))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                };
                events.push(StreamEvent::ToolCallDelta {
                    index,
                    id: field(Some(call), "id"),
                    name: field(function, "name"),
                    arguments: function
                        .and_then(|f| f.get("arguments"))
                        .map(arguments_text)
                        .unwrap_or_default(),
                });
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.assembler.finish_reason = Some(finish_reason(reason));
        }
        for event in events {
            self.assembler.push(&event);
            self.pending.push_back(Ok(event));
        }
        Ok(())
    }
}
