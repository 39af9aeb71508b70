//! GEPA on scripted tasks whose better instructions are known: the runs DSPy 3.4.1 makes on the
//! same task (the same parents, minibatches, acceptances, merges and budget), instructions found
//! through the metric's feedback, Pareto candidates kept for the examples they alone solve, and a
//! run stopped and resumed from its log directory.

use crate::support;

use std::sync::{Arc, Mutex};

use serde_json::json;
use signet::data::Example;
use signet::evaluate::{Progress, Score};
use signet::module::Predictors;
use signet::module::ReActOutput;
use signet::optimize::{ComponentSelection, Gepa, GepaBudget, GepaReport, GepaStop, OptimizeError};
use signet::prelude::*;
use support::gepa_task::{
    FnLm, GOOD1, GOOD2, HintThenAnswer, MERGE1, MERGE2, Table, current_instruction, examples,
    feedback, program, reflection_lm, right, word_after,
};

/// The reference run's GEPA: per-predictor feedback as DSPy's five-argument metric gives it.
async fn reference_run(
    good1: Table,
    good2: Table,
    budget: usize,
    log_dir: Option<&std::path::Path>,
) -> (
    Result<signet::optimize::Compiled<HintThenAnswer, GepaReport>, OptimizeError>,
    Vec<(String, usize)>,
) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut gepa = Gepa::new(right, reflection_lm(log.clone()))
        .with_feedback(feedback)
        .with_budget(GepaBudget::MetricCalls(budget))
        .with_concurrency(1)
        .with_progress(Progress::Off);
    if let Some(dir) = log_dir {
        gepa = gepa.with_log_dir(dir);
    }
    let compiled = gepa
        .compile(&program(good1, good2), &examples(0..8), &examples(8..16))
        .await;
    let log = log.lock().unwrap().clone();
    (compiled, log)
}

fn instructions(report: &GepaReport) -> Vec<[String; 2]> {
    report
        .candidates
        .iter()
        .map(|c| [c.instructions[0].1.clone(), c.instructions[1].1.clone()])
        .collect()
}

/// The names of the components GEPA optimized, in order.
fn component_names(report: &GepaReport) -> Vec<&str> {
    report.candidates[0]
        .instructions
        .iter()
        .map(|(name, _)| name.as_str())
        .collect()
}

fn versions(candidates: &[(usize, usize)]) -> Vec<[String; 2]> {
    candidates
        .iter()
        .map(|(h, a)| {
            [
                format!("HINT-v{h} instruction"),
                format!("ANS-v{a} instruction"),
            ]
        })
        .collect()
}

fn reflections(log: &[(String, usize)]) -> Vec<String> {
    log.iter()
        .map(|(current, n)| format!("{current} -> {n}"))
        .collect()
}

fn fronts(sets: &[&[usize]]) -> Vec<Vec<usize>> {
    sets.iter().map(|s| s.to_vec()).collect()
}

