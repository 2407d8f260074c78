//! Load harness: the gateway's `tools/call` path against the same upstream
//! route called directly, over real loopback HTTP.
//!
//! Starts, in this process and on 127.0.0.1 only:
//! - a fake Gitea (`support/load_upstream.rs`) answering the issue list of
//!   `acme/widgets` (20 issues, about 62 KB) and of `acme/big-list` (300
//!   issues, about 930 KB, one page), and `GET /api/v1/user`;
//! - the gateway (`App::build` + `http::router`) in front of it, its audit
//!   log on disk (under `target/`), with default settings; and a second
//!   one with the result bounds raised so the big list is never cut.
//!
//! - with `LOAD_FLOOR_BIN`, `floor-rmcp` (`support/floor.rs`) in front of
//!   the same fake Gitea, as a child process.
//!
//! Then, for each scenario (the small list, the big list, the user) and
//! concurrency level, drives `tools/call` (`gitea_issue_list_issues`, or
//! `gitea_user_get_current` for the user) through `POST /mcp` (stateless,
//! no `initialize`), on the user scenario the floor's same tool, and the
//! same upstream route directly with reqwest, and prints calls, calls/s,
//! p50, p99 and the process's CPU time per call (getrusage: client,
//! gateway and upstream together, so the gateway's own cost is the gateway
//! row minus the direct row; the floor row adds the floor's own). Every
//! response is checked (200 with a JSON-RPC `result` that is not an error
//! for the gateway and holds every issue, 200 with every issue directly),
//! with as little parsing as proves it (items are counted, not built), so
//! the client's share of the two rows stays close;
//! the first bad one aborts the run with a non-zero exit.
//! Finally prints the size of a `tools/list` response in full mode, in
//! discover mode and with `TOOLSETS=issue`.
//!
//! No thresholds: it prints figures. Bounded by request count and time.
//!
//! Run: `cargo bench --bench load`
//! Environment overrides:
//! - `LOAD_REQUESTS` — timed requests per scenario (default 2000)
//! - `LOAD_CONCURRENCY` — comma-separated levels (default `1,8,64`)
//! - `LOAD_BIG_ISSUES` — issues in the big list (default 300)
//! - `LOAD_MAX_SECONDS` — time cap per scenario (default 60)
//! - `LOAD_VIEW` — `compact` (the default view) or `full`: the view the
//!   gateway calls ask for
//! - `LOAD_FLOOR_BIN` — the `floor-rmcp` binary (`../shared/perf/floor/`)
//!   for the user scenario's floor row; without it the row is left out
//! - `LOAD_OAUTH` — `1` (the default): the main gateway has OAuth too, and
//!   the user scenario an `oauth` row, the same call with a person's
//!   `agm_` token (`support/load_oauth.rs`); `0`: the bearer only
//! - `LOAD_GATEWAY_SETTINGS` — more settings of the measured gateway,
//!   `NAME=value` separated by spaces (for example OAuth with a
//!   `DATABASE_URL` and high rate limits, to price the shared windows)
//!
//! Client, gateway and fake upstream share one tokio runtime and the same
//! cores, so the figures are relative (gateway vs direct), not absolute.

#[path = "support/bench_kit.rs"]
mod bench_kit;
#[path = "support/floor.rs"]
mod floor;
#[path = "support/gitea_issues.rs"]
mod gitea_issues;
#[path = "support/load_config.rs"]
mod load_config;
#[path = "support/load_drive.rs"]
mod load_drive;
#[path = "support/load_oauth.rs"]
mod load_oauth;
#[path = "support/load_upstream.rs"]
mod load_upstream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use aegis_gitea_mcp::app::App;
use aegis_gitea_mcp::config::{Settings, SettingsSource};
use anyhow::{Context, anyhow, bail, ensure};
use axum::http::header;
use bytes::Bytes;
use floor::Floor;
use load_config::Config;
use load_drive::{drive, ms, process_cpu};
use load_upstream::{BIG_REPO, loopback_listener, spawn_upstream};
use serde::de::IgnoredAny;
use serde_json::{Value, json};

