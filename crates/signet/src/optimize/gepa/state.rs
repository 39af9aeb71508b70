//! A GEPA run's state: the candidates, their validation scores, the frontier and the counters —
//! saved after every iteration in the run's log directory, and loaded to resume.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::pareto;
use crate::data::PyRandom;
use crate::optimize::{OptimizeError, run_fingerprint};

/// The state file in a log directory.
pub(crate) const STATE_FILE: &str = "gepa_state.json";
/// One JSON line per iteration.
pub(crate) const LOG_FILE: &str = "run_log.jsonl";
/// Every candidate's instructions, rewritten as candidates are added.
pub(crate) const CANDIDATES_FILE: &str = "candidates.json";
/// Create it to stop a run at its next iteration.
pub(crate) const STOP_FILE: &str = "gepa.stop";

/// 2: the state carries the run's fingerprint.
const VERSION: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct State {
    version: u32,
    /// The predictors' names: the components, in the program's order.
    pub(crate) components: Vec<String>,
    /// Each candidate's instructions, one per component.
    pub(crate) candidates: Vec<Vec<String>>,
    /// Each candidate's parents (none for the seed, one for a reflective child, two for a merge).
    pub(crate) parents: Vec<Vec<usize>>,
    /// Each candidate's score on each validation example.
    pub(crate) val_scores: Vec<Vec<f64>>,
    /// The best score on each validation example.
    pub(crate) front_best: Vec<f64>,
    /// The candidates reaching it.
    pub(crate) fronts: Vec<BTreeSet<usize>>,
    /// Per candidate, the component its next reflective child rewrites (round robin).
    pub(crate) next_component: Vec<usize>,
    /// The iteration (-1 before the first).
    pub(crate) iteration: i64,
    /// Full validation passes done.
    pub(crate) full_evals: usize,
    /// Metric calls spent.
    pub(crate) metric_calls: usize,
    /// Metric calls spent before each candidate's validation pass.
    pub(crate) discovered_at: Vec<usize>,
    /// The reflective dataset's random state.
    reflection_random: (Vec<u32>, usize),
    /// What the scores depend on besides the settings (see [`run_fingerprint::fingerprint`]).
    fingerprint: Value,
}

impl State {
    pub(crate) fn new(
        components: Vec<String>,
        seed: Vec<String>,
        seed_scores: Vec<f64>,
        reflection_random: &PyRandom,
        fingerprint: Value,
    ) -> State {
        State {
            version: VERSION,
            components,
            candidates: vec![seed],
            parents: vec![Vec::new()],
            front_best: seed_scores.clone(),
            fronts: vec![BTreeSet::from([0]); seed_scores.len()],
            metric_calls: seed_scores.len(),
            val_scores: vec![seed_scores],
            next_component: vec![0],
            iteration: -1,
            full_evals: 1,
            discovered_at: vec![0],
            reflection_random: reflection_random.state(),
            fingerprint,
        }
    }

    pub(crate) fn averages(&self) -> Vec<f64> {
        self.val_scores.iter().map(|s| pareto::average(s)).collect()
    }

    /// Adds a candidate scored on the whole validation set (after its pass was counted) and
    /// updates the frontier; returns its index.
    pub(crate) fn add(
        &mut self,
        instructions: Vec<String>,
        parents: Vec<usize>,
        scores: Vec<f64>,
        discovered_at: usize,
    ) -> usize {
        let index = self.candidates.len();
        let pointer = parents
            .iter()
            .map(|p| self.next_component[*p])
            .max()
            .unwrap_or(0);
        for (val, score) in scores.iter().enumerate() {
            if *score > self.front_best[val] {
                self.front_best[val] = *score;
                self.fronts[val] = BTreeSet::from([index]);
            } else if *score == self.front_best[val] {
                self.fronts[val].insert(index);
            }
        }
        self.candidates.push(instructions);
        self.parents.push(parents);
        self.val_scores.push(scores);
        self.next_component.push(pointer);
        self.discovered_at.push(discovered_at);
        self.full_evals += 1;
        index
    }

    pub(crate) fn set_reflection_random(&mut self, random: &PyRandom) {
        self.reflection_random = random.state();
    }

    pub(crate) fn reflection_random(&self) -> Option<PyRandom> {
        PyRandom::from_state(&self.reflection_random.0, self.reflection_random.1)
    }

