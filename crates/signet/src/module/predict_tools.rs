//! `Predict` with tools: native tool calls run (concurrently) until the model answers.

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::react::suspend::{
    Resumable, check_state, decide_all, describe_signature, describe_tools, digest, reseal,
    seal_state, verify_state,
};
use super::react::{
    Approval, ApprovalRequest, Decision, Limits, PendingCall, ResumeError, RunOutcome,
    STATE_FORMAT, Waiting,
};
use super::tool_runner::ToolRunner;
use super::{CallConfig, Error, Prediction, Predictor, Resolved};
use crate::adapter::Fields;
use crate::lm::{LmRequest, Message, ToolCall, ToolChoice, Usage};
use crate::tool::Tool;

impl Predictor {
    /// Offers `tool` to the model through native function calling: each reply's tool calls run
    /// concurrently and their results go back as `tool` messages, until the model answers in the
    /// adapter's format (at most [`with_max_tool_turns`](Self::with_max_tool_turns) rounds). The
    /// LM must report native function calling.
    pub fn tool(mut self, tool: impl Tool + 'static) -> Self {
        self.tools.push(crate::tool::share(tool));
        self
    }

    /// Offers each of `tools` (see [`tool`](Self::tool)); `Arc<dyn Tool>`s are kept as they are.
    pub fn tools(mut self, tools: impl IntoIterator<Item = impl Tool + 'static>) -> Self {
        self.tools.extend(tools.into_iter().map(crate::tool::share));
        self
    }

    /// The most tool-call rounds before the call fails with [`Error::TooManyToolTurns`] (default 10).
    pub fn with_max_tool_turns(mut self, turns: usize) -> Self {
        self.max_tool_turns = turns;
        self
    }

    /// Asks `approver` before running a tool that requires confirmation (`#[tool(confirm)]`), as
    /// ReAct does. Without an approver such tools are never run: the model is told the call was
    /// denied — or, in a call begun with [`start`](Self::start), the call suspends until a person
    /// decides.
    pub fn with_approver<F, Fut>(mut self, approver: F) -> Self
    where
        F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Approval> + Send + 'static,
    {
        self.approver = Some(super::tool_runner::approver(approver));
        self
    }

    /// The limits on tool calls, as in ReAct: `tool_timeout` (default 60 s),
    /// `max_observation_chars`, `max_kept_observation_bytes`, `max_concurrent_tools` and
    /// `max_tool_calls_per_turn` apply; the others are ReAct's.
    pub fn with_tool_limits(mut self, limits: Limits) -> Self {
        self.tool_limits = limits;
        self
    }

    /// Seals every state a call suspends with `key` (an HMAC-SHA256, [`SuspendedCall::seal`]),
    /// and resumes only states sealed with it, as
    /// [`ReActCore::with_state_key`](super::ReActCore::with_state_key) does: a state without a
    /// seal is [`ResumeError::Unsealed`], one changed since it was sealed
    /// [`ResumeError::BadSeal`]. Use a long random key from the service's secrets; it is not
    /// part of the [fingerprint](Self::fingerprint).
    ///
    /// ```
    /// use signet::module::Predictor;
    /// use signet::signature::DynSignature;
    ///
    /// let signature = DynSignature::parse("question -> answer").unwrap();
    /// let predictor = Predictor::new(signature).with_state_key(b"a long random key");
    /// ```
    pub fn with_state_key(mut self, key: impl AsRef<[u8]>) -> Self {
        self.state_key = Some(std::sync::Arc::from(key.as_ref()));
        self
    }

    /// `state`, sealed when the predictor has a state key.
    fn suspended(&self, mut state: SuspendedCall) -> RunOutcome<Prediction, SuspendedCall> {
        reseal(&mut state, self.state_key.as_deref());
        RunOutcome::Suspended(state)
    }

    pub(super) async fn forward_with_tools(
        &self,
        inputs: &Fields,
        call: &CallConfig,
    ) -> Result<Prediction, Error> {
        match self
            .tool_loop(inputs, call, LoopStart::Fresh { resumable: false })
            .await?
        {
            RunOutcome::Finished(prediction) => Ok(prediction),
            // A call that is not resumable does not suspend; should one, say so.
            RunOutcome::Suspended(_) => Err(Error::Unsupported {
                what: "a call that waits for a person in `forward`; use `start`".to_owned(),
            }),
        }
    }

