//! Suspending a run at a call that needs a person, and resuming it later, in any process.
//!
//! A [resumable run](DynReAct::start) that reaches a `#[tool(confirm)]` tool with no approver
//! set, or a tool that returns [`ToolError::NeedsInput`](crate::ToolError::NeedsInput), ends as
//! [`RunOutcome::Suspended`]: a [`SuspendedRun`] that serialises to JSON. Store it anywhere; when
//! the person has answered, [`DynReAct::resume`] it with a [`Decision`] per pending call, in
//! this process or another.

use std::collections::HashMap;
use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::approval::{Decision, Waiting};
use super::{DynReAct, ReActMode, Step, Trajectory};
use crate::adapter::Fields;
use crate::lm::Usage;
use crate::tool::Tool;

pub use crate::error::ResumeError;

/// The version of [`SuspendedRun`]'s layout; a state written by another version is refused.
pub const STATE_FORMAT: u32 = 1;

/// How a run that can wait for a person ended: finished, or parked until someone decides.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", content = "run", rename_all = "snake_case")]
// Unboxed on purpose: an outcome is made once per run, and `RunOutcome::Suspended(state)` hands
// over the state itself (to serialise, or to pass back to `resume`).
#[allow(clippy::large_enum_variant)]
pub enum RunOutcome<R> {
    /// The run finished with its outputs.
    Finished(R),
    /// The run waits for decisions on its pending calls (of a ReAct run or a `Predict` call
    /// with tools).
    Suspended(SuspendedRun),
}

impl<R> RunOutcome<R> {
    /// The finished run, or `None` when it is suspended.
    pub fn finished(self) -> Option<R> {
        match self {
            RunOutcome::Finished(run) => Some(run),
            RunOutcome::Suspended(_) => None,
        }
    }

    /// The suspended state, or `None` when the run finished.
    pub fn suspended(self) -> Option<SuspendedRun> {
        match self {
            RunOutcome::Finished(_) => None,
            RunOutcome::Suspended(state) => Some(state),
        }
    }
}

/// Everything a suspended run needs to go on: the inputs, the steps, the usage so far, the calls
/// of the current turn that ran and those that wait, and a fingerprint of the agent it ran on.
/// It serialises to JSON (`serde_json::to_string(&state)`), so a web service can park it in a
/// database and resume it from a later request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuspendedRun {
    /// [`STATE_FORMAT`] when it was written.
    pub format: u32,
    /// The signature's name (for people reading the state).
    pub signature: String,
    /// A digest of the agent's signature, tools and settings; resuming on an agent whose
    /// fingerprint differs is [`ResumeError::StaleState`].
    pub fingerprint: String,
    /// Whether the run used native function calling (else DSPy's text format).
    pub native: bool,
    /// The run's inputs.
    pub inputs: Fields,
    /// The steps before the current turn.
    pub trajectory: Trajectory,
    /// LM usage so far.
    pub usage: Usage,
    /// The turn the pending calls belong to.
    pub turn: usize,
    /// The calls of this turn that already ran (native mode runs every call of a turn; those
    /// that need no one run before the run suspends).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled: Vec<Step>,
    /// The calls waiting for a person.
    pub pending: Vec<PendingCall>,
    /// The tools a first call selected from a large catalogue, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_tools: Option<Vec<String>>,
    /// The conversation so far, for a run in [`ReActMode::History`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<HistoryPosition>,
    /// An HMAC-SHA256 of the rest of the state (64 hex digits), set by [`seal`](Self::seal) or by
    /// an agent with a [state key](DynReAct::with_state_key), which then refuses to resume a
    /// state without it ([`ResumeError::Unsealed`]) or with a seal that does not match
    /// ([`ResumeError::BadSeal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

/// Where a [`ReActMode::History`] run stands when it suspends: the conversation's earlier turns
/// and what the suspended turn itself carries besides its calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryPosition {
    /// The earlier turns, as the adapter renders them into messages.
    pub turns: Vec<HistoryTurn>,
    /// The input fields the suspended turn's message carries (the run's inputs on the first
    /// turn; none after it).
    pub inputs: Fields,
    /// The thought the model wrote with the suspended turn's calls, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<Value>,
}

/// One finished turn of a [`ReActMode::History`] conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryTurn {
    /// The turn's number.
    pub turn: usize,
    /// The turn as a history event: its input fields, `next_thought`, and its `tool_calls`
    /// with their results.
    pub event: Fields,
}

