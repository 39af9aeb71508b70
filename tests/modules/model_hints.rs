//! Per-step model choice: a predictor names a model hint, resolved from the models registered for
//! the call or globally; a hint registered nowhere is a typed error before anything is sent, and a
//! program loaded from DSPy picks its predictors' saved models among the registered ones.

use std::sync::Arc;

use serde_json::json;
use signet::Error;
use signet::lm::LmError;
use signet::module::{CallConfig, DynPredict, Predict, Predictors, ReAct, react::RunFailure};
use signet::testing::ScriptedLm;

use crate::support;
use support::{Ask as QA, AskInput as QAInput, *};

fn question() -> QAInput {
    QAInput {
        question: "Capital of France?".into(),
    }
}

#[tokio::test]
async fn a_predictor_uses_the_model_registered_under_its_hint_before_the_calls_lm() {
    let fast = Arc::new(ScriptedLm::texts([answer_reply("Paris")]));
    let default = Arc::new(ScriptedLm::texts([answer_reply("Lyon")]));
    let qa = Predict::<QA>::new().with_model_hint("fast");
    let call = CallConfig::new()
        .with_lm(default.clone())
        .with_model("fast", fast.clone());
    let (out, _) = qa.call_full(question(), &call).await.unwrap();
    assert_eq!(out.answer, "Paris");
    assert_eq!((fast.requests().len(), default.requests().len()), (1, 0));
}

#[tokio::test]
async fn the_predictors_own_lm_wins_over_its_hint() {
    let own = Arc::new(ScriptedLm::texts([answer_reply("Paris")]));
    let fast = Arc::new(ScriptedLm::texts([answer_reply("Lyon")]));
    let qa = Predict::<QA>::new()
        .with_model_hint("fast")
        .with_lm(own.clone());
    let call = CallConfig::new().with_model("fast", fast.clone());
    let (out, _) = qa.call_full(question(), &call).await.unwrap();
    assert_eq!(out.answer, "Paris");
    assert!(fast.requests().is_empty());
}