const GITEA_TOKEN: &str = "bench-admin-token-0123456789abcdef";
const AUDIT_KEY: &str = "load-bench-audit-key-0123456789abcdef";
const BEARER: &str = "bench-bearer-token-0123456789abcdef-0123";
const PROTOCOL_VERSION: &str = "2025-11-25";
const TOOL: &str = "gitea_issue_list_issues";
/// The user scenario's tool: the one `floor-rmcp` has too.
const USER_TOOL: &str = "gitea_user_get_current";
const OWNER: &str = "acme";
const REPO: &str = "widgets";
const ISSUES_PER_PAGE: usize = 20;
const TOTAL_ISSUES: u64 = 57;
const WARMUP_REQUESTS: usize = 32;

// ----------------------------------------------------------------- gateway

/// Builds an App against `upstream` with `extra` settings (and, with
/// `oauth`, an authorization server beside the bearer, its store in
/// `data_dir` unless `extra` names a `DATABASE_URL`) and serves its router
/// on a loopback port.
async fn spawn_gateway(
    upstream: SocketAddr,
    data_dir: &std::path::Path,
    extra: &[(&str, &str)],
    oauth: bool,
) -> anyhow::Result<(SocketAddr, Arc<App>)> {
    let (listener, addr) = loopback_listener().await?;
    let mut pairs: Vec<(String, String)> = vec![
        ("GITEA_URL".into(), format!("http://{upstream}")),
        ("GITEA_TOKEN".into(), GITEA_TOKEN.into()),
        ("MCP_BEARER_TOKEN".into(), BEARER.into()),
        ("MCP_HOST".into(), "127.0.0.1".into()),
        ("MCP_PORT".into(), addr.port().to_string()),
        // The benchmark measures the gateway, not its rate limits.
        ("RATE_LIMIT_PER_IP".into(), "0".into()),
        ("RATE_LIMIT_PER_TOKEN".into(), "0".into()),
        // A fresh DATA_DIR per gateway: one audit writer per log.
        ("DATA_DIR".into(), data_dir.display().to_string()),
        ("AUDIT_HMAC_KEY".into(), AUDIT_KEY.into()),
    ];
    if oauth {
        pairs.extend(load_oauth::oauth_settings(&format!("http://{addr}")));
    }
    pairs.retain(|(k, _)| !extra.iter().any(|(name, _)| name == k));
    pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let settings = Settings::from_source(&SettingsSource::from_pairs(pairs))
        .map_err(|e| anyhow!("settings: {e}"))?;
    let app = App::build(settings)
        .await
        .map_err(|e| anyhow!("App::build: {e}"))?;
    let router = aegis_gitea_mcp::http::router(app.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        {
            eprintln!("gateway stopped: {e}");
        }
    });
    Ok((addr, app))
}

// ------------------------------------------------------------------ client

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Gateway,
    /// The same gateway, called with a person's `agm_` token (`LOAD_OAUTH`).
    OAuth,
    /// `floor-rmcp` (`LOAD_FLOOR_BIN`), on the user scenario.
    Floor,
    Direct,
}

impl Target {
    fn label(self) -> &'static str {
        match self {
            Self::Gateway => "gateway",
            Self::OAuth => "oauth",
            Self::Floor => "floor",
            Self::Direct => "direct",
        }
    }
}

/// One measured call: a gateway's `/mcp` and the upstream route it runs.
struct Scenario {
    label: &'static str,
    tool: &'static str,
    mcp_url: String,
    /// `floor-rmcp`'s `/mcp`, on the scenario that has a floor row.
    floor_url: Option<String>,
    direct_url: String,
    repo: &'static str,
    /// The issues a list holds; `None` for the user scenario's one object.
    issues: Option<usize>,
    /// The tool's arguments: the repository, and the view when not the default.
    arguments: Value,
}

struct Endpoints {
    client: reqwest::Client,
    floor: Option<Floor>,
    /// A person's access token on the main gateway, for the OAuth rows.
    oauth_token: Option<String>,
}

