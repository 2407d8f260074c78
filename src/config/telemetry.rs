//! `OTEL_*`: whether and where the gateway exports OpenTelemetry traces
//! (`docs/observability.md`). The standard variables of the OpenTelemetry
//! specification, read from the same source as every other setting (the
//! env file, then the process environment), validated once here.
//!
//! Off unless asked for: `OTEL_TRACES_EXPORTER=otlp`, or an OTLP endpoint.

use std::path::PathBuf;
use std::time::Duration;

use secrecy::SecretString;
use url::Url;

use super::ConfigError;
use super::parse::{is_loopback_url, parse_bool, parse_usize};

/// Where spans go when only `OTEL_TRACES_EXPORTER=otlp` is set: a local
/// collector's OTLP/HTTP port.
pub const DEFAULT_TRACES_ENDPOINT: &str = "http://localhost:4318/v1/traces";

/// The service name spans carry unless `OTEL_SERVICE_NAME` says otherwise.
pub const DEFAULT_SERVICE_NAME: &str = "aegis-gitea-mcp";

/// At most this many `k=v` pairs in `OTEL_EXPORTER_OTLP_HEADERS` or
/// `OTEL_RESOURCE_ATTRIBUTES`, and this many bytes in either.
const MAX_PAIRS: usize = 32;
const MAX_PAIRS_BYTES: usize = 8 * 1024;

/// Which traces are sampled (`OTEL_TRACES_SAMPLER`, `_ARG`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceSampling {
    /// Follow the caller's sampled flag when a `traceparent` came with the
    /// request (`parentbased_*`), the root rule otherwise.
    pub parent_based: bool,
    pub root: RootSampling,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RootSampling {
    AlwaysOn,
    AlwaysOff,
    /// `traceidratio`: this fraction of traces, by trace id.
    Ratio(f64),
}

/// How spans are exported: OTLP over HTTP with protobuf bodies.
#[derive(Debug, Clone)]
pub struct TelemetrySettings {
    /// The full traces URL (`…/v1/traces`).
    pub endpoint: Url,
    /// Sent with every export (an API key of a hosted backend): secrets,
    /// redacted like every other, and never sent in plain text off the host.
    pub headers: Vec<(String, SecretString)>,
    pub timeout: Duration,
    /// Extra trusted roots (PEM) for an https endpoint.
    pub certificate: Option<PathBuf>,
    pub service_name: String,
    /// `OTEL_RESOURCE_ATTRIBUTES`, as given (`service.name` is taken from
    /// [`Self::service_name`]).
    pub resource: Vec<(String, String)>,
    pub sampling: TraceSampling,
    /// `OTEL_BSP_SCHEDULE_DELAY`: how long spans wait to be sent in a batch.
    pub schedule_delay: Duration,
    /// `OTEL_BSP_MAX_QUEUE_SIZE`: spans kept while the collector is slow;
    /// beyond it spans are dropped, never a call held up.
    pub max_queue_size: usize,
    /// `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`.
    pub max_export_batch_size: usize,
}

