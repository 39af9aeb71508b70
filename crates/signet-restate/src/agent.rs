//! The `SignetAgent` workflow: one ReAct run per workflow id, journaled step by step.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use restate_sdk::prelude::*;
use restate_sdk::service::ServiceDefinition;
use serde::{Deserialize, Serialize};
use signet::adapter::Fields;
use signet::lm::Usage;
use signet::module::{CallConfig, Decision, DynReAct, PendingCall, RunOutcome, Trajectory};

use crate::journal::{Event, RestateJournal, drive, event_key};
use subtle::ConstantTimeEq;

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

/// A finished run: what [`DynReAct::forward`] returns, as JSON.
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
    agents: BTreeMap<String, Arc<DynReAct>>,
    inactivity_timeout: Option<Duration>,
    open_decisions: bool,
}

/// The header a run is started with that binds it to a decision token: the token's SHA-256, in
/// hex ([`Ingress::start_decided`](crate::Ingress::start_decided) sends it).
pub const DECISION_KEY_HEADER: &str = "x-signet-decision-key";

/// The header a `decide` call carries its decision token in
/// ([`Ingress::decide_with_token`](crate::Ingress::decide_with_token) sends it).
pub const DECISION_TOKEN_HEADER: &str = "x-signet-decision-token";

/// The SHA-256 of `token`, in lowercase hex: what a run keeps of its decision token.
pub(crate) fn decision_key(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Agents {
    /// No agents yet.
    pub fn new() -> Agents {
        Agents::default()
    }

    /// Serves `agent` as `name` (the [`RunRequest::agent`] that starts it). A typed
    /// [`ReAct<S>`](signet::module::ReAct) is served through its
    /// [`core`](signet::module::ReAct::core): `.agent("travel", react.core().clone())`.
    pub fn agent(mut self, name: impl Into<String>, agent: DynReAct) -> Agents {
        self.agents.insert(name.into(), Arc::new(agent));
        self
    }

    /// Lets anyone who reaches the ingress decide the approvals of a run started without a
    /// decision token ([`Ingress::start`](crate::Ingress::start)): for an ingress behind
    /// authentication of your own that also says who may decide. Without this, `decide` on such
    /// a run is refused (`403`); a run started with a token
    /// ([`Ingress::start_decided`](crate::Ingress::start_decided),
    /// [`start_run`](crate::Ingress::start_run)) always needs its token.
    pub fn open_decisions(mut self) -> Agents {
        self.open_decisions = true;
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
    pub fn get(&self, name: &str) -> Option<&DynReAct> {
        self.agents.get(name).map(|agent| agent.as_ref())
    }

    /// The `SignetAgent` workflow serving these agents, to bind to an endpoint beside your own
    /// services: `Endpoint::builder().bind(agents.workflow())` (or let [`crate::serve`] do it).
    pub fn workflow(&self) -> ServiceDefinition {
        let timeout = self.inactivity_timeout.unwrap_or(Duration::from_secs(600));
        SignetAgent {
            agents: Arc::new(self.agents.clone()),
            open_decisions: self.open_decisions,
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
    agents: Arc<BTreeMap<String, Arc<DynReAct>>>,
    open_decisions: bool,
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
        // Who may decide this run's approvals: the holder of the token this is the hash of.
        if let Some(key) = ctx.headers().get(DECISION_KEY_HEADER) {
            ctx.set("decision_key", key.to_owned());
        }
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
        let span = crate::telemetry::handler_span("run", &request.agent, ctx.headers());
        let mut outcome = drive(
            &ctx,
            tracing::Instrument::instrument(agent.start(&request.inputs, &call), span.clone()),
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
            // Read by `decide`, to check edited arguments against the agent's tools.
            ctx.set("agent", request.agent.clone());
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
                tracing::Instrument::instrument(agent.resume(state, decided, &call), span.clone()),
                &mut effects,
                &mut recorded,
            )
            .await;
        }
    }

    /// Answers the calls the run waits on: a decision per [pending call id](PendingCall::id).
    /// An error (409) when the run waits on nothing, or the decisions do not fit the calls it
    /// waits on — a waiting call left out, an id it does not wait on, an id given twice, edited
    /// arguments its tool's schema refuses — and then the run keeps waiting for decisions that
    /// fit.
    #[handler]
    async fn decide(
        &self,
        ctx: SharedWorkflowContext<'_>,
        decisions: Json<DecisionEntries>,
    ) -> HandlerResult<()> {
        let DecisionEntries(entries) = decisions.into_inner();
        let token = ctx.headers().get(DECISION_TOKEN_HEADER).cloned();
        match ctx.get::<String>("decision_key").await? {
            Some(key) => {
                let given = token.as_deref().map(decision_key).unwrap_or_default();
                // In a time that does not depend on where they differ.
                if !bool::from(given.as_bytes().ct_eq(key.as_bytes())) {
                    return Err(TerminalError::new_with_code(
                        403,
                        "the decision token is missing or wrong: this run was started with one \
                         (Ingress::start_decided), and only its holder may decide",
                    )
                    .into());
                }
            }
            None if !self.open_decisions => {
                return Err(TerminalError::new_with_code(
                    403,
                    "this run was started without a decision token, so no one may decide it: \
                     start runs with Ingress::start_decided or start_run, or serve the agents \
                     with Agents::open_decisions when the ingress authenticates who decides",
                )
                .into());
            }
            None => {}
        }
        let Some(pending) = ctx.get::<Json<Pending>>("pending").await? else {
            return Err(TerminalError::new_with_code(409, "the run waits on no decision").into());
        };
        let pending = pending.into_inner();
        let agent = ctx
            .get::<String>("agent")
            .await?
            .and_then(|name| self.agents.get(&name).cloned());
        let decisions = check_decisions(&pending, entries, agent.as_deref())
            .map_err(|message| TerminalError::new_with_code(409, message))?;
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

/// The body of a `decide` call, as the handler reads it: a decision per call id, in the order
/// given, an id given twice kept twice (a map would keep the last of the two without a word) so
/// that `decide` can refuse it. It serialises as a JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionEntries(Vec<(String, Decision)>);

impl From<BTreeMap<String, Decision>> for DecisionEntries {
    fn from(decisions: BTreeMap<String, Decision>) -> DecisionEntries {
        DecisionEntries(decisions.into_iter().collect())
    }
}

impl Serialize for DecisionEntries {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (id, decision) in &self.0 {
            map.serialize_entry(id, decision)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for DecisionEntries {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> serde::de::Visitor<'de> for Entries {
            type Value = DecisionEntries;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object with a decision per waiting call id")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<DecisionEntries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, Decision>()? {
                    entries.push(entry);
                }
                Ok(DecisionEntries(entries))
            }
        }
        deserializer.deserialize_map(Entries)
    }
}

/// The decisions, by id, when they fit the calls `pending` waits on: one per waiting call, no
/// other id, no id twice, and edited arguments that `agent`'s tool accepts. Else why not.
pub(crate) fn check_decisions(
    pending: &Pending,
    entries: Vec<(String, Decision)>,
    agent: Option<&DynReAct>,
) -> Result<BTreeMap<String, Decision>, String> {
    let waiting: Vec<&str> = pending.calls.iter().map(|c| c.id.as_str()).collect();
    let mut decisions = BTreeMap::new();
    let mut problems = Vec::new();
    for (id, decision) in entries {
        if !waiting.contains(&id.as_str()) {
            problems.push(format!("the run does not wait on a call `{id}`"));
            continue;
        }
        match decisions.entry(id) {
            std::collections::btree_map::Entry::Occupied(entry) => {
                problems.push(format!("call `{}` is decided twice", entry.key()));
            }
            std::collections::btree_map::Entry::Vacant(entry) => {
                entry.insert(decision);
            }
        }
    }
    let missing: Vec<&str> = waiting
        .iter()
        .copied()
        .filter(|id| !decisions.contains_key(*id))
        .collect();
    if !missing.is_empty() {
        problems.push(format!(
            "no decision for the waiting call(s) {}",
            missing.join(", ")
        ));
    }
    if let Some(agent) = agent {
        for call in &pending.calls {
            let Some(Decision::Edit(args)) = decisions.get(&call.id) else {
                continue;
            };
            let Some(tool) = agent.tool_list().iter().find(|t| t.name() == call.tool) else {
                continue;
            };
            // Tools without arguments accept `null` as well as `{}`.
            let args = if args.is_null() {
                serde_json::Value::Object(serde_json::Map::new())
            } else {
                args.clone()
            };
            if let Err(error) = tool.spec().validate(&args) {
                problems.push(format!(
                    "the edited arguments of call `{}` do not fit `{}`: {error}",
                    call.id, call.tool
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(decisions)
    } else {
        Err(format!(
            "{} (the run waits on {}; it keeps waiting)",
            problems.join("; "),
            waiting.join(", ")
        ))
    }
}
