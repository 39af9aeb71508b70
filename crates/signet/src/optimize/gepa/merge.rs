//! Merge: two frontier candidates that improved different components of a common ancestor are
//! combined (each component from the one that changed it), scored on a few validation examples
//! where they differ, and kept when the combination does at least as well as the better parent.

use std::collections::BTreeSet;

use super::pareto;
use super::state::State;
use crate::data::PyRandom;

/// How many validation examples a merged candidate is first scored on.
pub(crate) const SUBSAMPLE: usize = 5;
/// Below this many validation examples in common, two candidates are not merged.
const OVERLAP_FLOOR: usize = 5;

/// Merges scheduled and done, and which were tried (kept in memory: a resumed run starts afresh,
/// as in GEPA).
#[derive(Debug, Default)]
pub(crate) struct Merges {
    /// Merges owed: one per accepted reflective child, up to the limit.
    pub(crate) due: usize,
    /// Merges accepted.
    pub(crate) accepted: usize,
    /// Whether the last iteration added a reflective child.
    pub(crate) last_found_new: bool,
    triples: Vec<(usize, usize, usize)>,
    descriptions: Vec<(usize, usize, Vec<usize>)>,
}

/// A merge to score.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub(crate) instructions: Vec<String>,
    pub(crate) first: usize,
    pub(crate) second: usize,
    pub(crate) ancestor: usize,
    /// Validation examples to score it on first.
    pub(crate) subsample: Vec<usize>,
}

fn ancestors(state: &State, candidate: usize) -> BTreeSet<usize> {
    let mut found = BTreeSet::new();
    let mut stack: Vec<usize> = state.parents[candidate].clone();
    while let Some(p) = stack.pop() {
        if found.insert(p) {
            stack.extend(state.parents[p].iter().copied());
        }
    }
    found
}

impl Merges {
    /// Finds two frontier candidates to merge, as GEPA's `MergeProposer` does; `None` when no
    /// pair qualifies.
    pub(crate) fn plan(&mut self, state: &State, random: &mut PyRandom) -> Option<Plan> {
        let averages = state.averages();
        let pool = pareto::dominators(&state.fronts, &averages);
        if pool.len() < 2 || state.candidates.len() < 3 {
            return None;
        }
        for _ in 0..10 {
            let Some((i, j, ancestor)) = self.find_pair(state, &pool, &averages, random) else {
                continue;
            };
            if self.triples.contains(&(i, j, ancestor)) {
                continue;
            }
            let (a, x, y) = (
                &state.candidates[ancestor],
                &state.candidates[i],
                &state.candidates[j],
            );
            let mut instructions = a.clone();
            let mut description = Vec::with_capacity(a.len());
            for c in 0..a.len() {
                let source = if (a[c] == x[c] || a[c] == y[c]) && x[c] != y[c] {
                    if a[c] == x[c] { j } else { i }
                } else if a[c] != x[c] && a[c] != y[c] {
                    if averages[i] > averages[j] {
                        i
                    } else if averages[j] > averages[i] {
                        j
                    } else {
                        [i, j][random.below(2)]
                    }
                } else {
                    i
                };
                instructions[c] = state.candidates[source][c].clone();
                description.push(source);
            }
            if self
                .descriptions
                .iter()
                .any(|(p, q, d)| (*p, *q) == (i, j) && *d == description)
            {
                continue;
            }
            // Every candidate is scored on the whole validation set, so they share all of it.
            if state.front_best.len() < OVERLAP_FLOOR {
                continue;
            }
            self.descriptions.push((i, j, description));
            self.triples.push((i, j, ancestor));
            let subsample = subsample(&state.val_scores[i], &state.val_scores[j], random);
            if subsample.is_empty() {
                return None;
            }
            return Some(Plan {
                instructions,
                first: i,
                second: j,
                ancestor,
                subsample,
            });
        }
        None
    }

    /// Two candidates from `pool`, neither an ancestor of the other, and a common ancestor
    /// neither does worse than, from which each changed a different component.
    fn find_pair(
        &self,
        state: &State,
        pool: &[usize],
        averages: &[f64],
        random: &mut PyRandom,
    ) -> Option<(usize, usize, usize)> {
        for _ in 0..10 {
            let picked = random.sample(pool, 2);
            let (i, j) = (picked[0].min(picked[1]), picked[0].max(picked[1]));
            let (of_i, of_j) = (ancestors(state, i), ancestors(state, j));
            if of_i.contains(&j) || of_j.contains(&i) {
                continue;
            }
            let common: Vec<usize> = of_i
                .intersection(&of_j)
                .copied()
                .filter(|&a| {
                    !self.triples.contains(&(i, j, a))
                        && averages[a] <= averages[i]
                        && averages[a] <= averages[j]
                        && desirable(state, a, i, j)
                })
                .collect();
            if common.is_empty() {
                continue;
            }
            let weights: Vec<f64> = common.iter().map(|a| averages[*a]).collect();
            return Some((i, j, common[weighted_choice(&weights, random)]));
        }
        None
    }
}

/// Whether some component was changed by exactly one of `i` and `j` from `ancestor`.
fn desirable(state: &State, ancestor: usize, i: usize, j: usize) -> bool {
    let (a, x, y) = (
        &state.candidates[ancestor],
        &state.candidates[i],
        &state.candidates[j],
    );
    (0..a.len()).any(|c| (a[c] == x[c] || a[c] == y[c]) && x[c] != y[c])
}

