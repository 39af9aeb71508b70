//! Retries with exponential backoff and jitter on transient LM errors, for any [`Lm`].

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use futures::{FutureExt, stream};

use super::{Capabilities, Completion, Lm, LmError, LmRequest, StreamEvent};

/// When and how often to retry an LM call that failed with a transient error
/// ([`LmError::is_transient`]: rate limits, server errors, timeouts, connection failures).
///
/// The wait before retry `k` (0-based) is `initial_backoff * 2^k`, capped at `max_backoff`, with
/// "equal jitter" (a random point in the upper half of that interval) so that many clients do not
/// retry in lockstep. A rate limit that names its wait (`Retry-After`) is honoured instead, capped
/// at `max_retry_after`. Errors that are not transient (a rejected request, a prompt that does not
/// fit the context window, an invalid response) are never retried.
///
/// ```
/// use std::time::Duration;
/// use signet::lm::{LmError, RetryPolicy};
///
/// let policy = RetryPolicy::default()
///     .with_max_retries(5)
///     .with_initial_backoff(Duration::from_millis(100))
///     .with_jitter(false);
/// assert_eq!(policy.max_retries(), 5);
/// let server = LmError::Server { status: 503, message: String::new() };
/// assert_eq!(policy.delay(2, &server), Duration::from_millis(400));
/// let limited = LmError::RateLimited { retry_after: Some(Duration::from_secs(2)), message: String::new() };
/// assert_eq!(policy.delay(0, &limited), Duration::from_secs(2));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    max_retries: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    max_retry_after: Duration,
    jitter: bool,
}

impl Default for RetryPolicy {
    /// Three retries, backoff from 500 ms up to 30 s with jitter, `Retry-After` honoured up to 60 s.
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// The default policy (see [`Default`]).
    pub fn new() -> RetryPolicy {
        RetryPolicy::default()
    }

    /// Never retry.
    ///
    /// ```
    /// assert_eq!(signet::lm::RetryPolicy::none().max_retries(), 0);
    /// ```
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    crate::shared::setters! {
        /// How many times a call may be retried (attempts = retries + 1).
        fn with_max_retries(max_retries: u32) { max_retries = max_retries }

        /// The wait before the first retry (doubled for each further one).
        fn with_initial_backoff(initial_backoff: Duration) { initial_backoff = initial_backoff }

        /// The longest wait computed by the backoff.
        fn with_max_backoff(max_backoff: Duration) { max_backoff = max_backoff }

        /// The longest wait a server's `Retry-After` may impose; longer requests are cut to this.
        fn with_max_retry_after(max_retry_after: Duration) { max_retry_after = max_retry_after }

        /// Whether backoff waits are randomised (on by default).
        fn with_jitter(jitter: bool) { jitter = jitter }
    }

    /// How many times a call may be retried.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// The wait before retry number `retry` (0-based) after `error`.
    pub fn delay(&self, retry: u32, error: &LmError) -> Duration {
        if let LmError::RateLimited {
            retry_after: Some(wait),
            ..
        } = error
        {
            return (*wait).min(self.max_retry_after);
        }
        let factor = 2u32.saturating_pow(retry);
        let backoff = self
            .initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        if self.jitter {
            let half = backoff / 2;
            half + half.mul_f64(random_unit())
        } else {
            backoff
        }
    }

