//! MIPROv2 against runs recorded from DSPy 3.4.1 (with optuna 5.0.0): the same demo sets,
//! instruction candidates, trials (choices, minibatches, scores), winner and call counts, and
//! the proposer's prompts byte for byte; then the behaviours DSPy lacks or gets wrong (resume,
//! stop, limits, failed proposals, clear errors).

use crate::mipro_task;

use std::sync::{Arc, Mutex};

use mipro_task::{Prog, Prog2, PromptRequest, Task, examples, metric, prompt_lm, task_lm};
use serde_json::Value;
use signet::adapter::Fields;
use signet::data::Example;
use signet::lm::LmRequest;
use signet::module::Predictors;
use signet::optimize::{MiproBudget, MiproReport, MiproStop, MiproV2, OptimizeError, TrialKind};
use signet::prelude::*;
use signet::testing::{FnLm, ScriptedLm};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/mipro/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The optimizer a fixture's settings describe.
fn configured<M>(metric: M, settings: &Value, log: Arc<Mutex<Vec<PromptRequest>>>) -> MiproV2<M> {
    let n = |key: &str| settings[key].as_u64().unwrap() as usize;
    let budget = match settings["auto"].as_str() {
        Some("light") => MiproBudget::Light,
        Some(other) => panic!("no recorded run with auto={other}"),
        None => MiproBudget::Manual {
            candidates: n("candidates"),
            trials: n("trials"),
        },
    };
    MiproV2::new(metric, prompt_lm(log))
        .with_budget(budget)
        .with_minibatch_size(n("minibatch_size"))
        .with_minibatch_full_eval_steps(n("full_eval_steps"))
        .with_max_bootstrapped_demos(n("max_bootstrapped_demos"))
        .with_max_labeled_demos(n("max_labeled_demos"))
        .with_seed(settings["seed"].as_i64().unwrap())
        .with_progress(signet::evaluate::Progress::Off)
}

/// A demo as the fixtures write it: `[q, augmented]`.
fn demo_id(demo: &Fields) -> Value {
    let q: i64 = demo["question"].as_str().unwrap()[2..].parse().unwrap();
    serde_json::json!([q, demo.contains_key("augmented")])
}

/// Checks a run against its recording.
fn check<P: Predictors>(name: &str, fx: &Value, program: &P, report: &MiproReport, train: usize) {
    let val_ids: Vec<usize> = report
        .validation
        .iter()
        .map(|i| {
            i + if fx["settings"]["no_valset"].as_bool().unwrap() {
                0
            } else {
                train
            }
        })
        .collect();
    let expected_val: Vec<usize> = serde_json::from_value(fx["val_ids"].clone()).unwrap();
    assert_eq!(val_ids, expected_val, "{name}: the validation set");
    let sets: Vec<Vec<Vec<Value>>> = report
        .demo_sets
        .iter()
        .map(|sets| {
            sets.iter()
                .map(|s| s.iter().map(demo_id).collect())
                .collect()
        })
        .collect();
    assert_eq!(
        serde_json::to_value(&sets).unwrap(),
        fx["demo_sets"],
        "{name}: demo sets"
    );
    assert_eq!(
        serde_json::to_value(&report.instructions).unwrap(),
        fx["instructions"],
        "{name}: instruction candidates"
    );
    let evals = fx["evals"].as_array().unwrap();
    assert_eq!(report.trials.len(), evals.len(), "{name}: evaluations");
    for (trial, eval) in report.trials.iter().zip(evals) {
        let ids: Vec<usize> = trial.examples.iter().map(|i| val_ids[*i]).collect();
        let (instructions, demos): (Vec<String>, Vec<usize>) = trial
            .choices
            .iter()
            .enumerate()
            .map(|(p, c)| {
                (
                    report.instructions[p][c.instruction].clone(),
                    c.demos.map_or(0, |d| report.demo_sets[p][d].len()),
                )
            })
            .unzip();
        let what = format!("{name}: trial {} ({:?})", trial.number, trial.kind);
        assert_eq!(
            serde_json::to_value(&ids).unwrap(),
            eval["ids"],
            "{what}: examples"
        );
        assert_eq!(
            serde_json::to_value(&instructions).unwrap(),
            eval["instructions"],
            "{what}: instructions"
        );
        assert_eq!(
            serde_json::to_value(&demos).unwrap(),
            eval["demos"],
            "{what}: demos"
        );
        assert_eq!(
            trial.score,
            eval["score"].as_f64().unwrap(),
            "{what}: score"
        );
    }
    let best: Vec<String> = program
        .named_predictors()
        .iter()
        .map(|(_, p)| p.instructions())
        .collect();
    let best_demos: Vec<usize> = program
        .named_predictors()
        .iter()
        .map(|(_, p)| p.demos().len())
        .collect();
    assert_eq!(
        serde_json::to_value(&best).unwrap(),
        fx["best_instructions"],
        "{name}: winner"
    );
    assert_eq!(
        serde_json::to_value(&best_demos).unwrap(),
        fx["best_demos"],
        "{name}: winner's demos"
    );
    assert_eq!(
        report.best_score,
        fx["best_score"].as_f64().unwrap(),
        "{name}: best score"
    );
    assert_eq!(
        report.usage.lm_calls,
        fx["lm_calls"]["task"].as_u64().unwrap(),
        "{name}: task LM calls"
    );
    assert_eq!(
        report.prompt_usage.lm_calls,
        fx["lm_calls"]["prompt"].as_u64().unwrap(),
        "{name}: prompt LM calls"
    );
    assert_eq!(
        report.metric_calls as u64,
        fx["metric_calls"].as_u64().unwrap(),
        "{name}: metric calls"
    );
    assert_eq!(report.stopped, MiproStop::Finished);
    assert!(
        report.proposal_failures.is_empty(),
        "{:?}",
        report.proposal_failures
    );
}

