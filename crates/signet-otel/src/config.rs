//! Setting up the export: [`install`], [`OtelConfig`] and the [`OtelGuard`] that flushes it.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider;
use opentelemetry::trace::TracerProvider;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::runtime::Tokio;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;

use crate::{GenAiMetrics, GenAiSpanProcessor, OtelError, W3cPropagator};

/// The spans and events exported unless [`OtelConfig::filter`] says otherwise: Signet's spans,
/// and warnings from everywhere (they become events of the span they happen in).
pub const DEFAULT_FILTER: &str = "warn,signet=info,signet_mcp=info,signet_restate=info";

/// How spans and metrics travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP over HTTP with protobuf bodies (`http/protobuf`; default port 4318).
    HttpProtobuf,
    /// OTLP over gRPC (`grpc`; default port 4317).
    Grpc,
}

impl FromStr for Protocol {
    type Err = OtelError;

    fn from_str(text: &str) -> Result<Protocol, OtelError> {
        match text.trim() {
            "http/protobuf" | "http" => Ok(Protocol::HttpProtobuf),
            "grpc" => Ok(Protocol::Grpc),
            other => Err(OtelError::Protocol(other.to_owned())),
        }
    }
}

/// Where and how to export: every setting has a default, and the standard `OTEL_*` environment
/// variables fill what is not set (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL`,
/// `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
/// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`).
///
/// ```no_run
/// use signet_otel::{OtelConfig, Protocol};
/// # async fn run() -> Result<(), signet_otel::OtelError> {
/// let otel = OtelConfig::new("travel-agent")
///     .endpoint("http://localhost:6006") // Arize Phoenix
///     .protocol(Protocol::HttpProtobuf)
///     .resource_attribute("openinference.project.name", "travel")
///     .metrics(false) // Phoenix takes traces only (without this: one line, then metrics are off)
///     .install()?;
/// # otel.shutdown().await }
/// ```
#[derive(Clone)]
pub struct OtelConfig {
    service_name: String,
    endpoint: Option<String>,
    protocol: Option<Protocol>,
    resource: Vec<KeyValue>,
    headers: Vec<(String, String)>,
    capture_content: Option<bool>,
    filter: String,
    metrics: bool,
    metrics_interval: Duration,
    log_to_stderr: bool,
}

/// Header values (API keys, tokens) are shown as `[redacted]`, and only the names are kept.
impl std::fmt::Debug for OtelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, _)| (name.as_str(), "[redacted]"))
            .collect();
        f.debug_struct("OtelConfig")
            .field("service_name", &self.service_name)
            .field("endpoint", &self.endpoint)
            .field("protocol", &self.protocol)
            .field("resource", &self.resource)
            .field("headers", &headers)
            .field("capture_content", &self.capture_content)
            .field("filter", &self.filter)
            .field("metrics", &self.metrics)
            .field("metrics_interval", &self.metrics_interval)
            .field("log_to_stderr", &self.log_to_stderr)
            .finish()
    }
}

/// Installs the export with every default (see [`OtelConfig`]): OTLP to
/// `OTEL_EXPORTER_OTLP_ENDPOINT` or `http://localhost:4318`, traces and metrics, a global
/// `tracing` subscriber that also prints warnings to stderr (`RUST_LOG` filters them).
///
/// ```no_run
/// # async fn run() -> Result<(), signet_otel::OtelError> {
/// let otel = signet_otel::install("travel-agent")?;
/// // ... run agents ...
/// otel.shutdown().await
/// # }
/// ```
pub fn install(service_name: &str) -> Result<OtelGuard, OtelError> {
    OtelConfig::new(service_name).install()
}

impl OtelConfig {
    /// The export of the service `service_name` (`service.name`; `OTEL_SERVICE_NAME` wins).
    pub fn new(service_name: impl Into<String>) -> OtelConfig {
        OtelConfig {
            service_name: service_name.into(),
            endpoint: None,
            protocol: None,
            resource: Vec::new(),
            headers: Vec::new(),
            capture_content: None,
            filter: DEFAULT_FILTER.to_owned(),
            metrics: true,
            metrics_interval: Duration::from_secs(60),
            log_to_stderr: true,
        }
    }

