//! The `SignetAgent` workflow: one ReAct run per workflow id, journaled step by step.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use restate_sdk::prelude::*;
use restate_sdk::service::ServiceDefinition;
use serde::{Deserialize, Serialize};
use signet::adapter::Fields;
use signet::lm::Usage;
use signet::module::{CallConfig, Decision, PendingCall, ReActCore, RunOutcome, Trajectory};

use crate::journal::{Event, RestateJournal, drive, event_key};

/// What starts a run: which agent, on which inputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// The agent's name, as registered with [`Agents::agent`].
    pub agent: String,
    /// The inputs, by field name.
    pub inputs: Fields,
    /// The run's step limit, in place of the agent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iters: Option<usize>,
}

/// A finished run: what [`ReActCore::forward`] returns, as JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// The output field values.
    pub outputs: Fields,
    /// The extractor's reasoning, when it gave one.
    pub reasoning: Option<String>,
    /// Every step, in order.
    pub trajectory: Trajectory,
    /// LM usage over the whole run.
    pub usage: Usage,
}

/// The calls a suspended run waits on, and the round they belong to (a run may wait several
/// times).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// 1 for the first wait of the run, 2 for the next, ...
    pub round: u32,
    /// The calls, each with the [id](PendingCall::id) a decision names.
    pub calls: Vec<PendingCall>,
}

/// Where a run is: its journaled LM and tool calls so far, and what it waits for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// Every journaled call, in order.
    pub events: Vec<Event>,
    /// The calls waiting for a person, if the run waits.
    pub pending: Option<Pending>,
}

/// The agents a worker serves, by name. Every worker behind one Restate deployment must
/// register the same agents built the same way: a run started on one worker may be replayed on
/// another.
#[derive(Clone, Default)]
pub struct Agents {
    agents: BTreeMap<String, Arc<ReActCore>>,
    inactivity_timeout: Option<Duration>,
}

impl Agents {
    /// No agents yet.
    pub fn new() -> Agents {
        Agents::default()
    }

    /// Serves `agent` as `name` (the [`RunRequest::agent`] that starts it). A typed
    /// [`ReAct<S>`](signet::module::ReAct) is served through its
    /// [`core`](signet::module::ReAct::core): `.agent("travel", react.core().clone())`.
    pub fn agent(mut self, name: impl Into<String>, agent: ReActCore) -> Agents {
        self.agents.insert(name.into(), Arc::new(agent));
        self
    }

    /// How long Restate lets a run go without a journal entry before it stops the attempt and
    /// retries it: longer than your slowest LM call or tool call. 10 minutes unless set
    /// (Restate's own default is one minute).
    pub fn inactivity_timeout(mut self, timeout: Duration) -> Agents {
        self.inactivity_timeout = Some(timeout);
        self
    }

    /// The names served.
    pub fn names(&self) -> Vec<&str> {
        self.agents.keys().map(String::as_str).collect()
    }

    /// The agent served as `name`.
    pub fn get(&self, name: &str) -> Option<&ReActCore> {
        self.agents.get(name).map(|agent| agent.as_ref())
    }

    /// The `SignetAgent` workflow serving these agents, to bind to an endpoint beside your own
    /// services: `Endpoint::builder().bind(agents.workflow())` (or let [`crate::serve`] do it).
    pub fn workflow(&self) -> ServiceDefinition {
        let timeout = self.inactivity_timeout.unwrap_or(Duration::from_secs(600));
        SignetAgent {
            agents: Arc::new(self.agents.clone()),
        }
        .into_service_definition()
        .options(
            ServiceOptions::new()
                .inactivity_timeout(timeout)
                .abort_timeout(timeout),
        )
    }
}

/// The workflow Restate sees: `SignetAgent/{run id}/run` starts a run, `decide` answers the
/// calls it waits on, `status` reads where it is.
pub struct SignetAgent {
    agents: Arc<BTreeMap<String, Arc<ReActCore>>>,
}

/// The durable promise a run's `round`-th wait is resolved through.
fn promise_key(round: u32) -> String {
    format!("decisions-{round}")
}

#[restate_sdk::workflow]
impl SignetAgent {
    /// Runs the agent: every LM call and tool call is a journaled step; a call that needs a
    /// person suspends the run until `decide` is called.
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        request: Json<RunRequest>,
    ) -> HandlerResult<Json<RunResult>> {
        let request = request.into_inner();
        let Some(agent) = self.agents.get(&request.agent).cloned() else {
            return Err(crate::not_served(
                "agent",
                &request.agent,
                self.agents.keys(),
            ));
        };
        let (journal, mut effects) = RestateJournal::new();
        let mut call = CallConfig::new().with_journal(journal);
        call.max_iters = request.max_iters;
        let mut recorded = 0;
        let mut outcome = drive(
            &ctx,
            agent.start(&request.inputs, &call),
            &mut effects,
            &mut recorded,
        )
        .await;
        let mut round = 0;
        loop {
            let state = match outcome {
                Ok(RunOutcome::Finished(run)) => {
                    return Ok(Json(RunResult {
                        outputs: run.outputs,
                        reasoning: run.reasoning,
                        trajectory: run.trajectory,
                        usage: run.usage,
                    }));
                }
                Ok(RunOutcome::Suspended(state)) => state,
                Err(error) => {
                    return Err(TerminalError::new(format!("the run failed: {error}")).into());
                }
            };
            round += 1;
            ctx.set(
                "pending",
                Json(Pending {
                    round,
                    calls: state.pending.clone(),
                }),
            );
            let decided: BTreeMap<String, Decision> = ctx
                .promise::<Json<BTreeMap<String, Decision>>>(&promise_key(round))
                .await?
                .into_inner();
            ctx.clear("pending");
            outcome = drive(
                &ctx,
                agent.resume(state, decided, &call),
                &mut effects,
                &mut recorded,
            )
            .await;
        }
    }

    /// Answers the calls the run waits on: a decision per [pending call id](PendingCall::id).
    /// An error (409) when the run waits on nothing or a waiting call has no decision.
    #[handler]
    async fn decide(
        &self,
        ctx: SharedWorkflowContext<'_>,
        decisions: Json<BTreeMap<String, Decision>>,
    ) -> HandlerResult<()> {
        let decisions = decisions.into_inner();
        let Some(pending) = ctx.get::<Json<Pending>>("pending").await? else {
            return Err(TerminalError::new_with_code(409, "the run waits on no decision").into());
        };
        let pending = pending.into_inner();
        let missing: Vec<&str> = pending
            .calls
            .iter()
            .map(|c| c.id.as_str())
            .filter(|id| !decisions.contains_key(*id))
            .collect();
        if !missing.is_empty() {
            return Err(TerminalError::new_with_code(
                409,
                format!("no decision for the waiting call(s) {}", missing.join(", ")),
            )
            .into());
        }
        ctx.resolve_promise::<Json<BTreeMap<String, Decision>>>(
            &promise_key(pending.round),
            Json(decisions),
        );
        Ok(())
    }

    /// Where the run is: its journaled calls so far and what it waits on.
    #[handler]
    async fn status(&self, ctx: SharedWorkflowContext<'_>) -> HandlerResult<Json<Status>> {
        let count = ctx.get::<u64>("events").await?.unwrap_or(0);
        let mut events = Vec::new();
        for index in 0..count {
            if let Some(event) = ctx.get::<Json<Event>>(&event_key(index)).await? {
                events.push(event.into_inner());
            }
        }
        let pending = ctx
            .get::<Json<Pending>>("pending")
            .await?
            .map(Json::into_inner);
        Ok(Json(Status { events, pending }))
    }
}