/// A tool call that waits for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingCall {
    /// The call's id: the provider's in native mode, `step_<index>` in text mode. Decisions
    /// are given by this id.
    pub id: String,
    /// Its step index in the trajectory.
    pub index: usize,
    /// The tool.
    pub tool: String,
    /// The arguments the model gave.
    pub args: Value,
    /// The model's reasoning for the call.
    pub thought: String,
    /// What the person is asked.
    pub waiting_for: Waiting,
}

impl SuspendedRun {
    /// A run suspended at `turn` (its fingerprint is stamped by the entry point, its mode by the
    /// protocol: `native`, `history`).
    pub(super) fn new(
        inputs: &Fields,
        trajectory: Trajectory,
        usage: Usage,
        turn: usize,
        settled: Vec<Step>,
        pending: Vec<PendingCall>,
    ) -> SuspendedRun {
        SuspendedRun {
            format: STATE_FORMAT,
            signature: String::new(),
            fingerprint: String::new(),
            native: false,
            inputs: inputs.clone(),
            trajectory,
            usage,
            turn,
            settled,
            pending,
            selected_tools: None,
            history: None,
            seal: None,
        }
    }

    /// Seals the state with `key`: an HMAC-SHA256 of its content (everything but the seal, its
    /// JSON objects' keys sorted, so a store that reorders them keeps the seal valid). An agent
    /// built [`with_state_key`](DynReAct::with_state_key) seals what it suspends itself; call
    /// this for a state made otherwise.
    ///
    /// ```
    /// # fn show(mut state: signet::module::SuspendedRun) {
    /// state.seal(b"a long random key from the service's secrets");
    /// assert!(state.verify(b"a long random key from the service's secrets").is_ok());
    /// # }
    /// ```
    pub fn seal(&mut self, key: &[u8]) {
        seal_state(self, key);
    }

    /// Checks the state's seal against `key`: [`ResumeError::Unsealed`] without one,
    /// [`ResumeError::BadSeal`] when it does not match (compared in constant time).
    pub fn verify(&self, key: &[u8]) -> Result<(), ResumeError> {
        verify_state(self, key)
    }

    /// Checks that the state is consistent in itself and with the `tools` that resume it (see
    /// [`ResumeError::Invalid`]): a state read from a store is not trusted as given.
    fn validate(&self, tools: &[Arc<dyn Tool>]) -> Result<(), ResumeError> {
        let invalid = |reason: String| Err(ResumeError::Invalid { reason });
        if self.pending.is_empty() {
            return invalid("it has no pending call".into());
        }
        // The loop adds one to the turn; a turn at the type's end would overflow.
        if self.turn.checked_add(1).is_none() {
            return invalid(format!("its turn {} is out of range", self.turn));
        }
        let known = |name: &str| tools.iter().any(|tool| tool.name() == name);
        if let Some(selected) = &self.selected_tools
            && let Some(name) = selected.iter().find(|name| !known(name))
        {
            return invalid(format!("it selected tool `{name}`, which this agent lacks"));
        }
        for step in &self.trajectory.steps {
            if step.turn > self.turn {
                return invalid(format!(
                    "step {} belongs to turn {}, after the suspended turn {}",
                    step.index, step.turn, self.turn
                ));
            }
        }
        let mut ids = std::collections::HashSet::new();
        let mut indices = std::collections::HashSet::new();
        for step in &self.settled {
            if step.turn != self.turn {
                return invalid(format!(
                    "settled step {} belongs to turn {}, not the suspended turn {}",
                    step.index, step.turn, self.turn
                ));
            }
            if !indices.insert(step.index) {
                return invalid(format!("two calls have step index {}", step.index));
            }
            if let Some(id) = &step.call_id
                && !ids.insert(id.as_str())
            {
                return invalid(format!("two calls have id `{id}`"));
            }
        }
        for call in &self.pending {
            let Some(tool) = tools.iter().find(|tool| tool.name() == call.tool) else {
                return invalid(format!(
                    "pending call `{}` names tool `{}`, which this agent lacks",
                    call.id, call.tool
                ));
            };
            if let Some(selected) = &self.selected_tools
                && !selected.contains(&call.tool)
            {
                return invalid(format!(
                    "pending call `{}` names tool `{}`, which the run did not select",
                    call.id, call.tool
                ));
            }
            if call.waiting_for == Waiting::Approval && !tool.requires_confirmation() {
                return invalid(format!(
                    "pending call `{}` waits for approval of `{}`, which needs none",
                    call.id, call.tool
                ));
            }
            if !ids.insert(call.id.as_str()) {
                return invalid(format!("two calls have id `{}`", call.id));
            }
            if !indices.insert(call.index) {
                return invalid(format!("two calls have step index {}", call.index));
            }
        }
        Ok(())
    }