/// Replays one recorded run; returns the prompt model's requests.
async fn replay(name: &str) -> Vec<PromptRequest> {
    let fx = fixture(name);
    let settings = &fx["settings"];
    let data = examples(settings["examples"].as_u64().unwrap() as usize);
    let (train, val): (Vec<Example>, Vec<Example>) = if settings["no_valset"].as_bool().unwrap() {
        (data.clone(), Vec::new())
    } else {
        let half = data.len() / 2;
        (data[..half].to_vec(), data[half..].to_vec())
    };
    let log = Arc::new(Mutex::new(Vec::new()));
    let task = Task::parse(settings["task"].as_str().unwrap());
    if task == Task::Prog2 {
        let program = Prog2 {
            hinter: Predict::new().with_lm(task_lm(task)),
            answerer: Predict::new().with_lm(task_lm(task)),
        };
        let optimizer = configured(
            |e: &Example, out: &AnswerOutput| metric(e, &out.answer),
            settings,
            log.clone(),
        );
        let compiled = optimizer.compile(&program, &train, &val).await.unwrap();
        check(name, &fx, &compiled.program, &compiled.report, train.len());
    } else {
        let program = Prog {
            pred: Predict::new().with_lm(task_lm(task)),
        };
        let optimizer = configured(
            |e: &Example, out: &AskOutput| metric(e, &out.answer),
            settings,
            log.clone(),
        );
        let compiled = optimizer.compile(&program, &train, &val).await.unwrap();
        check(name, &fx, &compiled.program, &compiled.report, train.len());
        if name == "run_nc3" {
            assert_eq!(
                compiled.report.to_string(),
                "9 evaluations, 63 metric calls, 11 prompt-model calls, 3 instruction candidates \
                 and 3 demo sets per predictor, 0 prompt-model failures; score 70.0% -> 70.0%"
            );
        }
    }
    log.lock().unwrap().clone()
}

use mipro_task::{AnswerOutput, AskOutput};

#[tokio::test]
async fn the_reference_run_is_dspys() {
    let requests = replay("run_nc3").await;
    same_prompts("run_nc3", &requests);
}

#[tokio::test]
async fn two_predictors_are_searched_as_dspy_searches_them() {
    let requests = replay("run_prog2").await;
    same_prompts("run_prog2", &requests);
}