    /// Runs `attempt` until it succeeds, fails with an error that is not transient, or the retries
    /// are spent. The retries made are added to the completion's [`Usage::retries`](super::Usage).
    pub(crate) async fn run<F, Fut>(
        &self,
        model: &str,
        mut attempt: F,
    ) -> Result<Completion, LmError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Completion, LmError>>,
    {
        let mut retries = 0u32;
        loop {
            match attempt().await {
                Ok(mut completion) => {
                    completion.usage.retries =
                        completion.usage.retries.saturating_add(u64::from(retries));
                    return Ok(completion);
                }
                Err(error) if error.is_transient() && retries < self.max_retries => {
                    self.wait(model, retries, &error).await;
                    retries += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Opens a stream with `open`, retrying while it fails before its first event. Once an event
    /// has arrived the stream is passed through as is (a half-streamed reply is not replayed). The
    /// retries made are added to the usage of the final [`StreamEvent::Done`].
    pub(crate) fn run_stream<'a, F>(
        &'a self,
        model: &'a str,
        open: F,
    ) -> BoxStream<'a, Result<StreamEvent, LmError>>
    where
        F: Fn() -> BoxStream<'a, Result<StreamEvent, LmError>> + Send + 'a,
    {
        let first = async move {
            let mut retries = 0u32;
            loop {
                let mut events = open();
                match events.next().await {
                    Some(Err(error)) if error.is_transient() && retries < self.max_retries => {
                        self.wait(model, retries, &error).await;
                        retries += 1;
                    }
                    first => return (first, events, retries),
                }
            }
        };
        stream::once(first)
            .flat_map(|(first, rest, retries)| {
                stream::iter(first)
                    .chain(rest)
                    .map(move |event| match event {
                        Ok(StreamEvent::Done(mut completion)) => {
                            completion.usage.retries =
                                completion.usage.retries.saturating_add(u64::from(retries));
                            Ok(StreamEvent::Done(completion))
                        }
                        other => other,
                    })
            })
            .boxed()
    }

    async fn wait(&self, model: &str, retry: u32, error: &LmError) {
        let delay = self.delay(retry, error);
        tracing::warn!(
            model,
            retry = retry + 1,
            max_retries = self.max_retries,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            error = %error,
            "transient LM error, retrying"
        );
        tokio::time::sleep(delay).await;
    }
}

/// Parses an HTTP `Retry-After` value: a number of seconds (`"120"`, or `"1.5"` as some providers
/// send) or an HTTP date (`"Wed, 21 Oct 2015 07:28:00 GMT"`; a date in the past means "now").
/// Returns `None` for anything else.
///
/// ```
/// use std::time::Duration;
/// use signet::lm::parse_retry_after;
/// assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
/// assert_eq!(parse_retry_after("0.25"), Some(Duration::from_millis(250)));
/// assert_eq!(parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT"), Some(Duration::ZERO));
/// assert_eq!(parse_retry_after("soon"), None);
/// ```
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    parse_retry_after_at(value, SystemTime::now())
}

pub(crate) fn parse_retry_after_at(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::try_from_secs_f64(seconds).ok())
            .flatten();
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A number in `[0, 1)`, good enough to spread retries (splitmix64 over a time-seeded counter).
fn random_unit() -> f64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut z = STATE
        .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
        .wrapping_add(seed);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

/// Retries any [`Lm`] on transient errors according to a [`RetryPolicy`].
///
/// [`OpenAiLm`](super::OpenAiLm) retries by itself; wrap other LMs (your own clients, a
/// [`ScriptedLm`](crate::testing::ScriptedLm) in tests) in this.
///
/// ```
/// use std::time::Duration;
/// use signet::lm::{Completion, Lm, LmError, LmRequest, RetryLm, RetryPolicy};
/// use signet::testing::ScriptedLm;
///
/// let flaky = ScriptedLm::new([])
///     .then_error(LmError::Server { status: 503, message: "busy".into() })
///     .then(Completion::text("ok"));
/// let lm = RetryLm::new(flaky, RetryPolicy::default().with_initial_backoff(Duration::from_millis(1)));
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let reply = lm.complete(&LmRequest::default()).await.unwrap();
/// assert_eq!((reply.text.as_deref(), reply.usage.retries), (Some("ok"), 1));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct RetryLm<L> {
    inner: L,
    policy: RetryPolicy,
}

impl<L: Lm> RetryLm<L> {
    /// Wraps `inner`, retrying with `policy`.
    pub fn new(inner: L, policy: RetryPolicy) -> RetryLm<L> {
        RetryLm { inner, policy }
    }

