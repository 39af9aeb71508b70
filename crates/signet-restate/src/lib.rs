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
//! use signet_restate::{Agents, Worker, serve};
//!
//! # async fn run(agent: DynReAct) -> Result<(), signet_restate::ServeError> {
//! let agents = Agents::new().agent("travel", agent);
//! // Only requests Restate signed with the matching private key are served (see `IdentityKeys`).
//! let worker = Worker::from(agents).identity_key("publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp");
//! // Register http://127.0.0.1:9080 with Restate (its admin API, or `RestateServer::register`).
//! serve("127.0.0.1:9080".parse().unwrap(), worker).await?;
//! # Ok(()) }
//! ```
//!
//! [`RestateServer`] starts a local Restate server for tests and examples, installing it from
//! npm into the cache on first use ([`install`]).

mod agent;
mod evaluate;
mod identity;
mod ingress;
mod journal;
mod server;
mod telemetry;

pub use agent::{
    Agents, DECISION_KEY_HEADER, DECISION_TOKEN_HEADER, DecisionEntries, Pending, RunRequest,
    RunResult, SignetAgent, Status,
};
pub use evaluate::{BatchReport, Evaluations, ScoreRequest, ScoredExample, SignetEvaluate};
pub use identity::IdentityKeys;
pub use ingress::{CONNECT_TIMEOUT, Ingress, IngressError, Progress, REQUEST_TIMEOUT, RunTicket};
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
/// `SignetEvaluate` service), or both; and whom it serves: requests Restate signed, checked
/// against its [identity keys](Self::identity_key).
#[derive(Clone, Default)]
pub struct Worker {
    agents: Option<Agents>,
    evaluations: Option<Evaluations>,
    identity_keys: Vec<String>,
    allow_unsigned: bool,
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

    /// Serves only requests signed by the Restate server whose public identity key this is
    /// (`publickeyv1_…`; the server's `request-identity-private-key-pem-file` holds the private
    /// half, and [`RestateServer::identity_key`] gives a local server's). Every other request,
    /// a forged journal included, is answered `401`. Several keys may be given (a key being
    /// rotated). A key that does not parse is [`ServeError::BadKey`] from [`serve`].
    pub fn identity_key(mut self, key: impl Into<String>) -> Worker {
        self.identity_keys.push(key.into());
        self
    }

    /// Lets [`serve`] bind beyond loopback without an [identity key](Self::identity_key): for a
    /// worker whose network only Restate can reach. Without this, it refuses to.
    pub fn allow_unsigned_requests(mut self) -> Worker {
        self.allow_unsigned = true;
        self
    }
}

/// Why [`serve`] could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The address could not be bound.
    #[error("could not bind the worker to {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The worker would take requests from other machines, unsigned: anyone reaching the port
    /// could send it a forged journal (approving a `#[tool(confirm)]` call with their arguments).
    #[error(
        "refusing to serve a worker on {addr} without an identity key: anyone who reaches it could          run its agents with a forged journal; give Restate's public key with          Worker::identity_key, bind to 127.0.0.1, or call Worker::allow_unsigned_requests if          only Restate can reach this network"
    )]
    Unprotected {
        /// The address.
        addr: std::net::SocketAddr,
    },
    /// An identity key did not parse.
    #[error("identity key `{key}` is not a Restate public key (publickeyv1_…): {reason}")]
    BadKey {
        /// The key as given.
        key: String,
        /// Why.
        reason: String,
    },
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
/// process is interrupted (Ctrl-C): an HTTP/2 endpoint Restate calls (register its URL with the
/// server's admin API, or [`RestateServer::register`]). With [identity
/// keys](Worker::identity_key), only requests Restate signed are served; without, the worker
/// binds only to loopback ([`ServeError::Unprotected`] otherwise, unless
/// [`allow_unsigned_requests`](Worker::allow_unsigned_requests)).
pub async fn serve(
    address: std::net::SocketAddr,
    worker: impl Into<Worker>,
) -> Result<(), ServeError> {
    let worker = worker.into();
    if worker.identity_keys.is_empty() && !worker.allow_unsigned && !address.ip().is_loopback() {
        return Err(ServeError::Unprotected { addr: address });
    }
    let mut endpoint = restate_sdk::endpoint::Endpoint::builder();
    for key in &worker.identity_keys {
        endpoint = endpoint
            .identity_key(key)
            .map_err(|error| ServeError::BadKey {
                key: key.clone(),
                reason: error.to_string(),
            })?;
    }
    if let Some(agents) = &worker.agents {
        endpoint = endpoint.bind(agents.workflow());
    }
    if let Some(evaluations) = &worker.evaluations {
        endpoint = endpoint.bind(evaluations.service());
    }
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| ServeError::Bind {
            addr: address,
            source,
        })?;
    restate_sdk::http_server::HttpServer::new(endpoint.build())
        .serve(listener)
        .await;
    Ok(())
}