    /// Writes the state and the candidates, each atomically (see
    /// [`crate::fs_atomic::write_atomic`]): a crash leaves the previous file, never half of one.
    pub(crate) fn save(&self, dir: &Path) -> Result<(), OptimizeError> {
        let write = |name: &str, value: Result<String, serde_json::Error>| {
            let path = dir.join(name);
            value
                .map_err(|e| e.to_string())
                .and_then(|text| {
                    crate::fs_atomic::write_private(&path, text.as_bytes())
                        .map_err(|e| e.to_string())
                })
                .map_err(|reason| OptimizeError::RunLog {
                    path: path.clone(),
                    reason,
                })
        };
        write(STATE_FILE, serde_json::to_string_pretty(self))?;
        let candidates: Vec<Value> = self
            .candidates
            .iter()
            .map(|c| {
                Value::Object(
                    self.components
                        .iter()
                        .cloned()
                        .zip(c.iter().cloned().map(Value::String))
                        .collect(),
                )
            })
            .collect();
        write(CANDIDATES_FILE, serde_json::to_string_pretty(&candidates))
    }

    /// The state saved in `dir`, if there is one; an error ([`OptimizeError::RunLog`], never a
    /// panic) when it is unreadable, damaged (an index out of range) or belongs to another
    /// program or validation set.
    pub(crate) fn load(
        dir: &Path,
        components: &[String],
        val_size: usize,
        fingerprint: &Value,
    ) -> Result<Option<State>, OptimizeError> {
        let path = dir.join(STATE_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(OptimizeError::RunLog {
                    path,
                    reason: e.to_string(),
                });
            }
        };
        let invalid = |reason: String| OptimizeError::RunLog {
            path: path.clone(),
            reason,
        };
        let state: State =
            serde_json::from_str(&text).map_err(|e| invalid(format!("not a GEPA state: {e}")))?;
        if state.version != VERSION {
            return Err(invalid(format!(
                "state version {} (this Signet reads {VERSION})",
                state.version
            )));
        }
        if state.components != components {
            return Err(invalid(format!(
                "saved for predictors {:?}, the program has {components:?}",
                state.components
            )));
        }
        let consistent = state.candidates.len() == state.val_scores.len()
            && state.candidates.len() == state.parents.len()
            && state.candidates.len() == state.next_component.len()
            && state.candidates.len() == state.discovered_at.len()
            && state.candidates.iter().all(|c| c.len() == components.len())
            && state.val_scores.iter().all(|s| s.len() == val_size)
            && state.fronts.len() == val_size
            && state.front_best.len() == val_size
            && state.reflection_random().is_some();
        if !consistent {
            return Err(invalid(format!(
                "the saved candidates do not fit a validation set of {val_size} examples and \
                 {} predictors",
                components.len()
            )));
        }
        state.check_indices().map_err(|reason| {
            invalid(format!(
                "the state is damaged: {reason}; delete it to start over"
            ))
        })?;
        if &state.fingerprint != fingerprint {
            let difference = match (state.fingerprint.as_object(), fingerprint.as_object()) {
                (Some(saved), Some(now)) => run_fingerprint::describe_difference(saved, now),
                _ => "its fingerprint differs".to_owned(),
            };
            return Err(invalid(format!(
                "the state is of another run ({difference}); use another directory, or delete \
                 the state to start over"
            )));
        }
        Ok(Some(state))
    }

    /// Whether every index the state holds points inside it (a loaded state is used without
    /// further checks): the seed is there, parents come before their child, the fronts name
    /// candidates, each next component is a component.
    fn check_indices(&self) -> Result<(), String> {
        let candidates = self.candidates.len();
        if candidates == 0 {
            return Err("it has no candidates (the starting program is the first)".into());
        }
        for (child, parents) in self.parents.iter().enumerate() {
            if let Some(parent) = parents.iter().find(|p| **p >= child) {
                return Err(format!(
                    "candidate {child} has parent {parent}, which is not an earlier candidate"
                ));
            }
        }
        for (example, front) in self.fronts.iter().enumerate() {
            if let Some(candidate) = front.iter().find(|c| **c >= candidates) {
                return Err(format!(
                    "the front of validation example {example} names candidate {candidate}, \
                     but there are {candidates}"
                ));
            }
        }
        let components = self.components.len();
        for (candidate, next) in self.next_component.iter().enumerate() {
            if *next >= components {
                return Err(format!(
                    "candidate {candidate}'s next component is {next}, but there are \
                     {components}"
                ));
            }
        }
        if self.iteration < -1 {
            return Err(format!("the iteration is {}", self.iteration));
        }
        Ok(())
    }
}

