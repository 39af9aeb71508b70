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
    /// A run id that cannot name a run in a URL: empty, `.` or `..` (any other id is
    /// percent-escaped into the URL, so `/`, `?`, `#` and `%` in an id are just characters).
    #[error("the run id {id:?} cannot name a run: it is empty, `.` or `..`")]
    InvalidId {
        /// The id given.
        id: String,
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

/// How long [`Ingress`] waits to connect to Restate, unless set
/// ([`Ingress::connect_timeout`]).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long [`Ingress`] waits for the answer to a call that does not wait for a run to end
/// (start, status, decide, output), unless set ([`Ingress::request_timeout`]).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Restate's ingress, for `SignetAgent` runs (a run is named by its workflow id).
///
/// Every call gives up on a Restate that does not accept the connection within
/// [`CONNECT_TIMEOUT`] (10 s) or does not answer within [`REQUEST_TIMEOUT`] (60 s), with
/// [`IngressError::Unreachable`]; the calls that wait for a run to end ([`result`](Self::result),
/// [`run`](Self::run), an evaluation's results) wait as long as the run takes unless
/// [`wait_timeout`](Self::wait_timeout) is set. A run id goes into URLs percent-escaped.
#[derive(Clone)]
pub struct Ingress {
    base: String,
    http: reqwest::Client,
    request_timeout: Duration,
    wait_timeout: Option<Duration>,
    bearer: Option<String>,
}

impl std::fmt::Debug for Ingress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ingress")
            .field("base", &self.base)
            .field("request_timeout", &self.request_timeout)
            .field("wait_timeout", &self.wait_timeout)
            .field("bearer_token", &self.bearer.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

/// A run started by [`Ingress::start_run`]: its id, and the token that may decide its approvals
/// ([`Ingress::decide_with_token`]). Both are 128 random bits; `Debug` hides the token.
#[derive(Clone, PartialEq, Eq)]
pub struct RunTicket {
    /// The run's id (32 hex digits).
    pub id: String,
    /// The token `decide` needs (32 hex digits); hand it only to whoever approves.
    pub decision_token: String,
}

impl std::fmt::Debug for RunTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTicket")
            .field("id", &self.id)
            .field("decision_token", &"[redacted]")
            .finish()
    }
}

