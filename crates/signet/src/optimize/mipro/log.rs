//! A MIPROv2 run's log (`mipro_log.jsonl` in the log directory): a header naming the run, then
//! the demo sets, the instruction candidates and every trial, one JSON line each, appended as
//! they happen. A run given a directory holding the log of the same run replays it: logged steps
//! are read instead of run (no LM call repeated), and the run goes on from where it stopped.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::{MiproChoice, MiproTrial, TrialKind};
use crate::adapter::Fields;
use crate::optimize::OptimizeError;

/// The log file.
pub(crate) const LOG_FILE: &str = "mipro_log.jsonl";
/// The best program so far, in DSPy's format.
pub(crate) const BEST_FILE: &str = "best_program.json";
/// Create it to stop a run before its next trial.
pub(crate) const STOP_FILE: &str = "mipro.stop";

/// A logged step.
pub(crate) enum Logged {
    DemoSets(Vec<Vec<Vec<Fields>>>),
    Instructions {
        candidates: Vec<Vec<String>>,
        summary: Option<String>,
        failures: Vec<String>,
    },
    Trial(MiproTrial),
}

#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line {
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
    Trial {
        number: usize,
        kind: TrialKind,
        choices: Vec<MiproChoice>,
        examples: Vec<usize>,
        score: f64,
        failures: usize,
        eval_calls: usize,
    },
}

/// An open run log: the steps still to replay, and the file new steps go to.
pub(crate) struct RunLog {
    path: PathBuf,
    pending: VecDeque<Logged>,
    resumed: bool,
}

impl RunLog {
    /// Opens the log in `dir` for the run `run` (its settings and data sizes): a new log is
    /// started; an existing one must be of the same run.
    pub(crate) fn open(dir: &Path, run: Value) -> Result<RunLog, OptimizeError> {
        let path = dir.join(LOG_FILE);
        let error = |reason: String| OptimizeError::RunLog {
            path: path.clone(),
            reason,
        };
        std::fs::create_dir_all(dir).map_err(|e| OptimizeError::RunLog {
            path: dir.to_owned(),
            reason: e.to_string(),
        })?;
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(error(e.to_string())),
        };
        let mut log = RunLog {
            path: path.clone(),
            pending: VecDeque::new(),
            resumed: false,
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        match lines.next() {
            None => {
                log.append(&json!({"event": "start", "run": run}))?;
                return Ok(log);
            }
            Some((_, first)) => match serde_json::from_str::<Line>(first) {
                Ok(Line::Start { run: logged }) if logged == run => {}
                Ok(Line::Start { run: logged }) => {
                    return Err(error(format!(
                        "the log is of another run (it was started with {logged}, this run is \
                         {run}); use another directory, or delete the log to start over"
                    )));
                }
                _ => return Err(error("line 1 is not a MIPROv2 log header".into())),
            },
        }
        for (n, line) in lines {
            let line: Line = serde_json::from_str(line)
                .map_err(|e| error(format!("line {} cannot be read: {e}", n + 1)))?;
            log.pending.push_back(match line {
                Line::Start { .. } => {
                    return Err(error(format!("line {} starts another run", n + 1)));
                }
                Line::DemoSets { sets } => Logged::DemoSets(sets),
                Line::Instructions {
                    candidates,
                    summary,
                    failures,
                } => Logged::Instructions {
                    candidates,
                    summary,
                    failures,
                },
                Line::Trial {
                    number,
                    kind,
                    choices,
                    examples,
                    score,
                    failures,
                    eval_calls,
                } => Logged::Trial(MiproTrial {
                    number,
                    kind,
                    choices,
                    examples,
                    score,
                    failures,
                    eval_calls,
                }),
            });
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
    pub(crate) fn append(&mut self, entry: &Value) -> Result<(), OptimizeError> {
        crate::optimize::append_jsonl(&self.path, entry)
    }
}

/// A trial's log line.
pub(crate) fn trial_entry(trial: &MiproTrial) -> Value {
    json!({
        "event": "trial",
        "number": trial.number,
        "kind": trial.kind,
        "choices": trial.choices,
        "examples": trial.examples,
        "score": trial.score,
        "failures": trial.failures,
        "eval_calls": trial.eval_calls,
    })
}
