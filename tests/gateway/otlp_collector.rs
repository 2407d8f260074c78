//! Traces through a real OpenTelemetry Collector: the gateway binary,
//! configured only with the standard `OTEL_*` variables, exports OTLP/HTTP
//! protobuf to a Collector built from the Go module proxy (its OTLP
//! receiver and debug exporter, `tests/otlp/`), and the spans the Collector
//! prints are the call's, in the caller's trace, without a secret.
//!
//! Ignored by default: it needs the Collector's binary in `OTELCOL_BIN`
//! (`tests/otlp/build-collector.sh` prints its path). `.ci/run` runs
//! `OTELCOL_BIN=… cargo test --test gateway otlp_collector -- --ignored`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::gateway_process::{ServeProcess, free_port, wait_ready};
use crate::support::{self, ADMIN_TOKEN, BEARER, FakeGitea, mcp_post};

const KEY: &str = "otlp-audit-key-0123456789abcdef-01234";
const TRACE_ID: &str = "9af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "00f067aa0ba902b7";
const META_TRACE_ID: &str = "1bf92f3577b34da6a3ce929d0e0e4736";
const META_SPAN: &str = "b7ad6b7169203331";
const PLANTED_REPO: &str = "planted-arg-51c0de77";
const PLANTED_HEADER: &str = "planted-otlp-header-3e1b9d";

/// One span as the debug exporter prints it.
#[derive(Debug, Default, Clone)]
struct PrintedSpan {
    trace_id: String,
    parent_id: String,
    id: String,
    name: String,
    kind: String,
    attributes: Vec<(String, String)>,
}

