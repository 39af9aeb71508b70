//! The travel agent's answer metric (`examples/shared/travel_metric.rs`) rejects every answer a
//! user would call wrong — the failures seen on the 135M model among them — and accepts the
//! ways a right answer is written. The compiled agent it ships (`examples/travel_agent.json`)
//! holds no demo it rejects.

use serde_json::{Value, json};
use signet::data::{Dataset, Example};

#[path = "../../examples/shared/travel.rs"]
#[allow(dead_code)]
pub(crate) mod travel;
#[path = "../../examples/shared/travel_metric.rs"]
// The example, inside the test module named after it.
#[allow(dead_code, clippy::module_inception)]
mod travel_metric;
use travel_metric::{Case, Kind, wrong_answer, wrong_tool_calls};

fn case(example: Value) -> Case {
    Case::of(&Example::new(example)).expect("a valid example")
}

fn both(city: &str, amount: f64) -> Case {
    case(json!({"question": "q", "kind": "both", "city": city, "amount": amount}))
}

fn assert_right(case: &Case, answer: &str) {
    let wrong = wrong_answer(case, answer);
    assert!(wrong.is_empty(), "{answer:?} is right, but: {wrong:?}");
}

/// The answer is rejected, with feedback that mentions `why`.
fn assert_wrong(case: &Case, answer: &str, why: &str) {
    let wrong = wrong_answer(case, answer);
    assert!(
        wrong.iter().any(|w| w.contains(why)),
        "{answer:?} must be rejected for {why:?}; got {wrong:?}"
    );
}

#[test]
fn right_answers_are_accepted_however_they_are_written() {
    let oslo = both("Oslo", 200.0);
    assert_right(
        &oslo,
        "Tomorrow in Oslo: 4 °C, light rain. 200 EUR is 2340.0 NOK.",
    );
    assert_right(
        &oslo,
        "Light rain and 4°C in Oslo tomorrow; 200 euros = 2,340 kroner.",
    );
    assert_right(
        &oslo,
        "Oslo tomorrow: 4 degrees, light rain. €200 is NOK 2340.",
    );
    let tromso = case(json!({"question": "q", "kind": "forecast", "city": "Tromsø"}));
    assert_right(&tromso, "Tomorrow in Tromsø: -3 °C, snow.");
    assert_right(&tromso, "Snow in Tromsø tomorrow, minus 3 degrees.");
    let convert = case(json!({"question": "q", "kind": "convert", "amount": 19.99}));
    assert_right(&convert, "19.99 EUR is 233.88 NOK.");
    assert_right(&convert, "19.99 EUR is about 233.9 kroner.");
    let paris = case(json!({"question": "q", "kind": "unknown_city", "city": "Paris"}));
    assert_right(&paris, "There is no forecast for Paris.");
    let rome = case(json!({"question": "q", "kind": "unknown_city", "city": "Rome", "amount": 50}));
    assert_right(
        &rome,
        "I don't have a forecast for Rome. 50 EUR is 585.0 NOK.",
    );
    let capital = case(json!({"question": "q", "kind": "off_topic", "accept": ["Oslo"]}));
    assert_right(&capital, "The capital of Norway is Oslo.");
    assert_right(
        &capital,
        "Sorry, I can only help with tomorrow's weather and euro to kroner conversions.",
    );
}

#[test]
fn the_wrong_answers_the_small_model_gave_are_rejected() {
    // The README's question, answered by the first compiled agent.
    let oslo = both("Oslo", 200.0);
    let answer = "Tomorrow in Oslo: 2340.0 NOK is 2340.0 EUR.";
    assert_wrong(&oslo, answer, "states 2340.0 EUR");
    assert_wrong(&oslo, answer, "does not state the temperature");
    assert_wrong(&oslo, answer, "does not state the condition");
    // Demos the tool-call metric accepted.
    assert_wrong(
        &both("Bodø", 75.0),
        "Tomorrow in Bodø: 1 °C, sleet. 877.5 NOK is 100.0 NOK.",
        "states 100.0 NOK",
    );
    assert_wrong(
        &both("Kristiansand", 1500.0),
        "Tomorrow in Kristiansand: 17550.0 NOK is 17550.0 EUR.",
        "states 17550.0 EUR",
    );
    let looping = "Tomorrow in Ålesund: 5265.0 NOK is 5265.0 NOK. 6 °C is 6 °C is 5265.0 NOK is \
                   5265.0 NOK is 6 °C is 6 °C is";
    assert_wrong(&both("Ålesund", 450.0), looping, "repeats itself");
    let question = "What is tomorrow's weather in Oslo, and how much is 200 EUR in NOK?";
    assert_wrong(&oslo, question, "does not state the kroner");
}

