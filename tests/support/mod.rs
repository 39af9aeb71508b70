//! What the test files share: the `Ask` signature, an `add` tool, replies in the Chat adapter's
//! format, and the request bodies a mock server received. Each test file uses part of it.
#![allow(dead_code)]

use signet::{Signature, tool};

/// Answer the question using the tools.
#[derive(Signature)]
pub struct Ask {
    #[input]
    pub question: String,
    #[output]
    pub answer: String,
}

/// Add two integers.
#[tool]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A ReAct step reply: a thought, a tool name and its arguments.
pub fn step(thought: &str, tool: &str, args: serde_json::Value) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n[[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

/// A Predict reply (Chat adapter) with the output `answer`.
pub fn answer_reply(answer: &str) -> String {
    format!("[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
}

/// An extractor reply with the reasoning `done`.
pub fn extract(answer: &str) -> String {
    format!("[[ ## reasoning ## ]]\ndone\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
}

/// The input `question: "q"`.
pub fn ask() -> AskInput {
    AskInput {
        question: "q".into(),
    }
}

/// The JSON bodies of the requests `server` received, in order.
pub async fn bodies(server: &wiremock::MockServer) -> Vec<serde_json::Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("a JSON request body"))
        .collect()
}

/// An LM that answers by rule from the last user message, whatever order concurrent requests
/// come in: `answer(message)` gives the reply text, or `None` for a server error. Keeps every
/// request and the most requests it had in flight at once (each takes `delay`).
pub struct RuleLm<F> {
    answer: F,
    delay: std::time::Duration,
    requests: std::sync::Mutex<Vec<signet::lm::LmRequest>>,
    in_flight: std::sync::atomic::AtomicUsize,
    max_in_flight: std::sync::atomic::AtomicUsize,
}

impl<F: Fn(&str) -> Option<String> + Send + Sync> RuleLm<F> {
    pub fn new(answer: F) -> std::sync::Arc<RuleLm<F>> {
        std::sync::Arc::new(RuleLm {
            answer,
            delay: std::time::Duration::ZERO,
            requests: std::sync::Mutex::new(Vec::new()),
            in_flight: Default::default(),
            max_in_flight: Default::default(),
        })
    }

    pub fn with_delay(answer: F, delay: std::time::Duration) -> std::sync::Arc<RuleLm<F>> {
        let lm = RuleLm::new(answer);
        let mut lm = std::sync::Arc::into_inner(lm).expect("not shared yet");
        lm.delay = delay;
        std::sync::Arc::new(lm)
    }

    pub fn requests(&self) -> Vec<signet::lm::LmRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl<F: Fn(&str) -> Option<String> + Send + Sync> signet::lm::Lm for RuleLm<F> {
    fn complete<'a>(
        &'a self,
        request: &'a signet::lm::LmRequest,
    ) -> futures::future::BoxFuture<'a, Result<signet::lm::Completion, signet::lm::LmError>> {
        use std::sync::atomic::Ordering::SeqCst;
        Box::pin(async move {
            self.requests.lock().unwrap().push(request.clone());
            let now = self.in_flight.fetch_add(1, SeqCst) + 1;
            self.max_in_flight.fetch_max(now, SeqCst);
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            self.in_flight.fetch_sub(1, SeqCst);
            let last = request
                .messages
                .last()
                .map(|m| m.content.as_str())
                .unwrap_or_default();
            match (self.answer)(last) {
                Some(text) => {
                    let mut completion = signet::lm::Completion::text(text);
                    completion.usage.lm_calls = 1;
                    Ok(completion)
                }
                None => Err(signet::lm::LmError::Server {
                    status: 500,
                    message: "scripted outage".into(),
                }),
            }
        })
    }

    fn model(&self) -> &str {
        "rule-lm"
    }
}

/// The value of the Chat-format field `name` in a user message (up to the next blank line).
pub fn field_in<'a>(message: &'a str, name: &str) -> Option<&'a str> {
    let marker = format!("[[ ## {name} ## ]]\n");
    let start = message.rfind(&marker)? + marker.len();
    let rest = &message[start..];
    Some(rest.split("\n\n").next().unwrap_or(rest))
}

/// `n` questions `"i + i?"` labelled `2i`, as a dataset.
pub fn sums(n: usize) -> signet::data::Dataset {
    (0..n)
        .map(|i| {
            signet::data::Example::new(
                serde_json::json!({"question": format!("{i} + {i}?"), "answer": (2 * i).to_string()}),
            )
            .with_inputs(["question"])
        })
        .collect()
}

/// The number before ` + ` in a [`sums`] question.
pub fn operand(message: &str) -> Option<usize> {
    field_in(message, "question")?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

/// Replies to [`sums`] questions: right for operands `right` accepts, off by one otherwise.
pub fn answers(right: impl Fn(usize) -> bool) -> impl Fn(&str) -> Option<String> {
    move |message| {
        let i = operand(message)?;
        let value = if right(i) { 2 * i } else { 2 * i + 1 };
        Some(format!("[[ ## answer ## ]]\n{value}"))
    }
}
pub mod gepa_task;
