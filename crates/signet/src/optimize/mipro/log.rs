//! A MIPROv2 run's log (`mipro_log.jsonl` in the log directory): a header naming the run, then
//! the demo sets, the instruction candidates and every trial, one JSON line each, appended as
//! they happen (each line synced before the run goes on). A run given a directory holding the
//! log of the same run replays it: logged steps are read instead of run (no LM call repeated),
//! and the run goes on from where it stopped.
//!
//! The header names the run by its settings and by a fingerprint of what its steps depend on
//! ([`run_fingerprint::fingerprint`]): a content hash of the training and validation data, the metric's name, a
//! hash of the program's saved JSON, and the models. A log whose header differs is another run's
//! and is refused. A torn last line (a run killed while writing it) is skipped with a warning
//! and cut off the file; a bad line before it is an error.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::MiproTrial;
use crate::adapter::Fields;
use crate::optimize::{OptimizeError, run_fingerprint};

/// The log file.
pub(crate) const LOG_FILE: &str = "mipro_log.jsonl";
/// The best program so far, in DSPy's format.
pub(crate) const BEST_FILE: &str = "best_program.json";
/// Create it to stop a run before its next trial.
pub(crate) const STOP_FILE: &str = "mipro.stop";

/// One line of the log, as written and as read back.
#[derive(Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Logged {
    /// The header: what run this is (its settings and data sizes).
    Start {
        run: Value,
    },
    DemoSets {
        sets: Vec<Vec<Vec<Fields>>>,
    },
    Instructions {
        candidates: Vec<Vec<String>>,
        summary: Option<String>,
        failures: Vec<String>,
    },
    Trial(MiproTrial),
}

/// An open run log: the steps still to replay, and the file new steps go to.
pub(crate) struct RunLog {
    path: PathBuf,
    pending: VecDeque<Logged>,
    resumed: bool,
}

impl RunLog {
    /// Opens the log in `dir` for the run `run` (its settings and [`fingerprint`]): a new log is
    /// started; an existing one must be of the same run. A torn last line is cut off the file
    /// (with a warning) so that new steps follow the last whole one.
    pub(crate) fn open(dir: &Path, run: Value) -> Result<RunLog, OptimizeError> {
        let path = dir.join(LOG_FILE);
        let error = |reason: String| OptimizeError::RunLog {
            path: path.clone(),
            reason,
        };
        crate::fs_atomic::create_private_dir_all(dir).map_err(|e| OptimizeError::RunLog {
            path: dir.to_owned(),
            reason: e.to_string(),
        })?;
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(error(e.to_string())),
        };
        let read = crate::fs_atomic::read_log::<Logged>(&path, &bytes)
            .map_err(|bad| error(bad.to_string()))?;
        if read.torn.is_some() {
            crate::fs_atomic::truncate(&path, read.intact)
                .map_err(|e| error(format!("cannot cut the torn last line off the log: {e}")))?;
        }
        let mut log = RunLog {
            path: path.clone(),
            pending: VecDeque::new(),
            resumed: false,
        };
        let mut lines = read.records.into_iter();
        match lines.next() {
            None => {
                log.append(&Logged::Start { run })?;
                return Ok(log);
            }
            Some((_, Logged::Start { run: logged })) if logged == run => {}
            Some((_, Logged::Start { run: logged })) => {
                return Err(error(format!(
                    "the log is of another run ({}); use another directory, or delete the log \
                     to start over",
                    differences(&logged, &run)
                )));
            }
            Some((n, _)) => return Err(error(format!("line {n} is not a MIPROv2 log header"))),
        }
        for (n, line) in lines {
            if matches!(line, Logged::Start { .. }) {
                return Err(error(format!("line {n} starts another run")));
            }
            log.pending.push_back(line);
        }
        log.resumed = !log.pending.is_empty();
        Ok(log)
    }

    /// The next logged step, while there are some.
    pub(crate) fn next(&mut self) -> Option<Logged> {
        self.pending.pop_front()
    }

    /// Whether logged steps remain to be replayed.
    pub(crate) fn replaying(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Whether the log held steps of an earlier run.
    pub(crate) fn resumed(&self) -> bool {
        self.resumed
    }

    /// Appends one step.
    pub(crate) fn append(&mut self, entry: &Logged) -> Result<(), OptimizeError> {
        let entry = serde_json::to_value(entry).map_err(|e| OptimizeError::RunLog {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        crate::optimize::append_jsonl(&self.path, &entry)
    }
}

/// Which parts of two run headers differ (`data`, `seed`, ..), for the error.
fn differences(logged: &Value, run: &Value) -> String {
    let (Some(logged), Some(run)) = (logged.as_object(), run.as_object()) else {
        return format!("it was started with {logged}, this run is {run}");
    };
    let mut keys: Vec<&String> = logged.keys().chain(run.keys()).collect();
    keys.sort();
    keys.dedup();
    let differing: Vec<String> = keys
        .into_iter()
        .filter(|k| logged.get(*k) != run.get(*k))
        .map(|k| {
            let show = |v: Option<&Value>| v.map_or_else(|| "nothing".to_owned(), Value::to_string);
            match (k.as_str(), logged.get(k), run.get(k)) {
                ("fingerprint", Some(Value::Object(a)), Some(Value::Object(b))) => {
                    run_fingerprint::describe_difference(a, b)
                }
                _ => format!(
                    "{k}: logged {}, now {}",
                    show(logged.get(k)),
                    show(run.get(k))
                ),
            }
        })
        .collect();
    if differing.is_empty() {
        format!("it was started with {}", Value::Object(logged.clone()))
    } else {
        differing.join("; ")
    }
}