impl Endpoints {
    /// The CPU time a row counts: this process's (client, gateway,
    /// upstream), and the floor's on its own row.
    fn cpu(&self, target: Target) -> anyhow::Result<Duration> {
        let floor = match (target, &self.floor) {
            (Target::Floor, Some(floor)) => floor.cpu()?,
            _ => Duration::ZERO,
        };
        Ok(process_cpu() + floor)
    }

    async fn mcp(
        &self,
        url: &str,
        id: usize,
        method: &str,
        params: Value,
    ) -> anyhow::Result<Bytes> {
        self.mcp_as(BEARER, url, id, method, params).await
    }

    /// [`Endpoints::mcp`] with `token` as the bearer.
    async fn mcp_as(
        &self,
        token: &str,
        url: &str,
        id: usize,
        method: &str,
        params: Value,
    ) -> anyhow::Result<Bytes> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self
            .client
            .post(url)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header("MCP-Protocol-Version", PROTOCOL_VERSION)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(serde_json::to_vec(&body)?)
            .send()
            .await?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let bytes = response.bytes().await?;
        ensure!(
            status.is_success(),
            "{method} #{id}: HTTP {status}: {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(500)])
        );
        ensure!(
            content_type.starts_with("application/json"),
            "{method} #{id}: expected a JSON response (stateless, JSON mode), got `{content_type}`"
        );
        Ok(bytes)
    }

    /// One `tools/call` through the gateway; returns the tool result.
    async fn gateway_call(&self, scenario: &Scenario, id: usize) -> anyhow::Result<Value> {
        let args = json!({"name": scenario.tool, "arguments": scenario.arguments});
        let bytes = self.mcp(&scenario.mcp_url, id, "tools/call", args).await?;
        let mut message: Value = serde_json::from_slice(&bytes)
            .with_context(|| format!("tools/call #{id}: the response is not JSON"))?;
        if let Some(error) = message.get("error") {
            bail!("tools/call #{id}: JSON-RPC error {error}");
        }
        let result = message
            .get_mut("result")
            .map(Value::take)
            .ok_or_else(|| anyhow!("tools/call #{id}: no `result` in {message}"))?;
        if result.get("isError").and_then(Value::as_bool) == Some(true) {
            bail!("tools/call #{id}: the tool failed: {result}");
        }
        Ok(result)
    }

    /// One timed `tools/call` to `url` (a gateway, or the floor), checked
    /// with the least parsing that proves it (the same the direct call
    /// does): the JSON-RPC answer, then, for the big list, the items of
    /// `data`, skipped rather than built.
    async fn timed_mcp_call(
        &self,
        scenario: &Scenario,
        url: &str,
        token: &str,
        id: usize,
    ) -> anyhow::Result<()> {
        #[derive(serde::Deserialize)]
        struct Answer {
            result: Option<ToolResult>,
        }
        #[derive(serde::Deserialize)]
        struct ToolResult {
            #[serde(rename = "isError", default)]
            is_error: bool,
            content: Vec<TextItem>,
        }
        #[derive(serde::Deserialize)]
        struct TextItem {
            text: String,
        }
        #[derive(serde::Deserialize)]
        struct Envelope {
            data: Vec<IgnoredAny>,
        }
        let args = json!({"name": scenario.tool, "arguments": scenario.arguments});
        let bytes = self.mcp_as(token, url, id, "tools/call", args).await?;
        let answer: Answer = serde_json::from_slice(&bytes)
            .with_context(|| format!("tools/call #{id}: not a JSON-RPC tool result"))?;
        let result = answer
            .result
            .ok_or_else(|| anyhow!("tools/call #{id}: no `result`"))?;
        ensure!(!result.is_error, "tools/call #{id}: the tool failed");
        if scenario.repo == BIG_REPO {
            let text = &result
                .content
                .first()
                .ok_or_else(|| anyhow!("tools/call #{id}: no content"))?
                .text;
            let items = serde_json::from_str::<Envelope>(text)?.data.len();
            // Every issue came through: nothing was cut.
            ensure!(
                Some(items) == scenario.issues,
                "#{id}: {items} issues came through"
            );
        }
        Ok(())
    }

    /// One direct GET of the upstream route, its issues counted (or the
    /// user's login found).
    async fn direct_call(&self, scenario: &Scenario, id: usize) -> anyhow::Result<()> {
        let response = self
            .client
            .get(&scenario.direct_url)
            .header(header::AUTHORIZATION, format!("token {GITEA_TOKEN}"))
            .header(header::ACCEPT, "application/json")
            .send()
            .await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        ensure!(
            status == reqwest::StatusCode::OK,
            "direct #{id}: HTTP {status}"
        );
        let Some(expected) = scenario.issues else {
            #[derive(serde::Deserialize)]
            struct User {
                login: String,
            }
            let user: User = serde_json::from_slice(&bytes)
                .with_context(|| format!("direct #{id}: not a user"))?;
            ensure!(user.login == "admin", "direct #{id}: login {}", user.login);
            return Ok(());
        };
        let issues: Vec<IgnoredAny> = serde_json::from_slice(&bytes)
            .with_context(|| format!("direct #{id}: the response is not a JSON list"))?;
        ensure!(
            issues.len() == expected,
            "direct #{id}: expected {expected} issues"
        );
        Ok(())
    }

    async fn call(&self, scenario: &Scenario, target: Target, id: usize) -> anyhow::Result<()> {
        match target {
            Target::Gateway => {
                self.timed_mcp_call(scenario, &scenario.mcp_url, BEARER, id)
                    .await
            }
            Target::OAuth => {
                let token = self.oauth_token.as_deref().context("no OAuth token")?;
                self.timed_mcp_call(scenario, &scenario.mcp_url, token, id)
                    .await
            }
            Target::Floor => {
                let url = scenario
                    .floor_url
                    .as_deref()
                    .context("no floor on this scenario")?;
                self.timed_mcp_call(scenario, url, BEARER, id).await
            }
            Target::Direct => self.direct_call(scenario, id).await,
        }
    }
}

