//! Demo selection end to end: `KnnFewShot` gives every predictor the training set as demos and
//! each call shows only the nearest; the setting survives a saved program; a ReAct run picks its
//! demos by the question, not by its growing trajectory.

use std::sync::Arc;

use serde_json::json;
use signet::data::Example;
use signet::lm::{Capabilities, Completion, ToolCall};
use signet::module::{Predict, Predictors, ReAct, ReActMode, react::TOOL_TURNS};
use signet::optimize::KnnFewShot;
use signet::testing::ScriptedLm;
use signet::{Signature, tool};

/// Answer the question.
#[derive(Signature)]
struct Ask {
    #[input]
    question: String,
    #[output]
    answer: String,
}

fn train() -> Vec<Example> {
    [
        ("How much is 500 EUR in NOK?", "5850 NOK"),
        ("Weather in Oslo tomorrow?", "4 °C, rain"),
        ("Who wrote Peer Gynt?", "Ibsen"),
        ("Weather in Bergen tomorrow?", "7 °C, rain"),
    ]
    .iter()
    .map(|(q, a)| Example::new(json!({"question": q, "answer": a})).with_inputs(["question"]))
    .collect()
}

fn ask(question: &str) -> AskInput {
    AskInput {
        question: question.into(),
    }
}

/// The demo questions a request shows, in order.
fn shown(request: &signet::lm::LmRequest) -> Vec<String> {
    train()
        .iter()
        .filter_map(|e| {
            e.get("question")
                .and_then(|q| q.as_str())
                .map(str::to_owned)
        })
        .filter_map(|q| {
            let text: String = request
                .messages
                .iter()
                .map(|m| m.content.as_str())
                .collect();
            text.find(&q).map(|at| (at, q))
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_values()
        .collect()
}

#[tokio::test]
async fn a_knn_compiled_predictor_shows_each_call_its_nearest_demos_and_saves_the_setting() {
    let reply = || Completion::text("[[ ## answer ## ]]\nok\n\n[[ ## completed ## ]]");
    let lm = Arc::new(ScriptedLm::new([reply(), reply(), reply()]));
    let student = Predict::<Ask>::new().with_lm(lm.clone());
    let compiled = KnnFewShot::new(2)
        .most_similar_last(true)
        .compile(&student, &train())
        .await
        .unwrap();
    assert_eq!(compiled.report.pool, 4);
    assert_eq!(compiled.report.keys, ["question"]);
    let program = compiled.program;
    program
        .call(ask("Weather in Tromsø tomorrow?"))
        .await
        .unwrap();
    program
        .call(ask("How much is 80 EUR in NOK?"))
        .await
        .unwrap();
    let requests = lm.requests();
    // Oslo and Bergen are as near; the earlier one counts as nearer, so it comes last.
    assert_eq!(
        shown(&requests[0]),
        ["Weather in Bergen tomorrow?", "Weather in Oslo tomorrow?"]
    );
    assert_eq!(shown(&requests[1]).len(), 2);
    assert_eq!(
        shown(&requests[1])[1],
        "How much is 500 EUR in NOK?",
        "nearest last"
    );

    // Saved and loaded into a fresh program: the same pool, the same selection.
    let text = program.to_saved_json();
    let saved: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        saved["demo_selection"],
        json!({"nearest": 2, "keys": ["question"], "most_similar_last": true})
    );
    let mut loaded = Predict::<Ask>::new().with_lm(lm.clone());
    loaded.load_json(&text).unwrap();
    loaded
        .call(ask("Weather in Tromsø tomorrow?"))
        .await
        .unwrap();
    assert_eq!(lm.requests()[2].messages, requests[0].messages);
}

#[tokio::test]
async fn a_bad_demo_selection_in_a_saved_program_is_a_typed_error() {
    let program = Predict::<Ask>::new();
    let mut state: serde_json::Value = serde_json::from_str(&program.to_saved_json()).unwrap();
    state["demo_selection"] = json!({"nearest": "three"});
    let mut loaded = Predict::<Ask>::new();
    let error = loaded
        .load_json(&state.to_string())
        .unwrap_err()
        .to_string();
    assert!(error.contains("demo_selection"), "{error}");
}

/// Get tomorrow's forecast for a city.
#[tool]
fn forecast(city: String) -> String {
    format!("Tomorrow in {city}: 4 °C.")
}

#[tokio::test]
async fn a_native_react_run_picks_its_demos_by_the_question() {
    let agent = ReAct::<Ask>::new().tool(ForecastTool);
    let mut pool = Vec::new();
    for (question, city) in [
        ("Weather in Oslo tomorrow?", "Oslo"),
        ("Who wrote Peer Gynt?", ""),
    ] {
        let turns = if city.is_empty() {
            json!([])
        } else {
            agent
                .demo_turns([vec![("forecast", json!({"city": city}))]])
                .await
        };
        pool.push(
            Example::new(json!({"question": question, "answer": "a"}))
                .with_inputs(["question"])
                .with_label(TOOL_TURNS, turns),
        );
    }
    let lm = Arc::new(
        ScriptedLm::new([
            Completion::tool_calls(vec![ToolCall::new(
                "c1",
                "forecast",
                r#"{"city": "Bergen"}"#,
            )]),
            Completion::tool_calls(vec![ToolCall::new("c2", "finish", r#"{"answer": "4 °C"}"#)]),
        ])
        .with_capabilities(Capabilities::default().with_function_calling(true)),
    );
    let student = agent.with_mode(ReActMode::Native).with_lm(lm.clone());
    let compiled = KnnFewShot::new(1).compile(&student, &pool).await.unwrap();
    assert_eq!(compiled.report.predictors, ["react", "extract.predict"]);
    compiled
        .program
        .call(ask("Weather in Bergen tomorrow?"))
        .await
        .unwrap();
    // Both turns show the same demo: the forecast one, chosen by the question.
    for request in lm.requests() {
        assert_eq!(shown_in(&request), ["Weather in Oslo tomorrow?"]);
    }
}

fn shown_in(request: &signet::lm::LmRequest) -> Vec<&'static str> {
    ["Weather in Oslo tomorrow?", "Who wrote Peer Gynt?"]
        .into_iter()
        .filter(|q| request.messages.iter().any(|m| m.content.contains(q)))
        .collect()
}

#[test]
fn predictors_hold_the_whole_pool_and_the_report_says_so() {
    let compiled = KnnFewShot::new(1)
        .compile_blocking(&Predict::<Ask>::new(), &train())
        .unwrap();
    assert_eq!(compiled.program.predictor().demos().len(), 4);
    assert_eq!(
        compiled.report.to_string(),
        "4 demos in self; each call shows the 1 nearest on question"
    );
}