#[tokio::test]
async fn the_reference_run_takes_dspys_path() {
    // Printed by DSPy 3.4.1 (dspy.GEPA(max_metric_calls=150), everything else default) on this
    // task: candidates, parents, averages, discovery counts, fronts and every reflection call.
    let (compiled, log) = reference_run(GOOD1, GOOD2, 150, None).await;
    let compiled = compiled.unwrap();
    let report = &compiled.report;
    assert_eq!(
        instructions(report),
        versions(&[(0, 0), (1, 0), (2, 0), (3, 0)])
    );
    let parents: Vec<Vec<usize>> = report
        .candidates
        .iter()
        .map(|c| c.parents.clone())
        .collect();
    assert_eq!(parents, [vec![], vec![0], vec![1], vec![1]]);
    let averages: Vec<f64> = report.candidates.iter().map(|c| c.average).collect();
    assert_eq!(averages, [0.25, 0.375, 0.375, 0.25]);
    let discovered: Vec<usize> = report.candidates.iter().map(|c| c.discovered_at).collect();
    assert_eq!(discovered, [0, 14, 40, 66]);
    assert_eq!(report.metric_calls, 152);
    assert_eq!(report.iterations, 20);
    assert_eq!(report.best, 1);
    assert_eq!(report.stopped, GepaStop::Budget);
    assert_eq!(
        report.fronts,
        fronts(&[
            &[0, 2],
            &[1],
            &[1],
            &[2],
            &[3],
            &[0, 1, 2, 3],
            &[0, 1, 2, 3],
            &[0, 1, 2, 3]
        ])
    );
    let expected: Vec<String> = [
        ("HINT-v0", 1),
        ("ANS-v0", 1),
        ("ANS-v0", 2),
        ("HINT-v1", 2),
        ("ANS-v0", 3),
        ("ANS-v0", 4),
        ("HINT-v1", 3),
        ("HINT-v2", 4),
        ("ANS-v0", 5),
        ("HINT-v1", 5),
        ("ANS-v0", 6),
        ("ANS-v0", 7),
        ("HINT-v1", 6),
        ("ANS-v0", 8),
        ("HINT-v2", 7),
        ("ANS-v0", 9),
        ("HINT-v3", 8),
        ("HINT-v1", 9),
        ("ANS-v0", 10),
        ("HINT-v1", 10),
    ]
    .iter()
    .map(|(current, n)| format!("{current} instruction -> {n}"))
    .collect();
    assert_eq!(reflections(&log), expected);
    // The best candidate is the program returned.
    let names: Vec<String> = compiled
        .program
        .named_predictors()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["hinter", "answerer"]);
    assert_eq!(
        compiled.program.hinter.predictor().instructions(),
        "HINT-v1 instruction"
    );
}

#[tokio::test]
async fn a_candidate_best_on_one_example_stays_on_the_frontier() {
    let (compiled, _) = reference_run(GOOD1, GOOD2, 150, None).await;
    let report = compiled.unwrap().report;
    // Candidate 3 averages below the best but alone solves validation example 4 (q=12).
    assert!(report.candidates[3].average < report.candidates[report.best].average);
    assert_eq!(report.candidates[3].val_scores[4], 1.0);
    assert_eq!(report.fronts[4], [3]);
}

#[tokio::test]
async fn merges_follow_dspy() {
    // Another task of the same kind, on which DSPy 3.4.1 (max_metric_calls=300) kept two merges.
    let (compiled, log) = reference_run(MERGE1, MERGE2, 300, None).await;
    let report = compiled.unwrap().report;
    assert_eq!(
        instructions(&report),
        versions(&[(0, 0), (1, 0), (2, 0), (0, 7), (1, 7), (11, 7), (11, 7)])
    );
    let parents: Vec<Vec<usize>> = report
        .candidates
        .iter()
        .map(|c| c.parents.clone())
        .collect();
    assert_eq!(
        parents,
        [
            vec![],
            vec![0],
            vec![1],
            vec![0],
            vec![1, 3],
            vec![3],
            vec![2, 5]
        ]
    );
    let discovered: Vec<usize> = report.candidates.iter().map(|c| c.discovered_at).collect();
    assert_eq!(discovered, [0, 14, 40, 105, 118, 189, 202]);
    assert_eq!(report.metric_calls, 300);
    assert_eq!(report.best, 5);
    assert_eq!(report.merges_accepted, 2);
    assert_eq!(log.len(), 37);
}

