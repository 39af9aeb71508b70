//! BestOfN and Refine: up to N attempts at temperature 1.0, each with its own rollout id; the
//! first output whose reward reaches the threshold, else the best; failed attempts are kept, not
//! fatal until none succeeded; the trace holds the chosen attempt's calls and the usage all of
//! them. Refine asks for advice between attempts and shows each predictor its own as `hint_`.
//! (DSPy's prompts, byte for byte, are checked by the parity fixtures `b1`..`b4`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use signet::Error;
use signet::lm::{CachedLm, LmError, ResponseCache};
use signet::module::{
    AttemptError, BestOfN, BestOfNError, ChainOfThought, Module, Predict, Predictors, Refine,
};
use signet::testing::{FnLm, ScriptedLm};

use crate::support;
use support::{Ask as QA, AskInput as QAInput, AskOutput as QAOutput, answer_reply as reply};

fn question() -> QAInput {
    QAInput {
        question: "Capital of Belgium?".into(),
    }
}

/// 1.0 for a one-word answer, less the longer it is.
fn brevity(_: &QAInput, out: &QAOutput) -> f64 {
    1.0 / out.answer.split_whitespace().count().max(1) as f64
}

#[tokio::test]
async fn the_first_attempt_that_reaches_the_threshold_is_returned_and_no_more_are_made() {
    let lm = Arc::new(ScriptedLm::texts([
        reply("It is Brussels"),
        reply("Brussels"),
        reply("unused"),
    ]));
    let best = BestOfN::new(Predict::<QA>::new().with_lm(lm.clone()), 3, brevity, 1.0);
    let run = best.call_full(question()).await.unwrap();
    assert_eq!(run.output.answer, "Brussels");
    assert_eq!((run.chosen, run.reward, run.attempts.len()), (1, 1.0, 2));
    assert_eq!(lm.remaining(), 1);
    // Each attempt sends temperature 1.0 and its own rollout id.
    let sent: Vec<_> = lm
        .requests()
        .iter()
        .map(|r| (r.options.temperature, r.options.rollout_id))
        .collect();
    assert_eq!(sent, [(Some(1.0), Some(0)), (Some(1.0), Some(1))]);
    assert_eq!(run.usage.lm_calls, 2);
}

#[tokio::test]
async fn below_the_threshold_every_attempt_is_made_and_the_best_is_kept() {
    let lm = ScriptedLm::texts([
        reply("It is Brussels"),
        reply("Brussels, Belgium"),
        reply("The city of Brussels"),
    ]);
    let best = BestOfN::new(Predict::<QA>::new().with_lm(lm), 3, brevity, 2.0);
    let run = best.call_full(question()).await.unwrap();
    assert_eq!(run.output.answer, "Brussels, Belgium");
    assert_eq!(run.chosen, 1);
    let rewards: Vec<_> = run.attempts.iter().map(|a| a.reward.clone()).collect();
    assert_eq!(rewards, [Ok(1.0 / 3.0), Ok(0.5), Ok(0.25)]);
}

#[tokio::test]
async fn a_failed_attempt_is_kept_and_the_others_go_on() {
    let lm = ScriptedLm::new([])
        .then_error(LmError::NotConfigured)
        .then(lm_reply("Brussels"));
    let best = BestOfN::new(Predict::<QA>::new().with_lm(lm), 3, brevity, 1.0);
    let run = best.call_full(question()).await.unwrap();
    assert_eq!(run.output.answer, "Brussels");
    assert_eq!(run.chosen, 1);
    let first = run.attempts[0].reward.as_ref().unwrap_err();
    assert!(first.contains("no LM configured"), "{first}");
}

fn lm_reply(answer: &str) -> signet::lm::Completion {
    signet::lm::Completion::text(reply(answer))
}

#[tokio::test]
async fn when_every_attempt_fails_the_error_holds_each_attempts_error() {
    let lm = ScriptedLm::new([])
        .then_error(LmError::NotConfigured)
        .then_error(LmError::NotConfigured);
    let best = BestOfN::new(Predict::<QA>::new().with_lm(lm), 2, brevity, 1.0);
    let error = best.call(question()).await.unwrap_err();
    assert!(matches!(error, BestOfNError::AllFailed { .. }), "{error:?}");
    assert_eq!(error.errors().len(), 2);
    assert!(matches!(
        &error.errors()[1],
        AttemptError::Module(Error::Lm(LmError::NotConfigured))
    ));
    assert!(
        error
            .to_string()
            .starts_with("all 2 attempts failed; the last: no LM configured"),
        "{error}"
    );
}

