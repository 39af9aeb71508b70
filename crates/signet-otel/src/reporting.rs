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

/// The metric exporter, turned off with one line on stderr the first time the collector says it
/// takes no metrics (HTTP `404`/`405`, gRPC `Unimplemented`: a traces-only backend such as Arize
/// Phoenix); every other failure is reported as spans' are, and kept.
#[derive(Debug)]
pub(crate) struct MetricsReporting<E> {
    inner: E,
    endpoint: String,
    off: std::sync::atomic::AtomicBool,
    last: Mutex<Option<Instant>>,
}

impl<E> MetricsReporting<E> {
    pub(crate) fn new(inner: E, endpoint: String) -> MetricsReporting<E> {
        MetricsReporting {
            inner,
            endpoint,
            off: std::sync::atomic::AtomicBool::new(false),
            last: Mutex::new(None),
        }
    }

    /// Whether the collector turned metrics away for good.
    pub(crate) fn is_off(&self) -> bool {
        self.off.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Whether an export error says the collector has no metrics endpoint.
fn takes_no_metrics(error: &str) -> bool {
    error.contains("status code: 404")
        || error.contains("status code: 405")
        || error.contains("Unimplemented")
}

impl<E: opentelemetry_sdk::metrics::exporter::PushMetricExporter>
    opentelemetry_sdk::metrics::exporter::PushMetricExporter for MetricsReporting<E>
{
    async fn export(
        &self,
        metrics: &opentelemetry_sdk::metrics::data::ResourceMetrics,
    ) -> OTelSdkResult {
        if self.is_off() {
            return Ok(());
        }
        let result = self.inner.export(metrics).await;
        let Err(error) = &result else {
            return result;
        };
        let text = error.to_string();
        if takes_no_metrics(&text) {
            self.off.store(true, std::sync::atomic::Ordering::SeqCst);
            eprintln!(
                "signet-otel: {} takes no metrics ({text}); spans are still exported, metrics are \
                 not sent again (OtelConfig::metrics(false) skips them from the start)",
                self.endpoint
            );
            return Ok(());
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_none_or(|at| at.elapsed() >= REPEAT_AFTER) {
            eprintln!(
                "signet-otel: metrics could not be sent to {}: {text}",
                self.endpoint
            );
            *last = Some(Instant::now());
        }
        result
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn temporality(&self) -> opentelemetry_sdk::metrics::Temporality {
        self.inner.temporality()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_sdk::error::OTelSdkError;
    use opentelemetry_sdk::metrics::exporter::PushMetricExporter;

    /// A collector that answers metrics with `status`.
    #[derive(Debug)]
    struct Refuses(&'static str);

    impl PushMetricExporter for Refuses {
        async fn export(
            &self,
            _metrics: &opentelemetry_sdk::metrics::data::ResourceMetrics,
        ) -> OTelSdkResult {
            Err(OTelSdkError::InternalFailure(self.0.into()))
        }
        fn force_flush(&self) -> OTelSdkResult {
            Ok(())
        }
        fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
            Ok(())
        }
        fn temporality(&self) -> opentelemetry_sdk::metrics::Temporality {
            opentelemetry_sdk::metrics::Temporality::Cumulative
        }
    }

    #[test]
    fn a_traces_only_collector_turns_metrics_off_and_other_failures_stay_errors() {
        assert!(takes_no_metrics("HTTP export failed with status code: 405"));
        assert!(takes_no_metrics("status: Unimplemented, message: \"\""));
        assert!(!takes_no_metrics(
            "HTTP export failed with status code: 503"
        ));
        assert!(!takes_no_metrics("connection refused"));
    }

    #[tokio::test]
    async fn metrics_refused_by_the_collector_are_turned_off_once() {
        let metrics = opentelemetry_sdk::metrics::data::ResourceMetrics::default();
        let phoenix = MetricsReporting::new(
            Refuses("HTTP export failed with status code: 405"),
            "http://localhost:6006/v1/metrics".into(),
        );
        assert!(phoenix.export(&metrics).await.is_ok(), "not an error");
        assert!(phoenix.is_off());
        assert!(phoenix.export(&metrics).await.is_ok(), "and not sent again");
        let down = MetricsReporting::new(
            Refuses("connection refused"),
            "http://localhost:1/v1/metrics".into(),
        );
        assert!(
            down.export(&metrics).await.is_err(),
            "a real failure stays one"
        );
        assert!(!down.is_off());
    }

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
