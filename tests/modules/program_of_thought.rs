//! `ProgramOfThought` (DSPy's, on JavaScript in `signet-sandbox`) on a scripted model: code that
//! fails is corrected with its error shown, the code's submitted value reaches the answer step,
//! and a model that never writes working code fails the call with a typed error.

use signet::module::{Module, Predictors, ProgramOfThought, ProgramOfThoughtError};
use signet::testing::ScriptedLm;

use crate::support::{Ask, AskInput};

fn code(text: &str) -> String {
    format!(
        "[[ ## reasoning ## ]]\nCompute it.\n\n[[ ## generated_code ## ]]\n```javascript\n{text}\n```"
    )
}

fn question() -> AskInput {
    AskInput {
        question: "What is 17 * 23 + 4?".into(),
    }
}

#[tokio::test]
async fn failing_code_is_corrected_with_its_error_and_the_output_reaches_the_answer() {
    let lm = std::sync::Arc::new(ScriptedLm::texts([
        code("const product = multiply(17, 23)\nSUBMIT({answer: product + 4})"),
        code("const product = 17 * 23\nconst answer = product + 4"),
        "[[ ## reasoning ## ]]\nThe code computed 395.\n\n[[ ## answer ## ]]\n395".to_owned(),
    ]));
    let pot = ProgramOfThought::<Ask>::new().with_lm(lm.clone());
    let out = pot.call(question()).await.unwrap();
    assert_eq!(out.answer, "395");
    let requests = lm.requests();
    assert_eq!(requests.len(), 3);
    // The correction step is shown the code and the engine's error.
    let correction = requests[1].messages.last().unwrap().content.as_str();
    assert!(correction.contains("multiply(17, 23)"), "{correction}");
    assert!(correction.contains("ReferenceError"), "{correction}");
    assert!(
        requests[1].messages[0]
            .content
            .contains("due to an error in previous code"),
        "DSPy's instruction"
    );
    // The answer step reads the code (with its trailing assignment's value) and its output.
    let answer = requests[2].messages.last().unwrap().content.as_str();
    assert!(
        answer.contains("const answer = product + 4\nanswer"),
        "{answer}"
    );
    assert!(answer.contains("[[ ## code_output ## ]]\n395"), "{answer}");
    let names: Vec<String> = pot
        .named_predictors()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(
        names,
        [
            "code_generate.predict",
            "code_regenerate.predict",
            "generate_output.predict"
        ]
    );
}

#[tokio::test]
async fn code_that_never_runs_fails_after_max_iters_with_the_last_error() {
    let lm = ScriptedLm::texts([code("while (true) {"), code("throw new Error('no')")]);
    let pot = ProgramOfThought::<Ask>::new().with_lm(lm).with_max_iters(2);
    match pot.call(question()).await {
        Err(ProgramOfThoughtError::MaxIters { tries, code, error }) => {
            assert_eq!(tries, 2);
            assert!(code.contains("throw new Error"));
            assert!(error.contains("no"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}
