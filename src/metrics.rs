//! The Prometheus metrics registry: what is counted and timed, with label
//! sets kept bounded (route templates, catalog tool names, status codes),
//! so that no client can grow the registry by sending new names. Served by
//! `http::metrics` on its own listener (`METRICS_BIND`); pure state here.

use std::time::Duration;

use axum::http::Method;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::outcome::CallOutcome;

/// The label a request without a matched route gets (404s, guard refusals
/// before routing).
pub const UNMATCHED_ROUTE: &str = "unmatched";
/// The label of a tool name the catalog does not define.
pub const UNKNOWN_TOOL: &str = "unknown";

/// The content type of [`Metrics::render`]'s output (OpenMetrics text,
/// which Prometheus scrapes natively).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: String,
    /// `method_label`'s: a fixed label needs no copy per request.
    method: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolCallLabels {
    tool: String,
    /// `CallOutcome::as_str`'s.
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: &'static str,
    schema: i64,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OAuthFailureLabels {
    /// `register`, `authorize`, `token`, `revoke` or `callback`.
    endpoint: &'static str,
    /// An OAuth error code of RFC 6749/7591, or `server_error`.
    error: &'static str,
}

/// The `error` values `aegis_oauth_failures_total` takes; anything else
/// counts as `server_error`.
const OAUTH_ERRORS: [&str; 12] = [
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
    "access_denied",
    "invalid_redirect_uri",
    "invalid_client_metadata",
    "invalid_target",
    "temporarily_unavailable",
    "server_error",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KeyKindLabels {
    key_kind: String,
}

type DurationFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Request latencies: 5 ms to about 20 s.
fn request_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 13))
}