/// Python's `choices(range(n), weights)[0]`; uniform when no weight is positive (where Python
/// raises).
fn weighted_choice(weights: &[f64], random: &mut PyRandom) -> usize {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 || !total.is_finite() {
        return ((random.random() * weights.len() as f64) as usize).min(weights.len() - 1);
    }
    let target = random.random() * total;
    let mut cumulative = 0.0;
    for (index, weight) in weights.iter().enumerate().take(weights.len() - 1) {
        cumulative += weight;
        if target < cumulative {
            return index;
        }
    }
    weights.len() - 1
}

/// Up to five validation examples: where the first parent does better, where the second does,
/// then where they tie (two of each, drawn), filled from the rest.
fn subsample(first: &[f64], second: &[f64], random: &mut PyRandom) -> Vec<usize> {
    let common: Vec<usize> = (0..first.len().min(second.len())).collect();
    let better_first: Vec<usize> = common
        .iter()
        .copied()
        .filter(|v| first[*v] > second[*v])
        .collect();
    let better_second: Vec<usize> = common
        .iter()
        .copied()
        .filter(|v| second[*v] > first[*v])
        .collect();
    let ties: Vec<usize> = common
        .iter()
        .copied()
        .filter(|v| first[*v] == second[*v] || first[*v].is_nan() || second[*v].is_nan())
        .collect();
    let each = SUBSAMPLE.div_ceil(3).max(1);
    let mut selected: Vec<usize> = Vec::new();
    for bucket in [better_first, better_second, ties] {
        if selected.len() >= SUBSAMPLE {
            break;
        }
        let available: Vec<usize> = bucket
            .into_iter()
            .filter(|v| !selected.contains(v))
            .collect();
        let take = available.len().min(each).min(SUBSAMPLE - selected.len());
        selected.extend(random.sample(&available, take));
    }
    let remaining = SUBSAMPLE - selected.len();
    if remaining > 0 {
        let unused: Vec<usize> = common
            .iter()
            .copied()
            .filter(|v| !selected.contains(v))
            .collect();
        if unused.len() >= remaining {
            selected.extend(random.sample(&unused, remaining));
        } else if !common.is_empty() {
            for _ in 0..remaining {
                let at = ((random.random() * common.len() as f64) as usize).min(common.len() - 1);
                selected.push(common[at]);
            }
        }
    }
    selected
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(candidates: &[[&str; 2]], parents: &[&[usize]], scores: &[&[f64]]) -> State {
        let to_vec = |c: &[&str; 2]| c.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        let mut state = State::new(
            vec!["a".into(), "b".into()],
            to_vec(&candidates[0]),
            scores[0].to_vec(),
            &PyRandom::new(0),
            serde_json::Value::Null,
        );
        for k in 1..candidates.len() {
            state.add(
                to_vec(&candidates[k]),
                parents[k].to_vec(),
                scores[k].to_vec(),
                0,
            );
        }
        state
    }

    #[test]
    fn two_children_that_changed_different_components_merge() {
        let s = state(
            &[["a0", "b0"], ["a1", "b0"], ["a0", "b1"]],
            &[&[], &[0], &[0]],
            &[
                &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
                &[1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
                &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0],
            ],
        );
        let mut merges = Merges::default();
        let plan = merges.plan(&s, &mut PyRandom::new(0)).unwrap();
        assert_eq!((plan.first, plan.second, plan.ancestor), (1, 2, 0));
        assert_eq!(plan.instructions, ["a1", "b1"]);
        assert_eq!(plan.subsample.len(), SUBSAMPLE);
        let distinct: BTreeSet<usize> = plan.subsample.iter().copied().collect();
        assert_eq!(distinct.len(), SUBSAMPLE);
        // Two from each side's wins, then one tie.
        assert_eq!(plan.subsample.iter().filter(|v| **v < 3).count(), 2);
        // The same merge is not tried twice.
        assert_eq!(merges.plan(&s, &mut PyRandom::new(0)), None);
    }

    #[test]
    fn no_merge_below_five_validation_examples_or_without_a_common_ancestor() {
        let small = state(
            &[["a0", "b0"], ["a1", "b0"], ["a0", "b1"]],
            &[&[], &[0], &[0]],
            &[&[0.0, 0.0], &[1.0, 0.0], &[0.0, 1.0]],
        );
        assert_eq!(Merges::default().plan(&small, &mut PyRandom::new(0)), None);
        let line = state(
            &[["a0", "b0"], ["a1", "b0"], ["a1", "b1"]],
            &[&[], &[0], &[1]],
            &[
                &[0.0; 6],
                &[1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
                &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0],
            ],
        );
        // 2 descends from 1: they are not merged.
        assert_eq!(Merges::default().plan(&line, &mut PyRandom::new(0)), None);
    }

    #[test]
    fn weighted_choice_follows_the_weights_and_survives_zeros() {
        let mut random = PyRandom::new(0);
        assert_eq!(weighted_choice(&[0.0, 1.0], &mut random), 1);
        assert!(weighted_choice(&[0.0, 0.0], &mut random) < 2);
    }
}
