//! COPRO (DSPy 3.4.1's `COPRO`) on scripted models whose answers depend on the instruction: the
//! proposals asked for, the order of scorings, the attempts shown to the prompt model, the choice
//! among ties, several predictors, and each way a compile can fail or stop.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use signet::data::Example;
use signet::evaluate::exact_match;
use signet::lm::LmRequest;
use signet::module::Predictors;
use signet::optimize::{Copro, OptimizeError};
use signet::prelude::*;
use signet::testing::FnLm;

use crate::support::{Ask, answer_reply, gepa_task};

/// Questions `q=0` .. `q=3`, each answered by its number.
fn trainset() -> Vec<Example> {
    (0..4)
        .map(|q| {
            Example::new(json!({"question": format!("q={q}"), "answer": q.to_string()}))
                .with_inputs(["question"])
        })
        .collect()
}

/// The number of the `INSTR-n` a system prompt's instruction names (0 for none).
fn version(system: &str) -> usize {
    system
        .split("INSTR-")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The program's model: right on every question with INSTR-2 or INSTR-4, on even ones with
/// INSTR-1, never otherwise (so INSTR-2 and INSTR-4 tie, and INSTR-2 is scored first).
fn task_lm() -> FnLm<impl Fn(&LmRequest) -> String + Send + Sync> {
    FnLm::new(|request: &LmRequest| {
        let system = request.messages[0].content.as_str();
        let user = request.messages.last().unwrap().content.as_str();
        let q: usize = user
            .split("q=")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        let right = match version(system) {
            2 | 4 => true,
            1 => q.is_multiple_of(2),
            _ => false,
        };
        answer_reply(&if right { q.to_string() } else { "wrong".into() })
    })
}

/// The prompt model: proposal `n` is `INSTR-n` with the prefix `P-n:`, each request kept.
struct Proposer {
    count: AtomicUsize,
    seen: std::sync::Mutex<Vec<LmRequest>>,
}

impl Proposer {
    fn lm(self: &Arc<Self>) -> FnLm<impl Fn(&LmRequest) -> String + Send + Sync + use<>> {
        let me = self.clone();
        FnLm::new(move |request: &LmRequest| {
            me.seen.lock().unwrap().push(request.clone());
            let n = me.count.fetch_add(1, Ordering::SeqCst) + 1;
            format!(
                "[[ ## proposed_instruction ## ]]\n\"INSTR-{n} Answer with the number.\"\n\n\
                 [[ ## proposed_prefix_for_output_field ## ]]\nP-{n}:\n\n[[ ## completed ## ]]"
            )
        })
    }
}

fn proposer() -> Arc<Proposer> {
    Arc::new(Proposer {
        count: AtomicUsize::new(0),
        seen: std::sync::Mutex::new(Vec::new()),
    })
}

#[tokio::test]
async fn copro_proposes_scores_and_climbs_as_dspy_does() {
    let prompts = proposer();
    let program = Predict::<Ask>::new().with_lm(task_lm());
    let compiled = Copro::new(exact_match("answer"))
        .with_prompt_lm(prompts.lm())
        .with_breadth(3)
        .with_depth(2)
        .with_concurrency(1)
        .compile(&program, &trainset(), &[])
        .await
        .unwrap();
    let report = &compiled.report;
    // Round 0: breadth - 1 proposals and the own instruction; round 1: breadth more.
    assert_eq!(report.evaluations, 3 + 3);
    assert_eq!(prompts.count.load(Ordering::SeqCst), 2 + 3);
    // INSTR-2 and INSTR-4 both score 100: the first scored wins, quotes stripped.
    assert_eq!(
        compiled.program.predictor().instructions(),
        "INSTR-2 Answer with the number."
    );
    let scores: Vec<(usize, f64)> = report
        .candidates
        .iter()
        .map(|c| (version(&c.instruction), c.score))
        .collect();
    assert_eq!(
        scores,
        [
            (2, 100.0),
            (4, 100.0),
            (1, 50.0),
            (0, 0.0),
            (3, 0.0),
            (5, 0.0)
        ]
    );
    assert_eq!(report.candidates[0].depth, 0);
    // The prefix is the last field's, and is saved in DSPy's format.
    let state = compiled.program.dump_state();
    assert_eq!(state["signature"]["fields"][1]["prefix"], "P-2:");
    // The second round's prompt shows the attempts lowest score first, numbered from 1.
    let seen = prompts.seen.lock().unwrap();
    let asked = seen[2].messages.last().unwrap().content.as_str();
    let first = asked.find("Instruction #1: ").unwrap();
    let third = asked.find("Instruction #3: INSTR-2").unwrap();
    assert!(first < third, "{asked}");
    assert!(asked.contains("Resulting Score #3: 100.0"), "{asked}");
    assert!(asked.contains("Resulting Score #1: 0.0"), "{asked}");
    assert!(
        seen[0].messages[0]
            .content
            .contains("You are an instruction optimizer for large language models."),
        "DSPy's prompt"
    );
    // Each proposal is its own request, kept apart in caches, at DSPy's temperature.
    let rollouts: Vec<Option<u64>> = seen.iter().map(|r| r.options.rollout_id).collect();
    assert_eq!(rollouts, [Some(1), Some(2), Some(3), Some(4), Some(5)]);
    assert!(seen.iter().all(|r| r.options.temperature == Some(1.4)));
}

#[tokio::test]
async fn with_several_predictors_every_proposal_is_scored_again_each_round() {
    let prompts = proposer();
    let lm = gepa_task::FnLm(|_: &str, _: &str| answer_reply("x"));
    let program = gepa_task::HintThenAnswer {
        hinter: Predict::new().with_lm(gepa_task::FnLm(|_: &str, _: &str| {
            "[[ ## hint ## ]]\nh\n\n[[ ## completed ## ]]".to_owned()
        })),
        answerer: Predict::new().with_lm(lm),
    };
    let compiled = Copro::new(|_: &Example, _: &gepa_task::AnswerOutput| 0.0)
        .with_prompt_lm(prompts.lm())
        .with_breadth(2)
        .with_depth(2)
        .with_concurrency(1)
        .compile(&program, &trainset(), &[])
        .await
        .unwrap();
    // Round 0: two candidates per predictor; round 1: all four so far, per predictor.
    assert_eq!(compiled.report.evaluations, 2 * 2 + 4 * 2);
    assert_eq!(compiled.program.named_predictors().len(), 2);
}

#[tokio::test]
async fn bad_settings_fail_and_failed_proposals_are_reported_not_fatal() {
    let program = Predict::<Ask>::new().with_lm(task_lm());
    let narrow = Copro::new(exact_match("answer"))
        .with_prompt_lm(proposer().lm())
        .with_breadth(1)
        .compile(&program, &trainset(), &[])
        .await;
    assert!(
        matches!(&narrow, Err(OptimizeError::Settings { reason }) if reason.contains("breadth")),
        "{:?}",
        narrow.err()
    );
    let empty = Copro::new(exact_match("answer"))
        .with_prompt_lm(proposer().lm())
        .compile(&program, &[], &[])
        .await;
    assert!(matches!(empty, Err(OptimizeError::Settings { .. })));

    // A prompt model whose replies cannot be read: every proposal fails, the own instruction is
    // still scored, and the report says what failed.
    let garbled = FnLm::new(|_: &LmRequest| "no fields here".to_owned());
    let compiled = Copro::new(exact_match("answer"))
        .with_prompt_lm(garbled)
        .with_breadth(3)
        .with_depth(1)
        .compile(&program, &trainset(), &[])
        .await
        .unwrap();
    assert_eq!(compiled.report.proposal_failures.len(), 2);
    assert!(compiled.report.proposal_failures[0].starts_with("self, proposal 1: "));
    assert_eq!(compiled.report.evaluations, 1);
    assert_eq!(
        compiled.program.predictor().instructions(),
        program.predictor().instructions()
    );
}

#[tokio::test]
async fn the_lm_call_limit_stops_the_search_with_the_best_so_far() {
    let program = Predict::<Ask>::new().with_lm(task_lm());
    // 2 proposal calls, then 4 calls per scoring: the limit is reached after the second scoring.
    let compiled = Copro::new(exact_match("answer"))
        .with_prompt_lm(proposer().lm())
        .with_breadth(3)
        .with_depth(3)
        .with_max_lm_calls(10)
        .compile(&program, &trainset(), &[])
        .await
        .unwrap();
    assert!(compiled.report.stopped_at_lm_calls);
    assert_eq!(compiled.report.evaluations, 2);
    assert_eq!(
        compiled.program.predictor().instructions(),
        "INSTR-2 Answer with the number."
    );
}
