//! MIPROv2's demo-set candidates, as DSPy 3.4.1's `create_n_fewshot_demo_sets` builds them: no
//! demos, labeled demos, a bootstrap in training-set order, then bootstraps on reshuffled
//! training sets of random sizes — every shuffle and size drawn from the run's one random stream.

use crate::adapter::Fields;
use crate::data::{Example, PyRandom};
use crate::evaluate::{Bar, Metric};
use crate::lm::Usage;
use crate::module::Module;
use crate::optimize::{BootstrapFewShot, LabeledFewShot, OptimizeError};

/// How one demo set was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum DemoSetKind {
    /// No demos (set 0).
    Empty,
    /// Labeled training examples only.
    Labeled,
    /// Bootstrapped on the training set in its order.
    Bootstrapped,
    /// Bootstrapped on a reshuffled training set, with at most `size` bootstrapped demos.
    Shuffled {
        /// The number of bootstrapped demos this set asked for.
        size: usize,
    },
}

/// The demo sets: `sets[predictor][set]` is a list of demos.
pub(crate) struct DemoSets {
    pub(crate) kinds: Vec<DemoSetKind>,
    pub(crate) sets: Vec<Vec<Vec<Fields>>>,
    pub(crate) usage: Usage,
    /// Bootstrap runs (each one metric call).
    pub(crate) attempts: usize,
}

/// What each of `count` sets will be, with its shuffle drawn from `random` (DSPy's seeds -3,
/// -2, -1, then shuffles; with no labeled demos seed -2 is a shuffle too). Draws exactly what
/// DSPy draws, whether the sets are then built or read from a log.
pub(crate) fn plan(
    count: usize,
    trainset: usize,
    max_labeled: usize,
    max_bootstrapped: usize,
    random: &mut PyRandom,
) -> Vec<(DemoSetKind, Vec<usize>)> {
    (0..count)
        .map(|i| {
            let order: Vec<usize> = (0..trainset).collect();
            match i {
                0 => (DemoSetKind::Empty, order),
                1 if max_labeled > 0 => (DemoSetKind::Labeled, order),
                2 => (DemoSetKind::Bootstrapped, order),
                _ => {
                    let mut order = order;
                    random.shuffle(&mut order);
                    let size = random.randint(1, max_bootstrapped);
                    (DemoSetKind::Shuffled { size }, order)
                }
            }
        })
        .collect()
}

/// Builds the planned sets for `student`'s predictors (`bar` advances once per set).
pub(crate) async fn build<P, M>(
    bootstrap: &BootstrapFewShot<M>,
    student: &P,
    trainset: &[Example],
    plan: &[(DemoSetKind, Vec<usize>)],
    bar: &Bar,
) -> Result<DemoSets, OptimizeError>
where
    P: Module + Clone,
    M: Metric<P::Output>,
{
    let predictors = student.named_predictors().len();
    let mut result = DemoSets {
        kinds: Vec::new(),
        sets: vec![Vec::new(); predictors],
        usage: Usage::default(),
        attempts: 0,
    };
    for (i, (kind, order)) in plan.iter().enumerate() {
        tracing::info!(
            set = i + 1,
            of = plan.len(),
            ?kind,
            "MIPROv2: building a demo set"
        );
        let program = match kind {
            DemoSetKind::Empty => crate::optimize::reset_copy(student),
            DemoSetKind::Labeled => {
                LabeledFewShot::new(bootstrap.max_labeled_demos)
                    .labeled(student, trainset)
                    .program
            }
            DemoSetKind::Bootstrapped | DemoSetKind::Shuffled { .. } => {
                let examples: Vec<Example> = order.iter().map(|i| trainset[*i].clone()).collect();
                let size = match kind {
                    DemoSetKind::Shuffled { size } => *size,
                    _ => bootstrap.max_bootstrapped_demos,
                };
                let bootstrap = BootstrapFewShot {
                    max_bootstrapped_demos: size,
                    ..bootstrap.borrowed()
                };
                let compiled = bootstrap.compile(student, &examples).await?;
                result.usage += compiled.report.usage;
                result.attempts += compiled.report.attempts;
                compiled.program
            }
        };
        for (p, (_, predictor)) in program.named_predictors().into_iter().enumerate() {
            result.sets[p].push(predictor.demos().to_vec());
        }
        result.kinds.push(*kind);
        bar.advance(|| format!("demo set {} ({kind:?})", i + 1));
    }
    bar.finish();
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffled_sets_draw_from_the_shared_stream() {
        // DSPy 3.4.1, MIPROv2(seed=0), 6 sets, 10 training examples, B=3, L=2: the shuffles and
        // sizes of sets 3 to 5 (recorded).
        let mut random = PyRandom::new(0);
        let plan = plan(6, 10, 2, 3, &mut random);
        assert_eq!(plan[0].0, DemoSetKind::Empty);
        assert_eq!(plan[1].0, DemoSetKind::Labeled);
        assert_eq!(plan[2].0, DemoSetKind::Bootstrapped);
        assert_eq!(plan[3].1, [7, 8, 1, 5, 3, 4, 2, 0, 9, 6]);
        assert_eq!(plan[3].0, DemoSetKind::Shuffled { size: 2 });
        assert_eq!(plan[4].1, [5, 4, 8, 6, 0, 1, 7, 2, 3, 9]);
        assert_eq!(plan[5].1, [7, 6, 8, 2, 0, 4, 3, 5, 9, 1]);
        assert_eq!(plan[5].0, DemoSetKind::Shuffled { size: 3 });
        // With no labeled demos, set 1 is a shuffle as well.
        let plan = super::plan(4, 10, 0, 3, &mut PyRandom::new(0));
        assert!(matches!(plan[1].0, DemoSetKind::Shuffled { .. }));
    }
}