#[tokio::test]
async fn forty_trials_of_tpe_are_dspys() {
    replay("run_tpe").await;
}

#[tokio::test]
async fn shuffled_demo_sets_are_dspys() {
    replay("run_nc6").await;
    replay("run_nolabeled").await;
    replay("run_labeledonly3").await;
}

#[tokio::test]
async fn zero_shot_runs_search_instructions_only() {
    replay("run_zeroshot").await;
}

#[tokio::test]
async fn the_light_preset_is_dspys() {
    // No validation set (the last 80% of the training set), no minibatches (40 examples)...
    replay("run_auto_light").await;
    // ... and 100 of 110 validation examples, minibatches of 35.
    replay("run_auto_light_mb").await;
}

/// The proposer's prompts are DSPy's, byte for byte, except the program's code (DSPy shows the
/// Python source; Signet shows pseudo-code of the signatures).
fn same_prompts(name: &str, requests: &[PromptRequest]) {
    let expected = fixture(name)["prompt_requests"].as_array().unwrap().clone();
    assert_eq!(requests.len(), expected.len(), "{name}: prompt requests");
    let without_code = |text: &str| -> String {
        match text.split_once("[[ ## program_code ## ]]\n") {
            Some((head, rest)) => {
                let tail = rest.split_once("\n\n[[ ## ").map_or("", |(_, t)| t);
                format!("{head}[[ ## program_code ## ]]\n<code>\n\n[[ ## {tail}")
            }
            None => text.to_owned(),
        }
    };
    for (i, ((system, user, temperature, seed), want)) in requests.iter().zip(&expected).enumerate()
    {
        assert_eq!(
            system,
            want["system"].as_str().unwrap(),
            "{name}: request {i}'s system message"
        );
        assert_eq!(
            without_code(user),
            without_code(want["user"].as_str().unwrap()),
            "{name}: request {i}'s user message"
        );
        assert_eq!(
            temperature.map(f64::from),
            want["temperature"].as_f64(),
            "{name}: request {i}"
        );
        assert_eq!(
            *seed,
            want["rollout_id"].as_i64(),
            "{name}: request {i}'s rollout id"
        );
    }
}

/// The reference run's optimizer on the reference program (the prompt model's requests go to
/// `log`).
fn reference(
    log: Arc<Mutex<Vec<PromptRequest>>>,
) -> MiproV2<impl Fn(&Example, &AskOutput) -> f64 + Send + Sync> {
    configured(
        |e: &Example, out: &AskOutput| metric(e, &out.answer),
        &fixture("run_nc3")["settings"],
        log,
    )
}

