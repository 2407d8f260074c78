//! OpenTelemetry traces of a call (`docs/observability.md`): the exporter
//! (OTLP over HTTP, on the SDK's own batch thread), the `tracing` layer
//! that turns this crate's trace spans into OpenTelemetry spans, and W3C
//! trace context in and out (`context`). Off unless `OTEL_*` settings ask
//! for it.
//!
//! Only spans whose target is [`TARGET`] are exported, and the process log
//! never shows them: what a span may carry is decided where it is made
//! (`spans`), never by whatever a log line happens to hold. No argument
//! value, no header and no secret is ever an attribute.

pub mod context;
pub mod spans;

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider,
};
use secrecy::ExposeSecret;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::LookupSpan;

use crate::config::{RootSampling, TelemetrySettings};

/// The `tracing` target of every exported span. The OpenTelemetry layer
/// sees only these; the log layer never does.
pub const TARGET: &str = "aegis_trace";

/// How long a shutdown waits for the last batch to reach the collector.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("OTEL_EXPORTER_OTLP_CERTIFICATE: {0}")]
    Certificate(String),
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(String),
}

/// The running exporter. Dropping it sends what is queued (within
/// [`SHUTDOWN_TIMEOUT`]) and stops the batch thread.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(err) = self.provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            tracing::warn!(error = %err, "the last spans could not be exported");
        }
    }
}

/// Starts the exporter and returns it with the layer for the process's
/// subscriber. Call it outside the async runtime: the blocking HTTP
/// client it builds owns a runtime of its own.
pub fn start<S>(
    settings: &TelemetrySettings,
    replica_id: &str,
) -> Result<(Telemetry, impl Layer<S> + Send + Sync + 'static), TelemetryError>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let provider = provider(settings, replica_id)?;
    let tracer = provider.tracer(env!("CARGO_PKG_NAME"));
    Ok((Telemetry { provider }, layer(tracer)))
}

/// The layer over any tracer (the tests give it one with an in-memory
/// exporter): this crate's trace spans only, no events, and none of the
/// layer's own extras (thread, code location, busy time, target).
pub fn layer<S, T>(tracer: T) -> impl Layer<S> + Send + Sync + 'static
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    T: opentelemetry::trace::Tracer + Send + Sync + 'static,
    T::Span: Send + Sync,
{
    tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_tracked_inactivity(false)
        .with_target(false)
        .with_level(false)
        .with_error_events_to_status(false)
        .with_error_events_to_exceptions(false)
        .with_filter(filter_fn(|meta| meta.is_span() && meta.target() == TARGET))
}

/// Whether this process exports trace spans: the router adds its trace
/// layer only then, so a gateway without traces pays nothing for it.
pub fn exporting() -> bool {
    tracing::enabled!(kind: tracing::metadata::Kind::SPAN, target: TARGET, tracing::Level::INFO)
}

/// The filter the process log puts beside its own: it never shows trace
/// spans (their fields are chosen for the collector, not for the log).
pub fn not_trace_spans(meta: &tracing::Metadata<'_>) -> bool {
    meta.target() != TARGET
}

fn provider(
    settings: &TelemetrySettings,
    replica_id: &str,
) -> Result<SdkTracerProvider, TelemetryError> {
    crate::tls::install_crypto_provider();
    let certificates = match &settings.certificate {
        None => Vec::new(),
        Some(path) => {
            let pem = std::fs::read(path)
                .map_err(|err| TelemetryError::Certificate(format!("{}: {err}", path.display())))?;
            reqwest::Certificate::from_pem_bundle(&pem).map_err(|_| {
                TelemetryError::Certificate(format!(
                    "{}: not a PEM certificate bundle",
                    path.display()
                ))
            })?
        }
    };
    let timeout = settings.timeout;
    // The blocking client owns a small runtime; it is built on a thread
    // of its own so that it never starts or drops inside ours.
    let client = std::thread::spawn(move || {
        reqwest::blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            // Spans go where the operator said, nowhere else.
            .redirect(reqwest::redirect::Policy::none())
            .tls_certs_merge(certificates)
            .build()
    })
    .join()
    .map_err(|_| TelemetryError::Exporter("the HTTP client thread panicked".into()))?
    .map_err(|err| TelemetryError::Exporter(err.to_string()))?;
    let headers = settings
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.expose_secret().to_owned()))
        .collect();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(settings.endpoint.as_str())
        .with_timeout(settings.timeout)
        .with_headers(headers)
        .build()
        .map_err(|err| TelemetryError::Exporter(err.to_string()))?;
    let batches = BatchConfigBuilder::default()
        .with_max_queue_size(settings.max_queue_size)
        .with_max_export_batch_size(settings.max_export_batch_size)
        .with_scheduled_delay(settings.schedule_delay)
        .build();
    let processor = BatchSpanProcessor::builder(exporter)
        .with_batch_config(batches)
        .build();
    let mut attributes: Vec<KeyValue> = settings
        .resource
        .iter()
        .filter(|(key, _)| key != "service.name")
        .map(|(key, value)| KeyValue::new(key.clone(), value.clone()))
        .collect();
    attributes.push(KeyValue::new("service.version", crate::build_info::VERSION));
    if !settings
        .resource
        .iter()
        .any(|(key, _)| key == "service.instance.id")
    {
        attributes.push(KeyValue::new("service.instance.id", replica_id.to_owned()));
    }
    let resource = Resource::builder_empty()
        .with_service_name(settings.service_name.clone())
        .with_attributes(attributes)
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_sampler(sampler(settings))
        .with_resource(resource)
        .build())
}

fn sampler(settings: &TelemetrySettings) -> Sampler {
    let root = match settings.sampling.root {
        RootSampling::AlwaysOn => Sampler::AlwaysOn,
        RootSampling::AlwaysOff => Sampler::AlwaysOff,
        RootSampling::Ratio(ratio) => Sampler::TraceIdRatioBased(ratio),
    };
    if settings.sampling.parent_based {
        Sampler::ParentBased(Box::new(root))
    } else {
        root
    }
}