    /// The same decision for every pending call (by id), for [`DynReAct::resume`].
    ///
    /// ```
    /// use signet::module::{Decision, SuspendedRun};
    /// # fn show(state: &SuspendedRun) {
    /// let decisions = state.decide_all(Decision::Approve);
    /// # }
    /// ```
    pub fn decide_all(&self, decision: Decision) -> Vec<(String, Decision)> {
        self.pending
            .iter()
            .map(|call| (call.id.clone(), decision.clone()))
            .collect()
    }

    /// Checks the state against `agent` and pairs every pending call with its decision.
    pub(super) fn check(
        &self,
        agent: &DynReAct,
        decisions: impl IntoIterator<Item = (String, Decision)>,
    ) -> Result<Vec<(PendingCall, Decision)>, ResumeError> {
        let key = agent.state_key.as_deref();
        check_state(self, key, &agent.fingerprint(), decisions, || {
            if agent.mode == ReActMode::History && self.history.is_none() {
                return Err(ResumeError::MissingHistory);
            }
            self.validate(&agent.tools)
        })
    }

    /// [`validate`](Self::validate) for a `Predict` call with tools: a native state without a
    /// ReAct run's history or tool selection, whose round is within `max_turns`.
    pub(in crate::module) fn validate_call(
        &self,
        tools: &[Arc<dyn Tool>],
        max_turns: usize,
    ) -> Result<(), ResumeError> {
        let invalid = |reason: String| Err(ResumeError::Invalid { reason });
        if !self.native || self.history.is_some() || self.selected_tools.is_some() {
            return invalid("it is not the state of a `Predict` call with tools".into());
        }
        if self.turn > max_turns {
            return invalid(format!(
                "its round {} is past the predictor's limit of {max_turns} rounds",
                self.turn
            ));
        }
        self.validate(tools)
    }
}

/// Checks a loaded state before anything runs: the seal (when there is a `key`), the layout
/// version and the fingerprint (against `expected`), then `validate` (the state against what
/// resumes it); and pairs every pending call with its decision.
pub(crate) fn check_state(
    state: &SuspendedRun,
    key: Option<&[u8]>,
    expected: &str,
    decisions: impl IntoIterator<Item = (String, Decision)>,
    validate: impl FnOnce() -> Result<(), ResumeError>,
) -> Result<Vec<(PendingCall, Decision)>, ResumeError> {
    if let Some(key) = key {
        verify_state(state, key)?;
    }
    let paired = pair_decisions(state, expected, decisions);
    if let Err(error @ (ResumeError::Format { .. } | ResumeError::StaleState { .. })) = paired {
        return Err(error);
    }
    validate()?;
    paired
}