/// The signal-specific variable, else the general one.
fn either<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    traces: &str,
    general: &str,
) -> Option<&'a str> {
    get(traces)
        .or_else(|| get(general))
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Reads the `OTEL_*` settings; `None` when traces are off.
pub(super) fn telemetry<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
) -> Result<Option<TelemetrySettings>, ConfigError> {
    if parse_bool("OTEL_SDK_DISABLED", get("OTEL_SDK_DISABLED"), false)? {
        return Ok(None);
    }
    let traces_endpoint = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .map(str::trim)
        .filter(|v| !v.is_empty());
    let base_endpoint = get("OTEL_EXPORTER_OTLP_ENDPOINT")
        .map(str::trim)
        .filter(|v| !v.is_empty());
    if !traces_asked_for(get, traces_endpoint.is_some() || base_endpoint.is_some())? {
        return Ok(None);
    }
    check_protocol(get)?;
    let endpoint = traces_url(traces_endpoint, base_endpoint)?;
    let headers = export_headers(get, &endpoint)?;
    let timeout_ms = parse_usize(
        "OTEL_EXPORTER_OTLP_TIMEOUT",
        either(
            get,
            "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
            "OTEL_EXPORTER_OTLP_TIMEOUT",
        ),
        10_000,
        1..=60_000,
    )?;
    let certificate = either(
        get,
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CERTIFICATE",
    )
    .map(PathBuf::from);
    let service_name = service_name(get)?;
    let resource = match get("OTEL_RESOURCE_ATTRIBUTES").map(str::trim) {
        None | Some("") => Vec::new(),
        Some(raw) => parse_pairs("OTEL_RESOURCE_ATTRIBUTES", raw)?,
    };
    let (max_queue_size, max_export_batch_size) = batch_sizes(get)?;
    Ok(Some(TelemetrySettings {
        endpoint,
        headers,
        timeout: Duration::from_millis(timeout_ms as u64),
        certificate,
        service_name: service_name.to_owned(),
        resource,
        sampling: sampling(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG"))?,
        schedule_delay: Duration::from_millis(parse_usize(
            "OTEL_BSP_SCHEDULE_DELAY",
            get("OTEL_BSP_SCHEDULE_DELAY"),
            5_000,
            1..=60_000,
        )? as u64),
        max_queue_size,
        max_export_batch_size,
    }))
}

/// `OTEL_TRACES_EXPORTER`: `otlp` or `none`; unset, traces are on when an
/// endpoint is given.
fn traces_asked_for<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    endpoint_given: bool,
) -> Result<bool, ConfigError> {
    match get("OTEL_TRACES_EXPORTER").map(str::trim) {
        None | Some("") => Ok(endpoint_given),
        Some("otlp") => Ok(true),
        Some("none") => Ok(false),
        Some(_) => Err(ConfigError::new(
            "OTEL_TRACES_EXPORTER",
            "must be `otlp` or `none`",
        )),
    }
}

/// `OTEL_EXPORTER_OTLP_PROTOCOL` (or its traces variant): only
/// `http/protobuf` is built in.
fn check_protocol<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<(), ConfigError> {
    if let Some(protocol) = either(
        get,
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ) && protocol != "http/protobuf"
    {
        return Err(ConfigError::new(
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "must be `http/protobuf` (gRPC and JSON are not built in; an OpenTelemetry Collector takes OTLP/HTTP on port 4318)",
        ));
    }
    Ok(())
}

/// `OTEL_EXPORTER_OTLP_HEADERS` (or its traces variant): valid HTTP
/// headers, kept secret, sent only over https or to loopback `endpoint`.
fn export_headers<'a>(
    get: &impl Fn(&str) -> Option<&'a str>,
    endpoint: &Url,
) -> Result<Vec<(String, SecretString)>, ConfigError> {
    let Some(raw) = either(
        get,
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_HEADERS",
    ) else {
        return Ok(Vec::new());
    };
    let pairs = parse_pairs("OTEL_EXPORTER_OTLP_HEADERS", raw)?;
    for (name, value) in &pairs {
        if http::HeaderName::from_bytes(name.as_bytes()).is_err()
            || http::HeaderValue::from_str(value).is_err()
        {
            return Err(ConfigError::new(
                "OTEL_EXPORTER_OTLP_HEADERS",
                "must be name=value pairs that are valid HTTP headers",
            ));
        }
    }
    if endpoint.scheme() != "https" && !is_loopback_url(endpoint) {
        return Err(ConfigError::new(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "are sent only to an https:// endpoint or to a collector on loopback",
        ));
    }
    Ok(pairs
        .into_iter()
        .map(|(name, value)| (name, SecretString::from(value)))
        .collect())
}

/// `OTEL_SERVICE_NAME`, or [`DEFAULT_SERVICE_NAME`]; at most 255 bytes.
fn service_name<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<&'a str, ConfigError> {
    let service_name = get("OTEL_SERVICE_NAME")
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or(DEFAULT_SERVICE_NAME);
    if service_name.len() > 255 {
        return Err(ConfigError::new(
            "OTEL_SERVICE_NAME",
            "must be at most 255 bytes",
        ));
    }
    Ok(service_name)
}

