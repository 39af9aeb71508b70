//! The search MIPROv2 runs over (instruction, demo set) choices: optuna's `TPESampler(seed,
//! multivariate=True)` for categorical parameters, reproduced draw for draw (optuna 3.6 to 5.0 give
//! the same trials): random one-hot draws for the first 10 trials, then a multivariate
//! tree-structured Parzen estimator comparing the best tenth of the trials with the rest.
//!
//! The algorithm is optuna's (MIT licence, Copyright (c) 2018 Preferred Networks, Inc.); the code
//! is Signet's.

use std::collections::BTreeMap;

use crate::data::PyRandom;

/// Trials drawn at random before the estimator takes over (optuna's `n_startup_trials`).
const STARTUP_TRIALS: usize = 10;
/// Candidates drawn from the good trials' estimator per trial (optuna's `n_ei_candidates`).
const CANDIDATES: usize = 24;

/// A finished trial: its choice for each parameter, and its score.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Trial {
    pub(crate) params: BTreeMap<String, usize>,
    pub(crate) value: f64,
}

/// A seeded categorical TPE sampler (maximizing).
pub(crate) struct Tpe {
    /// The estimator's stream (optuna's `TPESampler._rng`).
    estimator: PyRandom,
    /// The startup sampler's stream (its `RandomSampler._rng`).
    startup: PyRandom,
    history: Vec<Trial>,
}

/// The choices of one trial, filled parameter by parameter as they are asked for.
pub(crate) struct Ask {
    relative: BTreeMap<String, usize>,
}

impl Tpe {
    pub(crate) fn new(seed: u32) -> Tpe {
        Tpe {
            estimator: PyRandom::numpy(seed),
            startup: PyRandom::numpy(seed),
            history: Vec::new(),
        }
    }

    /// How many trials have finished.
    pub(crate) fn trials(&self) -> usize {
        self.history.len()
    }

    /// Records a finished trial (also one not sampled here, such as the default program's).
    pub(crate) fn tell(&mut self, params: BTreeMap<String, usize>, value: f64) {
        self.history.push(Trial { params, value });
    }

    /// Starts a trial over `space` (parameter name, number of choices): from the 10th finished
    /// trial on, every parameter with more than one choice is drawn jointly by the estimator.
    pub(crate) fn start(&mut self, space: &[(String, usize)]) -> Ask {
        let mut space: Vec<(String, usize)> =
            space.iter().filter(|(_, k)| *k > 1).cloned().collect();
        space.sort();
        if self.history.len() < STARTUP_TRIALS || space.is_empty() {
            return Ask {
                relative: BTreeMap::new(),
            };
        }
        let n = self.history.len();
        let below_count = gamma(n).min(n);
        let mut order: Vec<usize> = (0..n).collect();
        // Best first; ties keep the earlier trial first (a stable sort).
        order.sort_by(|a, b| self.history[*b].value.total_cmp(&self.history[*a].value));
        let mut below: Vec<usize> = order[..below_count].to_vec();
        let mut above: Vec<usize> = order[below_count..].to_vec();
        below.sort_unstable();
        above.sort_unstable();
        let below = Parzen::new(&self.pick(&below), &space);
        let above = Parzen::new(&self.pick(&above), &space);
        let samples = below.sample(&mut self.estimator, CANDIDATES);
        let mut best = 0;
        let mut best_score = f64::NEG_INFINITY;
        for (i, sample) in samples.iter().enumerate() {
            let score = below.log_pdf(sample) - above.log_pdf(sample);
            if score > best_score {
                best = i;
                best_score = score;
            }
        }
        let relative = space
            .iter()
            .zip(&samples[best])
            .map(|((name, _), value)| (name.clone(), *value))
            .collect();
        Ask { relative }
    }

    fn pick(&self, indices: &[usize]) -> Vec<&BTreeMap<String, usize>> {
        indices.iter().map(|i| &self.history[*i].params).collect()
    }

