//! `CallConfig::scope`: per-call settings for every module a future calls (DSPy's `dspy.context`),
//! below the modules' own settings and a call's own `CallConfig`, nested scopes inner first, and
//! concurrent scopes apart.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use signet::Error;
use signet::lm::LmError;
use signet::module::{
    BestOfN, CallConfig, ChainOfThought, Module, Predict, ReAct, ReActEvent, react::RunFailure,
};
use signet::testing::ScriptedLm;

use crate::support;
use support::*;

fn cot_reply(answer: &str) -> String {
    format!(
        "[[ ## reasoning ## ]]\nKnown.\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]"
    )
}

/// Two steps, neither with an LM of its own.
#[derive(signet::Module)]
struct DraftThenCheck {
    draft: Predict<Ask>,
    check: ChainOfThought<Ask>,
}

impl Module for DraftThenCheck {
    type Input = AskInput;
    type Output = AskOutput;
    type Error = Error;

    async fn call(&self, input: AskInput) -> Result<AskOutput, Error> {
        let draft = self.draft.call(input).await?;
        let checked = self
            .check
            .call(AskInput {
                question: format!("Is {} right?", draft.answer),
            })
            .await?;
        Ok(checked.output)
    }
}

#[tokio::test]
async fn every_module_of_a_program_uses_the_scopes_lm() {
    let lm = Arc::new(ScriptedLm::texts([answer_reply("Paris"), cot_reply("yes")]));
    let program = DraftThenCheck {
        draft: Predict::new(),
        check: ChainOfThought::new(),
    };
    let out = CallConfig::new()
        .with_lm(lm.clone())
        .scope(program.call(ask()))
        .await
        .unwrap();
    assert_eq!(out.answer, "yes");
    assert_eq!(lm.requests().len(), 2);
    // Outside the scope there is no LM.
    let error = program.call(ask()).await.unwrap_err();
    assert!(
        matches!(error, Error::Lm(LmError::NotConfigured)),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_modules_own_lm_and_a_calls_own_config_win_over_the_scope() {
    let scoped = Arc::new(ScriptedLm::texts([answer_reply("scoped")]));
    let own = Arc::new(ScriptedLm::texts([answer_reply("own")]));
    let given = Arc::new(ScriptedLm::texts([answer_reply("given")]));
    let with_own = Predict::<Ask>::new().with_lm(own.clone());
    let plain = Predict::<Ask>::new();
    let scope = CallConfig::new().with_lm(scoped.clone());
    let (a, b) = scope
        .scope(async {
            let a = with_own.call(ask()).await.unwrap();
            let call = CallConfig::new().with_lm(given.clone());
            let (b, _) = plain.call_full(ask(), &call).await.unwrap();
            (a, b)
        })
        .await;
    assert_eq!((a.answer.as_str(), b.answer.as_str()), ("own", "given"));
    assert!(scoped.requests().is_empty());
}

#[tokio::test]
async fn nested_scopes_take_the_inner_setting_and_the_outer_for_the_rest() {
    let outer = Arc::new(ScriptedLm::texts([answer_reply("outer")]));
    let fast = Arc::new(ScriptedLm::texts([answer_reply("fast")]));
    let hinted = Predict::<Ask>::new().with_model_hint("fast");
    let plain = Predict::<Ask>::new();
    let (a, b) = CallConfig::new()
        .with_lm(outer.clone())
        .scope(
            CallConfig::new()
                .with_model("fast", fast.clone())
                .scope(async {
                    (
                        hinted.call(ask()).await.unwrap(),
                        plain.call(ask()).await.unwrap(),
                    )
                }),
        )
        .await;
    assert_eq!((a.answer.as_str(), b.answer.as_str()), ("fast", "outer"));
}

#[tokio::test]
async fn concurrent_scopes_do_not_see_each_other() {
    let qa = Predict::<Ask>::new();
    let one = CallConfig::new().with_lm(ScriptedLm::texts([answer_reply("one")]));
    let two = CallConfig::new().with_lm(ScriptedLm::texts([answer_reply("two")]));
    let (a, b) = tokio::join!(one.scope(qa.call(ask())), two.scope(qa.call(ask())));
    assert_eq!(
        (a.unwrap().answer.as_str(), b.unwrap().answer.as_str()),
        ("one", "two")
    );
}

#[tokio::test]
async fn a_react_run_takes_its_step_limit_and_lm_from_the_scope() {
    let lm = Arc::new(ScriptedLm::texts([
        step("add", "add", json!({"a": 1, "b": 2})),
        extract("3"),
    ]));
    let agent = ReAct::<Ask>::new().tool(AddTool);
    let scope = CallConfig::new().with_lm(lm.clone()).with_max_iters(1);
    let out = scope.scope(agent.call(ask())).await.unwrap();
    assert_eq!(out.output.answer, "3");
    assert_eq!(out.trajectory.steps.len(), 1);
    assert_eq!(lm.requests().len(), 2);
}

#[tokio::test]
async fn a_typed_react_stream_takes_per_call_settings() {
    let lm = Arc::new(ScriptedLm::texts([
        step("done", "finish", json!({})),
        extract("5"),
    ]));
    let agent = ReAct::<Ask>::new().tool(AddTool);
    let events: Vec<_> = agent
        .stream_with(ask(), CallConfig::new().with_lm(lm.clone()))
        .collect()
        .await;
    match events.last() {
        Some(ReActEvent::Done { output, .. }) => assert_eq!(output.answer, "5"),
        other => panic!("expected Done, got {other:?}"),
    }
    // Without settings anywhere, the stream ends with the typed error.
    let events: Vec<_> = agent.stream(ask()).collect().await;
    match events.last() {
        Some(ReActEvent::Failed { error }) => assert!(
            matches!(
                error.reason,
                RunFailure::Call(Error::Lm(LmError::NotConfigured))
            ),
            "{error:?}"
        ),
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[tokio::test]
async fn chain_of_thought_takes_a_call_config_and_best_of_n_runs_in_a_scope() {
    let cot = ChainOfThought::<Ask>::new();
    let call = CallConfig::new().with_lm(ScriptedLm::texts([cot_reply("Paris")]));
    assert_eq!(
        cot.call_with(ask(), &call).await.unwrap().output.answer,
        "Paris"
    );

    let lm = Arc::new(ScriptedLm::texts([
        answer_reply("two words"),
        answer_reply("one"),
    ]));
    let best = BestOfN::new(
        Predict::<Ask>::new(),
        2,
        |_: &AskInput, out: &AskOutput| (out.answer.split_whitespace().count() == 1) as u8 as f64,
        1.0,
    );
    let out = CallConfig::new()
        .with_lm(lm.clone())
        .scope(best.call(ask()))
        .await
        .unwrap();
    assert_eq!(out.answer, "one");
    assert_eq!(lm.requests()[1].options.rollout_id, Some(1));
}
