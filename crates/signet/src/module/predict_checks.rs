//! Output checks on a predictor ([`DynPredict`]): the builders, and the call that re-asks while
//! an answer fails them (a predictor without tools; with tools the loop's driver re-asks).

use std::sync::Arc;

use super::check::watch::Watch;
use super::check::{
    Answer, Check, CheckFallback, Checks, ChecksFailed, ChecksSlot, FailedAttempt, FailedRun,
};
use super::hint_adapter::HintAdapter;
use super::react::events::{Emitter, ReActEvent};
use super::{DynPredict, Prediction};
use crate::adapter::{Adapter, Fields};
use crate::error::Error;
use crate::lm::{Completion, Lm, LmError, Usage};

impl ChecksSlot for DynPredict {
    fn checks_slot(&mut self) -> &mut Option<Arc<Checks>> {
        &mut self.checks
    }
}

impl DynPredict {
    /// Checks every answer with `check` (after those added before, and after the signature's
    /// own): an answer it refuses is asked for again, the model shown what is wrong
    /// ([`crate::module::check`]).
    ///
    /// ```
    /// use signet::module::DynPredict;
    /// use signet::module::check::NoRepetition;
    /// let qa = DynPredict::new("question -> answer".parse().unwrap()).with_output_check(NoRepetition::new());
    /// assert_eq!(qa.checks().unwrap().list().len(), 1);
    /// ```
    pub fn with_output_check(mut self, check: impl Check + 'static) -> Self {
        self.add_check(Arc::new(check));
        self
    }

    /// At most `n` re-asks after an answer its checks refused (default 2): the call makes up to
    /// `n + 1` attempts. 0 checks without asking again.
    pub fn with_max_reasks(mut self, n: usize) -> Self {
        self.set_max_reasks(n);
        self
    }

    /// What the call answers when every attempt was refused (default: it fails with
    /// [`ChecksFailed`]).
    pub fn with_check_fallback(mut self, fallback: CheckFallback) -> Self {
        self.set_check_fallback(fallback);
        self
    }

    /// The output checks, when any are set.
    pub fn checks(&self) -> Option<&Checks> {
        self.checks.as_deref()
    }

    /// The call with `checks`: asks, checks the answer, and re-asks with DSPy's `hint_` input
    /// holding the failures' messages until an answer passes or the re-asks are spent; then the
    /// fallback, or [`Error::Checks`]. A reply a check's watcher stops while it streams is a
    /// refused attempt too. Every call's usage is added to `usage`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn forward_checked(
        &self,
        checks: &Arc<Checks>,
        inputs: &Fields,
        lm: Arc<dyn Lm>,
        adapter: Arc<dyn Adapter>,
        demos: &[Fields],
        events: Option<&Emitter>,
        usage: &mut Usage,
    ) -> Result<Prediction, Error> {
        let watch = Watch::of(Some(checks), inputs);
        let mut attempts: Vec<FailedAttempt> = Vec::new();
        let mut total = Usage::default();
        let result = loop {
            let asked: Arc<dyn Adapter> = match attempts.last() {
                Some(refused) => Arc::new(HintAdapter {
                    inner: adapter.clone(),
                    hint: refused.message(),
                }),
                None => adapter.clone(),
            };
            let asked_lm = match &watch {
                Some(watch) => watch.wrap(lm.clone(), None, asked.marks_fields()),
                None => lm.clone(),
            };
            let call = crate::adapted::Call {
                signature: &self.signature,
                parse_as: self.parse_as.as_ref(),
                demos,
                inputs,
                options: &self.options,
                tool_choice: None,
                extra: None,
            };
            let reply =
                crate::adapted::run_counting(asked.as_ref(), asked_lm.as_ref(), &call, &mut total)
                    .await;
            let refused = match reply {
                Ok(reply) => {
                    let failures = checks.judge(&Answer::new(&reply.outputs, inputs));
                    if failures.is_empty() {
                        break Ok(Prediction {
                            outputs: reply.outputs,
                            usage: total,
                            completion: reply.completion,
                            adapter: reply.adapter,
                        });
                    }
                    FailedAttempt::new(reply.outputs, failures)
                }
                Err(Error::Lm(LmError::Stopped { reason })) => {
                    match watch.as_ref().and_then(|w| w.take_stopped()) {
                        Some(stopped) => {
                            // The stopped call counts; its tokens are unknown (a stream
                            // reports them at its end).
                            total.stopped_replies += 1;
                            total.lm_calls += 1;
                            stopped
                        }
                        None => break Err(Error::Lm(LmError::Stopped { reason })),
                    }
                }
                Err(error) => break Err(error),
            };
            attempts.push(refused);
            let reask = attempts.len() <= checks.max_reasks();
            report_refused(events, &attempts, reask);
            if !reask {
                break self.fall_back(checks, inputs, attempts, total, adapter.as_ref(), events);
            }
            total.reasks += 1;
        };
        *usage += total;
        result
    }

    /// The fallback's answer after `attempts` were all refused, or [`Error::Checks`].
    fn fall_back(
        &self,
        checks: &Checks,
        inputs: &Fields,
        attempts: Vec<FailedAttempt>,
        usage: Usage,
        adapter: &dyn Adapter,
        events: Option<&Emitter>,
    ) -> Result<Prediction, Error> {
        let run = FailedRun {
            signature: &self.signature,
            inputs,
            trajectory: None,
            attempts: &attempts,
        };
        match checks.fall_back(&run) {
            Some(outputs) => {
                if let Some(events) = events {
                    events.emit(ReActEvent::CheckFallback {
                        attempts: attempts.len(),
                    });
                }
                tracing::warn!(
                    attempts = attempts.len(),
                    "the answer failed its checks on every attempt; the fallback answers"
                );
                Ok(Prediction {
                    outputs,
                    usage,
                    completion: Completion::default(),
                    adapter: adapter.name(),
                })
            }
            None => Err(Error::Checks(ChecksFailed::new(attempts))),
        }
    }
}

/// Reports the last refused attempt's failures as events (`reask`: the model is asked again).
pub(crate) fn report_refused(events: Option<&Emitter>, attempts: &[FailedAttempt], reask: bool) {
    let (Some(events), Some(refused)) = (events, attempts.last()) else {
        return;
    };
    for failure in &refused.failures {
        events.emit(ReActEvent::CheckFailed {
            check: failure.check.clone(),
            field: failure.field.clone(),
            message: failure.message.clone(),
            attempt: attempts.len(),
            stopped_early: refused.stopped_early,
            reask,
        });
    }
}
