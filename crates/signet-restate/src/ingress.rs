//! A client of Restate's ingress for `SignetAgent` runs: start, watch, decide, wait.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::de::DeserializeOwned;
use signet::module::Decision;

use futures::Stream;

use crate::agent::{Pending, RunRequest, RunResult, Status};
use crate::journal::Event;

/// Why a call to Restate's ingress failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IngressError {
    /// Restate could not be reached.
    #[error("could not reach Restate's ingress at {url}: {message}")]
    Unreachable {
        /// The URL called.
        url: String,
        /// What the transport said.
        message: String,
    },
    /// Restate (or the handler) answered with an error status: a run that failed, an unknown
    /// agent (404), a decision nothing waits for (409), ...
    #[error("{url} answered HTTP {status}: {body}")]
    Status {
        /// The URL called.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The body (Restate's error message).
        body: String,
    },
    /// An evaluation key with characters other than letters, digits, `-`, `_` and `.` (it
    /// becomes part of URLs).
    #[error("the evaluation key {key:?} may hold only letters, digits, `-`, `_` and `.`")]
    InvalidKey {
        /// The key given.
        key: String,
    },
    /// The answer is not what the handler returns.
    #[error("{url} answered something that does not decode: {message}")]
    Decode {
        /// The URL called.
        url: String,
        /// What did not decode.
        message: String,
    },
}

/// Restate's ingress, for `SignetAgent` runs (a run is named by its workflow id).
#[derive(Debug, Clone)]
pub struct Ingress {
    base: String,
    http: reqwest::Client,
}

impl Ingress {
    /// The ingress at `base` (`http://127.0.0.1:8080`).
    pub fn new(base: impl Into<String>) -> Ingress {
        Ingress {
            base: base.into().trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
        }
    }

    /// Starts run `id` and returns without waiting. Starting an id again is accepted and
    /// changes nothing: a workflow id runs once.
    pub async fn start(&self, id: &str, request: &RunRequest) -> Result<(), IngressError> {
        let url = format!("{}/SignetAgent/{id}/run/send", self.base);
        self.send(self.http.post(&url).json(request), &url)
            .await
            .map(drop)
    }

    /// Runs `id` and waits for its result (an error status if the run failed).
    pub async fn run(&self, id: &str, request: &RunRequest) -> Result<RunResult, IngressError> {
        self.start(id, request).await?;
        self.result(id).await
    }

    /// Waits for run `id` to end and returns its result.
    pub async fn result(&self, id: &str) -> Result<RunResult, IngressError> {
        let url = format!("{}/restate/workflow/SignetAgent/{id}/attach", self.base);
        decode(self.send(self.http.get(&url), &url).await?, &url)
    }

    /// Where run `id` is: its journaled calls and what it waits on.
    pub async fn status(&self, id: &str) -> Result<Status, IngressError> {
        let url = format!("{}/SignetAgent/{id}/status", self.base);
        decode(self.send(self.http.post(&url), &url).await?, &url)
    }

    /// Waits until run `id` waits on a person (polling [`status`](Self::status)) and returns
    /// its status; `None` after `timeout`.
    pub async fn wait_for_pending(
        &self,
        id: &str,
        timeout: Duration,
    ) -> Result<Option<Status>, IngressError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let status = self.status(id).await?;
            if status.pending.is_some() {
                return Ok(Some(status));
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Follows run `id` as it goes: each journaled call once, as it is recorded, a
    /// [`Progress::Waiting`] each time the run starts waiting for a person, and, last,
    /// [`Progress::Finished`] with the result (or the error the run failed with). Polls
    /// [`status`](Self::status) every `every`; dropping the stream stops following, not the
    /// run. Feed it to an SSE response to show a durable run live in a browser.
    pub fn watch<'a>(
        &'a self,
        id: &'a str,
        every: Duration,
    ) -> impl Stream<Item = Result<Progress, IngressError>> + Send + 'a {
        let start = Watch {
            seen: 0,
            waiting: None,
            queue: std::collections::VecDeque::new(),
            done: false,
        };
        futures::stream::unfold(start, move |mut watch| async move {
            loop {
                if let Some(next) = watch.queue.pop_front() {
                    return Some((next, watch));
                }
                if watch.done {
                    return None;
                }
                let outcome = self.output(id).await;
                let status = match self.status(id).await {
                    Ok(status) => status,
                    Err(error) => {
                        watch.done = true;
                        return Some((Err(error), watch));
                    }
                };
                for event in status.events.into_iter().skip(watch.seen) {
                    watch.seen += 1;
                    watch.queue.push_back(Ok(Progress::Event(event)));
                }
                if let Some(pending) = status.pending
                    && watch.waiting != Some(pending.round)
                {
                    watch.waiting = Some(pending.round);
                    watch.queue.push_back(Ok(Progress::Waiting(pending)));
                }
                match outcome {
                    Ok(None) => {
                        if watch.queue.is_empty() {
                            tokio::time::sleep(every).await;
                        }
                    }
                    Ok(Some(result)) => {
                        watch.queue.push_back(Ok(Progress::Finished(result)));
                        watch.done = true;
                    }
                    Err(error) => {
                        watch.queue.push_back(Err(error));
                        watch.done = true;
                    }
                }
            }
        })
    }

    /// Run `id`'s result if it has ended (`None` while it runs or waits).
    pub async fn output(&self, id: &str) -> Result<Option<RunResult>, IngressError> {
        let url = format!("{}/restate/workflow/SignetAgent/{id}/output", self.base);
        match self.send(self.http.get(&url), &url).await {
            Ok(body) => decode(body, &url).map(Some),
            // Restate's "not completed yet".
            Err(IngressError::Status { status: 470, .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Answers the calls run `id` waits on, a decision per pending call id; the run goes on.
    pub async fn decide(
        &self,
        id: &str,
        decisions: &BTreeMap<String, Decision>,
    ) -> Result<(), IngressError> {
        let url = format!("{}/SignetAgent/{id}/decide", self.base);
        self.send(self.http.post(&url).json(decisions), &url)
            .await
            .map(drop)
    }

    /// The ingress URL.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// The HTTP client.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.http
    }

    /// Sends `request`; the body of a success, else a typed error.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<String, IngressError> {
        let unreachable = |error: reqwest::Error| IngressError::Unreachable {
            url: url.to_owned(),
            message: error.to_string(),
        };
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        let body = response.text().await.map_err(unreachable)?;
        if !status.is_success() {
            return Err(IngressError::Status {
                url: url.to_owned(),
                status: status.as_u16(),
                body,
            });
        }
        Ok(body)
    }
}

/// `body` as the handler's answer, or a typed error naming `url`.
pub(crate) fn decode<T: DeserializeOwned>(body: String, url: &str) -> Result<T, IngressError> {
    serde_json::from_str(&body).map_err(|e| IngressError::Decode {
        url: url.to_owned(),
        message: format!("{e}: {body}"),
    })
}

/// What [`Ingress::watch`] reports.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Progress {
    /// A journaled LM call or tool call.
    Event(Event),
    /// The run waits for a person: these calls need a [decision](Ingress::decide).
    Waiting(Pending),
    /// The run ended with this result.
    Finished(RunResult),
}

/// Where a [`Ingress::watch`] stream is.
struct Watch {
    /// Events already reported.
    seen: usize,
    /// The last waiting round reported.
    waiting: Option<u32>,
    /// Reports not handed out yet.
    queue: std::collections::VecDeque<Result<Progress, IngressError>>,
    /// Whether the run ended (the queue is the rest).
    done: bool,
}