    /// Calls the predictor with its tools, suspending where a person is needed: at a
    /// `#[tool(confirm)]` tool when no [approver](Self::with_approver) is set, and at a tool that
    /// returns [`ToolError::NeedsInput`](crate::ToolError::NeedsInput) — as
    /// [`ReActCore::start`](super::ReActCore::start) does. The calls of the reply that need no
    /// one run first; [`resume`](Self::resume) carries out the decisions and goes on.
    pub async fn start(
        &self,
        inputs: &Fields,
        call: &CallConfig,
    ) -> Result<RunOutcome<Prediction, SuspendedCall>, Error> {
        self.tool_loop(inputs, call, LoopStart::Fresh { resumable: true })
            .await
    }

    /// Goes on with a suspended call: a [`Decision`] per pending call id. The predictor must be
    /// built as the one that suspended (same signature, tools and turn limit); it may be in
    /// another process. The state is not trusted as given: a seal is checked when the predictor
    /// has a [state key](Self::with_state_key), and a state that contradicts itself or this
    /// predictor (a pending call that is not among the model's calls, of a tool the predictor
    /// lacks, with arguments other than those the model sent, ..) is
    /// [`ResumeError::Invalid`].
    pub async fn resume(
        &self,
        state: SuspendedCall,
        decisions: impl IntoIterator<Item = (String, Decision)>,
        call: &CallConfig,
    ) -> Result<RunOutcome<Prediction, SuspendedCall>, Error> {
        let key = self.state_key.as_deref();
        let decided = check_state(&state, key, &self.fingerprint(), decisions, || {
            state.validate(self)
        })?;
        let inputs = state.inputs.clone();
        let start = LoopStart::Resume {
            state: Box::new(state),
            decided,
        };
        self.tool_loop(&inputs, call, start).await
    }

    /// A digest of what a resumed call depends on: the signature, the tools and the turn limit.
    pub fn fingerprint(&self) -> String {
        digest(&serde_json::json!({
            "signature": describe_signature(&self.signature),
            "tools": describe_tools(&self.tools),
            "max_tool_turns": self.max_tool_turns,
        }))
    }

    async fn tool_loop(
        &self,
        inputs: &Fields,
        call: &CallConfig,
        start: LoopStart,
    ) -> Result<RunOutcome<Prediction, SuspendedCall>, Error> {
        let Resolved { lm, adapter } = self.resolve(call)?;
        if !lm.capabilities().function_calling {
            return Err(Error::Unsupported {
                what: format!(
                    "tools were given but the LM `{}` does not declare native function calling; use \
                     ReAct for text-mode tool use",
                    lm.model()
                ),
            });
        }
        let tools: Vec<Value> = self.tools.iter().map(|t| t.to_openai_function()).collect();
        let runner = ToolRunner::new(
            &self.tools,
            &[],
            self.approver.as_ref(),
            self.tool_limits.tool_timeout,
            self.tool_limits.max_observation_chars,
        )
        .with_max_kept_bytes(self.tool_limits.max_kept_observation_bytes)
        .with_journal(call.journal.as_ref());
        let (mut messages, mut usage, first, resumable) = match start {
            LoopStart::Fresh { resumable } => (
                adapter.format(&self.signature, &self.demos_for(inputs), inputs),
                Usage::default(),
                0,
                resumable,
            ),
            LoopStart::Resume { state, decided } => match carry_out(&runner, *state, decided).await
            {
                Ok((messages, usage, turn)) => (messages, usage, turn.saturating_add(1), true),
                Err(state) => return Ok(self.suspended(state)),
            },
        };
        for turn in first..=self.max_tool_turns {
            let mut request = LmRequest::new(messages.clone());
            request.options = self.options.clone();
            request.tools = tools.clone();
            request.tool_choice = Some(ToolChoice::Auto);
            // The adapter's setting (DSPy's `parallel_tool_calls`), concurrent calls by default.
            request.parallel_tool_calls = Some(adapter.parallel_tool_calls().unwrap_or(true));
            let completion = lm.complete(&request).await?;
            usage += completion.usage;
            if completion.tool_calls.is_empty() {
                let text = completion.text.clone().unwrap_or_default();
                let outputs = adapter.parse(&self.signature, &text)?;
                return Ok(RunOutcome::Finished(Prediction {
                    outputs,
                    usage,
                    completion,
                    adapter: adapter.name(),
                }));
            }
            // Concurrently, at most `max_concurrent_tools` at a time; results in call order.
            let thought = completion.text.as_deref().unwrap_or_default();
            // Beyond the reply's limit of calls, a call does not run: its result says so.
            let limit = self.tool_limits.max_tool_calls_per_turn;
            let refusal = self.tool_limits.refused_call(completion.tool_calls.len());
            let refusal = refusal.as_str();
            let runner = &runner;
            let calls: Vec<_> = completion
                .tool_calls
                .iter()
                .enumerate()
                .map(move |(index, call)| async move {
                    if index >= limit {
                        return Ok(refusal.to_owned());
                    }
                    run_tool(runner, call, thought, resumable).await
                })
                .collect();
            let results: Vec<Result<String, Waiting>> = futures::stream::iter(calls)
                .buffered(call.tool_concurrency(self.tool_limits.max_concurrent_tools))
                .collect()
                .await;
            let mut assistant = Message::assistant_tool_calls(completion.tool_calls.clone());
            assistant.content = completion.text.clone().unwrap_or_default();
            messages.push(assistant);
            let mut settled = Vec::new();
            let mut pending = Vec::new();
            for (index, (tool_call, result)) in
                completion.tool_calls.iter().zip(results).enumerate()
            {
                match result {
                    Ok(result) => settled.push(SettledCall {
                        id: tool_call.id.clone(),
                        index,
                        result,
                    }),
                    Err(waiting_for) => pending.push(PendingCall {
                        id: tool_call.id.clone(),
                        index,
                        tool: tool_call.name.clone(),
                        args: tool_call.args().unwrap_or(Value::Null),
                        thought: thought.to_owned(),
                        waiting_for,
                    }),
                }
            }
            if !pending.is_empty() {
                return Ok(self.suspended(SuspendedCall {
                    format: STATE_FORMAT,
                    fingerprint: self.fingerprint(),
                    inputs: inputs.clone(),
                    messages,
                    usage,
                    turn,
                    settled,
                    pending,
                    seal: None,
                }));
            }
            for done in settled {
                messages.push(Message::tool_result(&done.id, done.result));
            }
        }
        Err(Error::TooManyToolTurns {
            turns: self.max_tool_turns,
        })
    }
}

