//! The travel agent's own check (`UsesItsTools` in `examples/shared/travel_model.rs`), on the
//! checked agent the examples run, with a scripted model: a question's missing calls are all
//! named in one refusal that offers their tools, and stop the answer on its first words; an
//! answer quoting the refusal is refused; a city the forecast does not know must be said.

use std::sync::Arc;

use serde_json::json;
use signet::lm::{Capabilities, Completion, ToolCall, ToolChoice};
use signet::prelude::*;
use signet::testing::{ScriptedLm, ScriptedReply};

// The travel example's tools, loaded once for the binary by `travel_metric`.
use crate::travel_metric::travel;
#[path = "../../examples/shared/travel_model.rs"]
#[allow(dead_code)]
mod travel_model;
use travel::{Notes, Travel, TravelInput};

/// `lm`, calling tools natively.
fn native(lm: ScriptedLm) -> Arc<ScriptedLm> {
    Arc::new(lm.with_capabilities(Capabilities::default().with_function_calling(true)))
}

/// The checked agent the examples run (two turns, every turn a call), on `lm`.
fn checked_agent(lm: &Arc<ScriptedLm>) -> ReAct<Travel> {
    let agent = travel_model::agent(
        lm.clone(),
        Arc::new(ChatAdapter::new()),
        true,
        &Arc::new(Notes::default()),
    );
    travel_model::checked(agent.with_mode(ReActMode::Native))
}

fn ask(question: &str) -> TravelInput {
    TravelInput {
        question: question.into(),
    }
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

#[tokio::test]
async fn an_answer_before_the_calls_is_stopped_naming_every_call_missing() {
    let lm = native(
        ScriptedLm::replies([ScriptedReply::finish(
            json!({"answer": "Tomorrow in Bergen: 7 °C. 80 EUR is 936.00 NOK."}),
        )])
        .then(Completion::tool_calls(vec![
            call("c1", "eur_to_nok", json!({"amount": "80"})),
            call("c2", "forecast", json!({"city": "Bergen"})),
        ]))
        .then_reply(ScriptedReply::finish(json!({
            "answer": "Tomorrow in Bergen: 7 °C, heavy rain. 80 EUR is 936.00 NOK."
        }))),
    );
    let out = checked_agent(&lm)
        .call(ask("€80 to kroner, and what's it like in Bergen tomorrow?"))
        .await
        .unwrap();
    assert_eq!(
        out.output.answer,
        "Tomorrow in Bergen: 7 °C, heavy rain. 80 EUR is 936.00 NOK."
    );
    let refused = &out.trajectory.refused_answers;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].stopped_early, "stopped on its first words");
    let failure = &refused[0].failures[0];
    assert_eq!(failure.check, "uses its tools");
    assert_eq!(
        failure.message,
        "Call eur_to_nok for €80 and forecast for Bergen before answering."
    );
    assert_eq!(failure.offer_tools, ["eur_to_nok", "forecast"]);
}

#[tokio::test]
async fn the_turn_after_a_missing_call_must_call_one_of_the_missing_tools() {
    let lm = native(ScriptedLm::replies([
        ScriptedReply::finish(json!({"answer": "300 EUR is 300.00 NOK."})),
        ScriptedReply::tool("eur_to_nok", json!({"amount": "300"})),
        ScriptedReply::finish(json!({"answer": "300 EUR is 3510.00 NOK."})),
    ]));
    let out = checked_agent(&lm)
        .call(ask("300 EUR -> NOK?"))
        .await
        .unwrap();
    assert_eq!(out.output.answer, "300 EUR is 3510.00 NOK.");
    assert_eq!(
        lm.requests()[1].tool_choice,
        Some(ToolChoice::OneOf(vec!["eur_to_nok".into()]))
    );
}

#[tokio::test]
async fn an_answer_quoting_the_refusal_is_refused() {
    let lm = native(ScriptedLm::replies([
        ScriptedReply::tool("eur_to_nok", json!({"amount": "70"})),
        ScriptedReply::finish(json!({
            "answer": "The answer was not accepted: In kroner: 70 EUR is 819.00 NOK."
        })),
        ScriptedReply::finish(json!({"answer": "In kroner: 70 EUR is 819.00 NOK."})),
    ]));
    let out = checked_agent(&lm)
        .call(ask("70 euros to kroner?"))
        .await
        .unwrap();
    assert_eq!(out.output.answer, "In kroner: 70 EUR is 819.00 NOK.");
    let refused = &out.trajectory.refused_answers;
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0].failures[0]
            .message
            .contains("do not repeat the feedback"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_city_without_a_forecast_must_be_said() {
    let lm = native(ScriptedLm::replies([
        ScriptedReply::tool("forecast", json!({"city": "Hamburg"})),
        ScriptedReply::finish(json!({"answer": "Tomorrow in Hamburg it will rain."})),
        ScriptedReply::finish(json!({"answer": "There is no forecast for Hamburg."})),
    ]));
    let out = checked_agent(&lm)
        .call(ask("Is it going to rain in Hamburg tomorrow?"))
        .await
        .unwrap();
    assert_eq!(out.output.answer, "There is no forecast for Hamburg.");
    let refused = &out.trajectory.refused_answers;
    assert_eq!(refused.len(), 1);
    assert_eq!(
        refused[0].failures[0].message,
        "Say what forecast returned: \"There is no forecast for Hamburg.\""
    );
}