#[tokio::test]
async fn feedback_reaches_the_reflection_model_and_finds_the_instruction() {
    // The task model answers right only when its instruction names the unit; only the metric's
    // feedback says which unit, and the reflection model copies what the feedback says.
    let task = FnLm(|system: &str, user: &str| {
        let n: u32 = word_after(user, "How far is ").unwrap().parse().unwrap();
        let answer = if system.contains("in metres") {
            format!("{}", n * 1000)
        } else {
            n.to_string()
        };
        format!("[[ ## answer ## ]]\n{answer}\n\n[[ ## completed ## ]]")
    });
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let reflection = {
        let seen = seen.clone();
        FnLm(move |_: &str, user: &str| {
            seen.lock().unwrap().push(user.to_owned());
            let advice = word_after(user, "Give the distance in ");
            let instruction = match advice {
                Some(unit) => format!("Convert the distance; answer in {unit}."),
                None => "Answer.".to_owned(),
            };
            json!({"new_instruction": instruction}).to_string()
        })
    };
    /// Convert.
    #[derive(Signature)]
    struct Convert {
        #[input]
        question: String,
        #[output]
        answer: String,
    }
    let data: Vec<Example> = (1..=6)
        .map(|n| {
            Example::new(json!({"question": format!("How far is {n} km?"), "answer": (n * 1000).to_string()}))
                .with_inputs(["question"])
        })
        .collect();
    let metric = |example: &Example, out: &ConvertOutput| {
        let expected = example.get("answer").and_then(|a| a.as_str()).unwrap();
        if out.answer == expected {
            Score::new(1.0)
        } else {
            Score::new(0.0).with_feedback(format!(
                "Wrong: {expected} expected. Give the distance in metres."
            ))
        }
    };
    let compiled = Gepa::new(metric, reflection)
        .with_budget(GepaBudget::MetricCalls(20))
        .with_progress(Progress::Off)
        .compile(
            &Predict::<Convert>::new().with_lm(task),
            &data[..3],
            &data[3..],
        )
        .await
        .unwrap();
    assert_eq!(
        compiled.program.predictor().instructions(),
        "Convert the distance; answer in metres."
    );
    assert_eq!(
        compiled.report.candidates[compiled.report.best].average,
        1.0
    );
    assert_eq!(compiled.report.candidates[0].average, 0.0);
    let first = &seen.lock().unwrap()[0];
    assert!(
        first.contains("\"Feedback\": \"Wrong: 1000 expected. Give the distance in metres.\"")
            || first.contains("Give the distance in metres."),
        "{first}"
    );
    assert!(
        first.contains("\"Generated Outputs\": {\"answer\": \""),
        "{first}"
    );
}

