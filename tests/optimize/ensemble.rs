//! `Ensemble` (DSPy's): members answering together, sampled as Python's `random.Random(seed)`
//! samples, the majority's answer or a reducer's, the members' predictors under DSPy's paths, and
//! what fails.

use signet::evaluate::majority;
use signet::module::Predictors;
use signet::optimize::{Ensemble, OptimizeError};
use signet::prelude::*;
use signet::testing::ScriptedLm;

use crate::support::{Ask, AskInput, AskOutput, answer_reply};

/// A member that answers `answer` to every call.
fn member(answer: &str) -> Predict<Ask> {
    let reply = answer_reply(answer);
    Predict::<Ask>::new().with_lm(signet::testing::FnLm::new(move |_| reply.clone()))
}

fn question() -> AskInput {
    AskInput {
        question: "Capital of France?".into(),
    }
}

#[tokio::test]
async fn the_majority_answers_and_a_sample_is_drawn_as_python_draws_it() {
    let all = Ensemble::new()
        .compile(vec![member("Lyon"), member("Paris"), member("paris")])
        .unwrap();
    assert_eq!(all.call(question()).await.unwrap().answer, "Paris");

    // random.Random(0).sample(range(5), 2) == [3, 4], then [0, 2].
    let members = (0..5).map(|i| member(&i.to_string())).collect();
    let sampled = Ensemble::new().with_size(2).compile(members).unwrap();
    let answers = |outs: Vec<AskOutput>| outs.into_iter().map(|o| o.answer).collect::<Vec<_>>();
    assert_eq!(
        answers(sampled.call_all(question()).await.unwrap()),
        ["3", "4"]
    );
    assert_eq!(
        answers(sampled.call_all(question()).await.unwrap()),
        ["0", "2"]
    );
    // Another seed, another sample: random.Random(7).sample(range(5), 2) == [2, 1].
    let members = (0..5).map(|i| member(&i.to_string())).collect();
    let seven = Ensemble::new()
        .with_size(2)
        .with_seed(7)
        .compile(members)
        .unwrap();
    assert_eq!(
        answers(seven.call_all(question()).await.unwrap()),
        ["2", "1"]
    );
}

#[tokio::test]
async fn a_reducer_of_yours_chooses_and_the_members_predictors_have_dspys_paths() {
    let ensembled = Ensemble::new()
        .compile(vec![member("a"), member("bb"), member("a")])
        .unwrap()
        .with_reduce(|outs: Vec<AskOutput>| {
            outs.into_iter().max_by_key(|o| o.answer.len()).unwrap()
        });
    assert_eq!(ensembled.call(question()).await.unwrap().answer, "bb");
    let names: Vec<String> = ensembled
        .named_predictors()
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    assert_eq!(names, ["programs[0]", "programs[1]", "programs[2]"]);
    // The majority helper it uses by default reads the last output field.
    let outs = [
        AskOutput { answer: "x".into() },
        AskOutput { answer: "y".into() },
    ];
    assert_eq!(majority(&outs, None).unwrap().answer, "x");
}

#[tokio::test]
async fn no_member_is_refused_and_a_failing_member_fails_the_call() {
    let none = Ensemble::new().compile(Vec::<Predict<Ask>>::new());
    assert!(matches!(none, Err(OptimizeError::Settings { .. })));
    // The second member's model has no reply left: its error is the call's.
    let broken = Predict::<Ask>::new().with_lm(ScriptedLm::texts(Vec::<String>::new()));
    let ensembled = Ensemble::new()
        .compile(vec![member("Paris"), broken])
        .unwrap();
    assert!(ensembled.call(question()).await.is_err());
}