/// Where a tool loop begins.
enum LoopStart {
    Fresh {
        resumable: bool,
    },
    Resume {
        state: Box<SuspendedCall>,
        decided: Vec<(PendingCall, Decision)>,
    },
}

/// A `Predict` call with tools, parked at calls that need a person (see
/// [`Predictor::start`]): the conversation so far, ending with the model's tool calls; the
/// results of the calls that ran; the calls that wait. It serialises to JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuspendedCall {
    /// [`STATE_FORMAT`] when it was written.
    pub format: u32,
    /// A digest of the predictor's signature, tools and turn limit ([`Predictor::fingerprint`]).
    pub fingerprint: String,
    /// The call's inputs.
    pub inputs: Fields,
    /// The messages so far; the last is the assistant's tool calls.
    pub messages: Vec<Message>,
    /// LM usage so far.
    pub usage: Usage,
    /// The tool round the pending calls belong to.
    pub turn: usize,
    /// The results of this round's calls that ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settled: Vec<SettledCall>,
    /// The calls waiting for a person.
    pub pending: Vec<PendingCall>,
    /// An HMAC-SHA256 of the rest of the state (64 hex digits), set by [`seal`](Self::seal) or by
    /// a predictor with a [state key](Predictor::with_state_key), which then refuses to resume a
    /// state without it ([`ResumeError::Unsealed`]) or with a seal that does not match
    /// ([`ResumeError::BadSeal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seal: Option<String>,
}

impl SuspendedCall {
    /// Seals the state with `key` (see [`SuspendedRun::seal`](super::SuspendedRun::seal)); a
    /// predictor built [`with_state_key`](Predictor::with_state_key) seals what it suspends
    /// itself.
    pub fn seal(&mut self, key: &[u8]) {
        seal_state(self, key);
    }

    /// Checks the state's seal against `key`: [`ResumeError::Unsealed`] without one,
    /// [`ResumeError::BadSeal`] when it does not match (compared in constant time).
    pub fn verify(&self, key: &[u8]) -> Result<(), ResumeError> {
        verify_state(self, key)
    }

