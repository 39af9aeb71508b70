//! A MIPROv2 run's log (`mipro_log.jsonl` in the log directory): a header naming the run, then
//! the demo sets, the instruction candidates and every trial, one JSON line each, appended as
//! they happen. A run given a directory holding the log of the same run replays it: logged steps
//! are read instead of run (no LM call repeated), and the run goes on from where it stopped.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::MiproTrial;
use crate::adapter::Fields;
use crate::optimize::OptimizeError;

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
                log.append(&Logged::Start { run })?;
                return Ok(log);
            }
            Some((_, first)) => match serde_json::from_str::<Logged>(first) {
                Ok(Logged::Start { run: logged }) if logged == run => {}
                Ok(Logged::Start { run: logged }) => {
                    return Err(error(format!(
                        "the log is of another run (it was started with {logged}, this run is \
                         {run}); use another directory, or delete the log to start over"
                    )));
                }
                _ => return Err(error("line 1 is not a MIPROv2 log header".into())),
            },
        }
        for (n, line) in lines {
            let line: Logged = serde_json::from_str(line)
                .map_err(|e| error(format!("line {} cannot be read: {e}", n + 1)))?;
            if matches!(line, Logged::Start { .. }) {
                return Err(error(format!("line {} starts another run", n + 1)));
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