    /// The choice for `name` (one of `choices`): the estimator's, or a random one-hot draw
    /// during startup (`choices` uniforms, the first largest wins).
    pub(crate) fn suggest(&mut self, ask: &Ask, name: &str, choices: usize) -> usize {
        if choices <= 1 {
            return 0;
        }
        if let Some(value) = ask.relative.get(name) {
            return *value;
        }
        let mut best = 0;
        let mut best_u = f64::NEG_INFINITY;
        for i in 0..choices {
            let u = self.startup.random();
            if u > best_u {
                best = i;
                best_u = u;
            }
        }
        best
    }
}

/// optuna's default `gamma`: the best tenth of the trials, at most 25.
fn gamma(n: usize) -> usize {
    n.div_ceil(10).min(25)
}

/// optuna's default weights: flat under 25 observations, else a ramp to the 25 newest.
fn default_weights(n: usize) -> Vec<f64> {
    if n < 25 {
        return vec![1.0; n];
    }
    let ramp = n - 25;
    let low = 1.0 / n as f64;
    let mut weights: Vec<f64> = match ramp {
        0 => Vec::new(),
        1 => vec![low],
        _ => (0..ramp)
            .map(|i| low + (1.0 - low) * i as f64 / (ramp - 1) as f64)
            .collect(),
    };
    weights.extend(std::iter::repeat_n(1.0, 25));
    weights
}

/// A mixture of one kernel per observation plus a uniform prior, over categorical parameters.
struct Parzen<'s> {
    weights: Vec<f64>,
    /// Per parameter, per mixture component, the probability of each choice.
    kernels: Vec<Vec<Vec<f64>>>,
    space: &'s [(String, usize)],
}

