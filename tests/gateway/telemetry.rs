//! Traces of a tool call, in process: the spans one `tools/call` makes and
//! their parents (the caller's `traceparent` header, or its `_meta`), the
//! trace context sent on to Gitea, and no argument value, token or header
//! in any span. The same spans over OTLP to a real OpenTelemetry Collector:
//! `tests/gateway/otlp_collector.rs`.
//!
//! The spans go to one subscriber for the whole test binary (a
//! thread-local one per test races with the callsite cache of `tracing`
//! when tests run in parallel); each test finds its own by trace id.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use aegis_gitea_mcp::telemetry;
use opentelemetry::trace::{SpanId, SpanKind, TraceId, TracerProvider as _};
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

use crate::support::{ADMIN_TOKEN, BEARER, Gateway, mcp_post};

const CALLER_SPAN: &str = "00f067aa0ba902b7";
const META_SPAN: &str = "b7ad6b7169203331";
/// An argument value no span may carry.
const PLANTED_REPO: &str = "planted-arg-7f3a9c51";

/// Keeps every finished span. Written here rather than with the SDK's
/// `testing` feature, which would compile its metrics and logs too.
#[derive(Debug, Clone, Default)]
struct Collected(Arc<Mutex<Vec<SpanData>>>);

impl SpanExporter for Collected {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

/// The binary's span collector, installed on first use.
fn collected() -> &'static Collected {
    static COLLECTED: OnceLock<(Collected, SdkTracerProvider)> = OnceLock::new();
    &COLLECTED
        .get_or_init(|| {
            let collected = Collected::default();
            let provider = SdkTracerProvider::builder()
                .with_simple_exporter(collected.clone())
                .build();
            // A log layer beside the exporter, as `serve` has: it enables
            // the spans of other crates (rmcp's own, around the tool call)
            // that the exporter does not see.
            let log = tracing_subscriber::fmt::layer().with_writer(std::io::sink);
            let subscriber = tracing_subscriber::registry()
                .with(telemetry::layer(provider.tracer("test")))
                .with(log);
            tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
            (collected, provider)
        })
        .0
}

