//! DSPy's `Ensemble`: several programs answer each call, and one answer is chosen
//! ([`Ensemble`], [`Ensembled`]).

use std::sync::{Arc, Mutex};

use super::OptimizeError;
use crate::data::PyRandom;
use crate::module::{DynPredict, DynReAct, Module, Predictors, join_path};

/// How an [`Ensembled`] program makes one output of its members' outputs.
type Reduce<O> = Arc<dyn Fn(Vec<O>) -> O + Send + Sync>;

/// DSPy's `Ensemble`: puts compiled programs of one type together into an [`Ensembled`] program
/// that runs them on each call (all of them, or `size` of them sampled) and keeps one answer, by
/// default the majority's ([`majority`](crate::evaluate::majority): the most common value of
/// the output's last field, compared after normalizing, ties to the first member's).
///
/// It is not an [`Optimizer`](super::Optimizer): it compiles several programs, not one student
/// (DSPy's `compile(programs)` too); give it the programs several optimizers (or seeds) made.
///
/// As in DSPy: the members run on the same inputs and a sample of `size` is drawn for each call.
/// Unlike DSPy, the members run concurrently, the sample comes from a generator seeded with
/// [`with_seed`](Self::with_seed) (DSPy draws from Python's global one, so runs do not repeat),
/// and without a reducer of yours the answer is the majority's ([`Ensembled::call_all`] gives
/// every member's output, what DSPy returns without a `reduce_fn`).
///
/// ```
/// use signet::optimize::Ensemble;
/// use signet::prelude::*;
/// use signet::testing::ScriptedLm;
///
/// /// Answer with one word.
/// #[derive(Signature)]
/// struct Ask { #[input] question: String, #[output] answer: String }
///
/// let member = |answer: &str| Predict::<Ask>::new().with_lm(ScriptedLm::texts([format!("[[ ## answer ## ]]\n{answer}")]));
/// let ensembled = Ensemble::new().compile(vec![member("Paris"), member("Lyon"), member("paris.")])?;
/// let out = ensembled.call_blocking(AskInput { question: "Capital of France?".into() }).unwrap();
/// assert_eq!(out.answer, "Paris");
/// # Ok::<(), signet::optimize::OptimizeError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Ensemble {
    size: Option<usize>,
    seed: i64,
}

impl Ensemble {
    /// Every member answers each call; samples (with [`with_size`](Self::with_size)) drawn from
    /// seed 0.
    pub fn new() -> Ensemble {
        Ensemble::default()
    }

    crate::shared::setters! {
        /// Each call runs `size` members sampled without replacement (DSPy's `size`; all of them
        /// when there are fewer).
        fn with_size(size: usize) { size = Some(size.max(1)) }

        /// The seed of the samples' generator (Python's `random.Random(seed)`; default 0).
        fn with_seed(seed: i64) { seed = seed }
    }

    /// The programs as one [`Ensembled`] program; none is [`OptimizeError::Settings`].
    pub fn compile<P: Module>(&self, programs: Vec<P>) -> Result<Ensembled<P>, OptimizeError> {
        if programs.is_empty() {
            return Err(OptimizeError::Settings {
                reason: "an ensemble needs at least one program".into(),
            });
        }
        Ok(Ensembled {
            programs,
            size: self.size,
            random: Arc::new(Mutex::new(PyRandom::new(self.seed))),
            reduce: None,
        })
    }
}

/// Programs of one type answering together (see [`Ensemble`]). Its predictors are its members'
/// (`programs[0]`, `programs[1].predict`, .. as DSPy names them), so it saves and loads as DSPy's
/// ensembled program does.
pub struct Ensembled<P: Module> {
    programs: Vec<P>,
    size: Option<usize>,
    /// Shared by the clones of one program: their samples continue one sequence.
    random: Arc<Mutex<PyRandom>>,
    reduce: Option<Reduce<P::Output>>,
}

impl<P: Module + Clone> Clone for Ensembled<P> {
    fn clone(&self) -> Self {
        Ensembled {
            programs: self.programs.clone(),
            size: self.size,
            random: self.random.clone(),
            reduce: self.reduce.clone(),
        }
    }
}