impl<'s> Parzen<'s> {
    fn new(observations: &[&BTreeMap<String, usize>], space: &'s [(String, usize)]) -> Parzen<'s> {
        let m = observations.len();
        let mut weights = if m == 0 {
            vec![1.0]
        } else {
            let mut w = default_weights(m);
            w.push(1.0);
            w
        };
        let total: f64 = weights.iter().sum();
        for w in &mut weights {
            *w /= total;
        }
        let kernels = space
            .iter()
            .map(|(name, choices)| {
                (0..=m)
                    .map(|row| {
                        let mut cells = vec![1.0 / (m + 1) as f64; *choices];
                        if row < m {
                            cells[observations[row].get(name).copied().unwrap_or(0)] += 1.0;
                        }
                        let sum: f64 = cells.iter().sum();
                        cells.iter().map(|c| c / sum).collect()
                    })
                    .collect()
            })
            .collect();
        Parzen {
            weights,
            kernels,
            space,
        }
    }

    /// `size` joint draws: a mixture component each (numpy's `choice(p=)`), then each parameter
    /// in name order from that component's kernel.
    fn sample(&self, random: &mut PyRandom, size: usize) -> Vec<Vec<usize>> {
        let total: f64 = self.weights.iter().sum();
        let mut cdf = Vec::with_capacity(self.weights.len());
        let mut acc = 0.0;
        for w in &self.weights {
            acc += w;
            cdf.push(acc);
        }
        for c in &mut cdf {
            *c /= total;
        }
        let active: Vec<usize> = (0..size)
            .map(|_| {
                let u = random.random();
                cdf.iter().filter(|c| **c <= u).count()
            })
            .collect();
        let mut samples = vec![Vec::with_capacity(self.space.len()); size];
        for kernel in &self.kernels {
            let uniforms: Vec<f64> = (0..size).map(|_| random.random()).collect();
            for (s, u) in uniforms.iter().enumerate() {
                let row = &kernel[active[s].min(kernel.len() - 1)];
                let mut cumulative = 0.0;
                let mut below = 0;
                for (i, p) in row.iter().enumerate() {
                    cumulative = if i + 1 == row.len() {
                        1.0
                    } else {
                        cumulative + p
                    };
                    if cumulative < *u {
                        below += 1;
                    }
                }
                samples[s].push(below);
            }
        }
        samples
    }

    fn log_pdf(&self, sample: &[usize]) -> f64 {
        let terms: Vec<f64> = self
            .weights
            .iter()
            .enumerate()
            .map(|(k, w)| {
                w.ln()
                    + self
                        .kernels
                        .iter()
                        .zip(sample)
                        .map(|(kernel, x)| kernel[k][*x].ln())
                        .sum::<f64>()
            })
            .collect();
        let max = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        terms.iter().map(|t| (t - max).exp()).sum::<f64>().ln() + max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(instruction: usize, demos: usize) -> BTreeMap<String, usize> {
        BTreeMap::from([
            ("0_predictor_demos".to_owned(), demos),
            ("0_predictor_instruction".to_owned(), instruction),
        ])
    }

    /// DSPy 3.4.1's MIPROv2 with optuna 5.0.0 (seed 0, 6 instructions, 6 demo sets, 40 trials,
    /// full evaluations every 5): each trial's (instruction, demo set) and score, full evaluations
    /// (added to the study as trials) marked. Every choice must come out the same.
    const RUN: &[(usize, usize, f64, bool)] = &[
        (1, 2, 50.0, false),
        (1, 2, 50.0, false),
        (3, 1, 100.0, false),
        (2, 0, 12.5, false),
        (4, 2, 75.0, false),
        (3, 1, 100.0, true),
        (2, 4, 50.0, false),
        (0, 5, 37.5, false),
        (5, 3, 62.5, false),
        (3, 5, 100.0, false),
        (3, 1, 100.0, false),
        (3, 5, 100.0, true),
        (5, 1, 75.0, false),
        (4, 1, 62.5, false),
        (3, 3, 100.0, false),
        (3, 4, 100.0, false),
        (1, 1, 37.5, false),
        (3, 3, 100.0, true),
        (0, 1, 50.0, false),
        (2, 1, 62.5, false),
        (3, 1, 100.0, false),
        (3, 0, 100.0, false),
        (5, 5, 50.0, false),
        (3, 4, 100.0, true),
        (3, 2, 100.0, false),
        (4, 5, 62.5, false),
        (1, 5, 62.5, false),
        (2, 5, 37.5, false),
        (3, 5, 100.0, false),
        (3, 0, 100.0, true),
        (3, 1, 100.0, false),
        (3, 1, 100.0, false),
        (3, 1, 100.0, false),
        (0, 2, 87.5, false),
        (4, 0, 62.5, false),
        (3, 2, 100.0, true),
        (0, 3, 50.0, false),
        (1, 4, 75.0, false),
        (2, 2, 62.5, false),
        (5, 4, 62.5, false),
        (1, 0, 50.0, false),
        (0, 2, 55.0, true),
        (3, 5, 100.0, false),
        (3, 5, 100.0, false),
        (2, 3, 62.5, false),
        (3, 1, 100.0, false),
        (3, 5, 100.0, false),
        (4, 2, 50.0, true),
    ];

    #[test]
    fn the_trials_are_optunas() {
        let space = vec![
            ("0_predictor_instruction".to_owned(), 6),
            ("0_predictor_demos".to_owned(), 6),
        ];
        let mut tpe = Tpe::new(0);
        tpe.tell(params(0, 0), 50.0); // the default program, fully evaluated
        for (n, &(instruction, demos, value, full)) in RUN.iter().enumerate() {
            if !full {
                let ask = tpe.start(&space);
                let got = (
                    tpe.suggest(&ask, "0_predictor_instruction", 6),
                    tpe.suggest(&ask, "0_predictor_demos", 6),
                );
                assert_eq!(got, (instruction, demos), "trial {}", n + 2);
            }
            tpe.tell(params(instruction, demos), value);
        }
    }

    #[test]
    fn weights_and_gamma_are_optunas() {
        assert_eq!(gamma(1), 1);
        assert_eq!(gamma(11), 2);
        assert_eq!(gamma(400), 25);
        assert_eq!(default_weights(3), [1.0; 3]);
        let w = default_weights(27);
        assert_eq!(w.len(), 27);
        assert!((w[0] - 1.0 / 27.0).abs() < 1e-12);
        assert_eq!(w[1], 1.0);
    }
}
