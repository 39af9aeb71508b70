//! An exporter that says when the export fails: the SDK's own reports are off (its internal logs
//! are not built in), and spans lost without a word are the silent failure a user cannot debug.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};

/// How often a failure that keeps happening is reported again.
const REPEAT_AFTER: Duration = Duration::from_secs(60);

/// `inner`, with each failed export printed on stderr (the first at once, then at most one a
/// minute, with the number lost meanwhile). Not through `tracing`: its events would be exported
/// too.
#[derive(Debug)]
pub(crate) struct Reporting<E> {
    inner: E,
    endpoint: String,
    last: Mutex<Option<(Instant, usize)>>,
}

impl<E> Reporting<E> {
    pub(crate) fn new(inner: E, endpoint: String) -> Reporting<E> {
        Reporting {
            inner,
            endpoint,
            last: Mutex::new(None),
        }
    }

    /// Reports that `spans` spans could not be sent, unless a report was printed less than a
    /// minute ago (then they are counted for the next one).
    fn failed(&self, spans: usize, error: &dyn std::fmt::Display) {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        match &mut *last {
            Some((at, lost)) if at.elapsed() < REPEAT_AFTER => *lost += spans,
            previous => {
                let earlier = previous.map_or(0, |(_, lost)| lost);
                let more = if earlier > 0 {
                    format!(" ({earlier} more lost since the last report)")
                } else {
                    String::new()
                };
                eprintln!(
                    "signet-otel: {spans} spans could not be sent to {}{more}: {error}",
                    self.endpoint
                );
                *previous = Some((Instant::now(), 0));
            }
        }
    }
}

impl<E: SpanExporter> SpanExporter for Reporting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len();
        let result = self.inner.export(batch).await;
        if let Err(error) = &result {
            self.failed(spans, error);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::error::OTelSdkError;

    #[derive(Debug)]
    struct Down;

    impl SpanExporter for Down {
        async fn export(&self, _batch: Vec<SpanData>) -> OTelSdkResult {
            Err(OTelSdkError::InternalFailure("connection refused".into()))
        }
    }

    #[tokio::test]
    async fn repeated_failures_are_counted_between_reports() {
        let exporter = Reporting::new(Down, "http://localhost:1".into());
        for _ in 0..3 {
            assert!(
                exporter.export(Vec::new()).await.is_err(),
                "the error is kept"
            );
        }
        exporter.failed(4, &"again");
        let last = exporter.last.lock().unwrap();
        let (_, lost) = last.expect("a report was made");
        assert_eq!(lost, 4, "reported once, then counted");
    }
}