/// 128 bits from the operating system's random source, as 32 hex digits.
fn random_hex() -> Result<String, IngressError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|error| IngressError::Unreachable {
        url: String::new(),
        message: format!("no random source for a run id or token: {error}"),
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Ingress {
    /// The ingress at `base` (`http://127.0.0.1:8080`).
    pub fn new(base: impl Into<String>) -> Ingress {
        Ingress {
            base: base.into().trim_end_matches('/').to_owned(),
            http: client(CONNECT_TIMEOUT),
            request_timeout: REQUEST_TIMEOUT,
            wait_timeout: None,
            bearer: None,
        }
    }

    /// Sends `Authorization: Bearer <token>` with every request: for an ingress behind a proxy
    /// that authenticates (Restate's own ingress does not). `Debug` hides it.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Ingress {
        self.bearer = Some(token.into());
        self
    }

    /// How long to wait to connect to Restate ([`CONNECT_TIMEOUT`] unless set).
    pub fn connect_timeout(mut self, timeout: Duration) -> Ingress {
        self.http = client(timeout);
        self
    }

    /// How long to wait for the answer to a call that does not wait for a run to end
    /// ([`REQUEST_TIMEOUT`] unless set).
    pub fn request_timeout(mut self, timeout: Duration) -> Ingress {
        self.request_timeout = timeout;
        self
    }

    /// How long the calls that wait for a run (or an evaluated example) to end may wait: no
    /// limit unless set.
    pub fn wait_timeout(mut self, timeout: Duration) -> Ingress {
        self.wait_timeout = Some(timeout);
        self
    }

    /// Starts a run under a new id that cannot be guessed, bound to a new decision token, and
    /// returns both without waiting: only the token's holder may [decide](Self::decide_with_token)
    /// the run's approvals.
    pub async fn start_run(&self, request: &RunRequest) -> Result<RunTicket, IngressError> {
        let id = random_hex()?;
        let decision_token = self.start_decided(&id, request).await?;
        Ok(RunTicket { id, decision_token })
    }

    /// Starts run `id` bound to a new decision token (128 random bits), which it returns: the
    /// run keeps only its SHA-256, and [`decide_with_token`](Self::decide_with_token) needs the
    /// token. Starting an id again changes nothing (and its new token decides nothing).
    pub async fn start_decided(
        &self,
        id: &str,
        request: &RunRequest,
    ) -> Result<String, IngressError> {
        let token = random_hex()?;
        let url = format!("{}/SignetAgent/{}/run/send", self.base, escape(id)?);
        let key = crate::agent::decision_key(&token);
        let post = self
            .http
            .post(&url)
            .header(crate::agent::DECISION_KEY_HEADER, key)
            .json(request);
        self.send(post, &url).await?;
        Ok(token)
    }

    /// Starts run `id` and returns without waiting. Starting an id again is accepted and
    /// changes nothing: a workflow id runs once. The run has no decision token: its approvals
    /// can be decided only when the worker serves [`Agents::open_decisions`](crate::Agents::open_decisions)
    /// (use [`start_decided`](Self::start_decided) or [`start_run`](Self::start_run) otherwise).
    pub async fn start(&self, id: &str, request: &RunRequest) -> Result<(), IngressError> {
        let url = format!("{}/SignetAgent/{}/run/send", self.base, escape(id)?);
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
        let url = format!(
            "{}/restate/workflow/SignetAgent/{}/attach",
            self.base,
            escape(id)?
        );
        decode(self.send_waiting(self.http.get(&url), &url).await?, &url)
    }

    /// Where run `id` is: its journaled calls and what it waits on.
    pub async fn status(&self, id: &str) -> Result<Status, IngressError> {
        let url = format!("{}/SignetAgent/{}/status", self.base, escape(id)?);
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
        let url = format!(
            "{}/restate/workflow/SignetAgent/{}/output",
            self.base,
            escape(id)?
        );
        match self.send(self.http.get(&url), &url).await {
            Ok(body) => decode(body, &url).map(Some),
            // Restate's "not completed yet".
            Err(IngressError::Status { status: 470, .. }) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Answers the calls run `id` waits on, a decision per pending call id; the run goes on.
    /// Decisions that do not fit the calls it waits on (a call left out, an id it does not wait
    /// on, edited arguments the tool's schema refuses) are [`IngressError::Status`] 409, and the
    /// run keeps waiting. Without a token this is only accepted for a run started without one
    /// on a worker that serves [`Agents::open_decisions`](crate::Agents::open_decisions); else
    /// `403`.
    pub async fn decide(
        &self,
        id: &str,
        decisions: &BTreeMap<String, Decision>,
    ) -> Result<(), IngressError> {
        let url = format!("{}/SignetAgent/{}/decide", self.base, escape(id)?);
        self.send(self.http.post(&url).json(decisions), &url)
            .await
            .map(drop)
    }

    /// [`decide`](Self::decide) as the holder of the run's decision token (from
    /// [`start_decided`](Self::start_decided) or [`start_run`](Self::start_run)); a missing or
    /// wrong token is [`IngressError::Status`] 403 and the run keeps waiting.
    pub async fn decide_with_token(
        &self,
        id: &str,
        token: &str,
        decisions: &BTreeMap<String, Decision>,
    ) -> Result<(), IngressError> {
        let url = format!("{}/SignetAgent/{}/decide", self.base, escape(id)?);
        let post = self
            .http
            .post(&url)
            .header(crate::agent::DECISION_TOKEN_HEADER, token)
            .json(decisions);
        self.send(post, &url).await.map(drop)
    }

    /// The ingress URL.
    pub(crate) fn base(&self) -> &str {
        &self.base
    }

    /// The HTTP client.
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.http
    }

    /// Sends `request`, which must be answered within the request timeout; the body of a
    /// success, else a typed error.
    pub(crate) async fn send(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<String, IngressError> {
        self.answer(request.timeout(self.request_timeout), url)
            .await
    }

    /// Sends `request`, which waits for a run or an example to end (within the wait timeout, if
    /// set); the body of a success, else a typed error.
    pub(crate) async fn send_waiting(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<String, IngressError> {
        let request = match self.wait_timeout {
            Some(timeout) => request.timeout(timeout),
            None => request,
        };
        self.answer(request, url).await
    }

    async fn answer(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<String, IngressError> {
        let unreachable = |error: reqwest::Error| IngressError::Unreachable {
            url: url.to_owned(),
            message: error.to_string(),
        };
        let request = match &self.bearer {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        let response = crate::telemetry::with_trace_context(request)
            .send()
            .await
            .map_err(unreachable)?;
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

/// An HTTP client that gives up connecting after `connect`.
fn client(connect: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(connect)
        .build()
        .unwrap_or_default()
}

/// `id` as one URL path segment: every byte but letters, digits, `-`, `_`, `.` and `~`
/// percent-escaped. `.` and `..` (which URLs read as "here" and "up") and the empty id are
/// refused.
pub(crate) fn escape(id: &str) -> Result<String, IngressError> {
    if matches!(id, "" | "." | "..") {
        return Err(IngressError::InvalidId { id: id.to_owned() });
    }
    let mut escaped = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            escaped.push(char::from(byte));
        } else {
            escaped.push_str(&format!("%{byte:02X}"));
        }
    }
    Ok(escaped)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_escaped_into_one_path_segment() {
        assert_eq!(escape("order-1234").unwrap(), "order-1234");
        assert_eq!(escape("a/b?c=%d#e f").unwrap(), "a%2Fb%3Fc%3D%25d%23e%20f");
        assert_eq!(escape("é").unwrap(), "%C3%A9");
        assert_eq!(escape("v1.2").unwrap(), "v1.2");
        for refused in ["", ".", ".."] {
            assert!(matches!(
                escape(refused),
                Err(IngressError::InvalidId { .. })
            ));
        }
    }

    #[tokio::test]
    async fn a_run_id_never_leaves_its_path_segment() {
        // A stand-in ingress that answers every request with the path it was sent.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            loop {
                let Ok((mut socket, _)) = listener.accept().await else {
                    return;
                };
                let mut request = vec![0; 4096];
                let n = socket.read(&mut request).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&request[..n]).into_owned();
                let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                let body = serde_json::json!({"events": [], "pending": null, "path": path});
                let body = body.to_string();
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(reply.as_bytes()).await;
            }
        });
        let ingress = Ingress::new(format!("http://{address}"));
        let id = "../../restate/workflow/x?y=1#z%41";
        let url = format!(
            "http://{address}/SignetAgent/{}/status",
            escape(id).unwrap()
        );
        let body = ingress.send(ingress.http.post(&url), &url).await.unwrap();
        let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            answer["path"],
            "/SignetAgent/..%2F..%2Frestate%2Fworkflow%2Fx%3Fy%3D1%23z%2541/status"
        );
        assert!(ingress.status(id).await.is_ok());
        assert!(matches!(
            ingress.status("..").await,
            Err(IngressError::InvalidId { .. })
        ));
    }

    #[tokio::test]
    async fn a_silent_ingress_is_unreachable_after_the_request_timeout() {
        // Accepts connections and never answers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let held = tokio::spawn(async move {
            let mut sockets = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                sockets.push(socket);
            }
        });
        let ingress =
            Ingress::new(format!("http://{address}")).request_timeout(Duration::from_millis(300));
        let started = std::time::Instant::now();
        let error = ingress.status("order-1").await.unwrap_err();
        assert!(
            matches!(error, IngressError::Unreachable { .. }),
            "{error:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(5));
        held.abort();
    }
}