#[tokio::test]
async fn past_the_fail_count_the_run_stops() {
    let lm = Arc::new(
        ScriptedLm::new([])
            .then_error(LmError::NotConfigured)
            .then_error(LmError::NotConfigured)
            .then(lm_reply("Brussels")),
    );
    let best =
        BestOfN::new(Predict::<QA>::new().with_lm(lm.clone()), 3, brevity, 1.0).with_fail_count(1);
    let error = best.call(question()).await.unwrap_err();
    assert!(
        matches!(&error, BestOfNError::TooManyFailures { allowed: 1, errors } if errors.len() == 2),
        "{error:?}"
    );
    assert_eq!(lm.remaining(), 1);

    // With a good attempt before, the run returns it instead.
    let lm = ScriptedLm::texts([reply("It is Brussels")])
        .then_error(LmError::NotConfigured)
        .then_error(LmError::NotConfigured);
    let best = BestOfN::new(Predict::<QA>::new().with_lm(lm), 4, brevity, 1.0).with_fail_count(1);
    let run = best.call_full(question()).await.unwrap();
    assert_eq!(
        (run.output.answer.as_str(), run.attempts.len()),
        ("It is Brussels", 3)
    );
}

#[tokio::test]
async fn a_reward_that_panics_or_is_nan_fails_its_attempt_only() {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let reward = move |_: &QAInput, out: &QAOutput| match seen.fetch_add(1, Ordering::SeqCst) {
        0 => panic!("reward bug on {}", out.answer),
        1 => f64::NAN,
        _ => 1.0,
    };
    let lm = ScriptedLm::texts([reply("a"), reply("b"), reply("c")]);
    let best = BestOfN::new(Predict::<QA>::new().with_lm(lm), 3, reward, 1.0);
    let run = best.call_full(question()).await.unwrap();
    assert_eq!(run.output.answer, "c");
    assert_eq!(
        run.attempts[0].reward,
        Err("the reward function panicked: reward bug on a".to_owned())
    );
    assert_eq!(
        run.attempts[1].reward,
        Err("the reward function returned NaN".to_owned())
    );
}