/// The envelope of a successful tool result (structured or text content).
fn envelope_of(result: &Value) -> anyhow::Result<Value> {
    if let Some(structured) = result.get("structuredContent") {
        return Ok(structured.clone());
    }
    let text = result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("the tool result has no text content: {result}"))?;
    Ok(serde_json::from_str(text)?)
}

/// One full check of the gateway path before anything is timed: stateless
/// (no `initialize`), authenticated, the envelope carries the 20 issues and
/// the pagination read from the upstream headers.
async fn verify_gateway(endpoints: &Endpoints, scenario: &Scenario) -> anyhow::Result<()> {
    let result = endpoints.gateway_call(scenario, 0).await?;
    let envelope = envelope_of(&result)?;
    let data = envelope
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("the envelope has no data array: {envelope}"))?;
    ensure!(
        data.len() == ISSUES_PER_PAGE,
        "expected {ISSUES_PER_PAGE} issues through the gateway, got {}",
        data.len()
    );
    ensure!(
        envelope.pointer("/pagination/total_count") == Some(&json!(TOTAL_ISSUES)),
        "pagination.total_count missing: {}",
        envelope["pagination"]
    );
    ensure!(
        envelope.pointer("/identity/login") == Some(&json!("admin")),
        "identity.login is not `admin`: {}",
        envelope["identity"]
    );
    // A wrong bearer must be refused, or the figures would not measure the
    // authenticated path.
    let refused = endpoints
        .client
        .post(&scenario.mcp_url)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("MCP-Protocol-Version", PROTOCOL_VERSION)
        .header(
            header::AUTHORIZATION,
            "Bearer wrong-wrong-wrong-wrong-wrong-wrong",
        )
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#)
        .send()
        .await?;
    ensure!(
        refused.status() == reqwest::StatusCode::UNAUTHORIZED,
        "a wrong bearer got HTTP {}",
        refused.status()
    );
    Ok(())
}