    /// Checks that the state is consistent in itself and with `predictor`: every call of the
    /// model's last reply is settled or pending exactly once, a pending call is the model's call
    /// as sent (or as a person edited it) of a tool the predictor has, and the round is within
    /// the turn limit.
    fn validate(&self, predictor: &Predictor) -> Result<(), ResumeError> {
        let invalid = |reason: String| Err(ResumeError::Invalid { reason });
        if self.pending.is_empty() {
            return invalid("it has no pending call".into());
        }
        if self.turn > predictor.max_tool_turns {
            return invalid(format!(
                "its round {} is past the predictor's limit of {} rounds",
                self.turn, predictor.max_tool_turns
            ));
        }
        let Some(calls) = self
            .messages
            .last()
            .map(|m| &m.tool_calls)
            .filter(|calls| !calls.is_empty())
        else {
            return invalid("its last message is not the model's tool calls".into());
        };
        let mut seen = vec![false; calls.len()];
        let mut claim = |index: usize, id: &str| -> Result<&ToolCall, ResumeError> {
            let Some(sent) = calls.get(index) else {
                return Err(ResumeError::Invalid {
                    reason: format!(
                        "call `{id}` has index {index}, past the {} calls the model made",
                        calls.len()
                    ),
                });
            };
            if sent.id != id || std::mem::replace(&mut seen[index], true) {
                return Err(ResumeError::Invalid {
                    reason: format!("call `{id}` does not match the model's call {index}"),
                });
            }
            Ok(sent)
        };
        for done in &self.settled {
            claim(done.index, &done.id)?;
        }
        for call in &self.pending {
            let sent = claim(call.index, &call.id)?;
            if sent.name != call.tool || sent.args().unwrap_or(Value::Null) != call.args {
                return invalid(format!(
                    "pending call `{}` differs from the call the model sent",
                    call.id
                ));
            }
            let Some(tool) = predictor.tools.iter().find(|t| t.name() == call.tool) else {
                return invalid(format!(
                    "pending call `{}` names tool `{}`, which this predictor lacks",
                    call.id, call.tool
                ));
            };
            if call.waiting_for == Waiting::Approval && !tool.requires_confirmation() {
                return invalid(format!(
                    "pending call `{}` waits for approval of `{}`, which needs none",
                    call.id, call.tool
                ));
            }
        }
        if let Some(index) = seen.iter().position(|seen| !seen) {
            return invalid(format!(
                "the model's call {index} is neither settled nor pending"
            ));
        }
        Ok(())
    }

    /// The same decision for every pending call (by id), for [`Predictor::resume`].
    pub fn decide_all(&self, decision: Decision) -> Vec<(String, Decision)> {
        decide_all(&self.pending, &decision)
    }
}

impl Resumable for SuspendedCall {
    fn seal_field(&mut self) -> &mut Option<String> {
        &mut self.seal
    }

    fn layout(&self) -> (u32, &str) {
        (self.format, &self.fingerprint)
    }

    fn pending(&self) -> &[PendingCall] {
        &self.pending
    }
}

/// A call of a suspended round that already ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SettledCall {
    /// The provider's call id.
    pub id: String,
    /// Its position in the round.
    pub index: usize,
    /// The `tool` message's text.
    pub result: String,
}

/// Carries out the decisions of a suspended round: the messages with every result in call order
/// (an edited call's arguments replaced in the assistant message), or the state again when a call
/// waits once more.
async fn carry_out(
    runner: &ToolRunner<'_>,
    state: SuspendedCall,
    decided: Vec<(PendingCall, Decision)>,
) -> Result<(Vec<Message>, Usage, usize), SuspendedCall> {
    let mut messages = state.messages.clone();
    let mut settled = state.settled.clone();
    let mut pending = Vec::new();
    for (call, decision) in decided {
        let args = match &decision {
            Decision::Edit(edited) => {
                if let Some(sent) = messages
                    .last_mut()
                    .and_then(|m| m.tool_calls.get_mut(call.index))
                {
                    sent.arguments = edited.to_string();
                }
                edited.clone()
            }
            _ => call.args.clone(),
        };
        match runner.decided(&call.tool, &args, &decision).await {
            Ok(observation) => settled.push(SettledCall {
                id: call.id,
                index: call.index,
                result: observation.as_text(),
            }),
            Err(waiting_for) => pending.push(PendingCall {
                args,
                waiting_for,
                ..call
            }),
        }
    }
    if !pending.is_empty() {
        return Err(SuspendedCall {
            messages,
            settled,
            pending,
            ..state
        });
    }
    settled.sort_by_key(|done| done.index);
    for done in settled {
        messages.push(Message::tool_result(&done.id, done.result));
    }
    Ok((messages, state.usage, state.turn))
}

/// One tool call's result as the `tool` message reads it; failures are described, not raised. In
/// a `resumable` call, a call that needs a person is `Err`.
async fn run_tool(
    runner: &ToolRunner<'_>,
    call: &ToolCall,
    thought: &str,
    resumable: bool,
) -> Result<String, Waiting> {
    let args = match super::tool_runner::arguments(call) {
        Ok(args) => args,
        Err(observation) => return Ok(observation.as_text()),
    };
    match runner.attempt(&call.name, &args, thought).await {
        Ok(observation) => Ok(observation.as_text()),
        Err(waiting) if !resumable => Ok(runner.unattended(&call.name, &waiting).as_text()),
        Err(waiting) => Err(waiting),
    }
}
