//! Optimizers on toy tasks whose right demos are known: LabeledFewShot's Python-identical
//! samples, BootstrapFewShot keeping only accepted runs (for every predictor of a program, and for
//! native ReAct runs), the random search keeping its best candidate; errors and teachers.

use crate::support;

use std::sync::Arc;

use serde_json::{Value, json};
use signet::adapter::Fields;
use signet::data::Example;
use signet::evaluate::{Progress, exact_match};
use signet::module::{Predictors, react::TOOL_TURNS};
use signet::optimize::{
    BootstrapFewShot, BootstrapFewShotWithRandomSearch, LabeledFewShot, OptimizeError,
};
use signet::prelude::*;
use signet::testing::{ScriptedLm, ScriptedReply};
use support::{Ask, AskInput, AskOutput, RuleLm, answers, field_in, operand, sums};

fn questions(demos: &[Fields]) -> Vec<&str> {
    demos
        .iter()
        .map(|d| d["question"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn labeled_few_shot_samples_as_python_does() {
    // Python: r = random.Random(0); r.sample(range(5), 3), r.sample(range(5), 3)
    //         == [3, 4, 0], [2, 3, 1]  (one generator across the predictors)
    #[derive(Module, Clone)]
    struct Two {
        first: Predict<Ask>,
        second: Predict<Ask>,
    }
    let program = Two {
        first: Predict::new(),
        second: Predict::new(),
    };
    let trainset = sums(5);
    let compiled = LabeledFewShot::new(3)
        .compile(&program, &trainset)
        .await
        .unwrap();
    assert_eq!(
        questions(compiled.program.first.predictor().demos()),
        ["3 + 3?", "4 + 4?", "0 + 0?"]
    );
    assert_eq!(
        questions(compiled.program.second.predictor().demos()),
        ["2 + 2?", "3 + 3?", "1 + 1?"]
    );
    // Demos are whole examples: inputs and labels.
    assert_eq!(compiled.program.first.predictor().demos()[0]["answer"], "6");
    let first_k = LabeledFewShot::new(2)
        .without_sampling()
        .compile(&program, &trainset)
        .await
        .unwrap();
    assert_eq!(
        questions(first_k.program.first.predictor().demos()),
        ["0 + 0?", "1 + 1?"]
    );
    let all = LabeledFewShot::new(16)
        .compile_blocking(&program, &trainset)
        .unwrap();
    assert_eq!(all.program.first.predictor().demos().len(), 5);
}

#[tokio::test]
async fn labeled_few_shot_reports_which_examples_each_predictor_got() {
    #[derive(Module, Clone)]
    struct Two {
        first: Predict<Ask>,
        second: Predict<Ask>,
    }
    let program = Two {
        first: Predict::new(),
        second: Predict::new(),
    };
    let compiled = LabeledFewShot::new(3)
        .compile(&program, &sums(5))
        .await
        .unwrap();
    assert_eq!(
        compiled.report.demos,
        [
            ("first".to_owned(), vec![3, 4, 0]),
            ("second".to_owned(), vec![2, 3, 1])
        ]
    );
    assert_eq!(
        compiled.report.to_string(),
        "first: training examples 3, 4, 0; second: training examples 2, 3, 1"
    );
    let empty = LabeledFewShot::new(3).compile(&program, &[]).await.unwrap();
    assert_eq!(
        empty.report.to_string(),
        "first: no demos; second: no demos"
    );
}

#[tokio::test]
async fn bootstrap_keeps_only_runs_the_metric_accepts() {
    // Right for 1, 2, 4, 5 and 7: the first two accepted runs (1 and 2) become demos.
    let lm = RuleLm::new(answers(|i| [1, 2, 4, 5, 7].contains(&i)));
    let student = Predict::<Ask>::new().with_lm(lm.clone());
    let trainset = sums(8);
    let compiled = BootstrapFewShot::new(exact_match("answer"))
        .with_max_bootstrapped_demos(2)
        .with_max_labeled_demos(4)
        .with_concurrency(3)
        .compile(&student, &trainset)
        .await
        .unwrap();
    let demos = compiled.program.predictor().demos();
    // Bootstrapped first (augmented, the model's own answers), then labeled demos drawn from the
    // examples that did not bootstrap: Python's Random(0) shuffles [0, 3, 4, 5, 6, 7] into
    // [6, 4, 3, 0, 7, 5], and Random(0).sample(.., 2) picks [0, 5].
    assert_eq!(questions(demos), ["1 + 1?", "2 + 2?", "0 + 0?", "5 + 5?"]);
    assert_eq!(demos[0]["augmented"], true);
    assert_eq!(demos[0].keys().next().unwrap(), "augmented");
    assert!(demos[2].get("augmented").is_none());
    let report = &compiled.report;
    assert_eq!(report.bootstrapped, 2);
    assert_eq!(report.examples_tried, 3);
    assert_eq!(report.demos, [("self".to_owned(), 2, 2)]);
    assert!(report.errors.is_empty());

    // The teacher (labeled demos: Random(0).sample(range(8), 4) == [6, 7, 3, 0]) never sees the
    // example it runs on among its demos.
    let requests = lm.requests();
    let teacher_for_zero = requests
        .iter()
        .find(|r| r.messages.last().unwrap().content.contains("0 + 0?"))
        .unwrap();
    let shown: Vec<&str> = teacher_for_zero.messages[1..teacher_for_zero.messages.len() - 1]
        .iter()
        .filter_map(|m| field_in(&m.content, "question"))
        .collect();
    assert_eq!(shown, ["6 + 6?", "7 + 7?", "3 + 3?"]);
}

#[tokio::test]
async fn concurrency_does_not_change_the_demos() {
    let trainset = sums(10);
    let mut picked = Vec::new();
    for concurrency in [1, 4, 10] {
        let lm = RuleLm::new(answers(|i| i % 3 != 0));
        let student = Predict::<Ask>::new().with_lm(lm);
        let compiled = BootstrapFewShot::new(exact_match("answer"))
            .with_max_bootstrapped_demos(3)
            .with_max_labeled_demos(5)
            .with_concurrency(concurrency)
            .compile(&student, &trainset)
            .await
            .unwrap();
        picked.push(compiled.program.predictor().demos().to_vec());
    }
    assert_eq!(picked[0], picked[1]);
    assert_eq!(picked[0], picked[2]);
    assert_eq!(questions(&picked[0])[..3], ["1 + 1?", "2 + 2?", "4 + 4?"]);
}

/// Two steps: a draft, then a check of the draft. Only the final answer has a label.
#[derive(Module, Clone)]
struct DraftThenCheck {
    draft: Predict<Ask>,
    check: ChainOfThought<Ask>,
}

impl Module for DraftThenCheck {
    type Input = AskInput;
    type Output = AskOutput;
    type Error = signet::Error;

    async fn call(&self, input: AskInput) -> Result<AskOutput, signet::Error> {
        let draft = self.draft.call(input.clone()).await?;
        let question = format!("{} Draft: {}", input.question, draft.answer);
        Ok(self.check.call(AskInput { question }).await?.output)
    }
}

#[tokio::test]
async fn every_predictor_of_a_program_gets_demos_from_accepted_runs() {
    // The draft is right for even operands; the check repeats the draft with reasoning.
    let lm = RuleLm::new(|message: &str| {
        let question = field_in(message, "question")?;
        let i: usize = question.split(' ').next()?.parse().ok()?;
        match question.split_once("Draft: ") {
            Some((_, draft)) => Some(format!(
                "[[ ## reasoning ## ]]\nchecked\n\n[[ ## answer ## ]]\n{draft}"
            )),
            None => Some(format!(
                "[[ ## answer ## ]]\n{}",
                if i.is_multiple_of(2) {
                    2 * i
                } else {
                    2 * i + 1
                }
            )),
        }
    });
    let program = DraftThenCheck {
        draft: Predict::new().with_lm(lm.clone()),
        check: ChainOfThought::new().with_lm(lm.clone()),
    };
    let trainset = sums(6);
    let compiled = BootstrapFewShot::new(exact_match("answer"))
        .with_max_bootstrapped_demos(2)
        .with_max_labeled_demos(2)
        .compile(&program, &trainset)
        .await
        .unwrap();
    let draft = compiled.program.draft.predictor().demos();
    let check = compiled.program.check.predictor().demos();
    assert_eq!(questions(draft), ["0 + 0?", "2 + 2?"]);
    assert_eq!(draft[1]["answer"], "4");
    // The intermediate step's demo holds what it was given and said, though nothing labels it.
    assert_eq!(questions(check), ["0 + 0? Draft: 0", "2 + 2? Draft: 4"]);
    assert_eq!(check[0]["reasoning"], "checked");
    assert_eq!(
        compiled.report.demos,
        [
            ("draft".to_owned(), 2, 0),
            ("check.predict".to_owned(), 2, 0)
        ]
    );
}

#[tokio::test]
async fn failed_runs_are_reported_and_too_many_stop_the_bootstrap() {
    // Operand 1 hits a server error; the rest are right.
    let lm = RuleLm::new(|m: &str| {
        (operand(m) != Some(1))
            .then(|| answers(|_| true)(m))
            .flatten()
    });
    let student = Predict::<Ask>::new().with_lm(lm);
    let trainset = sums(5);
    let compiled = BootstrapFewShot::new(exact_match("answer"))
        .with_max_bootstrapped_demos(3)
        .with_max_labeled_demos(0)
        .with_concurrency(1)
        .compile(&student, &trainset)
        .await
        .unwrap();
    assert_eq!(
        questions(compiled.program.predictor().demos()),
        ["0 + 0?", "2 + 2?", "3 + 3?"]
    );
    assert_eq!(compiled.report.errors.len(), 1);
    assert_eq!(compiled.report.errors[0].0, 1);

    let down = Predict::<Ask>::new().with_lm(RuleLm::new(|_: &str| None));
    let err = BootstrapFewShot::new(exact_match("answer"))
        .with_max_errors(2)
        .with_concurrency(1)
        .compile(&down, &trainset)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, OptimizeError::TooManyErrors { errors: 2, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("scripted outage"), "{err}");
}

#[tokio::test]
async fn a_teacher_lm_writes_the_demos() {
    let weak = RuleLm::new(answers(|_| false));
    let strong = RuleLm::new(answers(|_| true));
    let student = Predict::<Ask>::new().with_lm(weak.clone());
    let trainset = sums(3);
    let compiled = BootstrapFewShot::new(exact_match("answer"))
        .with_max_labeled_demos(0)
        .with_teacher_lm(strong.clone())
        .compile(&student, &trainset)
        .await
        .unwrap();
    assert_eq!(compiled.program.predictor().demos().len(), 3);
    assert!(weak.requests().is_empty());
    assert_eq!(strong.requests().len(), 3);

    // A teacher of another shape is refused.
    let student = Ensemble {
        members: vec![Predict::new()],
    };
    let teacher = Ensemble {
        members: vec![Predict::new(), Predict::new()],
    };
    let err = BootstrapFewShot::new(exact_match("answer"))
        .compile_with_teacher(&student, &teacher, &trainset)
        .await
        .unwrap_err();
    assert!(
        matches!(err, OptimizeError::TeacherMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains(r#"["members[0]"]"#), "{err}");
}

/// Predictors in a list; the first answers.
#[derive(Module, Clone, Debug)]
struct Ensemble {
    members: Vec<Predict<Ask>>,
}

impl Module for Ensemble {
    type Input = AskInput;
    type Output = AskOutput;
    type Error = signet::Error;

    async fn call(&self, input: AskInput) -> Result<AskOutput, signet::Error> {
        self.members[0].call(input).await
    }
}

#[tokio::test]
async fn later_rounds_sample_at_temperature_one_with_a_seed() {
    // Wrong at temperature 0, right when sampled: the second round bootstraps.
    let scripted = Arc::new(ScriptedLm::texts([
        "[[ ## answer ## ]]\n1",
        "[[ ## answer ## ]]\n0",
    ]));
    let student = Predict::<Ask>::new().with_lm(scripted.clone());
    let trainset = sums(1);
    let compiled = BootstrapFewShot::new(exact_match("answer"))
        .with_max_labeled_demos(0)
        .with_max_rounds(2)
        .compile(&student, &trainset)
        .await
        .unwrap();
    assert_eq!(compiled.report.attempts, 2);
    assert_eq!(compiled.report.bootstrapped, 1);
    let requests = scripted.requests();
    assert_eq!(requests[0].options.temperature, None);
    assert_eq!(requests[1].options.temperature, Some(1.0));
    assert_eq!(requests[1].options.seed, Some(1));
    // The student keeps its own settings.
    assert_eq!(compiled.program.predictor().options().temperature, None);
}

#[tokio::test]
async fn random_search_keeps_the_best_candidate_and_reports_every_score() {
    // Right only for operands 0 and 1: demos do not change this LM's answers, so every
    // candidate scores the same and the first (zero-shot) one is kept.
    let lm = RuleLm::new(answers(|i| i < 2));
    let student = Predict::<Ask>::new().with_lm(lm);
    let trainset = sums(6);
    let valset = sums(4);
    let compiled = BootstrapFewShotWithRandomSearch::new(exact_match("answer"))
        .with_candidates(2)
        .with_max_bootstrapped_demos(2)
        .with_max_labeled_demos(3)
        .with_progress(Progress::Off)
        .compile(&student, &trainset, &valset)
        .await
        .unwrap();
    let seeds: Vec<i64> = compiled.report.candidates.iter().map(|c| c.seed).collect();
    assert_eq!(seeds, [-3, -2, -1, 0, 1]);
    assert!(compiled.report.candidates.iter().all(|c| c.score == 50.0));
    assert_eq!(compiled.report.best_seed, -3);
    assert!(compiled.program.predictor().demos().is_empty());
    let labeled = &compiled.report.candidates[1];
    assert_eq!(labeled.program.predictor().demos().len(), 3);
    assert_eq!(labeled.subscores, [1.0, 1.0, 0.0, 0.0]);
}

#[tokio::test]
async fn random_search_prefers_the_candidate_whose_demos_help() {
    // This LM answers right only when its prompt has at least two demos.
    let lm = Arc::new(DemoCounting);
    let student = Predict::<Ask>::new().with_lm(lm);
    let trainset = sums(6);
    let compiled = BootstrapFewShotWithRandomSearch::new(exact_match("answer"))
        .with_candidates(3)
        .with_max_bootstrapped_demos(3)
        .with_max_labeled_demos(3)
        .with_stop_at_score(100.0)
        .with_progress(Progress::Off)
        .compile(&student, &trainset, &trainset)
        .await
        .unwrap();
    let best = &compiled.report.candidates[0];
    assert_eq!(best.score, 100.0);
    assert_eq!(compiled.report.best_seed, -2);
    // Stopped at the first perfect score: zero-shot, then labeled.
    assert_eq!(compiled.report.candidates.len(), 2);
    assert_eq!(compiled.program.predictor().demos().len(), 3);
}

/// Right when the prompt holds at least two demos (a user/assistant pair each).
struct DemoCounting;

impl signet::lm::Lm for DemoCounting {
    fn complete<'a>(
        &'a self,
        request: &'a signet::lm::LmRequest,
    ) -> futures::future::BoxFuture<'a, Result<signet::lm::Completion, signet::lm::LmError>> {
        Box::pin(async move {
            let last = &request.messages.last().unwrap().content;
            let i = operand(last).unwrap_or(0);
            let demos = (request.messages.len() - 2) / 2;
            let value = if demos >= 2 { 2 * i } else { 2 * i + 1 };
            Ok(signet::lm::Completion::text(format!(
                "[[ ## answer ## ]]\n{value}"
            )))
        })
    }

    fn model(&self) -> &str {
        "demo-counting"
    }
}

#[tokio::test]
async fn native_react_runs_become_tool_turn_demos_that_prompts_show() {
    // A native run: add(2, 2), then finish with the answer.
    let lm = Arc::new(
        ScriptedLm::replies([
            ScriptedReply::tool("add", json!({"a": 2, "b": 2})),
            ScriptedReply::finish(json!({"answer": "4"})),
        ])
        .with_capabilities(signet::lm::Capabilities::default().with_function_calling(true)),
    );
    let agent = ReAct::<Ask>::new()
        .tool(support::AddTool)
        .with_lm(lm.clone());
    let trainset: Vec<Example> = vec![
        Example::new(json!({"question": "What is 2 + 2?", "answer": "4"}))
            .with_inputs(["question"]),
    ];
    let compiled = BootstrapFewShot::new(exact_match("answer"))
        .with_max_labeled_demos(0)
        .compile(&agent, &trainset)
        .await
        .unwrap();
    let demos = compiled.program.named_predictors()[0].1.demos().to_vec();
    assert_eq!(demos.len(), 1);
    assert_eq!(
        Value::Object(demos[0].clone()),
        json!({
            "augmented": true,
            "question": "What is 2 + 2?",
            TOOL_TURNS: [[{"name": "add", "args": {"a": 2, "b": 2}, "observation": 4}]],
            "answer": "4",
        })
    );

    // The compiled agent shows the demo as an earlier conversation in native mode.
    let lm = Arc::new(
        ScriptedLm::replies([ScriptedReply::finish(json!({"answer": "6"}))])
            .with_capabilities(signet::lm::Capabilities::default().with_function_calling(true)),
    );
    let agent = compiled.program.clone().with_lm(lm.clone());
    let out = agent
        .call(AskInput {
            question: "What is 3 + 3?".into(),
        })
        .await
        .unwrap();
    assert_eq!(out.output.answer, "6");
    let messages = &lm.requests()[0].messages;
    let roles: Vec<String> = messages
        .iter()
        .map(|m| {
            serde_json::to_value(m.role)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "user"
        ]
    );
    assert!(messages[1].content.contains("What is 2 + 2?"));
    assert_eq!(messages[2].tool_calls[0].name, "add");
    assert_eq!(messages[3].content, "4");
    assert_eq!(messages[4].tool_calls[0].name, "finish");
    assert_eq!(messages[4].tool_calls[0].arguments, r#"{"answer":"4"}"#);
    assert_eq!(messages[5].content, "Completed.");
    assert!(messages[6].content.contains("What is 3 + 3?"));

    // Saved and loaded, the demo survives with every key.
    let mut fresh = ReAct::<Ask>::new().tool(support::AddTool);
    fresh.load_json(&compiled.program.to_saved_json()).unwrap();
    assert_eq!(fresh.named_predictors()[0].1.demos(), &demos[..]);
}
