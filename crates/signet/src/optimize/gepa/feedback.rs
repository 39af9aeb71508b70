//! The feedback the reflection LM reads about each predictor's call ([`PredictorFeedback`]).

use crate::data::Example;
use crate::evaluate::{Predicted, Score};
use crate::trace::TraceEntry;

/// Feedback on one predictor's call, for the reflection LM. The default,
/// [`MetricFeedback`], uses the metric's own [`Score::feedback`] (or says the score); a closure
/// `Fn(&Example, &Predicted<O>, &str, &TraceEntry) -> impl Into<Score>` gives feedback per
/// predictor, as DSPy's five-argument GEPA metrics do (the `&str` is the predictor's name, the
/// entry its call being shown).
pub trait PredictorFeedback<O: ?Sized>: Send + Sync {
    /// The feedback for `call` (a call of the predictor named `predictor`) in the run that
    /// produced `predicted`; `None` keeps the metric's.
    fn feedback(
        &self,
        example: &Example,
        predicted: &Predicted<'_, O>,
        predictor: &str,
        call: &TraceEntry,
    ) -> Option<Score>;
}

/// The default feedback: the metric's [`Score::feedback`], or `This trajectory got a score of
/// {score}.` when it gives none (DSPy's text).
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricFeedback;

impl<O: ?Sized> PredictorFeedback<O> for MetricFeedback {
    fn feedback(
        &self,
        _: &Example,
        _: &Predicted<'_, O>,
        _: &str,
        _: &TraceEntry,
    ) -> Option<Score> {
        None
    }
}

impl<O: ?Sized, F, S> PredictorFeedback<O> for F
where
    F: Fn(&Example, &Predicted<'_, O>, &str, &TraceEntry) -> S + Send + Sync,
    S: Into<Score>,
{
    fn feedback(
        &self,
        example: &Example,
        predicted: &Predicted<'_, O>,
        predictor: &str,
        call: &TraceEntry,
    ) -> Option<Score> {
        Some(self(example, predicted, predictor, call).into())
    }
}
