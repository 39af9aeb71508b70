//! Journals: where a run's effects — its LM calls and tool calls — go through, so that a durable
//! execution engine can record them and give their results back when the run is replayed.
//!
//! A run given a [`Journal`] (with [`CallConfig::with_journal`](crate::module::CallConfig::with_journal))
//! does not call its LMs and tools itself: it hands each call to the journal as an [`LmCall`] or
//! a [`ToolRun`], and the journal decides whether to run it ([`LmCall::run`], [`ToolRun::run`])
//! or to answer with the result it recorded the first time. Every module honours it, nested
//! ones included: `Predict`, `ChainOfThought`, ReAct in every mode, `Predict` with tools, and
//! any program made of them.
//!
//! What a journal can count on:
//!
//! - **Order.** Calls reach the journal one at a time in an order fixed by the program and the
//!   results it was given: a run with a journal calls the tools of one turn one after another, in
//!   the order the model gave them, instead of concurrently. Run twice with the same results, a
//!   program makes the same calls in the same order, so the n-th call of a replay is the n-th
//!   call recorded.
//! - **Results are data.** [`Completion`], [`LmError`] and [`ToolError`] serialise with serde, so
//!   a journal can store a call's whole outcome, failures included.
//!
//! `signet-restate` journals on [Restate](https://restate.dev); [`MemoryJournal`] is the
//! in-process journal for tests and for replaying a recorded run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lm::{Capabilities, Completion, Lm, LmError, LmRequest};
use crate::tool::{Tool, ToolError};

/// Where a run's effects go through (see [the module docs](self)).
pub trait Journal: Send + Sync {
    /// Runs `call` ([`LmCall::run`]), or answers with its recorded result.
    fn lm_call(&self, call: LmCall) -> BoxFuture<'static, Result<Completion, LmError>>;

    /// Runs `call` ([`ToolRun::run`]), or answers with its recorded result.
    fn tool_call(&self, call: ToolRun) -> BoxFuture<'static, Result<Value, ToolError>>;
}

/// One LM call a run asks its journal for.
pub struct LmCall {
    lm: Arc<dyn Lm>,
    request: LmRequest,
}

impl LmCall {
    /// The model asked (as [`Lm::model`] names it).
    pub fn model(&self) -> &str {
        self.lm.model()
    }

    /// What the call sends.
    pub fn request(&self) -> &LmRequest {
        &self.request
    }

    /// Makes the call.
    pub fn run(self) -> BoxFuture<'static, Result<Completion, LmError>> {
        async move { self.lm.complete(&self.request).await }.boxed()
    }
}

/// One tool call a run asks its journal for: the tool, the arguments the model gave, and the
/// tool's time limit.
pub struct ToolRun {
    tool: Arc<dyn Tool>,
    args: Value,
    timeout: Option<Duration>,
}

impl ToolRun {
    /// The tool's name.
    pub fn tool(&self) -> &str {
        self.tool.name()
    }

    /// The arguments.
    pub fn args(&self) -> &Value {
        &self.args
    }

    /// Runs the tool within its time limit ([`ToolError::Timeout`] past it). A tool loop makes a
    /// `ToolRun` only for a call it may run (a `#[tool(confirm)]` tool's once a person approved
    /// it), so the call runs [approved](crate::tool::approved).
    pub fn run(self) -> BoxFuture<'static, Result<Value, ToolError>> {
        async move {
            let call = self.tool.call(self.args);
            // Only a tool that needs approval checks for it: the others run without the mark.
            let call = if self.tool.requires_confirmation() {
                crate::tool::approved(self.tool.name(), call).boxed()
            } else {
                call
            };
            match self.timeout {
                Some(limit) => match tokio::time::timeout(limit, call).await {
                    Ok(result) => result,
                    Err(_) => Err(ToolError::Timeout {
                        tool: self.tool.name().to_owned(),
                        elapsed: limit,
                    }),
                },
                None => call.await,
            }
        }
        .boxed()
    }
}

/// How many tool calls of one turn may run at once: `limit` (at least 1), or, with a journal,
/// one at a time so the journal sees them in the model's order.
pub(crate) fn tool_concurrency(journal: Option<&Arc<dyn Journal>>, limit: usize) -> usize {
    if journal.is_some() { 1 } else { limit.max(1) }
}