/// `OTEL_BSP_MAX_QUEUE_SIZE` and `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` (no
/// larger than the queue): (queue size, batch size).
fn batch_sizes<'a>(get: &impl Fn(&str) -> Option<&'a str>) -> Result<(usize, usize), ConfigError> {
    let max_queue_size = parse_usize(
        "OTEL_BSP_MAX_QUEUE_SIZE",
        get("OTEL_BSP_MAX_QUEUE_SIZE"),
        2048,
        1..=65_536,
    )?;
    let max_export_batch_size = parse_usize(
        "OTEL_BSP_MAX_EXPORT_BATCH_SIZE",
        get("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
        512.min(max_queue_size),
        1..=max_queue_size,
    )?;
    Ok((max_queue_size, max_export_batch_size))
}

/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, or
/// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` appended, as the
/// specification has it.
fn traces_url(traces: Option<&str>, base: Option<&str>) -> Result<Url, ConfigError> {
    let (setting, raw) = match (traces, base) {
        (Some(raw), _) => ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raw.to_owned()),
        (None, Some(raw)) => (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("{}/v1/traces", raw.trim_end_matches('/')),
        ),
        (None, None) => (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            DEFAULT_TRACES_ENDPOINT.to_owned(),
        ),
    };
    let url = Url::parse(&raw)
        .map_err(|_| ConfigError::new(setting, "must be an http:// or https:// URL"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(ConfigError::new(
            setting,
            "must be an http:// or https:// URL",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ConfigError::new(
            setting,
            "must not carry credentials (use OTEL_EXPORTER_OTLP_HEADERS)",
        ));
    }
    if url.fragment().is_some() {
        return Err(ConfigError::new(setting, "must not have a fragment"));
    }
    Ok(url)
}

/// `key=value,key=value`, values percent-decoded (the W3C Baggage form the
/// specification gives these variables). Bounded in count and size.
fn parse_pairs(setting: &'static str, raw: &str) -> Result<Vec<(String, String)>, ConfigError> {
    if raw.len() > MAX_PAIRS_BYTES {
        return Err(ConfigError::new(
            setting,
            format!("must be at most {MAX_PAIRS_BYTES} bytes"),
        ));
    }
    let mut pairs = Vec::new();
    for item in raw
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
    {
        let Some((key, value)) = item.split_once('=') else {
            return Err(ConfigError::new(
                setting,
                "must be key=value pairs separated by commas",
            ));
        };
        let key = key.trim();
        if key.is_empty() {
            return Err(ConfigError::new(setting, "has a pair without a key"));
        }
        let value = percent_encoding::percent_decode_str(value.trim())
            .decode_utf8()
            .map_err(|_| ConfigError::new(setting, "has a value that is not UTF-8 once decoded"))?;
        pairs.push((key.to_owned(), value.into_owned()));
        if pairs.len() > MAX_PAIRS {
            return Err(ConfigError::new(
                setting,
                format!("must hold at most {MAX_PAIRS} pairs"),
            ));
        }
    }
    Ok(pairs)
}

fn sampling(name: Option<&str>, arg: Option<&str>) -> Result<TraceSampling, ConfigError> {
    let ratio = || -> Result<f64, ConfigError> {
        match arg.map(str::trim).filter(|v| !v.is_empty()) {
            None => Ok(1.0),
            Some(raw) => raw
                .parse::<f64>()
                .ok()
                .filter(|r| (0.0..=1.0).contains(r))
                .ok_or_else(|| {
                    ConfigError::new("OTEL_TRACES_SAMPLER_ARG", "must be a number from 0 to 1")
                }),
        }
    };
    let (parent_based, root) = match name.map(str::trim).unwrap_or("") {
        "" | "parentbased_always_on" => (true, RootSampling::AlwaysOn),
        "parentbased_always_off" => (true, RootSampling::AlwaysOff),
        "parentbased_traceidratio" => (true, RootSampling::Ratio(ratio()?)),
        "always_on" => (false, RootSampling::AlwaysOn),
        "always_off" => (false, RootSampling::AlwaysOff),
        "traceidratio" => (false, RootSampling::Ratio(ratio()?)),
        _ => {
            return Err(ConfigError::new(
                "OTEL_TRACES_SAMPLER",
                "must be always_on, always_off, traceidratio or parentbased_ one of them",
            ));
        }
    };
    Ok(TraceSampling { parent_based, root })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use secrecy::ExposeSecret;

    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<Option<TelemetrySettings>, ConfigError> {
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        telemetry(&|name: &str| map.get(name).copied())
    }

    #[test]
    fn traces_are_off_unless_asked_for() {
        assert!(read(&[]).unwrap().is_none());
        assert!(read(&[("OTEL_SERVICE_NAME", "gw")]).unwrap().is_none());
        assert!(
            read(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_TRACES_EXPORTER", "none")
            ])
            .unwrap()
            .is_none()
        );
        assert!(
            read(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_SDK_DISABLED", "true")
            ])
            .unwrap()
            .is_none()
        );
    }

    #[test]
    fn the_general_endpoint_gets_the_traces_path_and_the_signal_one_is_kept() {
        let s = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(s.endpoint.as_str(), "http://collector:4318/v1/traces");
        let s = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://otlp.example/ingest",
            ),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint.as_str(), "https://otlp.example/ingest");
        let s = read(&[("OTEL_TRACES_EXPORTER", "otlp")]).unwrap().unwrap();
        assert_eq!(s.endpoint.as_str(), DEFAULT_TRACES_ENDPOINT);
        assert_eq!(s.service_name, DEFAULT_SERVICE_NAME);
        assert_eq!(
            s.sampling,
            TraceSampling {
                parent_based: true,
                root: RootSampling::AlwaysOn
            }
        );
    }

    #[test]
    fn only_otlp_over_http_protobuf_is_accepted() {
        for protocol in ["grpc", "http/json"] {
            let err = read(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", protocol),
            ])
            .unwrap_err();
            assert_eq!(err.setting, "OTEL_EXPORTER_OTLP_PROTOCOL");
        }
        let err = read(&[("OTEL_TRACES_EXPORTER", "zipkin")]).unwrap_err();
        assert_eq!(err.setting, "OTEL_TRACES_EXPORTER");
    }

    #[test]
    fn headers_are_secrets_that_never_travel_in_plain_text_off_the_host() {
        let s = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otlp.example"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "x-api-key=abc%3D%3D, x-team = one",
            ),
        ])
        .unwrap()
        .unwrap();
        let shown: Vec<(&str, &str)> = s
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.expose_secret()))
            .collect();
        assert_eq!(shown, [("x-api-key", "abc=="), ("x-team", "one")]);
        let err = read(&[
            (
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://collector.internal:4318",
            ),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=abc"),
        ])
        .unwrap_err();
        assert_eq!(err.setting, "OTEL_EXPORTER_OTLP_HEADERS");
        assert!(!err.to_string().contains("abc"));
        assert!(
            read(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
                ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=abc"),
            ])
            .unwrap()
            .is_some()
        );
    }

    #[test]
    fn bad_endpoints_and_pairs_are_refused_without_their_values() {
        for (setting, value) in [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "ftp://c"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "not a url"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://user:hunter2@c/v1/traces",
            ),
        ] {
            let err = read(&[(setting, value)]).unwrap_err();
            assert_eq!(err.setting, setting);
            assert!(!err.to_string().contains("hunter2"));
        }
        let many = vec!["k=v"; MAX_PAIRS + 1].join(",");
        let err = read(&[
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_RESOURCE_ATTRIBUTES", &many),
        ])
        .unwrap_err();
        assert_eq!(err.setting, "OTEL_RESOURCE_ATTRIBUTES");
        let err = read(&[
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_RESOURCE_ATTRIBUTES", "novalue"),
        ])
        .unwrap_err();
        assert_eq!(err.setting, "OTEL_RESOURCE_ATTRIBUTES");
    }

    #[test]
    fn samplers_follow_the_specification_names() {
        let s = read(&[
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_TRACES_SAMPLER", "traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            s.sampling,
            TraceSampling {
                parent_based: false,
                root: RootSampling::Ratio(0.25)
            }
        );
        let err = read(&[
            ("OTEL_TRACES_EXPORTER", "otlp"),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "2"),
        ])
        .unwrap_err();
        assert_eq!(err.setting, "OTEL_TRACES_SAMPLER_ARG");
    }
}