/// Size in bytes of a `tools/list` response, and its tool count.
async fn tools_list_size(
    endpoints: &Endpoints,
    gateway: SocketAddr,
    path: &str,
) -> anyhow::Result<(usize, usize)> {
    let url = format!("http://{gateway}{path}");
    let bytes = endpoints.mcp(&url, 1, "tools/list", json!({})).await?;
    let message: Value = serde_json::from_slice(&bytes)?;
    let tools = message
        .pointer("/result/tools")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("tools/list has no result.tools"))?
        .len();
    ensure!(
        message
            .pointer("/result/nextCursor")
            .is_none_or(Value::is_null),
        "tools/list is paginated; the size would be of the first page only"
    );
    Ok((bytes.len(), tools))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    aegis_gitea_mcp::tls::install_crypto_provider();

    let (upstream, small_body, big_body) = spawn_upstream(config.big_issues).await?;
    // On disk, not on a tmpfs: the audit log's writes are part of the cost.
    std::fs::create_dir_all("target")?;
    let data = tempfile::tempdir_in("target")?;
    let measured = std::env::var("LOAD_GATEWAY_SETTINGS").unwrap_or_default();
    let measured: Vec<(&str, &str)> = measured
        .split_whitespace()
        .map(|pair| {
            pair.split_once('=')
                .context("LOAD_GATEWAY_SETTINGS: NAME=value pairs")
        })
        .collect::<anyhow::Result<_>>()?;
    let (gateway, gateway_app) =
        spawn_gateway(upstream, &data.path().join("main"), &measured, config.oauth).await?;
    // The big list with the bounds raised so that nothing is cut.
    let mut unbounded = vec![
        ("MAX_TOOL_RESPONSE_ITEMS", "100000"),
        ("MAX_TOOL_RESPONSE_CHARS", "50000000"),
    ];
    unbounded.extend(measured.iter().copied());
    let (big_gateway, _) =
        spawn_gateway(upstream, &data.path().join("big"), &unbounded, false).await?;
    let max_concurrency = config.concurrency.iter().copied().max().unwrap_or(1);
    let client = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(max_concurrency.max(1) * 2)
        .timeout(Duration::from_secs(30))
        .build()?;
    let floor = match Floor::binary_from_env() {
        Some(binary) => Some(Floor::spawn(&binary, upstream, GITEA_TOKEN, BEARER).await?),
        None => None,
    };
    let floor_url = floor.as_ref().map(|f| format!("http://{}/mcp", f.addr));
    let oauth_token = match config.oauth {
        true => Some(load_oauth::connect(&gateway_app, "alice", GITEA_TOKEN).await?),
        false => None,
    };
    let endpoints = Arc::new(Endpoints {
        client,
        floor,
        oauth_token,
    });
    let list_url = |repo: &str| format!("http://{upstream}/api/v1/repos/{OWNER}/{repo}/issues");
    let arguments = |repo: &str| match config.full_view {
        true => json!({"owner": OWNER, "repo": repo, "view": "full"}),
        false => json!({"owner": OWNER, "repo": repo}),
    };
    let scenarios = [
        Scenario {
            label: "small",
            tool: TOOL,
            mcp_url: format!("http://{gateway}/mcp"),
            floor_url: None,
            direct_url: list_url(REPO),
            repo: REPO,
            issues: Some(ISSUES_PER_PAGE),
            arguments: arguments(REPO),
        },
        Scenario {
            label: "big",
            tool: TOOL,
            mcp_url: format!("http://{big_gateway}/mcp"),
            floor_url: None,
            direct_url: list_url(BIG_REPO),
            repo: BIG_REPO,
            issues: Some(config.big_issues),
            arguments: arguments(BIG_REPO),
        },
        // The floor's one tool, through the gateway, the floor and directly.
        Scenario {
            label: "user",
            tool: USER_TOOL,
            mcp_url: format!("http://{gateway}/mcp"),
            floor_url,
            direct_url: format!("http://{upstream}/api/v1/user"),
            repo: "",
            issues: None,
            arguments: json!({}),
        },
    ]
    .map(Arc::new);

    verify_gateway(&endpoints, &scenarios[0])
        .await
        .context("the gateway path did not work; nothing was measured")?;

    println!("aegis-gitea-mcp load harness (loopback only, audit log on disk)");
    println!(
        "  upstream  http://{upstream}  small list: {small_body} bytes ({ISSUES_PER_PAGE} issues); big list: {big_body} bytes ({} issues)",
        config.big_issues
    );
    println!(
        "  gateway   http://{gateway}/mcp (defaults), http://{big_gateway}/mcp (bounds raised; the big list)"
    );
    println!(
        "  stateless, no initialize, MCP-Protocol-Version {PROTOCOL_VERSION}, tool {TOOL}, {} view",
        if config.full_view { "full" } else { "compact" }
    );
    println!(
        "  requests per scenario: {} (+{WARMUP_REQUESTS} warm-up, sequential), time cap {} s",
        config.requests,
        config.max_time.as_secs()
    );
    println!(
        "  CPU us/call: the whole process (client, gateway, upstream); gateway minus direct is the gateway's own"
    );
    match &endpoints.floor {
        Some(floor) => println!(
            "  floor     http://{}/mcp (floor-rmcp, LOAD_FLOOR_BIN; its row adds its own CPU from /proc)",
            floor.addr
        ),
        None => println!(
            "  floor     none: LOAD_FLOOR_BIN is not set (../shared/perf/README.md builds floor-rmcp)"
        ),
    }
    println!();
    println!(
        "{:<6} {:<8} {:>11} {:>7} {:>10} {:>9} {:>9} {:>12}",
        "list", "target", "concurrency", "calls", "calls/s", "p50 ms", "p99 ms", "CPU us/call"
    );
    for scenario in &scenarios {
        for &concurrency in &config.concurrency {
            for target in [
                Target::Gateway,
                Target::OAuth,
                Target::Floor,
                Target::Direct,
            ] {
                // The OAuth and floor rows: the user scenario only.
                if target == Target::Floor && scenario.floor_url.is_none() {
                    continue;
                }
                if target == Target::OAuth
                    && (endpoints.oauth_token.is_none() || scenario.issues.is_some())
                {
                    continue;
                }
                let f = drive(
                    endpoints.clone(),
                    scenario.clone(),
                    target,
                    config.requests,
                    concurrency,
                    config.max_time,
                )
                .await
                .with_context(|| {
                    format!(
                        "{} {} at concurrency {concurrency}",
                        scenario.label,
                        target.label()
                    )
                })?;
                println!(
                    "{:<6} {:<8} {:>11} {:>7} {:>10.1} {:>9.3} {:>9.3} {:>12.1}{}",
                    scenario.label,
                    target.label(),
                    concurrency,
                    f.calls,
                    f.calls as f64 / f.elapsed.as_secs_f64(),
                    ms(f.p50),
                    ms(f.p99),
                    f.cpu.as_secs_f64() * 1e6 / f.calls as f64,
                    if f.capped { "  (time cap reached)" } else { "" }
                );
            }
        }
    }

    // The load run's audit log: every call wrote two chained entries.
    let key = aegis_gitea_mcp::audit::chain::ChainKey::new(Some(AUDIT_KEY.as_bytes()));
    println!();
    for log in ["main", "big"] {
        let files = aegis_gitea_mcp::audit::verify::default_files(&data.path().join(log));
        let report = aegis_gitea_mcp::audit::verify::verify_files(&files, &key);
        println!("audit log of the load run ({log}): {report}");
        ensure!(report.is_ok(), "the load run's audit log does not verify");
    }

    println!();
    println!("tools/list response size");
    let (discover, _) = spawn_gateway(
        upstream,
        &data.path().join("discover"),
        &[("TOOL_MODE", "discover")],
        false,
    )
    .await?;
    for (label, addr, path) in [
        ("/mcp (core)", gateway, "/mcp"),
        ("/mcp/readonly", gateway, "/mcp/readonly"),
        ("/mcp/all", gateway, "/mcp/all"),
        ("/mcp/x/issue", gateway, "/mcp/x/issue"),
        ("/mcp (discover)", discover, "/mcp"),
    ] {
        let (bytes, tools) = tools_list_size(&endpoints, addr, path).await?;
        println!("  {label:<20} {bytes:>10} bytes  {tools:>4} tools");
    }
    Ok(())
}