/// The spans of one trace, once `name` has ended in it (spans end a
/// moment after the answer: the HTTP span when rmcp's task lets it go).
async fn trace_with(trace: TraceId, name: &str) -> Vec<SpanData> {
    for _ in 0..200 {
        let spans: Vec<SpanData> = collected()
            .0
            .lock()
            .unwrap()
            .iter()
            .filter(|span| span.span_context.trace_id() == trace)
            .cloned()
            .collect();
        if spans.iter().any(|span| span.name == name) {
            return spans;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no span {name} in trace {trace}");
}

/// A trace id of this test's own.
fn trace_id(hex: &str) -> TraceId {
    TraceId::from_hex(hex).unwrap()
}

fn list_issues_body(meta: Option<Value>) -> String {
    let mut params = json!({
        "name": "gitea_issue_list_issues",
        "arguments": {"owner": "alice", "repo": PLANTED_REPO},
    });
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string()
}

async fn call_with(gateway: &Gateway, traceparent: Option<&str>, meta: Option<Value>) {
    let http = reqwest::Client::new();
    let mut request =
        mcp_post(&http, gateway.mcp_url(), list_issues_body(meta)).bearer_auth(BEARER);
    if let Some(traceparent) = traceparent {
        request = request
            .header("traceparent", traceparent)
            .header("tracestate", "caller=abc");
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["result"]["isError"], json!(false), "{body}");
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    spans
        .iter()
        .find(|span| span.name == name)
        .unwrap_or_else(|| panic!("no span {name} in {:?}", names(spans)))
}

fn names(spans: &[SpanData]) -> Vec<String> {
    spans.iter().map(|span| span.name.to_string()).collect()
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

fn id(span: &SpanData) -> SpanId {
    span.span_context.span_id()
}

/// A gateway of its own, called once with `trace`'s `traceparent` header
/// (and `meta` as the call's `_meta`).
async fn call_in_trace(trace: TraceId, meta: Option<Value>) -> Gateway {
    collected();
    let gateway = Gateway::start(&[]).await;
    call_with(
        &gateway,
        Some(&format!("00-{trace}-{CALLER_SPAN}-01")),
        meta,
    )
    .await;
    gateway
}

const CALL: &str = "tools/call gitea_issue_list_issues";
const GITEA_REQUEST: &str = "GET /repos/{owner}/{repo}/issues";

#[tokio::test]
async fn a_tool_call_is_one_trace_under_the_callers_span_header() {
    let trace = trace_id("4bf92f3577b34da6a3ce929d0e0e4736");
    call_in_trace(trace, None).await;
    let spans = trace_with(trace, "POST /mcp/all").await;
    let http = named(&spans, "POST /mcp/all");
    assert_eq!(http.span_kind, SpanKind::Server);
    assert_eq!(http.parent_span_id.to_string(), CALLER_SPAN);
    assert!(http.parent_span_is_remote);
    assert_eq!(attribute(http, "http.route").as_deref(), Some("/mcp/all"));
    assert_eq!(
        attribute(http, "http.response.status_code").as_deref(),
        Some("200")
    );
    for stage in ["authenticate", "intake"] {
        assert_eq!(named(&spans, stage).parent_span_id, id(http), "{stage}");
    }
    assert_eq!(
        attribute(named(&spans, "authenticate"), "aegis.auth.kind").as_deref(),
        Some("bearer")
    );
    let call = named(&spans, CALL);
    assert_eq!(call.span_kind, SpanKind::Server);
    assert_eq!(call.parent_span_id, id(http));
    assert_eq!(
        attribute(call, "gen_ai.tool.name").as_deref(),
        Some("gitea_issue_list_issues")
    );
    assert_eq!(attribute(call, "aegis.outcome").as_deref(), Some("ok"));
    for stage in ["admit", "confirmation", "hygiene", GITEA_REQUEST] {
        assert_eq!(named(&spans, stage).parent_span_id, id(call), "{stage}");
    }
    let audits: Vec<_> = spans.iter().filter(|s| s.name == "audit").collect();
    let mut events: Vec<_> = audits
        .iter()
        .map(|s| attribute(s, "aegis.audit.event").unwrap())
        .collect();
    events.sort();
    assert_eq!(events, ["tool_call_finished", "tool_call_started"]);
    assert!(audits.iter().all(|s| s.parent_span_id == id(call)));
    let gitea = named(&spans, GITEA_REQUEST);
    assert_eq!(gitea.span_kind, SpanKind::Client);
    assert_eq!(
        attribute(gitea, "url.template").as_deref(),
        Some("/repos/{owner}/{repo}/issues")
    );
    assert_eq!(
        attribute(gitea, "http.response.status_code").as_deref(),
        Some("200")
    );
}

#[tokio::test]
async fn gitea_receives_the_trace_context_of_its_request_span() {
    let trace = trace_id("5bf92f3577b34da6a3ce929d0e0e4736");
    let gateway = call_in_trace(trace, None).await;
    let spans = trace_with(trace, GITEA_REQUEST).await;
    let gitea = named(&spans, GITEA_REQUEST);
    let sent = gateway
        .fake
        .tool_requests()
        .into_iter()
        .find(|r| r.path().ends_with("/issues"))
        .unwrap();
    let traceparent = sent.headers["traceparent"].to_str().unwrap();
    assert_eq!(traceparent, format!("00-{trace}-{}-01", id(gitea)));
    assert_eq!(sent.headers["tracestate"].to_str().unwrap(), "caller=abc");
}

#[tokio::test]
async fn the_trace_context_in_meta_is_the_parent_of_the_call() {
    let header_trace = trace_id("6bf92f3577b34da6a3ce929d0e0e4736");
    let meta_trace = trace_id("0af7651916cd43dd8448eb211c80319c");
    let meta = json!({"traceparent": format!("00-{meta_trace}-{META_SPAN}-01")});
    call_in_trace(header_trace, Some(meta)).await;
    let spans = trace_with(meta_trace, CALL).await;
    let call = named(&spans, CALL);
    assert_eq!(call.parent_span_id.to_string(), META_SPAN);
    // The stages of the call follow it into the caller's trace.
    assert_eq!(named(&spans, GITEA_REQUEST).parent_span_id, id(call));
    // The HTTP request stays in the trace its header named.
    let http = trace_with(header_trace, "POST /mcp/all").await;
    assert!(http.iter().all(|span| span.name != CALL));
}

#[tokio::test]
async fn a_malformed_traceparent_starts_a_trace_of_our_own() {
    collected();
    let gateway = Gateway::start(&[]).await;
    call_with(
        &gateway,
        Some("00-zz-not-a-trace-01"),
        Some(json!({"traceparent": 5, "tracestate": "x=y"})),
    )
    .await;
    let port = gateway.fake.url.rsplit(':').next().unwrap().to_owned();
    // The issue listing sent to this test's own fake Gitea.
    let mut found = None;
    for _ in 0..200 {
        found = collected().0.lock().unwrap().iter().find_map(|span| {
            let address = attribute(span, "server.address")?;
            (span.name == GITEA_REQUEST && address.ends_with(&format!(":{port}")))
                .then(|| span.span_context.trace_id())
        });
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let trace = found.expect("the Gitea request's span");
    let spans = trace_with(trace, "POST /mcp/all").await;
    let http = named(&spans, "POST /mcp/all");
    assert_eq!(http.parent_span_id, SpanId::INVALID);
    assert_eq!(named(&spans, CALL).parent_span_id, id(http));
}

#[tokio::test]
async fn no_span_carries_an_argument_value_a_token_or_a_header() {
    let trace = trace_id("7bf92f3577b34da6a3ce929d0e0e4736");
    let meta = json!({"planted": "planted-meta-a83b", "progressToken": "planted-progress-19c2"});
    call_in_trace(trace, Some(meta)).await;
    let spans = trace_with(trace, "POST /mcp/all").await;
    assert!(spans.len() >= 10, "{:?}", names(&spans));
    let everything: String = spans
        .iter()
        .map(|span| format!("{span:?}"))
        .collect::<Vec<_>>()
        .join("\n");
    for planted in [
        PLANTED_REPO,
        BEARER,
        ADMIN_TOKEN,
        "planted-meta-a83b",
        "planted-progress-19c2",
        "alice",
    ] {
        assert!(!everything.contains(planted), "{planted} in a span");
    }
}

/// Issue 45, F8: the raw tool's path is an argument; its first segment was
/// the Gitea span's name and `url.template`. A path that reaches an
/// operation names that operation's template; one that reaches none names
/// `{path}`.
#[tokio::test]
async fn the_raw_tools_spans_name_a_route_template_never_a_segment_as_sent() {
    collected();
    let gateway = Gateway::start(&[]).await;
    let http = reqwest::Client::new();
    let cases = [
        (
            "8bf92f3577b34da6a3ce929d0e0e4736",
            format!("/repos/alice/{PLANTED_REPO}/issues"),
            "GET /repos/{owner}/{repo}/issues",
        ),
        (
            "9bf92f3577b34da6a3ce929d0e0e4736",
            format!("/{PLANTED_REPO}/alice"),
            "GET /{path}",
        ),
    ];
    for (trace, path, span_name) in cases {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "gitea_api_request",
            "arguments": {"method": "GET", "path": path},
        }});
        let response = mcp_post(&http, gateway.mcp_url(), body.to_string())
            .bearer_auth(BEARER)
            .header("traceparent", format!("00-{trace}-{CALLER_SPAN}-01"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let spans = trace_with(trace_id(trace), span_name).await;
        let everything = format!("{spans:?}");
        assert!(!everything.contains(PLANTED_REPO), "{path} in a span");
        let template = span_name.trim_start_matches("GET ");
        assert_eq!(
            attribute(named(&spans, span_name), "url.template").as_deref(),
            Some(template)
        );
    }
}