/// Every metric the gateway exports. Cheap to share (`Arc`); recording is
/// lock-free apart from the first use of a label set.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_duration: DurationFamily<RouteLabels>,
    tool_calls: Family<ToolCallLabels, Counter>,
    tool_duration: DurationFamily<ToolLabels>,
    gitea_responses: Family<StatusLabels, Counter>,
    rate_limited: Family<KeyKindLabels, Counter>,
    active_grants: Gauge,
    audit_write: Histogram,
    log_lines_dropped: Gauge,
    audit_writable: Gauge,
    audit_forward_lag_entries: Gauge,
    audit_forward_lag_seconds: Gauge,
    audit_forward_up: Gauge,
    audit_forward_missing: Gauge,
    audit_forwarded: Counter,
    connections_open: Gauge,
    connections_max: Gauge,
    oauth_clients: Gauge,
    oauth_clients_max: Gauge,
    oauth_failures: Family<OAuthFailureLabels, Counter>,
    gitea_up: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    // One table, kept whole: each family's name, help and type read
    // together, in the order `/metrics` lists them.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("aegis");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by route template, method and status",
            requests.clone(),
        );
        let request_duration: DurationFamily<RouteLabels> =
            Family::new_with_constructor(request_histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by route template",
            request_duration.clone(),
        );
        let tool_calls = Family::<ToolCallLabels, Counter>::default();
        registry.register(
            "tool_calls",
            "MCP tool calls, by tool and outcome (ok, error, refused)",
            tool_calls.clone(),
        );
        let tool_duration: DurationFamily<ToolLabels> =
            Family::new_with_constructor(request_histogram);
        registry.register(
            "tool_call_duration_seconds",
            "Time from the write-ahead audit entry to the result, by tool",
            tool_duration.clone(),
        );
        let gitea_responses = Family::<StatusLabels, Counter>::default();
        registry.register(
            "gitea_responses",
            "Gitea's answers to tool calls, by HTTP status",
            gitea_responses.clone(),
        );
        let rate_limited = Family::<KeyKindLabels, Counter>::default();
        registry.register(
            "rate_limited",
            "Requests refused with 429, by the key that was over its limit (ip, token)",
            rate_limited.clone(),
        );
        let active_grants = Gauge::default();
        registry.register(
            "active_grants",
            "OAuth grants that are activated and not revoked (read from the store at scrape time)",
            active_grants.clone(),
        );
        let audit_writable = Gauge::default();
        audit_writable.set(1);
        registry.register(
            "audit_writable",
            "1 while the audit log takes entries; 0 while it cannot (a full disk): every tool call is then refused",
            audit_writable.clone(),
        );
        let log_lines_dropped = Gauge::default();
        registry.register(
            "log_lines_dropped",
            "Log lines stderr could not take since start (a full disk under the log file, a closed pipe); requests go on",
            log_lines_dropped.clone(),
        );
        let audit_forward_lag_entries = Gauge::default();
        registry.register(
            "audit_forward_lag_entries",
            "Audit entries written and not yet taken by the sink (AUDIT_FORWARD_URL)",
            audit_forward_lag_entries.clone(),
        );
        let audit_forward_lag_seconds = Gauge::default();
        registry.register(
            "audit_forward_lag_seconds",
            "How long the oldest entry not yet taken by the sink has waited",
            audit_forward_lag_seconds.clone(),
        );
        let audit_forward_up = Gauge::default();
        registry.register(
            "audit_forward_up",
            "1 while the audit sink takes entries; 0 while it does not (entries wait in the local log)",
            audit_forward_up.clone(),
        );
        let audit_forward_missing = Gauge::default();
        registry.register(
            "audit_forward_missing_entries",
            "Audit entries the forwarded copy will never have: numbers the log's sequence skipped (a file dropped by AUDIT_KEEP_FILES before it was forwarded, a hole in the log)",
            audit_forward_missing.clone(),
        );
        let audit_forwarded = Counter::default();
        registry.register(
            "audit_forwarded_entries",
            "Audit entries the sink has taken since start",
            audit_forwarded.clone(),
        );
        // 0.5 ms to about 8 s: fsync-bound, with group commit.
        let audit_write = Histogram::new(exponential_buckets(0.0005, 2.0, 15));
        registry.register(
            "audit_write_duration_seconds",
            "Time for an audit entry to be written and fsynced, as its caller waits",
            audit_write.clone(),
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str| {
            let gauge = Gauge::default();
            registry.register(name, help, gauge.clone());
            gauge
        };
        let connections_open = gauge(
            &mut registry,
            "connections_open",
            "Client connections open on the public listener",
        );
        let connections_max = gauge(
            &mut registry,
            "connections_max",
            "MAX_CONNECTIONS in force (lowered to fit the descriptor limit)",
        );
        let oauth_clients = gauge(
            &mut registry,
            "oauth_clients",
            "Registered OAuth clients (read from the store at scrape time)",
        );
        let oauth_clients_max = gauge(
            &mut registry,
            "oauth_clients_max",
            "OAUTH_MAX_CLIENTS: registered clients the store holds at most",
        );
        let oauth_failures = Family::<OAuthFailureLabels, Counter>::default();
        registry.register(
            "oauth_failures",
            "OAuth requests refused, by endpoint and OAuth error code",
            oauth_failures.clone(),
        );
        let gitea_up = gauge(
            &mut registry,
            "gitea_up",
            "1 while Gitea answered the latest tool call or health probe; 0 after it could not be reached",
        );
        gitea_up.set(1);
        let build_info = Family::<BuildLabels, Gauge>::default();
        registry.register(
            "build_info",
            "Always 1: the build (version and commit) and the store schema level it carries; a set of replicas with more than one series is mixed",
            build_info.clone(),
        );
        build_info
            .get_or_create(&BuildLabels {
                version: crate::build_info::VERSION,
                schema: crate::store::schema::binary_level().0,
            })
            .set(1);
        Self {
            registry,
            requests,
            request_duration,
            tool_calls,
            tool_duration,
            gitea_responses,
            rate_limited,
            active_grants,
            audit_write,
            log_lines_dropped,
            audit_writable,
            audit_forward_lag_entries,
            audit_forward_lag_seconds,
            audit_forward_up,
            audit_forward_missing,
            audit_forwarded,
            connections_open,
            connections_max,
            oauth_clients,
            oauth_clients_max,
            oauth_failures,
            gitea_up,
        }
    }

    /// The gauge the listener counts its open connections into.
    pub fn connections_open(&self) -> Gauge {
        self.connections_open.clone()
    }

    pub fn set_connections_max(&self, max: usize) {
        self.connections_max
            .set(i64::try_from(max).unwrap_or(i64::MAX));
    }

    /// Registered clients, and the cap.
    pub fn set_oauth_clients(&self, count: u64, max: u64) {
        let gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        self.oauth_clients.set(gauge(count));
        self.oauth_clients_max.set(gauge(max));
    }

    /// One OAuth request refused at `endpoint` (`register`, `authorize`,
    /// `token`, `revoke`, `callback`) with `error`.
    pub fn count_oauth_failure(&self, endpoint: &'static str, error: &str) {
        let error = OAUTH_ERRORS
            .iter()
            .find(|known| **known == error)
            .copied()
            .unwrap_or("server_error");
        self.oauth_failures
            .get_or_create(&OAuthFailureLabels { endpoint, error })
            .inc();
    }

    /// Whether Gitea answered (a health probe, or a call that reached it).
    pub fn set_gitea_up(&self, up: bool) {
        self.gitea_up.set(i64::from(up));
    }

    /// One answered HTTP request. `route` is a route template or
    /// [`UNMATCHED_ROUTE`], never a raw path.
    pub fn observe_request(&self, route: &str, method: &Method, status: u16, took: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                route: route.to_owned(),
                method: method_label(method),
                status,
            })
            .inc();
        self.request_duration
            .get_or_create(&RouteLabels {
                route: route.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    /// One tool call. `tool` must be a catalog name or [`UNKNOWN_TOOL`];
    /// `gitea_status` is Gitea's status when Gitea answered.
    pub fn observe_tool_call(
        &self,
        tool: &str,
        outcome: CallOutcome,
        gitea_status: Option<u16>,
        took: Duration,
    ) {
        self.tool_calls
            .get_or_create(&ToolCallLabels {
                tool: tool.to_owned(),
                outcome: outcome.as_str(),
            })
            .inc();
        if outcome != CallOutcome::Refused {
            self.tool_duration
                .get_or_create(&ToolLabels {
                    tool: tool.to_owned(),
                })
                .observe(took.as_secs_f64());
        }
        if let Some(status) = gitea_status {
            self.gitea_responses
                .get_or_create(&StatusLabels { status })
                .inc();
        }
    }

    /// One 429; `key_kind` is `ip` or `token`.
    pub fn observe_rate_limited(&self, key_kind: &str) {
        self.rate_limited
            .get_or_create(&KeyKindLabels {
                key_kind: key_kind.to_owned(),
            })
            .inc();
    }

    /// One audit write as its caller waited for it.
    pub fn observe_audit_write(&self, took: Duration) {
        self.audit_write.observe(took.as_secs_f64());
    }

    pub fn set_active_grants(&self, count: u64) {
        self.active_grants
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// How far behind the audit sink is: whether it took the last batch,
    /// how many entries wait, and for how long the oldest has.
    pub fn set_audit_forward(
        &self,
        sink_up: bool,
        lag_entries: u64,
        lag_seconds: u64,
        missing_entries: u64,
    ) {
        let gauge = |value: u64| i64::try_from(value).unwrap_or(i64::MAX);
        self.audit_forward_lag_entries.set(gauge(lag_entries));
        self.audit_forward_lag_seconds.set(gauge(lag_seconds));
        self.audit_forward_up.set(i64::from(sink_up));
        self.audit_forward_missing.set(gauge(missing_entries));
    }

    /// Entries the audit sink took.
    pub fn count_audit_forwarded(&self, entries: u64) {
        self.audit_forwarded.inc_by(entries);
    }

    /// Whether the audit log took its last entry.
    pub fn set_audit_writable(&self, writable: bool) {
        self.audit_writable.set(i64::from(writable));
    }

    /// The exposition (OpenMetrics text, [`CONTENT_TYPE`]).
    pub fn render(&self) -> String {
        self.log_lines_dropped
            .set(i64::try_from(crate::logging::dropped_lines()).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// Methods outside the usual set share one label, so a client cannot add
/// label values by inventing methods.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_value(text: &str, prefix: &str) -> Option<f64> {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }

    #[test]
    fn requests_are_counted_by_route_method_and_status() {
        let m = Metrics::new();
        m.observe_request("/mcp", &Method::POST, 200, Duration::from_millis(12));
        m.observe_request("/mcp", &Method::POST, 200, Duration::from_millis(30));
        m.observe_request("/mcp", &Method::POST, 401, Duration::from_millis(1));
        let text = m.render();
        assert_eq!(
            line_value(
                &text,
                r#"aegis_http_requests_total{route="/mcp",method="POST",status="200"}"#
            ),
            Some(2.0)
        );
        assert_eq!(
            line_value(
                &text,
                r#"aegis_http_request_duration_seconds_count{route="/mcp"}"#
            ),
            Some(3.0)
        );
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn invented_methods_share_one_label() {
        let m = Metrics::new();
        let odd = Method::from_bytes(b"BREW").unwrap();
        m.observe_request(UNMATCHED_ROUTE, &odd, 405, Duration::ZERO);
        let text = m.render();
        assert!(text.contains(r#"method="other""#), "{text}");
        assert!(!text.contains("BREW"));
    }

    #[test]
    fn tool_calls_count_outcomes_and_gitea_statuses() {
        let m = Metrics::new();
        let tool = "gitea_issue_list_issues";
        m.observe_tool_call(tool, CallOutcome::Ok, Some(200), Duration::from_millis(40));
        m.observe_tool_call(
            tool,
            CallOutcome::Error,
            Some(404),
            Duration::from_millis(20),
        );
        m.observe_tool_call(tool, CallOutcome::Refused, None, Duration::ZERO);
        let text = m.render();
        for (prefix, want) in [
            (
                r#"aegis_tool_calls_total{tool="gitea_issue_list_issues",outcome="ok"}"#,
                1.0,
            ),
            (
                r#"aegis_tool_calls_total{tool="gitea_issue_list_issues",outcome="refused"}"#,
                1.0,
            ),
            (r#"aegis_gitea_responses_total{status="404"}"#, 1.0),
            (
                r#"aegis_tool_call_duration_seconds_count{tool="gitea_issue_list_issues"}"#,
                2.0,
            ),
        ] {
            assert_eq!(line_value(&text, prefix), Some(want), "{prefix}\n{text}");
        }
    }

    #[test]
    fn gauges_and_the_audit_histogram_are_exported() {
        let m = Metrics::new();
        m.set_active_grants(7);
        m.observe_audit_write(Duration::from_millis(3));
        m.observe_rate_limited("token");
        let text = m.render();
        assert_eq!(line_value(&text, "aegis_active_grants "), Some(7.0));
        assert_eq!(
            line_value(&text, "aegis_audit_write_duration_seconds_count"),
            Some(1.0)
        );
        assert_eq!(
            line_value(&text, r#"aegis_rate_limited_total{key_kind="token"}"#),
            Some(1.0)
        );
    }
}
