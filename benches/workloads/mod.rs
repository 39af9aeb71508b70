//! The workloads the benchmarks share, so that every figure (criterion, the DSPy comparison, the
//! concurrency run over HTTP) measures the same thing: one signature, two tools, the same model
//! replies. `benches/compare/dspy_workloads.py` is the same workload in Python DSPy, reply for
//! reply; change both together.
//!
//! Each bench binary uses part of this module, hence the `allow(dead_code)` where it is included.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use signet::lm::{Completion, Lm, LmError, LmRequest};
use signet::module::{Predict, ReAct, ReActMode};
use signet::{Signature, Tool, tool};

/// Answer the question concisely.
#[derive(Signature)]
pub struct QA {
    #[input]
    pub question: String,
    #[output]
    pub answer: String,
}

/// Add two integers.
#[tool(inline)]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Add two integers on the blocking pool.
#[tool]
pub fn add_blocking(a: i64, b: i64) -> i64 {
    a + b
}

/// Look up a colour.
#[tool]
pub async fn lookup(name: String) -> String {
    if name == "Alice" {
        "blue".into()
    } else {
        "unknown".into()
    }
}

/// The question of the Predict workload.
pub const PREDICT_QUESTION: &str = "What is the capital of France?";
/// The model's one reply in the Predict workload.
pub const PREDICT_REPLY: &str = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]";
/// The answer the Predict workload must produce.
pub const PREDICT_ANSWER: &str = "Paris";

/// The question of the ReAct workload.
pub const REACT_QUESTION: &str = "2 + 3, and Alice's colour?";
/// The answer the ReAct workload must produce.
pub const REACT_ANSWER: &str = "5; blue";
/// LM calls in one ReAct run: `add`, `lookup`, `finish`, then the extractor.
pub const REACT_LM_CALLS: usize = 4;

/// One ReAct step reply in DSPy's Chat format.
fn step(thought: &str, tool: &str, args: &str) -> String {
    format!(
        "[[ ## next_thought ## ]]\n{thought}\n\n[[ ## next_tool_name ## ]]\n{tool}\n\n\
         [[ ## next_tool_args ## ]]\n{args}\n\n[[ ## completed ## ]]"
    )
}

/// The model's replies in one ReAct run, in order: two tool steps, `finish`, the extractor.
pub fn react_replies() -> [String; REACT_LM_CALLS] {
    [
        step("Add first.", "add", r#"{"a": 2, "b": 3}"#),
        step("Now the colour.", "lookup", r#"{"name": "Alice"}"#),
        step("Done.", "finish", "{}"),
        "[[ ## reasoning ## ]]\n5 and blue.\n\n[[ ## answer ## ]]\n5; blue\n\n[[ ## completed ## ]]"
            .to_owned(),
    ]
}

/// The tools of the ReAct workload.
pub fn react_tools() -> Vec<Arc<dyn Tool>> {
    vec![Arc::new(AddTool), Arc::new(LookupTool)]
}

/// The Predict workload over `lm`.
pub fn predict(lm: Arc<dyn Lm>) -> Predict<QA> {
    Predict::<QA>::new().with_lm(lm)
}

/// The ReAct workload over `lm`, in DSPy's text mode.
pub fn react(lm: Arc<dyn Lm>) -> ReAct<QA> {
    ReAct::<QA>::new()
        .tools(react_tools())
        .with_lm(lm)
        .with_mode(ReActMode::Text)
}

/// The input of the Predict workload.
pub fn predict_input() -> QAInput {
    QAInput {
        question: PREDICT_QUESTION.into(),
    }
}

/// The input of the ReAct workload.
pub fn react_input() -> QAInput {
    QAInput {
        question: REACT_QUESTION.into(),
    }
}

/// A scripted LM for overhead measurements: answers from a fixed list, round and round, with no
/// latency and no bookkeeping (unlike `ScriptedLm`, it neither records requests nor runs out).
pub struct CyclingLm {
    replies: Vec<Completion>,
    next: AtomicUsize,
}

impl CyclingLm {
    /// Cycles through `replies`.
    pub fn new<S: AsRef<str>>(replies: &[S]) -> Arc<CyclingLm> {
        Arc::new(CyclingLm {
            replies: replies
                .iter()
                .map(|r| Completion::text(r.as_ref()))
                .collect(),
            next: AtomicUsize::new(0),
        })
    }
}

impl Lm for CyclingLm {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        // Its `chat` span, as every LM of Signet's opens one (nothing is done while no
        // subscriber wants it).
        let span = signet::lm::ChatSpan::start("cycling", "cycling", request, false);
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut reply = self.replies[n % self.replies.len()].clone();
        reply.usage.lm_calls = 1;
        span.run(futures::future::ready(Ok(reply)))
    }

    fn model(&self) -> &str {
        "cycling"
    }
}

/// What the mock OpenAI-compatible server answers to a chat request, given its system message and
/// its last user message: a ReAct step prompt (its output fields include `next_thought`) gets the
/// step for the number of observations already in the trajectory, an extractor prompt the final
/// answer, a plain QA prompt the Predict reply. Both DSPy and Signet render the trajectory as
/// `[[ ## observation_<i> ## ]]` fields, so the same server scripts both.
pub fn mock_reply(system: &str, last_user: &str) -> Option<String> {
    let [add, lookup, finish, extract] = react_replies();
    if system.contains("`next_thought`") {
        return match last_user.matches("[[ ## observation_").count() {
            0 => Some(add),
            1 => Some(lookup),
            2 => Some(finish),
            _ => None,
        };
    }
    if system.contains("`trajectory`") {
        return Some(extract);
    }
    if system.contains("`question`") {
        return Some(PREDICT_REPLY.to_owned());
    }
    None
}