    /// The collector's base URL (`http://host:4318` for HTTP, `http://host:4317` for gRPC);
    /// over HTTP, `/v1/traces` and `/v1/metrics` are appended. Default:
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`, else localhost on the protocol's port.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// The protocol (default: `OTEL_EXPORTER_OTLP_PROTOCOL`, else HTTP/protobuf).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// Adds a resource attribute to every span and metric (`deployment.environment`, Phoenix's
    /// `openinference.project.name`, ..).
    pub fn resource_attribute(mut self, key: &str, value: impl Into<String>) -> Self {
        self.resource
            .push(KeyValue::new(key.to_owned(), value.into()));
        self
    }

    /// Adds a header to every export request (an API key for a hosted backend). Its value is
    /// never logged.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Records prompts, replies, tool arguments and results on the spans (off unless this or
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true` turns it on): they may hold
    /// personal data. Sets [`signet::telemetry::set_capture_content`] for the process.
    pub fn capture_content(mut self, on: bool) -> Self {
        self.capture_content = Some(on);
        self
    }

    /// Which spans and events are exported, as `tracing` target directives (default
    /// [`DEFAULT_FILTER`]).
    pub fn filter(mut self, directives: impl Into<String>) -> Self {
        self.filter = directives.into();
        self
    }

    /// Whether the GenAI metrics are exported too (default on). A collector that takes traces
    /// only (Phoenix, MLflow: `404`/`405`, gRPC `Unimplemented`) turns them off at its first
    /// answer, with one line on stderr and no export error.
    pub fn metrics(mut self, on: bool) -> Self {
        self.metrics = on;
        self
    }

    /// How often metrics are exported (default 60 s).
    pub fn metrics_interval(mut self, interval: Duration) -> Self {
        self.metrics_interval = interval;
        self
    }

    /// Whether [`install`](Self::install) also prints log events to stderr (`RUST_LOG` filters
    /// them; default `warn`). On by default.
    pub fn log_to_stderr(mut self, on: bool) -> Self {
        self.log_to_stderr = on;
        self
    }

    /// Installs the export as the global `tracing` subscriber (with a stderr log unless
    /// [`log_to_stderr`](Self::log_to_stderr) is off). Must run inside a Tokio runtime: the
    /// exporters send from its tasks.
    pub fn install(self) -> Result<OtelGuard, OtelError> {
        let log_to_stderr = self.log_to_stderr;
        let (layer, guard) = self.layer()?;
        let logs = log_to_stderr.then(|| {
            let filter = tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_filter(filter)
        });
        tracing_subscriber::registry()
            .with(layer)
            .with(logs)
            .try_init()
            .map_err(|e| OtelError::SubscriberInstalled(e.to_string()))?;
        Ok(guard)
    }

    /// The export as a `tracing` layer, for a subscriber of your own
    /// (`tracing_subscriber::registry().with(layer).with(..).init()`), and the guard that
    /// flushes it. Installs the MCP trace-context propagator and the content setting.
    pub fn layer<S>(self) -> Result<(impl Layer<S>, OtelGuard), OtelError>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(OtelError::NoRuntime);
        }
        let filter = Targets::from_str(&self.filter).map_err(|e| OtelError::Filter {
            filter: self.filter.clone(),
            message: e.to_string(),
        })?;
        let protocol = match self.protocol {
            Some(protocol) => protocol,
            None => match std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL") {
                Ok(text) if !text.trim().is_empty() => text.parse()?,
                _ => Protocol::HttpProtobuf,
            },
        };
        let base = self
            .endpoint
            .clone()
            .or_else(|| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok())
            .filter(|url| !url.trim().is_empty())
            .unwrap_or_else(|| match protocol {
                Protocol::HttpProtobuf => "http://localhost:4318".to_owned(),
                Protocol::Grpc => "http://localhost:4317".to_owned(),
            });
        let mut resource = Resource::builder().with_attributes(self.resource.clone());
        if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
            resource = resource.with_service_name(self.service_name.clone());
        }
        let resource = resource.build();

        let destination = Destination::new(protocol, base, &self.headers)?;
        let meter_provider = if self.metrics {
            let (endpoint, exporter) = destination.metric_exporter()?;
            // A traces-only collector (Phoenix) is told apart once, with one line, not an
            // export error at every interval and at shutdown.
            let exporter = crate::reporting::MetricsReporting::new(exporter, endpoint);
            let reader = opentelemetry_sdk::metrics::periodic_reader_with_async_runtime::PeriodicReader::builder(exporter, Tokio)
                .with_interval(self.metrics_interval)
                .build();
            Some(
                SdkMeterProvider::builder()
                    .with_reader(reader)
                    .with_resource(resource.clone())
                    .build(),
            )
        } else {
            None
        };
        let metrics = meter_provider
            .as_ref()
            .map(|provider| GenAiMetrics::new(&provider.meter("signet")));
        let (endpoint, exporter) = destination.span_exporter()?;
        let exporter = crate::reporting::Reporting::new(exporter, endpoint);
        let batch =
            opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
                exporter, Tokio,
            )
            .build();
        let tracer_provider = SdkTracerProvider::builder()
            .with_span_processor(GenAiSpanProcessor::new(batch, metrics))
            .with_resource(resource)
            .build();
        let tracer = tracer_provider.tracer("signet");
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_target(false)
            .with_level(false)
            .with_filter(filter);
        signet::telemetry::set_propagator(Arc::new(W3cPropagator::default()));
        if let Some(on) = self.capture_content {
            signet::telemetry::set_capture_content(on);
        }
        Ok((
            layer,
            OtelGuard {
                tracer: tracer_provider,
                meter: meter_provider,
                done: false,
            },
        ))
    }
}