impl<P: Module> std::fmt::Debug for Ensembled<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ensembled")
            .field("members", &self.programs.len())
            .field("size", &self.size)
            .field(
                "reduce",
                &self.reduce.as_ref().map_or("majority", |_| "custom"),
            )
            .finish()
    }
}

impl<P: Module> Ensembled<P> {
    /// Chooses the answer with `reduce` instead of the majority (DSPy's `reduce_fn`): it gets the
    /// outputs of the members that ran, in the order drawn (member order when all run).
    pub fn with_reduce(
        mut self,
        reduce: impl Fn(Vec<P::Output>) -> P::Output + Send + Sync + 'static,
    ) -> Self {
        self.reduce = Some(Arc::new(reduce));
        self
    }

    /// The members.
    pub fn programs(&self) -> &[P] {
        &self.programs
    }

    /// The indices of the members that answer the next call: all of them, or a sample.
    fn chosen(&self) -> Vec<usize> {
        match self.size {
            Some(size) if size < self.programs.len() => {
                let mut random = self.random.lock().unwrap_or_else(|e| e.into_inner());
                random.sample_indices(self.programs.len(), size)
            }
            _ => (0..self.programs.len()).collect(),
        }
    }
}

impl<P> Ensembled<P>
where
    P: Module,
    P::Input: Clone,
{
    /// Every chosen member's output, in the order drawn (member order when all run; what DSPy's ensembled program returns
    /// without a `reduce_fn`); the first member's error if one fails.
    pub async fn call_all(&self, input: P::Input) -> Result<Vec<P::Output>, P::Error> {
        let runs = self
            .chosen()
            .into_iter()
            .map(|index| self.programs[index].call(input.clone()));
        futures::future::join_all(runs).await.into_iter().collect()
    }
}

impl<P> Module for Ensembled<P>
where
    P: Module,
    P::Input: Clone,
{
    type Input = P::Input;
    type Output = P::Output;
    type Error = P::Error;

    async fn call(&self, input: P::Input) -> Result<P::Output, P::Error> {
        // Never empty: an ensemble has a member, and a call runs at least one.
        let mut outputs = self.call_all(input).await?;
        if let Some(reduce) = &self.reduce {
            return Ok(reduce(outputs));
        }
        let index = crate::evaluate::majority(&outputs, None)
            .and_then(|chosen| outputs.iter().position(|o| std::ptr::eq(o, chosen)))
            .unwrap_or(0);
        Ok(outputs.swap_remove(index))
    }

    fn output_fields(output: &P::Output) -> crate::adapter::Fields {
        P::output_fields(output)
    }
}

impl<P: Module> Predictors for Ensembled<P> {
    fn named_predictors(&self) -> Vec<(String, &DynPredict)> {
        member_paths(&self.programs, |p| p.named_predictors())
    }

    fn named_predictors_mut(&mut self) -> Vec<(String, &mut DynPredict)> {
        member_paths_mut(&mut self.programs, |p| p.named_predictors_mut())
    }

    fn named_react_loops(&self) -> Vec<(String, &DynReAct)> {
        member_paths(&self.programs, |p| p.named_react_loops())
    }

    fn named_react_loops_mut(&mut self) -> Vec<(String, &mut DynReAct)> {
        member_paths_mut(&mut self.programs, |p| p.named_react_loops_mut())
    }
}

/// Each member's items under `programs[i]`.
fn member_paths<'a, P, T: 'a>(
    programs: &'a [P],
    items: impl Fn(&'a P) -> Vec<(String, T)>,
) -> Vec<(String, T)> {
    programs
        .iter()
        .enumerate()
        .flat_map(|(i, program)| {
            items(program)
                .into_iter()
                .map(move |(path, item)| (join_path(&format!("programs[{i}]"), path), item))
        })
        .collect()
}

/// [`member_paths`], to change.
fn member_paths_mut<'a, P, T: 'a>(
    programs: &'a mut [P],
    items: impl Fn(&'a mut P) -> Vec<(String, T)>,
) -> Vec<(String, T)> {
    programs
        .iter_mut()
        .enumerate()
        .flat_map(|(i, program)| {
            items(program)
                .into_iter()
                .map(move |(path, item)| (join_path(&format!("programs[{i}]"), path), item))
        })
        .collect()
}