#[tokio::test]
async fn a_hint_registered_nowhere_is_a_typed_error_naming_it_and_nothing_is_sent() {
    let default = Arc::new(ScriptedLm::texts([answer_reply("Paris")]));
    let qa = Predict::<QA>::new().with_model_hint("strnog");
    let call = CallConfig::new()
        .with_lm(default.clone())
        .with_model("strong", ScriptedLm::texts([answer_reply("Paris")]))
        .with_model("fast", ScriptedLm::texts([answer_reply("Paris")]));
    let error = qa.call_full(question(), &call).await.unwrap_err();
    match &error {
        Error::Lm(LmError::UnknownModel { hint, registered }) => {
            assert_eq!(hint, "strnog");
            // The global registry may hold other tests' names; the call's are listed, in order.
            let fast = registered.iter().position(|n| n == "fast").unwrap();
            let strong = registered.iter().position(|n| n == "strong").unwrap();
            assert!(fast < strong, "{registered:?}");
        }
        other => panic!("expected UnknownModel, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .contains("no model is registered as `strnog`"),
        "{error}"
    );
    assert!(default.requests().is_empty());
}

#[tokio::test]
async fn a_globally_registered_model_serves_the_hint_and_the_calls_registration_wins() {
    let global = Arc::new(ScriptedLm::texts([answer_reply("Paris")]));
    signet::module::configure_model("model-hints-test-global", global.clone());
    let qa = Predict::<QA>::new().with_model_hint("model-hints-test-global");
    assert_eq!(qa.call(question()).await.unwrap().answer, "Paris");

    let per_call = Arc::new(ScriptedLm::texts([answer_reply("Lyon")]));
    let call = CallConfig::new().with_model("model-hints-test-global", per_call.clone());
    let (out, _) = qa.call_full(question(), &call).await.unwrap();
    assert_eq!(out.answer, "Lyon");
    assert_eq!((global.requests().len(), per_call.requests().len()), (1, 1));
}

#[tokio::test]
async fn react_steps_on_a_fast_model_and_the_answer_on_a_strong_one() {
    let fast = Arc::new(ScriptedLm::texts([
        step("add them", "add", json!({"a": 2, "b": 3})),
        step("done", "finish", json!({})),
    ]));
    let strong = Arc::new(ScriptedLm::texts([extract("5")]));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_step_model_hint("fast")
        .with_extractor_model_hint("strong");
    let call = CallConfig::new()
        .with_model("fast", fast.clone())
        .with_model("strong", strong.clone());
    let out = agent.call_with(ask(), &call).await.unwrap();
    assert_eq!(out.output.answer, "5");
    assert_eq!((fast.requests().len(), strong.requests().len()), (2, 1));
    // The extractor's prompt is the one that asks for the answer from the trajectory.
    let prompt = &strong.requests()[0].messages[1].content;
    assert!(prompt.contains("[[ ## trajectory ## ]]"), "{prompt}");
}

#[tokio::test]
async fn react_with_an_unregistered_extractor_hint_fails_before_its_first_step() {
    let fast = Arc::new(ScriptedLm::texts([step("done", "finish", json!({}))]));
    let agent = ReAct::<Ask>::new()
        .tool(AddTool)
        .with_step_model_hint("fast")
        .with_extractor_model_hint("strong");
    let call = CallConfig::new().with_model("fast", fast.clone());
    let error = agent.call_with(ask(), &call).await.unwrap_err();
    assert!(
        matches!(
            &error.reason,
            RunFailure::Call(Error::Lm(LmError::UnknownModel { hint, .. })) if hint == "strong"
        ),
        "{error:?}"
    );
    assert!(fast.requests().is_empty());
    assert!(error.trajectory.steps.is_empty());
}

#[tokio::test]
async fn a_loaded_programs_saved_model_picks_a_registered_model_and_is_ignored_otherwise() {
    let saved = json!({
        "traces": [], "train": [], "demos": [],
        "signature": {"instructions": "Answer.", "fields": [
            {"prefix": "Question:", "description": "${question}"},
            {"prefix": "Answer:", "description": "${answer}"},
        ]},
        "lm": {"model": "openai/gpt-4o", "temperature": 0.0},
    });
    let mut qa = DynPredict::new("question -> answer".parse().unwrap());
    qa.restore(&saved).unwrap();
    let inputs = [("question".to_owned(), json!("Capital of France?"))]
        .into_iter()
        .collect();

    let strong = Arc::new(ScriptedLm::texts([answer_reply("Paris")]));
    let default = Arc::new(ScriptedLm::texts([answer_reply("Lyon")]));
    let call = CallConfig::new()
        .with_lm(default.clone())
        .with_model("openai/gpt-4o", strong.clone());
    let out = qa.forward_with(&inputs, &call).await.unwrap();
    assert_eq!(out.outputs["answer"], "Paris");

    // Not registered: the call's LM, as before model hints.
    let call = CallConfig::new().with_lm(default.clone());
    let out = qa.forward_with(&inputs, &call).await.unwrap();
    assert_eq!(out.outputs["answer"], "Lyon");

    // A hint set in code wins over the file's model.
    qa.set_model_hint(Some("fast"));
    let fast = Arc::new(ScriptedLm::texts([answer_reply("Marseille")]));
    let call = CallConfig::new()
        .with_model("fast", fast.clone())
        .with_model("openai/gpt-4o", ScriptedLm::texts([answer_reply("Paris")]));
    let out = qa.forward_with(&inputs, &call).await.unwrap();
    assert_eq!(out.outputs["answer"], "Marseille");
    assert_eq!(qa.model_hint(), Some("fast"));
}

#[test]
fn a_hint_set_on_every_predictor_of_a_program() {
    let mut agent = ReAct::<Ask>::new().tool(AddTool);
    for (_, predictor) in agent.named_predictors_mut() {
        predictor.set_model_hint(Some("fast"));
    }
    let hints: Vec<_> = agent
        .named_predictors()
        .into_iter()
        .map(|(name, p)| (name, p.model_hint().map(str::to_owned)))
        .collect();
    assert_eq!(
        hints,
        [
            ("react".to_owned(), Some("fast".to_owned())),
            ("extract.predict".to_owned(), Some("fast".to_owned()))
        ]
    );
}
