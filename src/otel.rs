//! OpenTelemetry export of agentflow's spans (cargo feature `otel`).
//!
//! agentflow reports through `tracing`: a span per agent run, per model call and per tool call,
//! with the OpenTelemetry GenAI attribute names (see [`telemetry`](crate::telemetry)). This
//! module connects them to OpenTelemetry with `tracing-opentelemetry`: [`otlp_provider`] builds
//! a tracer provider that sends spans over OTLP/HTTP to a collector (Jaeger, Tempo, an
//! OpenTelemetry Collector, ...), and [`layer`] makes the `tracing` layer that feeds it. A
//! span's `otel.name` becomes its OpenTelemetry name (`chat gpt-4o-mini`), `otel.kind` its
//! kind, and `otel.status_code` / `otel.status_description` its status.
//!
//! ```no_run
//! use agentweave::otel;
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let provider = otel::otlp_provider("http://localhost:4318/v1/traces", "support-desk").unwrap();
//! let subscriber = tracing_subscriber::registry().with(otel::layer(&provider));
//! tracing::subscriber::set_global_default(subscriber).unwrap();
//! // ... run agents ...
//! provider.shutdown().ok(); // sends what is left
//! ```
//!
//! For tests, [`in_memory_provider`] keeps the finished spans in memory instead.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing::Subscriber;
use tracing_subscriber::registry::LookupSpan;

pub use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};

/// The `tracing` layer type [`layer`] returns.
pub type OtelLayer<S> =
    tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>;

/// Why the OTLP exporter could not be set up.
#[derive(Debug)]
pub struct OtelError {
    /// The collector's endpoint.
    pub endpoint: String,
    /// What failed.
    pub message: String,
}

impl std::fmt::Display for OtelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot set up the OTLP exporter to '{}': {}",
            self.endpoint, self.message
        )
    }
}

impl std::error::Error for OtelError {}

/// A tracer provider exporting spans in batches over OTLP/HTTP (protobuf) to `endpoint` (a
/// collector's traces URL, e.g. `http://localhost:4318/v1/traces`), as service `service_name`.
///
/// Nothing is sent until spans end; a collector that is not there costs a failed export per
/// batch, reported by OpenTelemetry, and the program goes on. Call
/// [`SdkTracerProvider::shutdown`] before exiting to send the last batch.
///
/// An `https://` endpoint is reached over TLS (rustls, certificates checked by the platform's
/// verifier). rustls needs a process-wide crypto provider: this installs ring's unless the
/// program installed one before (then that one is used).
pub fn otlp_provider(endpoint: &str, service_name: &str) -> Result<SdkTracerProvider, OtelError> {
    // Err only when a provider is installed already, which is all that is needed.
    let _ = otel_rustls::crypto::ring::default_provider().install_default();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .with_headers(Default::default())
        .build()
        .map_err(|e| OtelError {
            endpoint: endpoint.to_owned(),
            message: e.to_string(),
        })?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource(service_name))
        .build())
}

/// A tracer provider that keeps finished spans in `exporter` (read them with
/// [`InMemorySpanExporter::get_finished_spans`]): for tests.
pub fn in_memory_provider(exporter: InMemorySpanExporter, service_name: &str) -> SdkTracerProvider {
    SdkTracerProvider::builder()
        .with_simple_exporter(exporter)
        .with_resource(resource(service_name))
        .build()
}

/// The `tracing` layer that turns agentflow's spans into OpenTelemetry spans of `provider`.
pub fn layer<S>(provider: &SdkTracerProvider) -> OtelLayer<S>
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    tracing_opentelemetry::layer().with_tracer(provider.tracer("agentflow"))
}

fn resource(service_name: &str) -> Resource {
    Resource::builder()
        .with_service_name(service_name.to_owned())
        .build()
}