    /// The wrapped LM.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }
}

impl<L: Lm> Lm for RetryLm<L> {
    fn complete<'a>(
        &'a self,
        request: &'a LmRequest,
    ) -> BoxFuture<'a, Result<Completion, LmError>> {
        self.policy
            .run(self.inner.model(), move || self.inner.complete(request))
            .boxed()
    }

    fn stream<'a>(&'a self, request: &'a LmRequest) -> BoxStream<'a, Result<StreamEvent, LmError>> {
        self.policy
            .run_stream(self.inner.model(), move || self.inner.stream(request))
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn model(&self) -> &str {
        self.inner.model()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RetryPolicy::default()
            .with_initial_backoff(Duration::from_millis(100))
            .with_max_backoff(Duration::from_millis(300))
            .with_jitter(false);
        let error = LmError::Timeout {
            after: Duration::from_secs(1),
        };
        let waits: Vec<_> = (0..4).map(|k| policy.delay(k, &error)).collect();
        assert_eq!(
            waits,
            [100, 200, 300, 300].map(Duration::from_millis).to_vec()
        );
        // Absurd retry counts saturate instead of overflowing.
        assert_eq!(policy.delay(u32::MAX, &error), Duration::from_millis(300));
    }

    #[test]
    fn jitter_stays_in_the_upper_half() {
        let policy = RetryPolicy::default().with_initial_backoff(Duration::from_millis(1000));
        let error = LmError::Connect {
            message: String::new(),
        };
        for _ in 0..200 {
            let wait = policy.delay(0, &error);
            assert!(wait >= Duration::from_millis(500) && wait <= Duration::from_millis(1000));
        }
    }

    #[test]
    fn retry_after_is_capped() {
        let policy = RetryPolicy::default().with_max_retry_after(Duration::from_secs(5));
        let error = LmError::RateLimited {
            retry_after: Some(Duration::from_secs(3600)),
            message: String::new(),
        };
        assert_eq!(policy.delay(0, &error), Duration::from_secs(5));
    }

    #[test]
    fn retry_after_parses_seconds_and_dates() {
        let now = SystemTime::now();
        let later = now + Duration::from_secs(120);
        let date = httpdate::fmt_http_date(later);
        let wait = parse_retry_after_at(&date, now).expect("an HTTP date");
        // HTTP dates have whole seconds.
        assert!(wait <= Duration::from_secs(120) && wait >= Duration::from_secs(119));
        assert_eq!(
            parse_retry_after_at(" 7 ", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(parse_retry_after_at("-1", now), None);
        assert_eq!(parse_retry_after_at("NaN", now), None);
        assert_eq!(parse_retry_after_at("1e400", now), None);
        assert_eq!(parse_retry_after_at("", now), None);
    }

    #[tokio::test]
    async fn gives_up_after_max_retries_and_skips_permanent_errors() {
        let policy = RetryPolicy::default()
            .with_max_retries(2)
            .with_initial_backoff(Duration::from_millis(1));
        let mut calls = 0;
        let result = policy
            .run("m", || {
                calls += 1;
                async {
                    Err(LmError::Server {
                        status: 500,
                        message: String::new(),
                    })
                }
            })
            .await;
        assert!(matches!(result, Err(LmError::Server { .. })));
        assert_eq!(calls, 3);

        let mut calls = 0;
        let result = policy
            .run("m", || {
                calls += 1;
                async {
                    Err(LmError::ContextWindowExceeded {
                        message: String::new(),
                    })
                }
            })
            .await;
        assert!(matches!(result, Err(LmError::ContextWindowExceeded { .. })));
        assert_eq!(calls, 1);
    }

    #[tokio::test]
    async fn streams_are_retried_before_their_first_event() {
        use crate::testing::ScriptedLm;
        let flaky = ScriptedLm::new([])
            .then_error(LmError::Timeout {
                after: Duration::from_secs(1),
            })
            .then(Completion::text("hi there"));
        let lm = RetryLm::new(
            flaky,
            RetryPolicy::default().with_initial_backoff(Duration::from_millis(1)),
        );
        let request = LmRequest::default();
        let events: Vec<_> = lm.stream(&request).collect().await;
        let Some(Ok(StreamEvent::Done(done))) = events.last() else {
            panic!("no Done event: {events:?}");
        };
        assert_eq!(done.text.as_deref(), Some("hi there"));
        assert_eq!(done.usage.retries, 1);
    }
}