#[test]
fn answers_that_state_what_no_tool_said_are_rejected() {
    let narvik = case(json!({"question": "q", "kind": "forecast", "city": "Narvik"}));
    assert_wrong(
        &narvik,
        "Tomorrow in Narvik: -2 °C, snow showers. 100 EUR is 1170.0 NOK.",
        "states 100 EUR",
    );
    let tromso = case(json!({"question": "q", "kind": "forecast", "city": "Tromsø"}));
    assert_wrong(&tromso, "Tomorrow in Tromsø: 3 °C, snow.", "states 3 °C");
    let paris = case(json!({"question": "q", "kind": "unknown_city", "city": "Paris"}));
    assert_wrong(
        &paris,
        "Tomorrow in Paris: 12 °C, sunny.",
        "no forecast for Paris",
    );
    assert_wrong(&paris, "Tomorrow in Paris: 12 °C, sunny.", "states 12 °C");
    let capital = case(json!({"question": "q", "kind": "off_topic", "accept": ["Oslo"]}));
    assert_wrong(
        &capital,
        "The capital of Norway is Bergen.",
        "neither answers",
    );
    let convert = case(json!({"question": "q", "kind": "convert", "amount": 40}));
    assert_wrong(&convert, "40 EUR is 468.5 NOK.", "states 468.5 NOK");
    assert_wrong(&convert, "40 EUR is 40 EUR.", "does not state the kroner");
    assert_right(&convert, "468.00 NOK.");
}

#[test]
fn a_question_that_needs_one_tool_uses_that_tool_only() {
    let city = json!({"city": "Narvik"});
    let amount = json!({"amount": 100});
    let narvik = case(json!({"question": "q", "kind": "forecast", "city": "Narvik"}));
    assert!(wrong_tool_calls(&narvik, [("forecast", &city), ("finish", &json!({}))]).is_empty());
    let both_calls = wrong_tool_calls(&narvik, [("forecast", &city), ("eur_to_nok", &amount)]);
    assert_eq!(
        both_calls,
        ["called eur_to_nok, which the question does not need"]
    );
    let off_topic = case(json!({"question": "q", "kind": "off_topic", "accept": []}));
    assert_eq!(
        wrong_tool_calls(&off_topic, [("forecast", &json!({"city": "Norrboten"}))]),
        ["called forecast, which the question does not need"]
    );
    let convert = case(json!({"question": "q", "kind": "convert", "amount": 100}));
    assert_eq!(
        wrong_tool_calls(&convert, [("eur_to_nok", &json!({"amount": 10}))]),
        ["no eur_to_nok call with amount 100.0"]
    );
}

#[test]
fn every_question_of_the_data_is_a_valid_case_and_every_kind_is_covered() {
    for (file, min) in [
        ("travel_train.jsonl", 36),
        ("travel_dev.jsonl", 24),
        ("travel_test.jsonl", 24),
        ("travel_unseen.jsonl", 60),
        ("travel_fresh.jsonl", 60),
    ] {
        let path = format!("{}/examples/data/{file}", env!("CARGO_MANIFEST_DIR"));
        let data = Dataset::from_jsonl(&path, &["question"]).unwrap();
        assert!(data.len() >= min, "{file}: {} questions", data.len());
        let cases: Vec<Case> = data.iter().map(|e| Case::of(e).unwrap()).collect();
        for kind in Kind::ALL {
            assert!(
                cases.iter().filter(|c| c.kind == kind).count() >= 4,
                "{file} has few {} questions",
                kind.name()
            );
        }
        for case in cases.iter().filter(|c| c.kind == Kind::UnknownCity) {
            let city = case.city.as_deref().unwrap();
            assert!(travel::forecast_for(city).is_none(), "{city} is known");
        }
    }
}

#[test]
fn no_held_out_question_is_in_the_data_demos_are_chosen_from() {
    let questions = |file: &str| -> Vec<String> {
        let path = format!("{}/examples/data/{file}", env!("CARGO_MANIFEST_DIR"));
        let data = Dataset::from_jsonl(&path, &["question"]).unwrap();
        data.iter()
            .map(|e| {
                e.get("question")
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_lowercase()
            })
            .collect()
    };
    let mut shaped = questions("travel_train.jsonl");
    shaped.extend(questions("travel_dev.jsonl"));
    for file in [
        "travel_test.jsonl",
        "travel_unseen.jsonl",
        "travel_fresh.jsonl",
    ] {
        for question in questions(file) {
            assert!(
                !shaped.contains(&question),
                "{file}: {question:?} is trained on"
            );
        }
    }
}

#[test]
fn the_shipped_agent_holds_no_demo_the_metric_rejects() {
    let root = env!("CARGO_MANIFEST_DIR");
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{root}/examples/travel_agent.json")).unwrap(),
    )
    .unwrap();
    let train = Dataset::from_jsonl(
        format!("{root}/examples/data/travel_train.jsonl"),
        &["question"],
    )
    .unwrap();
    let mut demos = 0;
    for (name, predictor) in saved.as_object().unwrap() {
        for demo in predictor["demos"].as_array().into_iter().flatten() {
            demos += 1;
            let question = demo["question"].as_str().unwrap();
            let example = train
                .iter()
                .find(|e| e.get("question").and_then(Value::as_str) == Some(question))
                .unwrap_or_else(|| {
                    panic!("{name}: a demo of a question not in the training data: {question}")
                });
            let case = Case::of(example).unwrap();
            let calls: Vec<(&str, &Value)> = demo["tool_turns"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|turn| turn.as_array().into_iter().flatten())
                .map(|call| (call["name"].as_str().unwrap(), &call["args"]))
                .collect();
            let mut wrong = wrong_tool_calls(&case, calls);
            wrong.extend(wrong_answer(
                &case,
                demo["answer"].as_str().unwrap_or_default(),
            ));
            assert!(
                wrong.is_empty(),
                "{name}: the demo for {question:?} is wrong: {wrong:?}"
            );
        }
    }
    assert!(demos > 0, "the shipped agent has demos");
}
