//! Output checks with re-ask (`signet::module::check`), module by module: a refused answer is
//! asked for again with the check's message, an answer refused on every attempt ends in the
//! typed error holding every attempt (or the fallback), and a streamed reply is stopped at the
//! first failure instead of running to its end.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::json;
use signet::lm::{Capabilities, Role};
use signet::module::check::{CheckFallback, Checked, CheckedError, Grounded, NoRepetition};
use signet::module::{ChainOfThought, Module, Predict, ReAct, ReActEvent, ReActMode};
use signet::testing::{ScriptedLm, ScriptedReply};
use signet::{Error, Signature, tool};

/// Answer in one word.
#[derive(Signature)]
struct OneWord {
    #[input]
    question: String,
    #[output]
    answer: String,
}

fn one_word(_: &OneWordInput, out: &OneWordOutput) -> Result<(), String> {
    match out.answer.split_whitespace().count() {
        1 => Ok(()),
        n => Err(format!("The answer has {n} words; give one word.")),
    }
}

fn chat(answer: &str) -> String {
    format!("[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
}

fn question() -> OneWordInput {
    OneWordInput {
        question: "Capital of Belgium?".into(),
    }
}

#[tokio::test]
async fn predict_reasks_with_the_checks_message_in_the_hint_field() {
    let lm = Arc::new(ScriptedLm::texts([
        chat("It is Brussels"),
        chat("Brussels"),
    ]));
    let qa = Predict::<OneWord>::new()
        .with_lm(lm.clone())
        .with_check("one word", one_word);
    let (out, prediction) = qa.call_full(question(), &Default::default()).await.unwrap();
    assert_eq!(out.answer, "Brussels");
    assert_eq!((prediction.usage.lm_calls, prediction.usage.reasks), (2, 1));
    let requests = lm.requests();
    assert!(!requests[0].messages[0].content.contains("hint_"));
    let system = &requests[1].messages[0].content;
    assert!(
        system.contains("`hint_` (str): A hint to the module from an earlier run"),
        "{system}"
    );
    let user = &requests[1].messages[1].content;
    assert!(
        user.contains("[[ ## hint_ ## ]]\nThe answer has 3 words; give one word."),
        "{user}"
    );
}

#[tokio::test]
async fn predict_fails_with_every_attempt_after_the_last_reask() {
    let lm = Arc::new(ScriptedLm::texts([
        chat("It is Brussels"),
        chat("Brussels it is"),
        chat("The city of Brussels"),
    ]));
    let qa = Predict::<OneWord>::new()
        .with_lm(lm.clone())
        .with_check("one word", one_word)
        .with_max_reasks(2);
    let error = qa.call(question()).await.unwrap_err();
    let Error::Checks(failed) = &error else {
        panic!("expected the checks' error, got {error:?}");
    };
    assert_eq!(failed.attempts.len(), 3);
    assert_eq!(failed.attempts[1].outputs["answer"], "Brussels it is");
    assert_eq!(failed.attempts[2].failures[0].check, "one word");
    assert_eq!(error.error_type(), "checks_failed");
    assert_eq!(lm.remaining(), 0);
    assert!(error.to_string().contains("all 3 attempts"), "{error}");
}

#[tokio::test]
async fn predict_answers_with_the_fallback_when_every_attempt_fails() {
    let lm = Arc::new(ScriptedLm::texts([
        chat("It is Brussels"),
        chat("Brussels it is"),
    ]));
    let qa = Predict::<OneWord>::new()
        .with_lm(lm)
        .with_check("one word", one_word)
        .with_max_reasks(1)
        .with_check_fallback(CheckFallback::Say("I do not know.".into()));
    assert_eq!(qa.call(question()).await.unwrap().answer, "I do not know.");
}

#[tokio::test]
async fn chain_of_thought_reasks_and_fails_typed() {
    let cot_reply = |answer: &str| {
        format!(
            "[[ ## reasoning ## ]]\nIt is the capital.\n\n[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]"
        )
    };
    let lm = Arc::new(ScriptedLm::texts([
        cot_reply("It is Brussels"),
        cot_reply("Brussels"),
    ]));
    let cot = ChainOfThought::<OneWord>::new()
        .with_lm(lm.clone())
        .with_check("one word", one_word);
    let out = cot.call(question()).await.unwrap();
    assert_eq!(out.output.answer, "Brussels");
    assert!(
        lm.requests()[1].messages[1]
            .content
            .contains("give one word")
    );

    let lm = Arc::new(ScriptedLm::texts([
        cot_reply("It is Brussels"),
        cot_reply("Brussels it is"),
    ]));
    let cot = ChainOfThought::<OneWord>::new()
        .with_lm(lm)
        .with_check("one word", one_word)
        .with_max_reasks(1);
    assert!(matches!(cot.call(question()).await, Err(Error::Checks(f)) if f.attempts.len() == 2));
}

/// Answer the traveller's question with the tools.
#[derive(Signature)]
struct Travel {
    #[input]
    question: String,
    #[output]
    answer: String,
}

/// Convert euros to Norwegian kroner.
#[tool]
fn eur_to_nok(amount: f64) -> String {
    format!("{amount} EUR is {:.2} NOK.", amount * 11.7)
}

/// Tomorrow's forecast for a city.
#[tool]
fn forecast(city: String) -> String {
    format!("Tomorrow in {city}: 4 °C, light rain.")
}

fn native() -> Capabilities {
    Capabilities::default().with_function_calling(true)
}

fn travel_question() -> TravelInput {
    TravelInput {
        question: "How much is 300 EUR in NOK?".into(),
    }
}

#[tokio::test]
async fn react_refuses_an_invented_figure_and_offers_the_tools_not_called() {
    let lm = Arc::new(
        ScriptedLm::replies([
            // No tool called: 300.00 NOK is invented.
            ScriptedReply::finish(json!({"answer": "300 EUR is 300.00 NOK."})),
            ScriptedReply::tool("eur_to_nok", json!({"amount": 300})),
            ScriptedReply::finish(json!({"answer": "300 EUR is 3510.00 NOK."})),
        ])
        .with_capabilities(native()),
    );
    let agent = ReAct::<Travel>::new()
        .tool(EurToNokTool)
        .tool(ForecastTool)
        .with_lm(lm.clone())
        .with_mode(ReActMode::Native)
        .with_output_check(Grounded::new().offering(["eur_to_nok"]));
    let out = agent.call(travel_question()).await.unwrap();
    assert_eq!(out.output.answer, "300 EUR is 3510.00 NOK.");
    assert_eq!(out.usage.reasks, 1);
    let refused = &out.trajectory.refused_answers;
    assert_eq!(refused.len(), 1);
    assert!(refused[0].failures[0].message.contains("300.00 NOK"));
    assert_eq!(refused[0].failures[0].offer_tools, ["eur_to_nok"]);
    // The refused finish's result is the refusal, which the second request shows the model.
    let requests = lm.requests();
    let shown = requests[1]
        .messages
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("the finish call's result");
    assert!(
        shown.content.contains("The answer was not accepted"),
        "{}",
        shown.content
    );
    // The turn after the refusal must call the tool not called (every tool stays listed).
    assert_eq!(
        requests[1].tool_choice,
        Some(signet::lm::ToolChoice::OneOf(vec!["eur_to_nok".into()]))
    );
    assert_eq!(requests[1].tools.len(), 3);
    assert_eq!(
        requests[2].tools.len(),
        3,
        "the turn after that offers every tool again"
    );
}

#[tokio::test]
async fn react_fails_typed_with_every_attempt_and_its_trajectory() {
    let invented = || ScriptedReply::finish(json!({"answer": "300 EUR is 300.00 NOK."}));
    let lm = Arc::new(
        ScriptedLm::replies([invented(), invented(), invented()]).with_capabilities(native()),
    );
    let agent = ReAct::<Travel>::new()
        .tool(EurToNokTool)
        .with_lm(lm)
        .with_mode(ReActMode::Native)
        .with_output_check(Grounded::new());
    let error = agent.call(travel_question()).await.unwrap_err();
    let Some(Error::Checks(failed)) = error.call_error() else {
        panic!("expected the checks' error, got {error}");
    };
    assert_eq!(failed.attempts.len(), 3);
    assert_eq!(error.usage.reasks, 2);
    assert_eq!(error.trajectory.refused_answers.len(), 3);
}

#[tokio::test]
async fn react_falls_back_to_what_the_tools_returned() {
    let lm = Arc::new(
        ScriptedLm::replies([
            ScriptedReply::tool("eur_to_nok", json!({"amount": 300})),
            ScriptedReply::finish(json!({"answer": "300 EUR is 999 NOK."})),
            ScriptedReply::finish(json!({"answer": "300 EUR is 998 NOK."})),
        ])
        .with_capabilities(native()),
    );
    let agent = ReAct::<Travel>::new()
        .tool(EurToNokTool)
        .with_lm(lm)
        .with_mode(ReActMode::Native)
        .with_output_check(Grounded::new())
        .with_max_reasks(1)
        .with_check_fallback(CheckFallback::tool_results());
    let out = agent.call(travel_question()).await.unwrap();
    assert_eq!(out.output.answer, "300 EUR is 3510.00 NOK.");
    assert!(out.trajectory.check_fallback);
    assert_eq!(out.trajectory.refused_answers.len(), 2);
}

#[tokio::test]
async fn react_text_mode_refuses_finish_and_the_extractors_answer_alike() {
    let typed_check = |_: &TravelInput, out: &TravelOutput, _: &signet::module::Trajectory| {
        if out.answer.contains("NOK") {
            Ok(())
        } else {
            Err("Say the amount in NOK.".to_owned())
        }
    };
    // finish with outputs, refused; then finish without: the extractor answers.
    let lm = Arc::new(ScriptedLm::replies([
        ScriptedReply::finish(json!({"answer": "It is a lot of money."})),
        ScriptedReply::finish(json!({})),
        ScriptedReply::answer(json!({"answer": "Still a lot."})),
        ScriptedReply::finish(json!({})),
        ScriptedReply::answer(json!({"answer": "3510 NOK."})),
    ]));
    let agent = ReAct::<Travel>::new()
        .tool(EurToNokTool)
        .with_lm(lm.clone())
        .with_mode(ReActMode::Text)
        .with_check("says NOK", typed_check);
    let out = agent.call(travel_question()).await.unwrap();
    assert_eq!(out.output.answer, "3510 NOK.");
    assert_eq!(out.usage.reasks, 2);
    // The second step's prompt shows the refusal as finish's observation.
    let second = &lm.requests()[1].messages[1].content;
    assert!(
        second.contains("The answer was not accepted:\nSay the amount in NOK."),
        "{second}"
    );
}

#[tokio::test]
async fn react_history_mode_refuses_a_submit() {
    let turn = |calls: &str| {
        signet::lm::Completion::text(format!(
            "[[ ## next_thought ## ]]\nGo.\n\n[[ ## tool_calls ## ]]\n{calls}\n\n[[ ## completed ## ]]"
        ))
    };
    let lm = Arc::new(ScriptedLm::new([
        turn(
            r#"{"tool_calls": [{"name": "submit", "args": {"answer": "300 EUR is 300.00 NOK."}}]}"#,
        ),
        turn(r#"{"tool_calls": [{"name": "eur_to_nok", "args": {"amount": 300}}]}"#),
        turn(r#"{"tool_calls": [{"name": "submit", "args": {"answer": "It is 3510.00 NOK."}}]}"#),
    ]));
    let agent = ReAct::<Travel>::new()
        .tool(EurToNokTool)
        .with_lm(lm.clone())
        .with_adapter(signet::adapter::ChatAdapter::new())
        .with_mode(ReActMode::History)
        .with_output_check(Grounded::new());
    let out = agent.call(travel_question()).await.unwrap();
    assert_eq!(out.output.answer, "It is 3510.00 NOK.");
    assert_eq!(out.trajectory.refused_answers.len(), 1);
    let refused_event = serde_json::Value::Object(out.trajectory.history[0].clone()).to_string();
    assert!(
        refused_event.contains("The answer was not accepted"),
        "{refused_event}"
    );
    assert!(
        !out.trajectory.history[0].contains_key("answer"),
        "the refused outputs are not kept"
    );
    // The second turn's request shows the model its refused submit.
    let second = lm.requests()[1]
        .messages
        .iter()
        .map(|m| m.content.to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(second.contains("The answer was not accepted"), "{second}");
}

#[tokio::test]
async fn predict_with_tools_refuses_a_text_answer() {
    let lm = Arc::new(
        ScriptedLm::replies([
            ScriptedReply::answer(json!({"answer": "300 EUR is 300.00 NOK."})),
            ScriptedReply::tool("eur_to_nok", json!({"amount": 300})),
            ScriptedReply::answer(json!({"answer": "3510.00 NOK"})),
        ])
        .with_capabilities(native()),
    );
    let qa = Predict::<Travel>::new()
        .tool(EurToNokTool)
        .with_lm(lm.clone())
        .with_output_check(Grounded::new());
    assert_eq!(
        qa.call(travel_question()).await.unwrap().answer,
        "3510.00 NOK"
    );
    let second = lm.requests()[1].messages.last().cloned().unwrap();
    assert_eq!(second.role, Role::User);
    assert!(second.content.contains("300.00 NOK"), "{}", second.content);
}

/// Two predictors: a draft, then the answer.
#[derive(signet::Module, Clone)]
struct Drafted {
    draft: Predict<OneWord>,
    answer: Predict<OneWord>,
}

impl Module for Drafted {
    type Input = OneWordInput;
    type Output = OneWordOutput;
    type Error = Error;

    async fn call(&self, input: OneWordInput) -> Result<OneWordOutput, Error> {
        let draft = self.draft.call(input).await?;
        self.answer
            .call(OneWordInput {
                question: draft.answer,
            })
            .await
    }
}

#[tokio::test]
async fn a_program_of_ones_own_reasks_with_every_predictor_hinted() {
    let lm = Arc::new(ScriptedLm::texts([
        chat("Brussels"),
        chat("It is Brussels"),
        chat("Brussels"),
        chat("Brussels"),
    ]));
    let program = Drafted {
        draft: Predict::new().with_lm(lm.clone()),
        answer: Predict::new().with_lm(lm.clone()),
    };
    let checked = Checked::new(program).with_check("one word", one_word);
    let out = checked.call(question()).await.unwrap();
    assert_eq!(out.answer, "Brussels");
    let requests = lm.requests();
    assert!(
        requests[2].messages[1]
            .content
            .contains("[[ ## hint_ ## ]]\nThe answer has 3 words")
    );
    assert!(
        requests[3].messages[1]
            .content
            .contains("[[ ## hint_ ## ]]\nThe answer has 3 words")
    );

    let lm = Arc::new(ScriptedLm::texts([
        chat("a"),
        chat("b c"),
        chat("a"),
        chat("b c"),
    ]));
    let program = Drafted {
        draft: Predict::new().with_lm(lm.clone()),
        answer: Predict::new().with_lm(lm),
    };
    let checked = Checked::new(program)
        .with_check("one word", one_word)
        .with_max_reasks(1);
    assert!(matches!(
        checked.call(question()).await,
        Err(CheckedError::Checks(f)) if f.attempts.len() == 2
    ));
}

#[tokio::test]
async fn a_streamed_reply_that_loops_is_stopped_early_and_reasked() {
    let looping = chat(&format!("Tomorrow: {}", "120 EUR is ".repeat(60)));
    let lm = Arc::new(ScriptedLm::texts([looping, chat("Brussels")]));
    let qa = Predict::<OneWord>::new()
        .with_lm(lm)
        .with_output_check(NoRepetition::new());
    let events: Vec<ReActEvent<OneWordOutput>> = qa.stream(question()).collect().await;
    let failed = events
        .iter()
        .find_map(|e| match e {
            ReActEvent::CheckFailed {
                stopped_early,
                reask,
                message,
                ..
            } => Some((*stopped_early, *reask, message.clone())),
            _ => None,
        })
        .expect("a check failure event");
    assert_eq!((failed.0, failed.1), (true, true), "{failed:?}");
    assert!(failed.2.contains("120 EUR is"), "{}", failed.2);
    // Stopped at the loop: far fewer answer pieces than the 60 repeats.
    let looped: String = events
        .iter()
        .filter_map(|e| match e {
            ReActEvent::AnswerDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(looped.matches("120 EUR").count() < 10, "{looped}");
    match events.last() {
        Some(ReActEvent::Done { output, usage, .. }) => {
            assert_eq!(output.answer, "Brussels");
            assert_eq!((usage.stopped_replies, usage.reasks), (1, 1));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_streamed_agent_answer_with_an_invented_figure_is_stopped_at_the_figure() {
    let long_tail = "and that is all there is to say about it ".repeat(30);
    let lm = Arc::new(
        ScriptedLm::replies([
            ScriptedReply::finish(json!({"answer": format!("300 EUR is 300.00 NOK {long_tail}")})),
            ScriptedReply::tool("eur_to_nok", json!({"amount": 300})),
            ScriptedReply::finish(json!({"answer": "3510.00 NOK"})),
        ])
        .with_capabilities(native()),
    );
    let agent = ReAct::<Travel>::new()
        .tool(EurToNokTool)
        .with_lm(lm)
        .with_mode(ReActMode::Native)
        .with_output_check(Grounded::new());
    let events: Vec<ReActEvent<TravelOutput>> = agent.stream(travel_question()).collect().await;
    let stopped = events.iter().any(|e| {
        matches!(e, ReActEvent::CheckFailed { stopped_early: true, check, .. } if check == "grounded")
    });
    assert!(stopped, "{events:#?}");
    match events.last() {
        Some(ReActEvent::Done {
            output, trajectory, ..
        }) => {
            assert_eq!(output.answer, "3510.00 NOK");
            let refused = &trajectory.refused_answers[0];
            assert!(refused.stopped_early);
            let written = refused.outputs["answer"].as_str().unwrap();
            assert!(written.len() < 60, "stopped near the figure: {written:?}");
        }
        other => panic!("{other:?}"),
    }
}

fn single_word(text: &str) -> Result<(), String> {
    match text.split_whitespace().count() {
        1 => Ok(()),
        n => Err(format!("{n} words; write one")),
    }
}

/// Answer in one word.
#[derive(Signature)]
struct Declared {
    #[input]
    question: String,
    #[output(check = single_word)]
    answer: String,
}

/// Answer with the tools.
#[derive(Signature)]
struct GroundedTravel {
    #[input]
    question: String,
    #[output(grounded)]
    answer: String,
}

#[tokio::test]
async fn checks_declared_on_a_signature_are_run_by_the_modules_built_on_it() {
    let lm = Arc::new(ScriptedLm::texts([
        chat("It is Brussels"),
        chat("Brussels"),
    ]));
    let qa = Predict::<Declared>::new().with_lm(lm.clone());
    let out = qa
        .call(DeclaredInput {
            question: "Capital of Belgium?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.answer, "Brussels");
    assert!(
        lm.requests()[1].messages[1]
            .content
            .contains("3 words; write one")
    );
    let checks = qa.predictor().checks().expect("the declared check");
    assert_eq!(checks.list()[0].name(), "single_word");

    let lm = Arc::new(
        ScriptedLm::replies([
            ScriptedReply::finish(json!({"answer": "300 EUR is 300.00 NOK."})),
            ScriptedReply::tool("eur_to_nok", json!({"amount": 300})),
            ScriptedReply::finish(json!({"answer": "3510.00 NOK"})),
        ])
        .with_capabilities(native()),
    );
    let agent = ReAct::<GroundedTravel>::new()
        .tool(EurToNokTool)
        .with_lm(lm)
        .with_mode(ReActMode::Native);
    let out = agent
        .call(GroundedTravelInput {
            question: "How much is 300 EUR in NOK?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "3510.00 NOK");
    assert_eq!(out.trajectory.refused_answers.len(), 1);
    // The extractor does not check on its own: the loop does, once.
    use signet::module::Predictors;
    assert!(
        agent
            .named_predictors()
            .iter()
            .all(|(_, p)| p.checks().is_none())
    );
    assert_eq!(agent.core().checks().unwrap().list()[0].name(), "grounded");
}
