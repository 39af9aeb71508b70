//! Files on disk (docs/reliability.md, "Files on disk"): a save killed mid-write or read while it
//! is written never shows half a file; MIPROv2's run log skips a torn last line and goes on,
//! names a damaged line in the middle, and is not replayed for other data of the same size, another
//! metric, program or model; a damaged GEPA state is an error, not a panic; the approval example
//! parks runs atomically and keeps a parked run it cannot read.

use crate::mipro_task;
use crate::support::gepa_task;
#[path = "../../examples/react_approval.rs"]
#[allow(dead_code)]
mod react_approval;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::future::BoxFuture;
use mipro_task::{Prog, Task, examples, metric, prompt_lm, task_lm};
use serde_json::{Value, json};
use signet::data::Example;
use signet::evaluate::Progress;
use signet::lm::{Completion, Lm, LmError, LmRequest};
use signet::module::StateError;
use signet::optimize::{Gepa, GepaBudget, MiproBudget, MiproStop, MiproV2, OptimizeError};
use signet::prelude::*;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("signet-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Temporary files left in `dir`.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect()
}

/// A one-predictor program whose instruction is `instruction`.
fn program(instruction: &str) -> Predict<mipro_task::Ask> {
    let mut program = Predict::<mipro_task::Ask>::new();
    program.predictor_mut().set_instructions(instruction);
    program
}

fn instruction_in(path: &Path) -> Result<String, StateError> {
    let mut loaded = Predict::<mipro_task::Ask>::new();
    loaded.load(path)?;
    Ok(loaded.predictor().instructions())
}

const CHILD: &str = "SIGNET_FILES_CHILD_TARGET";

/// `child_saves_a_big_program` as libtest names it: its module path without the crate's name
/// (`atomic_files::child_saves_a_big_program` in the `optimize` test binary).
fn child_test_name() -> &'static str {
    let path = concat!(module_path!(), "::child_saves_a_big_program");
    path.split_once("::").map_or(path, |(_, test)| test)
}

/// Run by `a_save_killed_mid_write_leaves_the_old_file` in a child process whose file size limit
/// kills it in the middle of the save; does nothing in a normal test run.
#[test]
fn child_saves_a_big_program() {
    let Some(target) = std::env::var_os(CHILD) else {
        return;
    };
    // 1 MB of instruction: far past the child's file size limit.
    let _ = program(&"new ".repeat(250_000)).save(PathBuf::from(target));
}