/// Runs `tool` with `args` through `journal` when there is one, else directly.
pub(crate) fn run_tool(
    journal: Option<&Arc<dyn Journal>>,
    tool: &Arc<dyn Tool>,
    args: Value,
    timeout: Option<Duration>,
) -> BoxFuture<'static, Result<Value, ToolError>> {
    let call = ToolRun {
        tool: tool.clone(),
        args,
        timeout,
    };
    match journal {
        Some(journal) => journal.tool_call(call),
        None => call.run(),
    }
}

/// An [`Lm`] whose every call goes through a journal (what a module resolves to when its call
/// has one).
pub(crate) struct JournaledLm {
    pub(crate) lm: Arc<dyn Lm>,
    pub(crate) journal: Arc<dyn Journal>,
}

impl Lm for JournaledLm {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        self.journal.lm_call(LmCall {
            lm: self.lm.clone(),
            request: request.clone(),
        })
    }

    fn model(&self) -> &str {
        self.lm.model()
    }

    fn capabilities(&self) -> Capabilities {
        self.lm.capabilities()
    }
}

/// One recorded effect of a [`MemoryJournal`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// An LM call and its outcome.
    Lm {
        /// The model.
        model: String,
        /// The outcome.
        result: Result<Completion, LmError>,
    },
    /// A tool call and its outcome.
    Tool {
        /// The tool.
        tool: String,
        /// The arguments.
        args: Value,
        /// The outcome.
        result: Result<Value, ToolError>,
    },
}

/// An in-process journal: records every effect of the runs it is given to, in order, and
/// replays them — a run started on a journal holding recorded entries gets those results back
/// instead of calling the LM and the tools, until the entries run out. What a durable engine
/// does across processes, in one; useful to test that a program is replayable, and to rerun a
/// recorded run offline.
///
/// A replayed call that does not match its entry (another kind, another tool or other
/// arguments) is an error, not a silent substitution, and so is every call after it: the run
/// departed from the record. An LM call fails with [`LmError::Journal`] (which ends the run), a
/// tool call with [`ToolError::Remote`] (which the model reads).
///
/// ```
/// use signet::journal::MemoryJournal;
/// use signet::testing::ScriptedLm;
/// use signet::module::CallConfig;
/// use signet::prelude::*;
///
/// #[derive(Signature)]
/// struct Ask {
///     #[input] question: String,
///     #[output] answer: String,
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let journal = MemoryJournal::new();
/// let input = AskInput { question: "?".into() };
/// let live = Predict::<Ask>::new().with_lm(ScriptedLm::texts(["[[ ## answer ## ]]\nyes"]));
/// let call = CallConfig::new().with_journal(journal.clone());
/// assert_eq!(live.call_full(input.clone(), &call).await.unwrap().0.answer, "yes");
/// assert_eq!(journal.entries().len(), 1);
///
/// // Replayed: the LM (which has no reply left) is not called again.
/// let replay = MemoryJournal::replaying(journal.entries());
/// let call = CallConfig::new().with_journal(replay.clone());
/// let again = Predict::<Ask>::new().with_lm(ScriptedLm::texts(Vec::<String>::new()));
/// assert_eq!(again.call_full(input, &call).await.unwrap().0.answer, "yes");
/// assert_eq!(replay.replayed(), 1);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct MemoryJournal {
    state: Arc<Mutex<MemoryState>>,
}

#[derive(Default)]
struct MemoryState {
    entries: Vec<Entry>,
    /// How many entries were answered from the record.
    replayed: usize,
    /// The next entry to replay.
    next: usize,
    /// Where a replayed call did not match the record (nothing is answered after it).
    departed: Option<String>,
}

impl MemoryJournal {
    /// An empty journal: every call runs and is recorded.
    pub fn new() -> MemoryJournal {
        MemoryJournal::default()
    }

    /// A journal that answers the first calls with `entries` (a recorded run's), then runs and
    /// records the rest.
    pub fn replaying(entries: Vec<Entry>) -> MemoryJournal {
        let journal = MemoryJournal::default();
        journal.lock().entries = entries;
        journal
    }

    /// Every entry, recorded or replayed, in call order.
    pub fn entries(&self) -> Vec<Entry> {
        self.lock().entries.clone()
    }

