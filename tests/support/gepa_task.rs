//! DSPy 3.4.1's reference GEPA task, shared by `tests/optimize/gepa.rs` (which replays DSPy's runs
//! on it) and `benches/gepa_overhead.rs` (which times them): a hinter and an answerer whose
//! scripted task model gets a question right depending on the version named in its instruction, and
//! a scripted reflection model that proposes the next version.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::json;
use signet::data::Example;
use signet::evaluate::{Predicted, Score};
use signet::lm::{Completion, Lm, LmError, LmRequest};
use signet::prelude::*;
use signet::trace::TraceEntry;

/// A zero-latency LM answering each request with a function of (system message, last message).
pub struct FnLm<F>(pub F);

impl<F: Fn(&str, &str) -> String + Send + Sync> Lm for FnLm<F> {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        fn text(m: Option<&signet::lm::Message>) -> &str {
            m.map_or("", |m| m.content.as_str())
        }
        let reply = (self.0)(
            text(request.messages.first()),
            text(request.messages.last()),
        );
        let mut completion = Completion::text(reply);
        completion.usage.lm_calls = 1;
        Box::pin(async move { Ok(completion) })
    }

    fn model(&self) -> &str {
        "fn"
    }
}

/// HINT-v0 instruction
#[derive(Signature)]
pub struct Hint {
    #[input]
    pub question: String,
    #[output]
    pub hint: String,
}

/// ANS-v0 instruction
#[derive(Signature)]
pub struct Answer {
    #[input]
    pub question: String,
    #[input]
    pub hint: String,
    #[output]
    pub answer: String,
}

/// DSPy's reference program: a hint, then an answer given the hint.
#[derive(Module, Clone, Debug)]
pub struct HintThenAnswer {
    pub hinter: Predict<Hint>,
    pub answerer: Predict<Answer>,
}

impl Module for HintThenAnswer {
    type Input = HintInput;
    type Output = AnswerOutput;
    type Error = signet::Error;

    async fn call(&self, input: HintInput) -> Result<AnswerOutput, signet::Error> {
        let question = input.question;
        let hint = self
            .hinter
            .call(HintInput {
                question: question.clone(),
            })
            .await?
            .hint;
        self.answerer.call(AnswerInput { question, hint }).await
    }
}

/// For each instruction version, the questions (mod 8) it gets right.
pub type Table = &'static [(usize, &'static [usize])];

/// The reference run's tables.
pub const GOOD1: Table = &[(0, &[0]), (1, &[1, 2]), (2, &[0, 3]), (3, &[4])];
pub const GOOD2: Table = &[(0, &[5]), (1, &[1, 6]), (2, &[2, 7]), (3, &[3])];

/// Another task of the same kind, on which DSPy (budget 300) keeps two merges.
pub const MERGE1: Table = &[
    (0, &[2]),
    (1, &[5, 7]),
    (2, &[0, 1, 4]),
    (3, &[4, 7]),
    (4, &[3]),
    (5, &[4, 6, 7]),
    (6, &[5, 6]),
    (7, &[3]),
    (8, &[2, 4, 6]),
    (9, &[0, 5]),
    (10, &[2]),
    (11, &[0, 2, 7]),
];
pub const MERGE2: Table = &[
    (0, &[4, 7]),
    (1, &[3, 5, 6]),
    (2, &[1, 7]),
    (3, &[0, 1]),
    (4, &[7]),
    (5, &[4]),
    (6, &[5, 6, 7]),
    (7, &[4, 6]),
    (8, &[4, 5]),
    (9, &[1, 4, 6]),
    (10, &[0, 6]),
    (11, &[2, 5]),
];

/// The word (letters and digits) right after the first `marker` in `text`.
pub fn word_after<'t>(text: &'t str, marker: &str) -> Option<&'t str> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let end = rest
        .find(|c: char| !c.is_alphanumeric())
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

fn good(table: Table, version: usize, q: usize) -> bool {
    table
        .iter()
        .any(|(v, set)| *v == version && set.contains(&(q % 8)))
}

/// The task model: hinter version N gives a good hint on the questions `good1[N]` lists; the
/// answerer is right after a good hint, or on the questions `good2[N]` lists.
pub fn task_lm(good1: Table, good2: Table) -> impl Lm {
    let version = |system: &str, tag: &str| {
        word_after(system, &format!("{tag}-v")).map_or(0, |v| v.parse::<usize>().unwrap())
    };
    FnLm(move |system: &str, user: &str| {
        let q: usize = word_after(user, "q=").unwrap().parse().unwrap();
        let outputs = system.split("Your output fields are:").nth(1).unwrap();
        let outputs = outputs.split("All interactions").next().unwrap();
        if outputs.contains("`hint`") {
            let ok = good(good1, version(system, "HINT"), q);
            let hint = if ok { "good" } else { "bad" };
            format!("[[ ## hint ## ]]\n{hint}\n\n[[ ## completed ## ]]")
        } else {
            let hint = word_after(user, "[[ ## hint ## ]]\n").unwrap();
            let ok = hint == "good" || good(good2, version(system, "ANS"), q);
            let answer = if ok { q as i64 } else { -1 };
            format!("[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
        }
    })
}

/// The instruction a GEPA reflection prompt (its user message) asks to improve.
pub fn current_instruction(user: &str) -> &str {
    user.split("[[ ## current_instruction ## ]]\n")
        .nth(1)
        .unwrap()
        .split("\n\n[[ ## examples_with_feedback")
        .next()
        .unwrap()
}

/// The reflection model: the next version of the instruction it is shown; `log` gets
/// (current instruction, version proposed) per call.
pub fn reflection_lm(log: Arc<Mutex<Vec<(String, usize)>>>) -> impl Lm {
    let counters = Mutex::new(BTreeMap::<&'static str, usize>::new());
    FnLm(move |_: &str, user: &str| {
        let current = current_instruction(user).to_owned();
        let tag = if current.contains("HINT") {
            "HINT"
        } else {
            "ANS"
        };
        let mut counters = counters.lock().unwrap();
        let n = counters.entry(tag).or_default();
        *n += 1;
        log.lock().unwrap().push((current, *n));
        json!({"new_instruction": format!("{tag}-v{n} instruction")}).to_string()
    })
}

/// Questions `q=i` whose answer is `i`.
pub fn examples(range: std::ops::Range<usize>) -> Vec<Example> {
    range
        .map(|i| {
            Example::new(json!({"question": format!("q={i}"), "answer": i.to_string()}))
                .with_inputs(["question"])
        })
        .collect()
}

/// The metric: 1 for the right answer.
pub fn right(example: &Example, output: &AnswerOutput) -> f64 {
    let expected = example.get("answer").and_then(|a| a.as_str()).unwrap();
    f64::from(u8::from(output.answer.trim() == expected))
}

/// The reference run's feedback, per predictor as DSPy's five-argument metric gives it.
pub fn feedback(
    example: &Example,
    predicted: &Predicted<'_, AnswerOutput>,
    predictor: &str,
    _: &TraceEntry,
) -> Score {
    let expected = example.get("answer").and_then(|a| a.as_str()).unwrap();
    Score::new(right(example, predicted.output))
        .with_feedback(format!("fb for {predictor}: expected {expected}"))
}

/// The program, both predictors on the task model for `good1`/`good2`.
pub fn program(good1: Table, good2: Table) -> HintThenAnswer {
    let lm = Arc::new(task_lm(good1, good2));
    HintThenAnswer {
        hinter: Predict::new().with_lm(lm.clone()),
        answerer: Predict::new().with_lm(lm),
    }
}
