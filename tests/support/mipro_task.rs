//! The scripted tasks of the MIPROv2 runs recorded from DSPy 3.4.1 (`tests/fixtures/mipro/`),
//! shared by `tests/optimize/mipro.rs` (which replays them) and `benches/mipro_overhead.rs` (which
//! times them): questions `q=N` whose answer is `N`, a task model whose correctness is a fixed
//! function of the question, the `INSTR-k` version named in the instruction and the number of
//! demos, and a prompt model answering each proposer signature with a fixed text (proposal `k`
//! proposes `INSTR-k`).

// The bench uses the one-predictor task only.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use signet::data::Example;
use signet::lm::{Lm, LmRequest};
use signet::prelude::*;
use signet::testing::FnLm;

/// Answer the question.
#[derive(Signature)]
pub struct Ask {
    #[input]
    pub question: String,
    #[output]
    pub answer: String,
}

/// DSPy's `Prog`: one predictor.
#[derive(Module, Clone, Debug)]
pub struct Prog {
    pub pred: Predict<Ask>,
}

impl Module for Prog {
    type Input = AskInput;
    type Output = AskOutput;
    type Error = signet::Error;

    async fn call(&self, input: AskInput) -> Result<AskOutput, signet::Error> {
        self.pred.call(input).await
    }
}

/// Give a hint.
#[derive(Signature)]
pub struct Hint {
    #[input]
    pub question: String,
    #[output]
    pub hint: String,
}

/// Answer the question.
#[derive(Signature)]
pub struct Answer {
    #[input]
    pub question: String,
    #[input]
    pub hint: String,
    #[output]
    pub answer: String,
}

/// DSPy's `Prog2`: a hint, then an answer given the hint.
#[derive(Module, Clone, Debug)]
pub struct Prog2 {
    pub hinter: Predict<Hint>,
    pub answerer: Predict<Answer>,
}

impl Module for Prog2 {
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

/// The digits right after the first `marker` in `text`.
pub fn number_after(text: &str, marker: &str) -> Option<i64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// Which recorded task: `fn1`, `fn2` (one predictor) or `prog2` (two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    Fn1,
    Fn2,
    Prog2,
}

impl Task {
    pub fn parse(name: &str) -> Task {
        match name {
            "fn1" => Task::Fn1,
            "fn2" => Task::Fn2,
            "prog2" => Task::Prog2,
            other => panic!("unknown task {other}"),
        }
    }
}

/// The task model of `task` (the recorder's `task_fn`).
pub fn task_lm(task: Task) -> impl Lm {
    FnLm::new(move |request: &LmRequest| {
        let system = request.messages[0].content.as_str();
        let user = request.messages.last().unwrap().content.as_str();
        let q = number_after(user, "q=").unwrap();
        let v = number_after(system, "INSTR-").unwrap_or(0);
        let demos = (request.messages.len() as i64 - 2) / 2;
        let answer = |ok: bool| -> String {
            let answer = if ok { q } else { -1 };
            format!("[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
        };
        match task {
            Task::Fn1 => answer((q + v + demos) % 3 != 0),
            Task::Fn2 => answer((q * 7 + v * 3 + demos * 5 + q * v) % 11 < 6),
            Task::Prog2 => {
                let outputs = system.split("Your output fields are:").nth(1).unwrap();
                let outputs = outputs.split("All interactions").next().unwrap();
                if outputs.contains("`hint`") {
                    let ok = (q * 5 + v * 7 + demos) % 7 < 4;
                    let hint = if ok { "good" } else { "bad" };
                    format!("[[ ## hint ## ]]\n{hint}\n\n[[ ## completed ## ]]")
                } else {
                    let hint = user.split("[[ ## hint ## ]]\n").nth(1).unwrap();
                    let good = hint.starts_with("good");
                    answer(good || (q * 3 + v * 11 + demos * 2) % 5 < 2)
                }
            }
        }
    })
}

/// One prompt-model request: system and user messages, temperature, seed.
pub type PromptRequest = (String, String, Option<f32>, Option<i64>);

/// The prompt model (the recorder's `prompt_fn`); `log` gets every request.
pub fn prompt_lm(log: Arc<Mutex<Vec<PromptRequest>>>) -> impl Lm {
    let proposals = AtomicUsize::new(0);
    FnLm::new(move |request: &LmRequest| {
        let system = request.messages[0].content.to_string();
        let user = request.messages.last().unwrap().content.to_string();
        log.lock().unwrap().push((
            system.clone(),
            user,
            request.options.temperature,
            request.options.seed,
        ));
        let reply = |field: &str, text: &str| {
            format!("[[ ## {field} ## ]]\n{text}\n\n[[ ## completed ## ]]")
        };
        if system.contains("please summarize them into a brief") {
            reply("summary", "Summary: Arithmetic questions of the form q=N.")
        } else if system.contains("I will also provide you with a few observations") {
            reply("observations", "More observations.")
        } else if system.contains("Given several examples from a dataset") {
            reply("observations", "Questions look like q=N; answers are N.")
        } else if system.contains("Please describe what type of task") {
            reply(
                "program_description",
                "Program Description: echoes numbers.",
            )
        } else if system.contains("Please describe the purpose of one of the specified module") {
            reply("module_description", "The module answers.")
        } else if system.contains("generate a new instruction") {
            let k = proposals.fetch_add(1, Ordering::SeqCst) + 1;
            reply(
                "proposed_instruction",
                &format!("Proposed Instruction: \"INSTR-{k} answer the question\""),
            )
        } else {
            panic!("unknown prompt: {system}")
        }
    })
}

/// The metric of the recorded runs: the answer, exactly.
pub fn metric(example: &Example, answer: &str) -> f64 {
    let gold = example.get("answer").and_then(|a| a.as_str()).unwrap_or("");
    if answer.trim() == gold { 1.0 } else { 0.0 }
}

/// Questions `q=0` to `q=n-1`.
pub fn examples(n: usize) -> Vec<Example> {
    (0..n)
        .map(|i| {
            Example::new(json!({"question": format!("q={i}"), "answer": i.to_string()}))
                .with_inputs(["question"])
        })
        .collect()
}