#[tokio::test]
async fn attempts_are_not_served_from_the_cache_of_the_first_but_a_repeat_run_is() {
    let sent = Arc::new(AtomicUsize::new(0));
    let counter = sent.clone();
    let lm = FnLm::new(move |request| {
        counter.fetch_add(1, Ordering::SeqCst);
        let rollout = request.options.rollout_id.unwrap_or(99);
        reply(if rollout == 2 {
            "Brussels"
        } else {
            "It is Brussels"
        })
    });
    let cached = CachedLm::new(lm, Arc::new(ResponseCache::in_memory()));
    let best = BestOfN::new(Predict::<QA>::new().with_lm(cached), 3, brevity, 1.0);
    let first = best.call_full(question()).await.unwrap();
    assert_eq!(
        (first.output.answer.as_str(), first.chosen),
        ("Brussels", 2)
    );
    assert_eq!(sent.load(Ordering::SeqCst), 3);
    // The same run again: every attempt's request is in the cache (DSPy's behaviour too).
    let again = best.call_full(question()).await.unwrap();
    assert_eq!(again.output.answer, "Brussels");
    assert_eq!(sent.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn the_trace_holds_the_chosen_attempts_calls_under_the_programs_predictor() {
    let lm = ScriptedLm::texts([reply("It is Brussels"), reply("Brussels")]);
    let best = BestOfN::new(Predict::<QA>::new().with_lm(lm), 2, brevity, 1.0);
    let (run, record) = signet::trace::recorded(best.call(question())).await;
    assert_eq!(run.unwrap().answer, "Brussels");
    assert_eq!(record.trace.len(), 1);
    assert_eq!(record.trace[0].outputs["answer"], "Brussels");
    let (path, predictor) = &best.named_predictors()[0];
    assert_eq!(path, "module");
    assert_eq!(record.trace[0].predictor, predictor.id());
    assert_eq!(record.usage.lm_calls, 2);
}

#[test]
fn predictors_are_under_module_as_dspy_names_them_and_the_program_saves_so() {
    let best = BestOfN::new(
        ChainOfThought::<QA>::new(),
        3,
        |_: &QAInput, _: &_| 1.0,
        1.0,
    );
    let names: Vec<_> = best
        .named_predictors()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["module.predict"]);
    let state = best.dump_state();
    assert!(state.get("module.predict").is_some(), "{state}");

    let mut loaded = BestOfN::new(
        ChainOfThought::<QA>::new(),
        3,
        |_: &QAInput, _: &_| 1.0,
        1.0,
    );
    let mut changed = state.clone();
    changed["module.predict"]["signature"]["instructions"] = "Answer in one word only.".into();
    loaded.load_state(&changed).unwrap();
    assert_eq!(
        loaded.module().predictor().instructions(),
        "Answer in one word only."
    );
}

fn advice(discussion: &str, advice: serde_json::Value) -> String {
    format!(
        "[[ ## discussion ## ]]\n{discussion}\n\n[[ ## advice ## ]]\n{advice}\n\n[[ ## completed ## ]]"
    )
}

#[tokio::test]
async fn refine_shows_the_next_attempt_the_advice_for_its_predictor_as_hint() {
    let lm = Arc::new(ScriptedLm::texts([
        reply("It is Brussels"),
        advice(
            "Too long.",
            serde_json::json!({"self": "Answer with the city only."}),
        ),
        reply("Brussels"),
    ]));
    let refine = Refine::new(Predict::<QA>::new().with_lm(lm.clone()), 3, brevity, 1.0)
        .with_reward_code("1 over the number of words of the answer");
    let run = refine.call_full(question()).await.unwrap();
    assert_eq!((run.output.answer.as_str(), run.chosen), ("Brussels", 1));
    let requests = lm.requests();
    assert_eq!(requests.len(), 3);
    // The feedback call: DSPy's OfferFeedback prompt, with what the Rust program says.
    let feedback = &requests[1].messages[1].content;
    assert!(
        feedback.contains("[[ ## reward_code ## ]]\n1 over the number of words of the answer"),
        "{feedback}"
    );
    assert!(
        feedback.contains("[[ ## reward_value ## ]]\n0.3333333333333333"),
        "{feedback}"
    );
    assert_eq!(requests[1].options.temperature, None);
    // The second attempt: `hint_` is one more input, last, with the advice for `self`.
    let system = &requests[2].messages[0].content;
    assert!(
        system.contains("2. `hint_` (str): A hint to the module from an earlier run"),
        "{system}"
    );
    let user = &requests[2].messages[1].content;
    assert!(
        user.contains("[[ ## hint_ ## ]]\nAnswer with the city only."),
        "{user}"
    );
    assert_eq!(run.feedback.len(), 1);
    assert_eq!(run.feedback[0].after, 0);
    assert_eq!(run.usage.lm_calls, 3);
}

#[tokio::test]
async fn a_failed_feedback_call_is_kept_and_the_next_attempt_runs_without_a_hint() {
    let lm = Arc::new(
        ScriptedLm::texts([reply("It is Brussels")])
            .then_error(LmError::NotConfigured)
            .then(lm_reply("Brussels")),
    );
    let refine = Refine::new(Predict::<QA>::new().with_lm(lm.clone()), 3, brevity, 1.0);
    let run = refine.call_full(question()).await.unwrap();
    assert_eq!(run.output.answer, "Brussels");
    let error = run.feedback[0].advice.as_ref().unwrap_err();
    assert!(error.contains("no LM configured"), "{error}");
    assert!(!lm.requests()[2].messages[1].content.contains("hint_"));
}

#[tokio::test]
async fn the_feedback_lm_can_be_its_own_and_its_calls_stay_out_of_the_trace() {
    let task = Arc::new(ScriptedLm::texts([
        reply("It is Brussels"),
        reply("Brussels"),
    ]));
    let judge = Arc::new(ScriptedLm::texts([advice(
        "Too long.",
        serde_json::json!({"self": "One word."}),
    )]));
    let refine = Refine::new(Predict::<QA>::new().with_lm(task.clone()), 2, brevity, 1.0)
        .with_feedback_lm(judge.clone());
    let (out, record) = signet::trace::recorded(refine.call(question())).await;
    assert_eq!(out.unwrap().answer, "Brussels");
    assert_eq!((task.requests().len(), judge.requests().len()), (2, 1));
    // The chosen attempt's call only; the usage of all three calls.
    assert_eq!(record.trace.len(), 1);
    assert_eq!(record.usage.lm_calls, 3);
}

#[tokio::test]
async fn the_last_attempt_asks_for_no_feedback() {
    let lm = Arc::new(ScriptedLm::texts([reply("It is Brussels")]));
    let refine = Refine::new(Predict::<QA>::new().with_lm(lm.clone()), 1, brevity, 1.0);
    let run = refine.call_full(question()).await.unwrap();
    assert_eq!(run.output.answer, "It is Brussels");
    assert!(run.feedback.is_empty());
    assert_eq!(lm.requests().len(), 1);
}