fn reference_program() -> Prog {
    Prog {
        pred: Predict::new().with_lm(task_lm(Task::Fn1)),
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("signet-mipro-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[tokio::test]
async fn a_stopped_run_resumes_from_its_log_without_repeating_lm_calls() {
    let data = examples(20);
    let (train, val) = data.split_at(10);
    let whole = reference(Default::default())
        .compile(&reference_program(), train, val)
        .await
        .unwrap();

    let dir = temp_dir("resume");
    let first = reference(Default::default())
        .with_log_dir(&dir)
        .with_max_metric_calls(20)
        .compile(&reference_program(), train, val)
        .await
        .unwrap();
    assert_eq!(first.report.stopped, MiproStop::MetricCalls);
    assert!(first.report.trials.len() < whole.report.trials.len());
    assert!(dir.join("best_program.json").exists());

    // A stop file stops the resumed run before its next trial; nothing is lost.
    std::fs::write(dir.join("mipro.stop"), "").unwrap();
    let stopped = reference(Default::default())
        .with_log_dir(&dir)
        .compile(&reference_program(), train, val)
        .await
        .unwrap();
    assert_eq!(stopped.report.stopped, MiproStop::StopFile);
    assert!(stopped.report.resumed);
    assert_eq!(stopped.report.trials, first.report.trials);
    assert_eq!(
        stopped.report.usage.lm_calls + stopped.report.prompt_usage.lm_calls,
        0
    );
    std::fs::remove_file(dir.join("mipro.stop")).unwrap();

    let prompts = Arc::new(Mutex::new(Vec::new()));
    let resumed = reference(prompts.clone())
        .with_log_dir(&dir)
        .compile(&reference_program(), train, val)
        .await
        .unwrap();
    assert!(resumed.report.resumed);
    assert_eq!(resumed.report.stopped, MiproStop::Finished);
    assert_eq!(resumed.report.trials, whole.report.trials);
    assert_eq!(resumed.report.instructions, whole.report.instructions);
    assert_eq!(resumed.report.best, whole.report.best);
    // The proposals and the bootstraps came from the log; only the remaining trials ran.
    assert!(prompts.lock().unwrap().is_empty());
    assert_eq!(resumed.report.prompt_usage.lm_calls, 0);
    let remaining: usize = whole.report.trials[first.report.trials.len()..]
        .iter()
        .map(|t| t.examples.len())
        .sum();
    assert_eq!(resumed.report.usage.lm_calls as usize, remaining);

    // The saved best program is the returned one, in DSPy's format.
    let mut loaded = reference_program();
    loaded.load(dir.join("best_program.json")).unwrap();
    assert_eq!(loaded.to_saved_json(), resumed.program.to_saved_json());

    // A log of another run is refused, not mixed in.
    let error = reference(Default::default())
        .with_log_dir(&dir)
        .with_seed(1)
        .compile(&reference_program(), train, val)
        .await
        .unwrap_err();
    assert!(matches!(error, OptimizeError::RunLog { .. }), "{error}");
    assert!(error.to_string().contains("another run"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_right_instruction_and_demo_set_are_picked() {
    // The task model is right only with the instruction "Be exact." and demos to follow.
    let task = || {
        FnLm::new(|request: &LmRequest| {
            let system = &request.messages[0].content;
            let q =
                mipro_task::number_after(&request.messages.last().unwrap().content, "q=").unwrap();
            let ok = system.contains("Be exact.") && request.messages.len() > 2;
            format!("[[ ## answer ## ]]\n{}", if ok { q } else { -1 })
        })
    };
    let proposals = ["Be brief.", "Be exact.", "Be loud.", "Be kind."];
    let next = std::sync::atomic::AtomicUsize::new(0);
    let prompt = FnLm::new(move |request: &LmRequest| {
        assert!(
            request.messages[0]
                .content
                .contains("generate a new instruction")
        );
        let k = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        format!("[[ ## proposed_instruction ## ]]\n{}", proposals[k])
    });
    let data = examples(12);
    let compiled = MiproV2::new(
        |e: &Example, out: &AskOutput| metric(e, &out.answer),
        prompt,
    )
    .with_budget(MiproBudget::Manual {
        candidates: 4,
        trials: 16,
    })
    .with_max_bootstrapped_demos(2)
    .with_max_labeled_demos(2)
    .with_minibatch(false)
    .with_data_aware(false)
    .with_program_aware(false)
    .with_progress(signet::evaluate::Progress::Off)
    .compile(
        &Prog {
            pred: Predict::new().with_lm(task()),
        },
        &data[..6],
        &data[6..],
    )
    .await
    .unwrap();
    let report = &compiled.report;
    assert_eq!(
        report.instructions[0],
        ["Answer the question.", "Be exact.", "Be loud.", "Be kind."]
    );
    assert_eq!(report.best_score, 100.0, "{:#?}", report.trials);
    let best = &report.trials[report.best];
    assert_eq!(best.kind, TrialKind::Full);
    assert_eq!(best.choices[0].instruction, 1);
    assert_ne!(best.choices[0].demos, Some(0));
    let predictor = compiled.program.pred.predictor();
    assert_eq!(predictor.instructions(), "Be exact.");
    assert!(!predictor.demos().is_empty());
    // The starting program scored 0 and every trial is in the report.
    assert_eq!(report.trials[0].kind, TrialKind::Default);
    assert_eq!(report.trials[0].score, 0.0);
    assert_eq!(report.trials.len(), 17);
}

#[tokio::test]
async fn unusable_proposals_are_left_out_and_reported() {
    let data = examples(20);
    let (train, val) = data.split_at(10);
    // The summary's first call fails; every proposal is unreadable.
    let prompt = FnLm::new(|request: &LmRequest| {
        let system = &request.messages[0].content;
        if system.contains("Please describe") {
            "[[ ## program_description ## ]]\nA program.".to_owned()
        } else {
            "I cannot help with that.".to_owned()
        }
    });
    let compiled = MiproV2::new(
        |e: &Example, out: &AskOutput| metric(e, &out.answer),
        prompt,
    )
    .with_budget(MiproBudget::Manual {
        candidates: 3,
        trials: 4,
    })
    .with_minibatch_size(4)
    .with_progress(signet::evaluate::Progress::Off)
    .compile(&reference_program(), train, val)
    .await
    .unwrap();
    let report = &compiled.report;
    assert_eq!(report.dataset_summary, None);
    assert_eq!(report.instructions[0], ["Answer the question."]);
    assert_eq!(
        report.proposal_failures.len(),
        4,
        "{:?}",
        report.proposal_failures
    );
    assert!(
        report.proposal_failures[0].starts_with("dataset summary: "),
        "{:?}",
        report.proposal_failures
    );
    assert!(
        report.proposal_failures[1].starts_with("pred, proposal 1: "),
        "{:?}",
        report.proposal_failures
    );
    // The search still ran over the demo sets.
    assert_eq!(report.stopped, MiproStop::Finished);
    assert!(report.trials.len() > 4);
}

#[tokio::test]
async fn a_dead_task_model_stops_the_run_with_its_error() {
    let data = examples(20);
    let (train, val) = data.split_at(10);
    let dead = ScriptedLm::new(Vec::new());
    let error = reference(Default::default())
        .with_max_errors(3)
        .compile(
            &Prog {
                pred: Predict::new().with_lm(dead),
            },
            train,
            val,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, OptimizeError::TooManyErrors { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn the_lm_call_limit_stops_the_search_with_the_best_so_far() {
    let data = examples(20);
    let (train, val) = data.split_at(10);
    let compiled = reference(Default::default())
        .with_max_lm_calls(30)
        .compile(&reference_program(), train, val)
        .await
        .unwrap();
    assert_eq!(compiled.report.stopped, MiproStop::LmCalls);
    let calls = compiled.report.usage.lm_calls + compiled.report.prompt_usage.lm_calls;
    // Checked before each trial: the last trial (4 calls) and the full evaluation after it (10)
    // may go past the limit.
    assert!((30..30 + 4 + 10).contains(&calls), "{calls}");
    assert_eq!(compiled.report.best, 0);
}

#[tokio::test]
async fn bad_settings_and_data_are_refused_before_any_lm_call() {
    let data = examples(20);
    let (train, val) = data.split_at(10);
    let cases: Vec<(MiproV2<_>, &[Example], &[Example], &str)> = vec![
        (
            reference(Default::default()),
            &[],
            val,
            "at least one training example",
        ),
        (
            reference(Default::default()),
            &data[..1],
            &[],
            "needs at least 2 examples",
        ),
        (
            reference(Default::default()).with_minibatch_size(11),
            train,
            val,
            "minibatch size (11) is larger than the validation set (10 examples)",
        ),
        (
            reference(Default::default())
                .with_max_bootstrapped_demos(0)
                .with_budget(MiproBudget::Manual {
                    candidates: 4,
                    trials: 2,
                }),
            train,
            val,
            "max_bootstrapped_demos is 0",
        ),
        (
            reference(Default::default()).with_seed(-1),
            train,
            val,
            "seed -1 is out of range",
        ),
        (
            reference(Default::default()).with_budget(MiproBudget::Manual {
                candidates: 0,
                trials: 2,
            }),
            train,
            val,
            "at least 1 candidate",
        ),
    ];
    for (optimizer, train, val, message) in cases {
        let dead = ScriptedLm::new(Vec::new());
        let error = optimizer
            .compile(
                &Prog {
                    pred: Predict::new().with_lm(dead),
                },
                train,
                val,
            )
            .await
            .unwrap_err();
        assert!(matches!(error, OptimizeError::Settings { .. }), "{error}");
        assert!(error.to_string().contains(message), "{error}");
    }
}
