//! # signet-restate
//!
//! The user guide is in the repository: <https://github.com/signet-rs/signet/tree/main/docs>
//! (this crate: `docs/scale.md`).
//!
//! Runs Signet ReAct agents on [Restate](https://restate.dev), a durable execution engine, so a
//! run outlives the process that started it:
//!
//! * **Every LM call and every tool call is a journaled step.** A worker that dies mid-run is
//!   replayed on another: the calls that completed come back from Restate's journal, so no LM
//!   call is paid twice and no tool that finished runs twice (a tool that was running when the
//!   worker died runs again: steps are at least once). Built on [`signet::journal`]: the run
//!   hands each call to the journal, which makes it a `ctx.run` step.
//! * **Approvals are durable promises.** A `#[tool(confirm)]` tool (or one that returns
//!   [`ToolError::NeedsInput`](signet::ToolError::NeedsInput)) suspends the run at no cost; the
//!   [`decide`](Ingress::decide) call — minutes or days later, from any machine — resumes it.
//! * **Progress is readable while it runs**: [`status`](Ingress::status) lists the journaled
//!   calls so far and what the run waits on.
//!
//! * **Batch evaluation**: [`Evaluations`] score one example per invocation, keyed by the
//!   evaluation and the example, so [`Ingress::evaluate`] resumes an interrupted evaluation on
//!   any number of workers and scores no example twice in its results.
//!
//! A worker serves [`Agents`] as the `SignetAgent` workflow and [`Evaluations`] as the
//! `SignetEvaluate` service ([`serve`], [`Worker`]); Restate calls it. A run is started, watched
//! and answered through Restate's ingress ([`Ingress`]), by workflow id: starting the same id
//! twice runs it once.
//!
//! ```no_run
//! use signet::module::DynReAct;
//! use signet_restate::{Agents, serve};
//!
//! # async fn run(agent: DynReAct) {
//! let agents = Agents::new().agent("travel", agent);
//! // Register http://127.0.0.1:9080 with Restate (its admin API, or `RestateServer::register`).
//! serve("127.0.0.1:9080".parse().unwrap(), agents).await;
//! # }
//! ```
//!
//! [`RestateServer`] starts a local Restate server for tests and examples, installing it from
//! npm into the cache on first use ([`install`]).

mod agent;
mod evaluate;
mod ingress;
mod journal;
mod server;
mod telemetry;

pub use agent::{Agents, DecisionEntries, Pending, RunRequest, RunResult, SignetAgent, Status};
pub use evaluate::{BatchReport, Evaluations, ScoreRequest, ScoredExample, SignetEvaluate};
pub use ingress::{CONNECT_TIMEOUT, Ingress, IngressError, Progress, REQUEST_TIMEOUT};
pub use journal::Event;
pub use server::{
    RestateServer, SERVER_VERSION, ServerError, free_port, install, load_balancer, server_binary,
};

/// The 404 a handler answers when the name asked for is not served here.
pub(crate) fn not_served<'a>(
    what: &str,
    name: &str,
    served: impl Iterator<Item = &'a String>,
) -> restate_sdk::prelude::HandlerError {
    let served: Vec<&str> = served.map(String::as_str).collect();
    restate_sdk::prelude::TerminalError::new_with_code(
        404,
        format!(
            "no {what} named `{name}` (this worker has: {})",
            served.join(", ")
        ),
    )
    .into()
}

/// What a worker serves: agents (the `SignetAgent` workflow), programs to evaluate (the
/// `SignetEvaluate` service), or both.
#[derive(Clone, Default)]
pub struct Worker {
    agents: Option<Agents>,
    evaluations: Option<Evaluations>,
}

impl Worker {
    /// Serves nothing yet.
    pub fn new() -> Worker {
        Worker::default()
    }

    /// Serves `agents`.
    pub fn agents(mut self, agents: Agents) -> Worker {
        self.agents = Some(agents);
        self
    }

    /// Serves `evaluations`.
    pub fn evaluations(mut self, evaluations: Evaluations) -> Worker {
        self.evaluations = Some(evaluations);
        self
    }
}

impl From<Agents> for Worker {
    fn from(agents: Agents) -> Worker {
        Worker::new().agents(agents)
    }
}

impl From<Evaluations> for Worker {
    fn from(evaluations: Evaluations) -> Worker {
        Worker::new().evaluations(evaluations)
    }
}

/// Serves `worker` ([`Agents`], [`Evaluations`] or a [`Worker`] with both) at `address` until the
/// process ends: an HTTP/2 endpoint Restate calls (register its URL with the server's admin
/// API, or [`RestateServer::register`]).
pub async fn serve(address: std::net::SocketAddr, worker: impl Into<Worker>) {
    let worker = worker.into();
    let mut endpoint = restate_sdk::endpoint::Endpoint::builder();
    if let Some(agents) = &worker.agents {
        endpoint = endpoint.bind(agents.workflow());
    }
    if let Some(evaluations) = &worker.evaluations {
        endpoint = endpoint.bind(evaluations.service());
    }
    restate_sdk::http_server::HttpServer::new(endpoint.build())
        .listen_and_serve(address)
        .await;
}
