//! MultiChainComparison and majority: M completions compared in one more call (DSPy's prompt,
//! checked byte for byte by the parity fixture `b5`), completions it cannot compare as a typed
//! error, and the most common answer picked as DSPy's `majority` picks it.

use std::sync::Arc;

use signet::evaluate::{majority, majority_by};
use signet::lm::LmOptions;
use signet::module::{
    ChainOfThought, Completions, Module, MultiChainComparison, Predictors, Reasoned,
};
use signet::testing::ScriptedLm;
use signet::{Error, Signature};

/// Answer the question.
#[derive(Signature)]
struct QA {
    #[input]
    question: String,
    #[output]
    answer: String,
}

fn question() -> QAInput {
    QAInput {
        question: "Capital of Belgium?".into(),
    }
}

fn attempt(reasoning: &str, answer: &str) -> Reasoned<QAOutput> {
    Reasoned {
        reasoning: reasoning.into(),
        output: QAOutput {
            answer: answer.into(),
        },
    }
}

const COMPARED: &str = "[[ ## rationale ## ]]\nTwo of three say Brussels.\n\n[[ ## answer ## ]]\nBrussels\n\n[[ ## completed ## ]]";

#[tokio::test]
async fn chain_of_thought_completions_are_compared_in_one_more_call() {
    let cot_lm = ScriptedLm::texts(["Brussels", "Antwerp", "Brussels"].map(|a| {
        format!("[[ ## reasoning ## ]]\nI recall it.\nTwice.\n\n[[ ## answer ## ]]\n{a}\n\n[[ ## completed ## ]]")
    }));
    let cot = ChainOfThought::<QA>::new()
        .with_lm(cot_lm)
        .with_options(LmOptions::new().temperature(1.0));
    let mut completions = Vec::new();
    for _ in 0..3 {
        completions.push(cot.call(question()).await.unwrap());
    }
    // The most common answer, as dspy.majority picks it.
    assert_eq!(
        majority(&completions, None).unwrap().output.answer,
        "Brussels"
    );

    let lm = Arc::new(ScriptedLm::texts([COMPARED]));
    let compare = MultiChainComparison::<QA>::new(3).with_lm(lm.clone());
    let out = compare.compare(question(), &completions).await.unwrap();
    assert_eq!(out.rationale, "Two of three say Brussels.");
    assert_eq!(out.output.answer, "Brussels");
    let request = &lm.requests()[0];
    assert_eq!(request.options.temperature, Some(0.7));
    assert!(request.messages[1].content.contains(
        "[[ ## reasoning_attempt_2 ## ]]\n«I'm trying to I recall it. I'm not sure but my prediction is Antwerp»"
    ));
}

#[tokio::test]
async fn completions_it_cannot_compare_are_a_typed_error_and_nothing_is_sent() {
    let lm = Arc::new(ScriptedLm::texts([COMPARED]));
    let compare = MultiChainComparison::<QA>::new(3).with_lm(lm.clone());
    let two = [attempt("a", "x"), attempt("b", "y")];
    let error = compare.compare(question(), &two).await.unwrap_err();
    assert!(
        matches!(&error, Error::Completions { message } if message.contains("2 completions were given")),
        "{error:?}"
    );
    let no_reasoning = [
        serde_json::json!({"reasoning": "a", "answer": "x"}),
        serde_json::json!({"answer": "y"}),
        serde_json::json!({"rationale": "c", "answer": "z"}),
    ];
    let error = compare
        .compare(question(), &no_reasoning)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "cannot compare the completions: completion 2 has no `reasoning`"
    );
    assert!(lm.requests().is_empty());
}

#[tokio::test]
async fn as_a_module_it_takes_the_input_and_the_completions_and_is_saved_under_predict() {
    let compare = MultiChainComparison::<QA>::new(2).with_lm(ScriptedLm::texts([COMPARED]));
    let completions = [attempt("a", "Brussels"), attempt("b", "Brussels")]
        .iter()
        .map(|c| match serde_json::to_value(c).unwrap() {
            serde_json::Value::Object(fields) => fields,
            _ => unreachable!("a struct serializes to an object"),
        })
        .collect();
    let out = compare
        .call(Completions {
            input: question(),
            completions,
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "Brussels");
    let names: Vec<_> = compare
        .named_predictors()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["predict"]);
    let state = compare.dump_state();
    let fields = state["predict"]["signature"]["fields"].as_array().unwrap();
    assert_eq!(fields[1]["prefix"], "Student Attempt #1:");
    assert_eq!(
        fields[3]["prefix"],
        "Accurate Reasoning: Thank you everyone. Let's now holistically"
    );
}

#[test]
fn majority_normalizes_ignores_empty_answers_and_breaks_ties_by_order() {
    let outs = [
        attempt("1", "The Brussels."),
        attempt("2", ""),
        attempt("3", "antwerp"),
        attempt("4", "brussels"),
        attempt("5", "Antwerp"),
    ];
    // "brussels" (DSPy's normalize_text drops articles, case and punctuation) and "antwerp" tie
    // at two; the value seen first wins, and its first completion is returned.
    assert_eq!(majority(&outs, Some("answer")).unwrap().reasoning, "1");
    assert!(majority::<Reasoned<QAOutput>>(&[], None).is_none());
    let lengths = majority_by(&outs, |o| Some(o.output.answer.len().to_string()));
    assert_eq!(lengths.unwrap().reasoning, "3");
}