impl PrintedSpan {
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The spans in the debug exporter's `detailed` output: a `Span #n` line,
/// `Field : value` lines, then `-> key: Type(value)` attribute lines.
fn printed_spans(output: &str) -> Vec<PrintedSpan> {
    let mut spans: Vec<PrintedSpan> = Vec::new();
    for line in output.lines() {
        let line = line.trim();
        if line.starts_with("Span #") {
            spans.push(PrintedSpan::default());
            continue;
        }
        let Some(span) = spans.last_mut() else {
            continue;
        };
        if let Some(attribute) = line.strip_prefix("-> ") {
            if let Some((key, typed)) = attribute.split_once(": ") {
                let value = typed
                    .split_once('(')
                    .map_or(typed, |(_, rest)| rest.strip_suffix(')').unwrap_or(rest));
                span.attributes.push((key.to_owned(), value.to_owned()));
            }
            continue;
        }
        let Some((field, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().to_owned();
        match field.trim() {
            "Trace ID" => span.trace_id = value,
            "Parent ID" => span.parent_id = value,
            "ID" => span.id = value,
            "Name" => span.name = value,
            "Kind" => span.kind = value,
            _ => {}
        }
    }
    spans
}

/// The Collector, on a free loopback port, printing to a file.
struct Collector {
    child: Child,
    output: std::path::PathBuf,
    port: u16,
}

impl Collector {
    async fn start(dir: &Path) -> Self {
        let bin = std::env::var("OTELCOL_BIN")
            .expect("OTELCOL_BIN names the Collector built by tests/otlp/build-collector.sh");
        let port = free_port();
        let output = dir.join("collector.out");
        let config = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otlp/collector.yaml");
        let child = Command::new(bin)
            .arg("--config")
            .arg(config)
            .env("OTLP_HTTP_ENDPOINT", format!("127.0.0.1:{port}"))
            .stdout(Stdio::from(std::fs::File::create(&output).unwrap()))
            .stderr(Stdio::from(
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&output)
                    .unwrap(),
            ))
            .spawn()
            .expect("the Collector starts");
        let collector = Self {
            child,
            output,
            port,
        };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return collector;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the Collector did not listen: {}", collector.printed());
    }

    fn printed(&self) -> String {
        std::fs::read_to_string(&self.output).unwrap_or_default()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `SIGTERM`, as an orchestrator stops it: the gateway sends its last
/// spans before it exits.
fn stop(mut gateway: Child) {
    let pid = rustix::process::Pid::from_child(&gateway);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    gateway.wait().unwrap();
}

async fn list_issues(port: u16, meta: Option<serde_json::Value>) {
    let mut params = json!({
        "name": "gitea_issue_list_issues",
        "arguments": {"owner": "alice", "repo": PLANTED_REPO},
    });
    if let Some(meta) = meta {
        params["_meta"] = meta;
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
    let response = mcp_post(
        &reqwest::Client::new(),
        format!("http://127.0.0.1:{port}/mcp/all"),
        body.to_string(),
    )
    .bearer_auth(BEARER)
    .header("traceparent", format!("00-{TRACE_ID}-{CALLER_SPAN}-01"))
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value = response.json().await.unwrap();
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the OpenTelemetry Collector in OTELCOL_BIN (tests/otlp/build-collector.sh): run with --ignored; .ci/run does"]
async fn a_real_collector_receives_the_call_in_the_callers_trace_and_no_secret() {
    aegis_gitea_mcp::tls::install_crypto_provider();
    let fake = FakeGitea::start().await;
    let data = support::scratch_dir();
    std::fs::create_dir_all(&data).unwrap();
    let collector = Collector::start(&data).await;
    let endpoint = format!("http://127.0.0.1:{}", collector.port);
    let headers = format!("x-planted={PLANTED_HEADER}");
    let extra = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_HEADERS", headers.as_str()),
        ("OTEL_SERVICE_NAME", "gateway-under-test"),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        // The default level: its log layer enables other crates' spans
        // around the call, which once cut the call off the caller's trace.
        ("RUST_LOG", "info"),
    ];
    let port = free_port();
    let mut serve = ServeProcess::new(&fake, &data, port, KEY);
    serve.extra = &extra;
    let gateway = serve.spawn();
    wait_ready(port).await;
    list_issues(port, None).await;
    list_issues(
        port,
        Some(json!({
            "traceparent": format!("00-{META_TRACE_ID}-{META_SPAN}-01"),
            "planted": "planted-meta-0b7e",
        })),
    )
    .await;
    stop(gateway);

    let mut printed = String::new();
    for _ in 0..100 {
        printed = collector.printed();
        let spans = printed_spans(&printed);
        if spans
            .iter()
            .filter(|s| s.name.starts_with("tools/call"))
            .count()
            >= 2
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let spans = printed_spans(&printed);
    assert!(
        printed.contains("service.name: Str(gateway-under-test)"),
        "{printed}"
    );

    // The first call: one trace under the caller's span from the header.
    let first: Vec<&PrintedSpan> = spans.iter().filter(|s| s.trace_id == TRACE_ID).collect();
    let http = first
        .iter()
        .find(|s| s.name == "POST /mcp/all" && s.parent_id == CALLER_SPAN)
        .unwrap_or_else(|| panic!("the HTTP span under the caller's: {printed}"));
    assert_eq!(http.kind, "Server");
    let call = first
        .iter()
        .find(|s| s.name == "tools/call gitea_issue_list_issues")
        .unwrap_or_else(|| panic!("the call's span: {printed}"));
    assert_eq!(call.parent_id, http.id);
    assert_eq!(
        call.attribute("gen_ai.tool.name"),
        Some("gitea_issue_list_issues")
    );
    let gitea = first
        .iter()
        .find(|s| s.name == "GET /repos/{owner}/{repo}/issues")
        .unwrap_or_else(|| panic!("the Gitea request's span: {printed}"));
    assert_eq!(gitea.parent_id, call.id);
    assert_eq!(gitea.kind, "Client");
    for stage in ["authenticate", "intake"] {
        assert!(
            first
                .iter()
                .any(|s| s.name == stage && s.parent_id == http.id),
            "{stage}: {printed}"
        );
    }
    for stage in ["admit", "confirmation", "audit", "hygiene"] {
        assert!(
            first
                .iter()
                .any(|s| s.name == stage && s.parent_id == call.id),
            "{stage}: {printed}"
        );
    }

    // The second call: its span follows the trace context in `_meta`.
    let second = spans
        .iter()
        .find(|s| s.trace_id == META_TRACE_ID && s.name.starts_with("tools/call"))
        .unwrap_or_else(|| panic!("the call under _meta's span: {printed}"));
    assert_eq!(second.parent_id, META_SPAN);

    // Gitea got the trace context of its request span.
    let sent = fake
        .tool_requests()
        .into_iter()
        .find(|r| r.path().ends_with("/issues"))
        .unwrap();
    assert_eq!(
        sent.headers["traceparent"].to_str().unwrap(),
        format!("00-{TRACE_ID}-{}-01", gitea.id)
    );

    // Nothing planted reached the Collector.
    for planted in [
        PLANTED_REPO,
        PLANTED_HEADER,
        BEARER,
        ADMIN_TOKEN,
        KEY,
        "planted-meta-0b7e",
        "alice",
    ] {
        assert!(
            !printed.contains(planted),
            "{planted} reached the Collector"
        );
    }
}