    /// How many calls were answered from the record.
    pub fn replayed(&self) -> usize {
        self.lock().replayed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, MemoryState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The recorded entry for the next call, if any is left (and counts it as replayed); an
    /// error once the run departed from the record.
    fn next_recorded(&self) -> Result<Option<Entry>, String> {
        let mut state = self.lock();
        if let Some(departure) = &state.departed {
            return Err(departure.clone());
        }
        let Some(entry) = state.entries.get(state.next).cloned() else {
            return Ok(None);
        };
        state.next += 1;
        state.replayed += 1;
        Ok(Some(entry))
    }

    /// Notes that call `what` did not match `recorded`, and says so.
    fn depart(&self, what: String, recorded: &Entry) -> String {
        let mut state = self.lock();
        let message = format!(
            "the replay departed from the journal at entry {}: {what} was replayed where the \
             journal holds {recorded:?}",
            state.next.saturating_sub(1)
        );
        state.departed = Some(message.clone());
        message
    }

    fn record(&self, entry: Entry) {
        let mut state = self.lock();
        state.entries.push(entry);
        state.next = state.entries.len();
    }
}

impl std::fmt::Debug for MemoryJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("MemoryJournal")
            .field("entries", &state.entries.len())
            .field("replayed", &state.replayed)
            .finish()
    }
}

impl Journal for MemoryJournal {
    fn lm_call(&self, call: LmCall) -> BoxFuture<'static, Result<Completion, LmError>> {
        let journal = self.clone();
        async move {
            match journal.next_recorded() {
                Err(message) => Err(LmError::Journal { message }),
                Ok(Some(Entry::Lm { result, .. })) => result,
                Ok(Some(other)) => Err(LmError::Journal {
                    message: journal.depart("an LM call".to_owned(), &other),
                }),
                Ok(None) => {
                    let model = call.model().to_owned();
                    let result = call.run().await;
                    journal.record(Entry::Lm {
                        model,
                        result: result.clone(),
                    });
                    result
                }
            }
        }
        .boxed()
    }

    fn tool_call(&self, call: ToolRun) -> BoxFuture<'static, Result<Value, ToolError>> {
        let journal = self.clone();
        async move {
            let failed = |message| ToolError::Remote {
                tool: call.tool().to_owned(),
                message,
            };
            match journal.next_recorded() {
                Err(message) => Err(failed(message)),
                Ok(Some(Entry::Tool { tool, args, result }))
                    if tool == call.tool() && &args == call.args() =>
                {
                    result
                }
                Ok(Some(other)) => {
                    let what = format!("a call of `{}` with {}", call.tool(), call.args());
                    Err(failed(journal.depart(what, &other)))
                }
                Ok(None) => {
                    let (tool, args) = (call.tool().to_owned(), call.args().clone());
                    let result = call.run().await;
                    journal.record(Entry::Tool {
                        tool,
                        args,
                        result: result.clone(),
                    });
                    result
                }
            }
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::FnTool;

    fn echo() -> Arc<dyn Tool> {
        Arc::new(FnTool::builder("echo").sync_fn(|args: Value| Ok::<_, String>(args)))
    }

    #[tokio::test]
    async fn a_replayed_tool_call_with_other_arguments_is_an_error() {
        let journal = MemoryJournal::new();
        let tool = echo();
        let shared: Arc<dyn Journal> = Arc::new(journal.clone());
        let out = run_tool(Some(&shared), &tool, serde_json::json!({"a": 1}), None)
            .await
            .unwrap();
        assert_eq!(out, serde_json::json!({"a": 1}));

        let replay: Arc<dyn Journal> = Arc::new(MemoryJournal::replaying(journal.entries()));
        let error = run_tool(Some(&replay), &tool, serde_json::json!({"a": 2}), None)
            .await
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("was replayed where the journal holds"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn entries_and_errors_round_trip_through_json() {
        let entry = Entry::Tool {
            tool: "slow".into(),
            args: serde_json::json!({}),
            result: Err(ToolError::Timeout {
                tool: "slow".into(),
                elapsed: Duration::from_millis(1500),
            }),
        };
        let text = serde_json::to_string(&entry).unwrap();
        assert_eq!(serde_json::from_str::<Entry>(&text).unwrap(), entry);
        let lm = Entry::Lm {
            model: "m".into(),
            result: Err(LmError::RateLimited {
                retry_after: Some(Duration::from_secs(2)),
                message: "slow down".into(),
            }),
        };
        let text = serde_json::to_string(&lm).unwrap();
        assert_eq!(serde_json::from_str::<Entry>(&text).unwrap(), lm);
    }
}