#[cfg(unix)]
#[test]
fn a_save_killed_mid_write_leaves_the_old_file() {
    let dir = temp_dir("killed");
    let path = dir.join("program.json");
    program("old").save(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    // `ulimit -f 64`: writing past 32 KB (64 blocks of 512 bytes in dash, of 1 KB in bash)
    // raises SIGXFSZ, which kills the process mid-write — a crash in the middle of the save.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 64 && exec \"$0\" \"$@\"")
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", child_test_name(), "--test-threads=1"])
        .env(CHILD, &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child should die mid-write");
    let after = std::fs::read(&path).unwrap();
    assert!(
        after == before,
        "the old file must survive: it has {} bytes, it had {}",
        after.len(),
        before.len()
    );
    assert_eq!(instruction_in(&path).unwrap(), "old");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn readers_never_see_half_a_saved_program() {
    let dir = temp_dir("readers");
    let path = dir.join("program.json");
    let texts = ["a ".repeat(100_000), "b ".repeat(120_000)];
    program(&texts[0]).save(&path).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (path, done) = (path.clone(), done.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !done.load(std::sync::atomic::Ordering::SeqCst) || reads < 50 {
                if let Err(error) = instruction_in(&path) {
                    return Err(format!("read {reads}: {error}"));
                }
                reads += 1;
            }
            Ok(reads)
        })
    };
    for i in 0..100 {
        program(&texts[i % 2]).save(&path).unwrap();
    }
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let reads = reader.join().unwrap().unwrap();
    assert!(reads >= 50);
    assert!(temporaries(&dir).is_empty(), "{:?}", temporaries(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The recorded reference run's settings (`tests/fixtures/mipro/run_nc3.json`).
fn mipro() -> MiproV2<impl Fn(&Example, &mipro_task::AskOutput) -> f64 + Send + Sync> {
    MiproV2::new(
        |e: &Example, out: &mipro_task::AskOutput| metric(e, &out.answer),
        prompt_lm(Default::default()),
    )
    .with_budget(MiproBudget::Manual {
        candidates: 3,
        trials: 5,
    })
    .with_minibatch_size(4)
    .with_minibatch_full_eval_steps(2)
    .with_max_bootstrapped_demos(2)
    .with_max_labeled_demos(2)
    .with_seed(0)
    .with_progress(Progress::Off)
}

fn reference_program() -> Prog {
    Prog {
        pred: Predict::new().with_lm(task_lm(Task::Fn1)),
    }
}

/// A run of the reference task in `dir` stopped after 20 metric calls; returns the data.
async fn stopped_run(dir: &Path) -> Vec<Example> {
    let data = examples(20);
    let (train, val) = data.split_at(10);
    let first = mipro()
        .with_log_dir(dir)
        .with_max_metric_calls(20)
        .compile(&reference_program(), train, val)
        .await
        .unwrap();
    assert_eq!(first.report.stopped, MiproStop::MetricCalls);
    data
}

#[tokio::test]
async fn a_torn_last_line_of_the_mipro_log_is_skipped_and_the_run_resumes() {
    let data = examples(20);
    let (train, val) = data.split_at(10);
    let whole = mipro()
        .compile(&reference_program(), train, val)
        .await
        .unwrap();

    let dir = temp_dir("mipro-torn");
    stopped_run(&dir).await;
    let log = dir.join("mipro_log.jsonl");
    let whole_lines = std::fs::read(&log).unwrap();
    // The run was killed while writing its next trial: half a line, cut inside a character.
    let mut torn = whole_lines.clone();
    torn.extend_from_slice(b"{\"event\":\"trial\",\"number\":9,\"note\":\"caf\xc3");
    std::fs::write(&log, &torn).unwrap();

    let resumed = mipro()
        .with_log_dir(&dir)
        .compile(&reference_program(), train, val)
        .await
        .unwrap();
    assert!(resumed.report.resumed);
    assert_eq!(resumed.report.stopped, MiproStop::Finished);
    assert_eq!(resumed.report.trials, whole.report.trials);
    // The torn line was cut off; the log goes on with whole lines only.
    let after = std::fs::read(&log).unwrap();
    assert!(after.starts_with(&whole_lines));
    let text = String::from_utf8(after).unwrap();
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
    assert!(!text.contains("\"note\""));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_damaged_line_in_the_middle_of_the_mipro_log_is_an_error_naming_it() {
    let dir = temp_dir("mipro-middle");
    let data = stopped_run(&dir).await;
    let (train, val) = data.split_at(10);
    let log = dir.join("mipro_log.jsonl");
    let text = std::fs::read(&log).unwrap();
    let lines: Vec<&[u8]> = text.split_inclusive(|b| *b == b'\n').collect();
    assert!(lines.len() > 3);
    for bad in [&b"\xff\xfe not text\n"[..], b"{\"event\": \"trial\", \n"] {
        // Line 3 is damaged, whole lines follow it.
        let damaged = [&lines[..2].concat()[..], bad, &lines[2..].concat()[..]].concat();
        std::fs::write(&log, &damaged).unwrap();
        let error = mipro()
            .with_log_dir(&dir)
            .compile(&reference_program(), train, val)
            .await
            .unwrap_err();
        assert!(matches!(error, OptimizeError::RunLog { .. }), "{error}");
        assert!(
            error.to_string().contains("line 3 cannot be read"),
            "{error}"
        );
        // Nothing was cut or appended.
        assert_eq!(std::fs::read(&log).unwrap(), damaged);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_log_of_other_data_of_the_same_size_is_not_replayed() {
    let dir = temp_dir("mipro-other-data");
    stopped_run(&dir).await;
    let log = dir.join("mipro_log.jsonl");
    let before = std::fs::read(&log).unwrap();
    // Twenty other questions: the same sizes, other content.
    let other: Vec<Example> = examples(40).split_off(20);
    let (train, val) = other.split_at(10);
    let error = mipro()
        .with_log_dir(&dir)
        .compile(&reference_program(), train, val)
        .await
        .unwrap_err();
    assert!(matches!(error, OptimizeError::RunLog { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("another run"), "{message}");
    assert!(message.contains("its data differ"), "{message}");
    assert_eq!(std::fs::read(&log).unwrap(), before, "the log is untouched");

    // The same questions with other input keys are other data too.
    let relabeled: Vec<Example> = examples(20)
        .into_iter()
        .map(|e| e.with_inputs(["question", "answer"]))
        .collect();
    let (train, val) = relabeled.split_at(10);
    let error = mipro()
        .with_log_dir(&dir)
        .compile(&reference_program(), train, val)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("its data differ"), "{error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The reference task model under another name.
struct Renamed<L>(L);

impl<L: Lm> Lm for Renamed<L> {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        self.0.complete(request)
    }

    fn model(&self) -> &str {
        "another-model"
    }
}

#[tokio::test]
async fn a_log_of_another_metric_program_or_model_is_not_replayed() {
    let dir = temp_dir("mipro-other-run");
    let data = stopped_run(&dir).await;
    let (train, val) = data.split_at(10);
    let refused = |error: OptimizeError, part: &str| {
        assert!(matches!(error, OptimizeError::RunLog { .. }), "{error}");
        let message = error.to_string();
        assert!(message.contains("another run"), "{message}");
        assert!(message.contains(part), "{part}: {message}");
    };

    let error = mipro()
        .with_metric_name("exact match, v2")
        .with_log_dir(&dir)
        .compile(&reference_program(), train, val)
        .await
        .unwrap_err();
    refused(error, "its metric differs");

    let mut edited = reference_program();
    edited
        .pred
        .predictor_mut()
        .set_instructions("Answer tersely.");
    let error = mipro()
        .with_log_dir(&dir)
        .compile(&edited, train, val)
        .await
        .unwrap_err();
    refused(error, "its program differs");

    let renamed = Prog {
        pred: Predict::new().with_lm(Renamed(task_lm(Task::Fn1))),
    };
    let error = mipro()
        .with_log_dir(&dir)
        .compile(&renamed, train, val)
        .await
        .unwrap_err();
    refused(error, "another-model");

    // The same run still resumes.
    let resumed = mipro()
        .with_log_dir(&dir)
        .compile(&reference_program(), train, val)
        .await
        .unwrap();
    assert!(resumed.report.resumed);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_gepa_state_with_an_index_out_of_range_is_an_error_not_a_panic() {
    let dir = temp_dir("gepa-damaged");
    let run = |budget: usize| {
        let dir = dir.clone();
        async move {
            Gepa::new(
                gepa_task::right,
                gepa_task::reflection_lm(Default::default()),
            )
            .with_feedback(gepa_task::feedback)
            .with_budget(GepaBudget::MetricCalls(budget))
            .with_concurrency(1)
            .with_progress(Progress::Off)
            .with_log_dir(&dir)
            .compile(
                &gepa_task::program(gepa_task::GOOD1, gepa_task::GOOD2),
                &gepa_task::examples(0..8),
                &gepa_task::examples(8..16),
            )
            .await
        }
    };
    run(30).await.unwrap();
    let path = dir.join("gepa_state.json");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let damages = [
        ("fronts", json!(vec![vec![99]; 8])),
        ("parents", json!([[], [42]])),
        ("next_component", json!([7])),
    ];
    for (key, value) in damages {
        let mut damaged = saved.clone();
        damaged[key] = value;
        if key != "fronts" {
            // Keep the lengths consistent: one candidate, the seed.
            for list in ["candidates", "val_scores", "discovered_at"] {
                damaged[list] = json!([damaged[list][0]]);
            }
            damaged["parents"] = if key == "parents" {
                json!([[42]])
            } else {
                json!([[]])
            };
            if key != "next_component" {
                damaged["next_component"] = json!([0]);
            }
            damaged["fronts"] = json!(vec![vec![0]; 8]);
        }
        std::fs::write(&path, damaged.to_string()).unwrap();
        let error = match run(60).await {
            Ok(_) => panic!("{key}: a damaged state was used"),
            Err(error) => error,
        };
        assert!(matches!(error, OptimizeError::RunLog { .. }), "{error}");
        assert!(error.to_string().contains("damaged"), "{key}: {error}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A server of the approval example on `dir`.
async fn approval_server(dir: &Path) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let store = react_approval::RunStore::new(dir.to_owned()).unwrap();
    let app = Arc::new(react_approval::App {
        agent: react_approval::agent(react_approval::Teller, &store.state_key().unwrap()),
        store,
    });
    let handle = tokio::spawn(async move {
        axum::serve(listener, react_approval::router(app))
            .await
            .unwrap();
    });
    (format!("http://{address}"), handle)
}

#[tokio::test]
async fn the_approval_example_parks_whole_files_and_keeps_one_it_cannot_read() {
    let dir = temp_dir("approval");
    let (server, handle) = approval_server(&dir).await;
    let client = reqwest::Client::new();
    let body = client
        .post(format!("{server}/runs"))
        .json(&json!({"request": "pay bob 20"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("event: suspended"), "{body}");
    // Beside the store's sealing key, one parked run and no temporary file.
    let parked: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with(".state-key"))
        .collect();
    assert_eq!(parked.len(), 1, "one parked run, no temporary: {parked:?}");
    serde_json::from_str::<Value>(&std::fs::read_to_string(&parked[0]).unwrap()).unwrap();

    // A parked file that cannot be read is not resumed, and not deleted either.
    let bad = dir.join("run-1-0.json");
    std::fs::write(&bad, b"{\"pending\": [").unwrap();
    let response = client
        .post(format!("{server}/runs/run-1-0/decisions"))
        .json(&json!({"step_0": {"decision": "approve"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(std::fs::read(&bad).unwrap(), b"{\"pending\": [");
    handle.abort();
    std::fs::remove_dir_all(&dir).unwrap();
}