/// Where spans and metrics go: the protocol, the collector's base URL, and the headers (as gRPC
/// metadata too, checked once, for gRPC).
struct Destination {
    protocol: Protocol,
    base: String,
    headers: std::collections::HashMap<String, String>,
    metadata: tonic::metadata::MetadataMap,
}

impl Destination {
    fn new(
        protocol: Protocol,
        base: String,
        headers: &[(String, String)],
    ) -> Result<Destination, OtelError> {
        let mut metadata = tonic::metadata::MetadataMap::new();
        if protocol == Protocol::Grpc {
            for (name, value) in headers {
                let bad = |message: &'static str| OtelError::Header {
                    name: name.clone(),
                    message,
                };
                let key =
                    tonic::metadata::MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes())
                        .map_err(|_| bad("not a valid gRPC metadata name"))?;
                let value = value
                    .parse()
                    .map_err(|_| bad("its value is not valid gRPC metadata"))?;
                metadata.insert(key, value);
            }
        }
        Ok(Destination {
            protocol,
            base,
            headers: headers.iter().cloned().collect(),
            metadata,
        })
    }

    /// Where a signal is sent: over HTTP the base with the signal's `path` (`/v1/traces`) unless
    /// it ends with a signal's path already; over gRPC the base.
    fn url(&self, path: &str) -> String {
        if self.protocol == Protocol::Grpc {
            return self.base.clone();
        }
        let base = self.base.trim_end_matches('/');
        let base = base
            .strip_suffix("/v1/traces")
            .or_else(|| base.strip_suffix("/v1/metrics"))
            .unwrap_or(base);
        format!("{base}{path}")
    }

    /// An HTTP exporter builder sending to `url` with the headers.
    fn http<B: WithExportConfig + WithHttpConfig>(&self, builder: B, url: &str) -> B {
        builder
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(url)
            .with_headers(self.headers.clone())
    }

    /// A gRPC exporter builder sending to `url` with the headers as metadata.
    fn grpc<B: WithExportConfig + WithTonicConfig>(&self, builder: B, url: &str) -> B {
        builder
            .with_endpoint(url)
            .with_metadata(self.metadata.clone())
    }

    /// The span exporter, and the URL it sends to.
    fn span_exporter(&self) -> Result<(String, opentelemetry_otlp::SpanExporter), OtelError> {
        let url = self.url("/v1/traces");
        let builder = opentelemetry_otlp::SpanExporter::builder();
        let built = match self.protocol {
            Protocol::HttpProtobuf => self.http(builder.with_http(), &url).build(),
            Protocol::Grpc => self.grpc(builder.with_tonic(), &url).build(),
        };
        match built {
            Ok(exporter) => Ok((url, exporter)),
            Err(e) => Err(exporter_error("traces", url, e)),
        }
    }

    /// The metric exporter, and where it sends.
    fn metric_exporter(&self) -> Result<(String, opentelemetry_otlp::MetricExporter), OtelError> {
        let url = self.url("/v1/metrics");
        let builder = opentelemetry_otlp::MetricExporter::builder();
        let built = match self.protocol {
            Protocol::HttpProtobuf => self.http(builder.with_http(), &url).build(),
            Protocol::Grpc => self.grpc(builder.with_tonic(), &url).build(),
        };
        match built {
            Ok(exporter) => Ok((url, exporter)),
            Err(e) => Err(exporter_error("metrics", url, e)),
        }
    }
}

fn exporter_error(signal: &'static str, endpoint: String, error: impl ToString) -> OtelError {
    OtelError::Exporter {
        signal,
        endpoint,
        message: error.to_string(),
    }
}

