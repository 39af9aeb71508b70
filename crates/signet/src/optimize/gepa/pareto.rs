//! The Pareto frontier over validation examples: for each example, the candidates with the best
//! score on it; candidates that are best nowhere once dominated ones are dropped are never picked.
//!
//! Sets iterate in ascending order here. Python's GEPA iterates CPython sets, whose order for
//! small integers is ascending until a candidate index reaches the set's table size (8 at first);
//! beyond that a tie can be broken differently than in Python.

use std::collections::BTreeSet;

use crate::data::PyRandom;

/// The average of `scores`, summed in order (as Python sums them), `-inf` when there are none.
pub(crate) fn average(scores: &[f64]) -> f64 {
    if scores.is_empty() {
        f64::NEG_INFINITY
    } else {
        scores.iter().sum::<f64>() / scores.len() as f64
    }
}

/// The first index of the highest average (ties go to the earlier candidate).
pub(crate) fn best_index(averages: &[f64]) -> usize {
    averages
        .iter()
        .enumerate()
        .fold(0, |best, (i, a)| if *a > averages[best] { i } else { best })
}

/// The fronts without dominated candidates. A candidate is dominated when every front holding it
/// also holds another candidate still in play; candidates are tried from the lowest average up,
/// one removal at a time, as GEPA does.
pub(crate) fn remove_dominated(
    fronts: &[BTreeSet<usize>],
    averages: &[f64],
) -> Vec<BTreeSet<usize>> {
    let mut programs: Vec<usize> = Vec::new();
    for front in fronts {
        for &p in front {
            if !programs.contains(&p) {
                programs.push(p);
            }
        }
    }
    // Stable: equal averages keep their first-seen order.
    programs.sort_by(|a, b| averages[*a].total_cmp(&averages[*b]));
    let mut dominated: BTreeSet<usize> = BTreeSet::new();
    loop {
        let found = programs.iter().copied().find(|&y| {
            !dominated.contains(&y)
                && fronts
                    .iter()
                    .filter(|front| front.contains(&y))
                    .all(|front| {
                        front
                            .iter()
                            .any(|o| *o != y && !dominated.contains(o) && programs.contains(o))
                    })
        });
        match found {
            Some(y) => {
                dominated.insert(y);
            }
            None => break,
        }
    }
    fronts
        .iter()
        .map(|front| front.difference(&dominated).copied().collect())
        .collect()
}

/// A parent drawn from the frontier, each candidate weighted by the number of examples it is
/// (undominated) best on.
pub(crate) fn select_from_front(
    fronts: &[BTreeSet<usize>],
    averages: &[f64],
    random: &mut PyRandom,
) -> usize {
    let filtered = remove_dominated(fronts, averages);
    let mut order: Vec<usize> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for front in &filtered {
        for &p in front {
            match order.iter().position(|q| *q == p) {
                Some(at) => counts[at] += 1,
                None => {
                    order.push(p);
                    counts.push(1);
                }
            }
        }
    }
    let pool: Vec<usize> = order
        .iter()
        .zip(&counts)
        .flat_map(|(p, n)| std::iter::repeat_n(*p, *n))
        .collect();
    if pool.is_empty() {
        return best_index(averages);
    }
    pool[random.below(pool.len())]
}

/// The candidates on any undominated front, ascending (the merge's pool).
pub(crate) fn dominators(fronts: &[BTreeSet<usize>], averages: &[f64]) -> Vec<usize> {
    remove_dominated(fronts, averages)
        .into_iter()
        .flatten()
        .collect::<BTreeSet<usize>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fronts(sets: &[&[usize]]) -> Vec<BTreeSet<usize>> {
        sets.iter().map(|s| s.iter().copied().collect()).collect()
    }

    #[test]
    fn a_candidate_alone_on_a_front_is_never_dominated() {
        let f = fronts(&[&[0, 1], &[1], &[0]]);
        let kept = remove_dominated(&f, &[0.5, 0.6]);
        assert_eq!(kept, f);
    }

    #[test]
    fn of_two_with_the_same_fronts_the_lower_average_goes() {
        let f = fronts(&[&[0, 1], &[0, 1], &[2]]);
        let kept = remove_dominated(&f, &[0.4, 0.5, 0.3]);
        assert_eq!(kept, fronts(&[&[1], &[1], &[2]]));
        assert_eq!(dominators(&f, &[0.4, 0.5, 0.3]), [1, 2]);
    }

    #[test]
    fn selection_weights_by_fronts_held() {
        // Python: random.Random(0).choice([0, 0, 1, 1]) == 1 (getrandbits(2) of Random(0) is 3).
        let f = fronts(&[&[0, 1], &[1], &[0]]);
        let mut random = PyRandom::new(0);
        let picked = select_from_front(&f, &[0.5, 0.5], &mut random);
        assert_eq!(picked, [0, 0, 1, 1][PyRandom::new(0).below(4)]);
    }

    #[test]
    fn best_index_keeps_the_first_of_a_tie() {
        assert_eq!(best_index(&[0.2, 0.7, 0.7]), 1);
        assert_eq!(average(&[]), f64::NEG_INFINITY);
    }
}