/// Checks a suspended state's layout version and fingerprint, and pairs every pending call with
/// its decision (each pending call needs one; a decision for another call is an error).
fn pair_decisions(
    state: &SuspendedRun,
    expected: &str,
    decisions: impl IntoIterator<Item = (String, Decision)>,
) -> Result<Vec<(PendingCall, Decision)>, ResumeError> {
    if state.format != STATE_FORMAT {
        return Err(ResumeError::Format {
            expected: STATE_FORMAT,
            found: state.format,
        });
    }
    if state.fingerprint != expected {
        return Err(ResumeError::StaleState {
            expected: expected.to_owned(),
            found: state.fingerprint.clone(),
        });
    }
    let pending = &state.pending;
    let mut decisions: HashMap<String, Decision> = decisions.into_iter().collect();
    let mut paired = Vec::with_capacity(pending.len());
    for call in pending {
        let decision = decisions
            .remove(&call.id)
            .ok_or_else(|| ResumeError::MissingDecision {
                id: call.id.clone(),
                tool: call.tool.clone(),
            })?;
        paired.push((call.clone(), decision));
    }
    if let Some(id) = decisions.into_keys().next() {
        return Err(ResumeError::UnknownCall {
            id,
            pending: pending
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(paired)
}

/// Seals `state` with `key`: an HMAC-SHA256 of its JSON without the seal, every object's keys
/// sorted (so a store that reorders them keeps the seal valid), as 64 hex digits.
fn seal_state(state: &mut SuspendedRun, key: &[u8]) {
    state.seal = None;
    let seal = hex(&mac_of(state, key).finalize().into_bytes());
    state.seal = Some(seal);
}

/// Seals `state` with `key`, or leaves it unsealed without one (a seal it carried is dropped: the
/// content it vouched for has changed).
pub(crate) fn reseal(state: &mut SuspendedRun, key: Option<&[u8]>) {
    match key {
        Some(key) => seal_state(state, key),
        None => state.seal = None,
    }
}

/// Checks the seal of `state` against its content under `key`, in constant time.
fn verify_state(state: &SuspendedRun, key: &[u8]) -> Result<(), ResumeError> {
    let mut unsealed = state.clone();
    let Some(seal) = unsealed.seal.take() else {
        return Err(ResumeError::Unsealed);
    };
    let Some(bytes) = unhex(&seal) else {
        return Err(ResumeError::BadSeal);
    };
    mac_of(&unsealed, key)
        .verify_slice(&bytes)
        .map_err(|_| ResumeError::BadSeal)
}

/// The HMAC of a state's content under `key`.
fn mac_of(unsealed: &impl Serialize, key: &[u8]) -> Hmac<Sha256> {
    let mut mac =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes a key of any length");
    // Serialising a state cannot fail: its maps have string keys.
    let value = serde_json::to_value(unsealed).unwrap_or(Value::Null);
    mac.update(canonical(&value).as_bytes());
    mac
}

/// Bytes as lowercase hex digits.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex digits as bytes; `None` unless the text is an even number of hex digits.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// A JSON value's text with every object's keys sorted, for seals.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// A short digest (32 hex digits of SHA-256) of a JSON description, for fingerprints.
pub(crate) fn digest(described: &Value) -> String {
    let digest = Sha256::digest(described.to_string().as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A signature's name, instructions and fields, for fingerprints.
pub(crate) fn describe_signature(signature: &crate::signature::DynSignature) -> Value {
    let fields = |fields: &[crate::signature::Field]| -> Vec<Value> {
        fields
            .iter()
            .map(|f| json!([f.name(), f.schema()]))
            .collect()
    };
    json!([
        signature.name(),
        signature.instructions(),
        fields(signature.inputs()),
        fields(signature.outputs())
    ])
}

/// Tools' descriptors and confirmation flags, for fingerprints.
pub(crate) fn describe_tools(tools: &[std::sync::Arc<dyn crate::tool::Tool>]) -> Value {
    tools
        .iter()
        .map(|t| json!([t.to_openai_function(), t.requires_confirmation()]))
        .collect()
}

impl DynReAct {
    /// A digest of what a resumed run depends on: the signature (name, instructions, fields), the
    /// tools (name, description, parameters, whether they need confirmation) and the loop's
    /// settings (mode, step limit, required tool calls, a last turn that must finish).
    pub fn fingerprint(&self) -> String {
        let mode = match self.mode {
            ReActMode::Auto => "auto",
            ReActMode::Text => "text",
            ReActMode::Native => "native",
            ReActMode::History => "history",
        };
        let mut described = json!({
            "signature": describe_signature(&self.signature),
            "tools": describe_tools(&self.tools),
            "mode": mode,
            "max_iters": self.limits.max_iters,
            "require_tool_calls": self.require_tool_calls,
        });
        // Only when set, so that the states of agents without it keep their fingerprints.
        if self.finish_on_last_turn {
            described["finish_on_last_turn"] = json!(true);
        }
        digest(&described)
    }
}

/// Where a run begins.
pub(crate) enum Start {
    /// A new run; a `resumable` one suspends at calls that need a person.
    Fresh {
        /// Whether it may suspend.
        resumable: bool,
    },
    /// A suspended run, each pending call with its decision.
    Resume {
        /// The state it suspended with.
        state: Box<SuspendedRun>,
        /// The decisions, in pending order.
        decided: Vec<(PendingCall, Decision)>,
    },
}

impl Start {
    /// Whether the run may suspend (a resumed run may suspend again).
    pub(crate) fn resumable(&self) -> bool {
        match self {
            Start::Fresh { resumable } => *resumable,
            Start::Resume { .. } => true,
        }
    }
}
