//! What a run did, recorded per run: each predictor's inputs and outputs (the raw material of
//! bootstrapped demos) and the LM usage. Recording is opt-in and scoped to one future with
//! [`recorded`]; concurrent runs each get their own record, and nothing is kept when no one asks.
//!
//! ```
//! use signet::testing::ScriptedLm;
//! use signet::prelude::*;
//!
//! /// Answer.
//! #[derive(Signature)]
//! struct Ask { #[input] question: String, #[output] answer: String }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let qa = Predict::<Ask>::new().with_lm(ScriptedLm::texts(["[[ ## answer ## ]]\n4"]));
//! let (output, record) = signet::trace::recorded(qa.call(AskInput { question: "2 + 2?".into() })).await;
//! assert_eq!(output.unwrap().answer, "4");
//! assert_eq!(record.trace.len(), 1);
//! assert_eq!(record.trace[0].outputs["answer"], "4");
//! assert_eq!(record.usage.lm_calls, 1);
//! # });
//! ```

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::adapter::Fields;
use crate::lm::Usage;

/// Which predictor made a call: unique per predictor value (a clone gets a new one), so a trace
/// entry can be matched to the program's [`named_predictors`](crate::module::Predictors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PredictorId(u64);

impl PredictorId {
    pub(crate) fn fresh() -> PredictorId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        PredictorId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The number behind the id (`gen_ai.agent.id` in traces).
impl std::fmt::Display for PredictorId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One predictor call of a run: what it was given and what it produced (for a native ReAct run,
/// the whole run as one entry of its step predictor: inputs, `tool_turns` and outputs).
#[derive(Debug, Clone, PartialEq)]
pub struct TraceEntry {
    /// The predictor.
    pub predictor: PredictorId,
    /// Its inputs (for ReAct steps, the trajectory text included).
    pub inputs: Fields,
    /// What it produced.
    pub outputs: Fields,
}

impl TraceEntry {
    /// Inputs and outputs together: a demo.
    pub fn demo(&self) -> Fields {
        let mut demo = self.inputs.clone();
        demo.extend(self.outputs.clone());
        demo
    }
}

/// The predictor calls of a run, in order.
pub type Trace = Vec<TraceEntry>;

/// What [`recorded`] collected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// Each predictor call that produced outputs, in order.
    pub trace: Trace,
    /// Every LM call's usage (failed ones included).
    pub usage: Usage,
}

/// A record being written: the record, and whether predictor calls are wanted (usage always is).
struct Recording {
    record: Record,
    calls: bool,
}

tokio::task_local! {
    static RECORD: RefCell<Recording>;
}

/// Runs `future`, recording the predictor calls and LM usage it makes, and returns both.
pub async fn recorded<F: Future>(future: F) -> (F::Output, Record) {
    record(future, true).await
}

/// Runs `future`, recording its LM usage only (the trace stays empty): cheaper when no one reads
/// the calls.
pub(crate) async fn usage_of<F: Future>(future: F) -> (F::Output, Record) {
    record(future, false).await
}

/// Runs `future`, recording its LM usage, and its predictor calls when `calls`.
pub(crate) async fn record<F: Future>(future: F, calls: bool) -> (F::Output, Record) {
    let recording = Recording {
        record: Record::default(),
        calls,
    };
    RECORD
        .scope(RefCell::new(recording), async move {
            let output = future.await;
            let record = RECORD.with(|r| std::mem::take(&mut r.borrow_mut().record));
            (output, record)
        })
        .await
}

/// Adds a predictor call to the run's record, if it is being recorded.
pub(crate) fn record_call(predictor: PredictorId, inputs: &Fields, outputs: &Fields) {
    let _ = RECORD.try_with(|r| {
        let mut recording = r.borrow_mut();
        if recording.calls {
            recording.record.trace.push(TraceEntry {
                predictor,
                inputs: inputs.clone(),
                outputs: outputs.clone(),
            });
        }
    });
}

/// Whether predictor calls are being recorded (to skip building an entry no one keeps).
pub(crate) fn recording_calls() -> bool {
    RECORD.try_with(|r| r.borrow().calls).unwrap_or(false)
}

/// Adds what a nested [`recorded`] collected to the enclosing record, if there is one: its LM
/// usage always, its predictor calls when `calls` (a module that ran several attempts keeps the
/// calls of the one it returns, and the cost of all of them).
pub(crate) fn absorb(record: Record, calls: bool) {
    let _ = RECORD.try_with(|r| {
        let mut recording = r.borrow_mut();
        recording.record.usage += record.usage;
        if calls && recording.calls {
            recording.record.trace.extend(record.trace);
        }
    });
}

/// Adds LM usage to the run's record, if it is being recorded.
pub(crate) fn record_usage(usage: Usage) {
    let _ = RECORD.try_with(|r| r.borrow_mut().record.usage += usage);
}