/// Keeps the export running; [`shutdown`](Self::shutdown) flushes what is queued and stops it.
/// Dropped without `shutdown`, it flushes as well as it can (inside a multi-threaded Tokio
/// runtime; elsewhere the spans still queued may be lost, and a warning says so).
#[derive(Debug)]
pub struct OtelGuard {
    tracer: SdkTracerProvider,
    meter: Option<SdkMeterProvider>,
    done: bool,
}

impl OtelGuard {
    /// Exports every finished span (and the metrics so far) now.
    pub async fn flush(&self) -> Result<(), OtelError> {
        let tracer = self.tracer.clone();
        let meter = self.meter.clone();
        blocking(move || {
            tracer.force_flush().map_err(|e| OtelError::Export {
                what: "flushing spans",
                message: e.to_string(),
            })?;
            if let Some(meter) = meter {
                meter.force_flush().map_err(|e| OtelError::Export {
                    what: "flushing metrics",
                    message: e.to_string(),
                })?;
            }
            Ok(())
        })
        .await
    }

    /// Flushes and stops the export.
    pub async fn shutdown(mut self) -> Result<(), OtelError> {
        self.done = true;
        let tracer = self.tracer.clone();
        let meter = self.meter.clone();
        blocking(move || shutdown(&tracer, meter.as_ref())).await
    }

    /// The tracer provider (to add spans of your own with the `opentelemetry` API).
    pub fn tracer_provider(&self) -> &SdkTracerProvider {
        &self.tracer
    }

    /// The meter provider, when metrics are exported (to add instruments of your own).
    pub fn meter_provider(&self) -> Option<&SdkMeterProvider> {
        self.meter.as_ref()
    }
}

fn shutdown(tracer: &SdkTracerProvider, meter: Option<&SdkMeterProvider>) -> Result<(), OtelError> {
    let spans = tracer.shutdown().map_err(|e| OtelError::Export {
        what: "shutting down spans",
        message: e.to_string(),
    });
    let metrics = meter.map_or(Ok(()), |meter| {
        meter.shutdown().map_err(|e| OtelError::Export {
            what: "shutting down metrics",
            message: e.to_string(),
        })
    });
    spans.and(metrics)
}

/// Runs `work` (which waits on the runtime's export tasks) off the runtime's worker threads.
async fn blocking(
    work: impl FnOnce() -> Result<(), OtelError> + Send + 'static,
) -> Result<(), OtelError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(OtelError::Export {
            what: "flushing",
            message: e.to_string(),
        })
    })
}

impl Drop for OtelGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let multi_threaded = tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        if multi_threaded {
            let result =
                tokio::task::block_in_place(|| shutdown(&self.tracer, self.meter.as_ref()));
            if let Err(error) = result {
                eprintln!("signet-otel: {error}");
            }
        } else {
            eprintln!(
                "signet-otel: the OtelGuard was dropped outside a multi-threaded Tokio runtime \
                 without `shutdown().await`: spans still queued may be lost"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_names_headers_but_never_shows_their_values() {
        let config = OtelConfig::new("svc").header("authorization", "Bearer sk-very-secret");
        let shown = format!("{config:?}");
        assert!(shown.contains("authorization"), "{shown}");
        assert!(!shown.contains("sk-very-secret"), "{shown}");
    }

    #[test]
    fn signals_go_to_their_paths_over_http_and_to_the_base_over_grpc() {
        let http = |base: &str| Destination::new(Protocol::HttpProtobuf, base.into(), &[]).unwrap();
        assert_eq!(
            http("http://c:4318").url("/v1/traces"),
            "http://c:4318/v1/traces"
        );
        assert_eq!(
            http("http://c:4318/").url("/v1/metrics"),
            "http://c:4318/v1/metrics"
        );
        assert_eq!(
            http("http://c:4318/v1/traces").url("/v1/metrics"),
            "http://c:4318/v1/metrics"
        );
        let grpc = Destination::new(Protocol::Grpc, "http://c:4317".into(), &[]).unwrap();
        assert_eq!(grpc.url("/v1/traces"), "http://c:4317");
    }

    #[test]
    fn a_header_grpc_cannot_carry_is_a_typed_error_naming_it() {
        let headers = [("x-key".to_owned(), "line\nbreak".to_owned())];
        let error = Destination::new(Protocol::Grpc, "http://c:4317".into(), &headers)
            .err()
            .expect("a newline is not valid metadata");
        assert!(
            matches!(&error, OtelError::Header { name, .. } if name == "x-key"),
            "{error}"
        );
        // Over HTTP the same header is the HTTP exporter's to judge.
        assert!(Destination::new(Protocol::HttpProtobuf, "http://c:4318".into(), &headers).is_ok());
    }
}