/// Appends one iteration's record to the run log.
pub(crate) fn append_log(dir: &Path, entry: &Value) -> Result<(), OptimizeError> {
    crate::optimize::append_jsonl(&dir.join(LOG_FILE), entry)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn names() -> Vec<String> {
        vec!["a".into(), "b".into()]
    }

    fn fingerprint() -> Value {
        json!({"data": "d1", "metric": "exact", "program": "p1", "models": {"task": ["m"]}})
    }

    #[test]
    fn fronts_follow_new_bests_and_ties() {
        let mut state = State::new(
            names(),
            vec!["x".into(), "y".into()],
            vec![1.0, 0.0, 0.0],
            &PyRandom::new(0),
            fingerprint(),
        );
        let c = state.add(
            vec!["x".into(), "z".into()],
            vec![0],
            vec![1.0, 1.0, 0.0],
            3,
        );
        assert_eq!(c, 1);
        assert_eq!(
            state.fronts,
            [
                BTreeSet::from([0, 1]),
                BTreeSet::from([1]),
                BTreeSet::from([0, 1])
            ]
        );
        assert_eq!(state.front_best, [1.0, 1.0, 0.0]);
        assert_eq!(state.full_evals, 2);
    }

    #[test]
    fn a_saved_state_loads_and_a_foreign_one_is_refused() {
        let dir = std::env::temp_dir().join(format!("signet-gepa-state-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let state = State::new(
            names(),
            vec!["x".into(), "y".into()],
            vec![1.0, 0.0],
            &PyRandom::new(0),
            fingerprint(),
        );
        state.save(&dir).unwrap();
        let loaded = State::load(&dir, &names(), 2, &fingerprint())
            .unwrap()
            .unwrap();
        assert_eq!(loaded.candidates, state.candidates);
        let error = State::load(&dir, &["a".into()], 2, &fingerprint())
            .unwrap_err()
            .to_string();
        assert!(error.contains("saved for predictors"), "{error}");
        let error = State::load(&dir, &names(), 3, &fingerprint())
            .unwrap_err()
            .to_string();
        assert!(error.contains("validation set of 3"), "{error}");
        // The same shape from another run: other data of the same size, another metric.
        let mut other = fingerprint();
        other["data"] = json!("d2");
        other["metric"] = json!("contains");
        let error = State::load(&dir, &names(), 2, &other)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("of another run (its data, metric differ; metric: logged \"exact\", now \"contains\")"),
            "{error}"
        );
        assert!(
            error.ends_with("use another directory, or delete the state to start over"),
            "{error}"
        );
        std::fs::write(dir.join(STATE_FILE), "{").unwrap();
        let error = State::load(&dir, &names(), 2, &fingerprint())
            .unwrap_err()
            .to_string();
        assert!(error.contains("not a GEPA state"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            State::load(&dir, &names(), 2, &fingerprint())
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn a_state_with_an_index_out_of_range_is_an_error() {
        let dir = std::env::temp_dir().join(format!("signet-gepa-indices-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut state = State::new(
            names(),
            vec!["x".into(), "y".into()],
            vec![1.0, 0.0],
            &PyRandom::new(0),
            fingerprint(),
        );
        state.add(vec!["x".into(), "z".into()], vec![0], vec![0.0, 1.0], 2);
        state.save(&dir).unwrap();
        let saved: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(STATE_FILE)).unwrap()).unwrap();
        assert!(
            State::load(&dir, &names(), 2, &fingerprint())
                .unwrap()
                .is_some()
        );
        let damages: [(&str, Value, &str); 5] = [
            ("parents", json!([[], [7]]), "parent 7"),
            ("parents", json!([[], [1]]), "parent 1"),
            ("fronts", json!([[0], [9]]), "names candidate 9"),
            ("next_component", json!([0, 2]), "next component is 2"),
            ("iteration", json!(-5), "the iteration is -5"),
        ];
        for (key, value, expected) in damages {
            let mut damaged = saved.clone();
            damaged[key] = value;
            std::fs::write(dir.join(STATE_FILE), damaged.to_string()).unwrap();
            let error = State::load(&dir, &names(), 2, &fingerprint()).unwrap_err();
            assert!(matches!(error, OptimizeError::RunLog { .. }), "{error}");
            let error = error.to_string();
            assert!(
                error.contains("damaged") && error.contains(expected),
                "{error}"
            );
        }
        // No candidate at all (every list empty, so the lengths agree).
        let mut damaged = saved.clone();
        for key in [
            "candidates",
            "parents",
            "val_scores",
            "next_component",
            "discovered_at",
        ] {
            damaged[key] = json!([]);
        }
        damaged["fronts"] = json!([[], []]);
        std::fs::write(dir.join(STATE_FILE), damaged.to_string()).unwrap();
        let error = State::load(&dir, &names(), 2, &fingerprint())
            .unwrap_err()
            .to_string();
        assert!(error.contains("no candidates"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
