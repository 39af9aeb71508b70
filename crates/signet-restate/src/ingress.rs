//! A client of Restate's ingress for `SignetAgent` runs: start, watch, decide, wait.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::de::DeserializeOwned;
use signet::module::Decision;

use crate::agent::{RunRequest, RunResult, Status};

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

fn decode<T: DeserializeOwned>(body: String, url: &str) -> Result<T, IngressError> {
    serde_json::from_str(&body).map_err(|e| IngressError::Decode {
        url: url.to_owned(),
        message: format!("{e}: {body}"),
    })
}