#[tokio::test]
async fn a_stopped_run_resumes_from_its_log_directory() {
    let dir = std::env::temp_dir().join(format!("signet-gepa-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (first, _) = reference_run(GOOD1, GOOD2, 60, Some(&dir)).await;
    let first = first.unwrap().report;
    assert!(!first.resumed);
    assert!(first.metric_calls >= 60);
    let lines = std::fs::read_to_string(dir.join("run_log.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(lines, first.iterations);

    // A stop file ends a run before its next iteration, with nothing spent.
    std::fs::write(dir.join("gepa.stop"), "").unwrap();
    let (stopped, log) = reference_run(GOOD1, GOOD2, 150, Some(&dir)).await;
    let stopped = stopped.unwrap().report;
    assert_eq!(stopped.stopped, GepaStop::StopFile);
    assert_eq!(stopped.metric_calls, first.metric_calls);
    assert!(log.is_empty());
    std::fs::remove_file(dir.join("gepa.stop")).unwrap();

    let (resumed, _) = reference_run(GOOD1, GOOD2, 150, Some(&dir)).await;
    let resumed = resumed.unwrap().report;
    assert!(resumed.resumed);
    assert!(resumed.metric_calls >= 150);
    assert_eq!(
        &resumed.candidates[..first.candidates.len()],
        &first.candidates[..]
    );
    assert!(resumed.iterations > first.iterations);
    let lines = std::fs::read_to_string(dir.join("run_log.jsonl"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(lines, resumed.iterations);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("candidates.json")).unwrap())
            .unwrap();
    assert_eq!(saved.as_array().unwrap().len(), resumed.candidates.len());
    assert_eq!(saved[0]["hinter"], "HINT-v0 instruction");

    // The same program on other data of the same sizes is another run: its scores are not
    // reused.
    let error = Gepa::new(right, reflection_lm(Arc::new(Mutex::new(Vec::new()))))
        .with_feedback(feedback)
        .with_budget(GepaBudget::MetricCalls(150))
        .with_log_dir(&dir)
        .with_progress(Progress::Off)
        .compile(&program(GOOD1, GOOD2), &examples(8..16), &examples(0..8))
        .await
        .unwrap_err();
    assert!(matches!(error, OptimizeError::RunLog { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("of another run (its data differ)"),
        "{error}"
    );

    // A log directory from another program is refused, not overwritten.
    /// Other.
    #[derive(Signature)]
    struct Other {
        #[input]
        question: String,
        #[output]
        answer: String,
    }
    let error = Gepa::new(
        |_: &Example, _: &OtherOutput| 1.0,
        FnLm(|_: &str, _: &str| String::new()),
    )
    .with_log_dir(&dir)
    .with_progress(Progress::Off)
    .compile(
        &Predict::<Other>::new().with_lm(FnLm(|_: &str, _: &str| "[[ ## answer ## ]]\nx".into())),
        &examples(0..2),
        &examples(8..16),
    )
    .await
    .unwrap_err();
    assert!(matches!(error, OptimizeError::RunLog { .. }), "{error}");
    assert!(
        error.to_string().contains("saved for predictors"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn an_lm_call_limit_stops_the_run() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let compiled = Gepa::new(right, reflection_lm(log))
        .with_budget(GepaBudget::MetricCalls(150))
        .with_max_lm_calls(40)
        .with_concurrency(1)
        .with_progress(Progress::Off)
        .compile(&program(GOOD1, GOOD2), &examples(0..8), &examples(8..16))
        .await
        .unwrap();
    let report = compiled.report;
    assert_eq!(report.stopped, GepaStop::LmCalls);
    let calls = report.usage.lm_calls + report.reflection_usage.lm_calls;
    // Two calls per example run; the limit is checked before each iteration, which spends at
    // most 6 runs, one reflection call and a validation pass of 8 runs.
    assert!((40..40 + 2 * 14 + 1).contains(&calls), "{calls}");
    assert!(report.metric_calls < 150);
}

#[tokio::test]
async fn runs_that_all_fail_are_never_reflected_on_and_an_error_limit_stops_the_run() {
    let garbled = || {
        let lm = Arc::new(FnLm(|_: &str, _: &str| "no fields here".to_owned()));
        HintThenAnswer {
            hinter: Predict::new().with_lm(lm.clone()),
            answerer: Predict::new().with_lm(lm),
        }
    };
    let log = Arc::new(Mutex::new(Vec::new()));
    let compiled = Gepa::new(right, reflection_lm(log.clone()))
        .with_budget(GepaBudget::MetricCalls(30))
        .with_concurrency(1)
        .with_progress(Progress::Off)
        .compile(&garbled(), &examples(0..8), &examples(8..16))
        .await
        .unwrap();
    let report = compiled.report;
    assert_eq!(report.candidates.len(), 1);
    assert_eq!(report.candidates[0].average, 0.0);
    assert_eq!(report.proposed, 0);
    assert!(log.lock().unwrap().is_empty());
    assert!(report.metric_calls >= 30);

    let error = Gepa::new(right, reflection_lm(log))
        .with_max_errors(2)
        .with_progress(Progress::Off)
        .compile(&garbled(), &examples(0..8), &examples(8..16))
        .await
        .unwrap_err();
    assert!(
        matches!(error, OptimizeError::TooManyErrors { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn bad_settings_are_typed_errors() {
    let gepa =
        Gepa::new(right, FnLm(|_: &str, _: &str| String::new())).with_progress(Progress::Off);
    let error = gepa
        .compile(&program(GOOD1, GOOD2), &[], &examples(8..16))
        .await
        .unwrap_err();
    assert!(matches!(error, OptimizeError::Settings { .. }), "{error}");
    assert!(
        error.to_string().contains("at least one training example"),
        "{error}"
    );
}

#[tokio::test]
async fn a_reflection_model_that_never_answers_usably_proposes_nothing() {
    let (good1, good2) = (GOOD1, GOOD2);
    let compiled = Gepa::new(
        right,
        FnLm(|_: &str, _: &str| "I cannot help with that.".to_owned()),
    )
    .with_budget(GepaBudget::MetricCalls(30))
    .with_concurrency(1)
    .with_progress(Progress::Off)
    .compile(&program(good1, good2), &examples(0..8), &examples(8..16))
    .await
    .unwrap();
    let report = compiled.report;
    assert_eq!(report.candidates.len(), 1);
    assert!(report.proposal_failures > 0);
    assert_eq!(report.proposed, 0);
    // Two tries per iteration (DSPy retries a failed proposal once); the JSON adapter falls back
    // to nothing here, so each try is one call (or two with its fallback).
    assert!(report.reflection_usage.lm_calls >= 2 * report.proposal_failures as u64);
}

/// The task model of the ReAct tests: its step calls `add` (once) only when the step prompt
/// holds `cue`, else finishes; its extractor answers 4 only after seeing the tool's result.
fn adding_lm(cue: String) -> impl signet::lm::Lm {
    FnLm(move |system: &str, user: &str| {
        if system.contains("next_tool_name") {
            if system.contains(&cue) && !user.contains("tool_name_0") {
                support::step("add", "add", json!({"a": 2, "b": 2}))
            } else {
                support::step("done", "finish", json!({}))
            }
        } else if user.contains("observation_0") && user.contains('4') {
            support::extract("4")
        } else {
            support::extract("unknown")
        }
    })
}

#[tokio::test]
async fn a_react_agent_s_step_and_extractor_are_optimized() {
    // The agent calls `add` only when its instructions say so; the extractor answers 4 only after
    // seeing the tool's result. The feedback says what to do; the reflection LM appends it.
    let task = adding_lm("Call add first.".to_owned());
    let shown = Arc::new(Mutex::new(Vec::<String>::new()));
    let reflection = {
        let shown = shown.clone();
        FnLm(move |_: &str, user: &str| {
            shown.lock().unwrap().push(user.to_owned());
            let current = current_instruction(user);
            json!({"new_instruction": format!("{current} Call add first.")}).to_string()
        })
    };
    let data: Vec<Example> = (0..4)
        .map(|i| {
            Example::new(json!({"question": format!("What is 2 + 2? ({i})"), "answer": "4"}))
                .with_inputs(["question"])
        })
        .collect();
    let metric = |example: &Example, out: &ReActOutput<support::AskOutput>| {
        let right =
            example.get("answer").and_then(|a| a.as_str()) == Some(out.output.answer.as_str());
        Score::new(if right { 1.0 } else { 0.0 })
            .with_feedback("Call the add tool first, then finish.")
    };
    let agent = ReAct::<support::Ask>::new()
        .tool(support::AddTool)
        .with_lm(task);
    let compiled = Gepa::new(metric, reflection)
        .with_component_selection(ComponentSelection::All)
        .with_budget(GepaBudget::MetricCalls(10))
        .with_concurrency(1)
        .with_progress(Progress::Off)
        .compile(&agent, &data[..2], &data[2..])
        .await
        .unwrap();
    let report = &compiled.report;
    assert_eq!(component_names(report), ["react", "extract.predict"]);
    assert_eq!(report.candidates.len(), 2);
    assert_eq!(report.candidates[1].average, 1.0);
    for ((_, before), (_, after)) in report.candidates[0]
        .instructions
        .iter()
        .zip(&report.candidates[1].instructions)
    {
        assert_eq!(after, &format!("{before} Call add first."));
    }
    let steps = compiled.program.named_predictors()[0].1.instructions();
    assert!(steps.ends_with("Call add first."), "{steps}");
    // One reflection call per component; the step's shows the tools in its instruction and a
    // step's inputs and outputs, with the metric's feedback.
    let shown = shown.lock().unwrap();
    assert_eq!(shown.len(), 2);
    assert!(shown[0].contains("add"), "{}", shown[0]);
    assert!(
        shown[0].contains("\"next_tool_name\": \"finish\""),
        "{}",
        shown[0]
    );
    assert!(
        shown[0].contains("Call the add tool first, then finish."),
        "{}",
        shown[0]
    );
    assert!(shown[1].contains("\"answer\": \"unknown\""), "{}", shown[1]);
}

/// The description the tool test's reflection model writes for `add`.
const ADD_DESCRIPTION: &str = "Add two integers. Use it for every sum before you finish.";

/// The tool test's agent and data: the step calls `add` only when the tool list says to use it for
/// every sum; the extractor answers 4 only after seeing the tool's result.
fn tool_task() -> (ReAct<support::Ask>, Vec<Example>) {
    let task = adding_lm(format!("<desc>{ADD_DESCRIPTION}</desc>"));
    let data = (0..4)
        .map(|i| {
            Example::new(json!({"question": format!("What is 2 + 2? ({i})"), "answer": "4"}))
                .with_inputs(["question"])
        })
        .collect();
    let agent = ReAct::<support::Ask>::new()
        .tool(support::AddTool)
        .with_mode(signet::module::ReActMode::Text)
        .with_lm(task);
    (agent, data)
}

/// Instructions come back unchanged plus a sentence that does not help; a tool description comes
/// back as `ADD_DESCRIPTION`. Every request is kept.
fn tool_reflection(shown: Arc<Mutex<Vec<String>>>) -> impl signet::lm::Lm {
    FnLm(move |_: &str, user: &str| {
        shown.lock().unwrap().push(user.to_owned());
        if user.contains("[[ ## current_description ## ]]") {
            json!({"new_description": ADD_DESCRIPTION}).to_string()
        } else {
            let current = current_instruction(user);
            json!({"new_instruction": format!("{current} Be careful.")}).to_string()
        }
    })
}

fn tool_metric(example: &Example, out: &ReActOutput<support::AskOutput>) -> Score {
    let right = example.get("answer").and_then(|a| a.as_str()) == Some(out.output.answer.as_str());
    Score::new(if right { 1.0 } else { 0.0 })
        .with_feedback("The sum was never computed: the add tool was not called.")
}

#[tokio::test]
async fn a_tool_description_is_optimized_through_feedback() {
    let (agent, data) = tool_task();
    let shown = Arc::new(Mutex::new(Vec::<String>::new()));
    let gepa = |tools: bool| {
        Gepa::new(tool_metric, tool_reflection(shown.clone()))
            .with_tool_descriptions(tools)
            .with_minibatch_size(2)
            .with_merge(false)
            .with_budget(GepaBudget::MetricCalls(16))
            .with_concurrency(1)
            .with_progress(Progress::Off)
    };

    // Instructions alone cannot fix it: no candidate beats the starting program.
    let without = gepa(false)
        .compile(&agent, &data[..2], &data[2..])
        .await
        .unwrap();
    assert_eq!(without.report.candidates.len(), 1);
    assert_eq!(without.report.candidates[0].average, 0.0);
    shown.lock().unwrap().clear();

    let compiled = gepa(true)
        .compile(&agent, &data[..2], &data[2..])
        .await
        .unwrap();
    let report = &compiled.report;
    assert_eq!(
        component_names(report),
        ["react", "extract.predict", "tools.add"]
    );
    assert_eq!(report.candidates[0].instructions[2].1, "Add two integers.");
    // Round robin: the step and the extractor are rewritten and rejected, then the tool's
    // description is rewritten and accepted.
    assert_eq!((report.proposed, report.accepted), (3, 1));
    assert_eq!(report.candidates.len(), 2);
    assert_eq!(report.candidates[1].average, 1.0);
    assert_eq!(report.candidates[1].instructions[2].1, ADD_DESCRIPTION);
    assert_eq!(
        report.candidates[1].instructions[0],
        report.candidates[0].instructions[0]
    );

    // The returned program shows the new description in its step instructions and its tool
    // list, and saves it.
    let best = &compiled.program;
    assert_eq!(best.core().tool_description("add"), Some(ADD_DESCRIPTION));
    assert!(
        best.core()
            .step_predictor()
            .instructions()
            .contains(&format!(
                "(1) add, whose description is <desc>{ADD_DESCRIPTION}</desc>."
            ))
    );
    assert_eq!(
        best.dump_state()[signet::module::TOOL_DESCRIPTIONS],
        json!({"tools.add": ADD_DESCRIPTION})
    );
    let mut loaded = tool_task().0;
    loaded.load_json(&best.to_saved_json()).unwrap();
    assert_eq!(loaded.core().tool_description("add"), Some(ADD_DESCRIPTION));

    // The tool's reflection request: its name, arguments and description, a step of each run
    // (none called the tool, so any step) and the metric's feedback.
    let shown = shown.lock().unwrap();
    assert_eq!(shown.len(), 3);
    let asked = &shown[2];
    assert!(
        asked.starts_with("[[ ## tool_name ## ]]\nadd\n\n[[ ## tool_arguments ## ]]\n"),
        "{asked}"
    );
    assert!(
        asked.contains("[[ ## current_description ## ]]\nAdd two integers.\n"),
        "{asked}"
    );
    assert!(asked.contains("\"next_tool_name\": \"finish\""), "{asked}");
    assert!(asked.contains("the add tool was not called"), "{asked}");
}
