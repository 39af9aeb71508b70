//! The bounds of one run ([`Limits`]).

use std::time::Duration;

use super::error::RunFailure;
use crate::lm::Usage;

/// Bounds on one run: how many steps and LM calls it may make, how long a tool call may take,
/// how much of a tool's output goes back to the model, how many calls run at once. The defaults are
/// generous for real tasks and stop runaway runs; the setters change one bound.
///
/// ```
/// use std::time::Duration;
/// use signet::module::Limits;
/// let limits = Limits::default().max_iters(5).tool_timeout(Duration::from_secs(30));
/// assert_eq!((limits.max_iters, limits.max_observation_chars), (5, 20_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// At most this many steps (model turns in native mode), after which the extractor answers
    /// from the steps so far. Default 20 (DSPy's `max_iters`).
    pub max_iters: usize,
    /// How many LM calls one run may make. Steps, their fallbacks, retries after truncation and
    /// the extractor all count (the tool-selection call does not); the limit is checked before each
    /// step and extractor call, which fails with [`RunFailure::LmCallLimit`] once it is reached (a
    /// step's own fallback may still run past it). Default 100.
    pub max_lm_calls: u32,
    /// A time limit for each tool call; a call that exceeds it becomes an observation the model
    /// reads (async tools are cancelled; a sync tool's thread finishes in the background). Default
    /// 60 seconds (as the MCP client's); `None` waits for ever.
    pub tool_timeout: Option<Duration>,
    /// The longest observation (in characters of its text) sent back to the model; longer tool
    /// outputs are cut, with a marker saying how much was left out, and the whole output is kept in
    /// the trajectory ([`Observation::Truncated`](super::Observation::Truncated)). Default 20,000.
    pub max_observation_chars: usize,
    /// The longest tool result (in characters of its text) the answer step reads: the extractor
    /// sees each observation cut at this many characters, with the same marker, while the steps
    /// read up to [`max_observation_chars`](Self::max_observation_chars) and the trajectory keeps
    /// the whole output. The answer prompt stays small however much the tools returned; raise it
    /// when answers quote long documents. Default 2,000.
    pub max_answer_observation_chars: usize,
    /// How many tool calls of one native-mode reply run at the same time. Default 8.
    pub max_concurrent_tools: usize,
    /// How many tool calls of one reply run (native and history modes). The calls beyond it do not
    /// run: each gets an error observation naming this limit, which the model reads (every call
    /// keeps its result, so the conversation stays valid) and the run goes on. Default 16.
    pub max_tool_calls_per_turn: usize,
    /// How many bytes of a tool's whole output an [`Observation::Truncated`](super::Observation::Truncated) keeps (in the
    /// trajectory, traces and a [`SuspendedRun`](super::SuspendedRun)) once the model's view is cut at
    /// [`max_observation_chars`](Self::max_observation_chars). A longer output is kept as text cut
    /// at this many bytes and ending with a marker saying how many bytes were dropped. Default
    /// 1 MiB.
    pub max_kept_observation_bytes: usize,
    /// The context window of the model, in tokens, when the LM does not report it
    /// ([`Capabilities::context_window`](crate::lm::Capabilities::context_window)). With a known
    /// window every step's prompt is counted before it is sent and the trajectory truncated
    /// (the run's [`TruncationPolicy`](super::TruncationPolicy)) until it fits, leaving the reply `max_tokens` (or an
    /// eighth of the window). Default: none (only the provider's refusal triggers truncation).
    pub context_window: Option<u32>,
    /// What one run may spend, in tokens or dollars ([`Budget`](crate::lm::Budget)): checked
    /// with the call limit before each step and extractor call, which fails with
    /// [`RunFailure::Budget`] when it would go past it. Default: none.
    pub budget: crate::lm::Budget,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_iters: 20,
            max_lm_calls: 100,
            tool_timeout: Some(Duration::from_secs(60)),
            max_observation_chars: 20_000,
            max_answer_observation_chars: 2_000,
            max_concurrent_tools: 8,
            max_tool_calls_per_turn: 16,
            max_kept_observation_bytes: 1 << 20,
            context_window: None,
            budget: crate::lm::Budget::default(),
        }
    }
}

impl Limits {
    crate::shared::setters! {
        /// Keeps every prompt within a context window of `tokens` (see
        /// [`context_window`](Self::context_window)).
        fn context_window(tokens: u32) { context_window = Some(tokens) }

        /// At most `n` steps.
        fn max_iters(n: usize) { max_iters = n }

        /// At most `n` LM calls per run.
        fn max_lm_calls(n: u32) { max_lm_calls = n }

        /// At most `timeout` per tool call.
        fn tool_timeout(timeout: Duration) { tool_timeout = Some(timeout) }

        /// At most `budget` of tokens or cost per run (see [`budget`](Self::budget)).
        fn budget(budget: crate::lm::Budget) { budget = budget }
    }

    /// No time limit on tool calls: a tool that never returns holds the run for ever.
    pub fn no_tool_timeout(mut self) -> Self {
        self.tool_timeout = None;
        self
    }

    crate::shared::setters! {
        /// Observations cut at `n` characters for the model.
        fn max_observation_chars(n: usize) { max_observation_chars = n }

        /// Observations cut at `n` characters for the answer step (see
        /// [`max_answer_observation_chars`](Self::max_answer_observation_chars)).
        fn max_answer_observation_chars(n: usize) { max_answer_observation_chars = n }

        /// At most `n` concurrent tool calls.
        fn max_concurrent_tools(n: usize) { max_concurrent_tools = n }

        /// At most `n` tool calls of one reply run (see
        /// [`max_tool_calls_per_turn`](Self::max_tool_calls_per_turn)).
        fn max_tool_calls_per_turn(n: usize) { max_tool_calls_per_turn = n }

        /// Whole outputs kept up to `n` bytes (see
        /// [`max_kept_observation_bytes`](Self::max_kept_observation_bytes)).
        fn max_kept_observation_bytes(n: usize) { max_kept_observation_bytes = n }
    }

    /// The observation of a call beyond [`max_tool_calls_per_turn`](Self::max_tool_calls_per_turn)
    /// in a reply of `calls` calls.
    pub(crate) fn refused_call(&self, calls: usize) -> String {
        format!(
            "Not run: the reply made {calls} tool calls, and at most {} of one reply run \
             (Limits::max_tool_calls_per_turn). Call it again in a later turn if it is still \
             needed.",
            self.max_tool_calls_per_turn
        )
    }

    /// Fails when `usage` has used up the run's LM calls, or when one more call would go past
    /// its budget.
    pub(crate) fn check_lm_calls(&self, usage: &Usage) -> Result<(), RunFailure> {
        if usage.lm_calls >= u64::from(self.max_lm_calls) {
            return Err(RunFailure::LmCallLimit {
                limit: self.max_lm_calls,
            });
        }
        self.budget.check(usage).map_err(RunFailure::Budget)
    }
}
