//! Idle kept-alive connections (issue 55's cost curve): the release binary
//! serving on loopback, as a process of its own so that its resident
//! memory is its own; N connections opened and each used once (a `GET
//! /health/live`, so each is a kept-alive HTTP/1 connection waiting for
//! its next request), then held. Measured: the process's resident memory
//! per held connection, and the p99 of a caller's tool calls at
//! concurrency 8 with none, then with N held.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, ensure};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

const BEARER: &str = "cost-bench-bearer-token-0123456789abcdef";
const CALLERS: usize = 8;
const CALLS_EACH: usize = 250;

/// One tool call as `token`: `gitea_user_get_current` through the fake
/// Gitea, its answer checked.
pub async fn call(http: &reqwest::Client, base: &str, token: &str) -> anyhow::Result<()> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "gitea_user_get_current", "arguments": {}}});
    let response = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body)
        .send()
        .await?;
    ensure!(
        response.status().is_success(),
        "call: {}",
        response.status()
    );
    let text = response.text().await?;
    ensure!(
        text.contains(r#"\"login\":\"admin\""#) && text.contains(r#""isError":false"#),
        "call: {text}"
    );
    Ok(())
}

/// A figure per number of held connections.
pub struct Held {
    pub connections: usize,
    pub rss_mb: f64,
    /// Resident memory added per held connection, over none held.
    pub kb_per_connection: f64,
    pub p99: Duration,
}

/// The gateway process; killed when dropped.
struct Gateway {
    child: std::process::Child,
    base: String,
    metrics: String,
    _data: tempfile::TempDir,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

async fn start(upstream: SocketAddr, most: usize) -> anyhow::Result<Gateway> {
    let data = tempfile::tempdir_in("target")?;
    let (port, metrics_port) = (free_port()?, free_port()?);
    let base = format!("http://127.0.0.1:{port}");
    let cap = (most + 100).to_string();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_aegis-gitea-mcp"))
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs([
            ("GITEA_URL", format!("http://{upstream}")),
            ("GITEA_TOKEN", "cost-bench-gitea-admin-token".into()),
            ("MCP_BEARER_TOKEN", BEARER.into()),
            (
                "AUDIT_HMAC_KEY",
                "cost-bench-audit-key-0123456789abcdef".into(),
            ),
            ("MCP_HOST", "127.0.0.1".into()),
            ("MCP_PORT", port.to_string()),
            ("PUBLIC_BASE_URL", base.clone()),
            ("DATA_DIR", data.path().display().to_string()),
            ("METRICS_BIND", format!("127.0.0.1:{metrics_port}")),
            // Held connections behind a proxy keep the long idle timeout.
            ("FORWARDED_ALLOW_IPS", "127.0.0.1".into()),
            ("MAX_CONNECTIONS", cap.clone()),
            ("MAX_CONNECTIONS_PER_IP", cap),
            ("RATE_LIMIT_PER_IP", "0".into()),
            ("RATE_LIMIT_PER_TOKEN", "0".into()),
            ("RUST_LOG", "warn".into()),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("the gateway binary")?;
    let gateway = Gateway {
        child,
        base,
        metrics: format!("http://127.0.0.1:{metrics_port}/metrics"),
        _data: data,
    };
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        ensure!(
            started.elapsed() < Duration::from_secs(30),
            "the gateway did not listen"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(gateway)
}

fn rss_mb(pid: u32) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .context("VmRSS")?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()?;
    Ok(kb / 1024.0)
}

/// Whether `got` holds a whole answer with a `Content-Length` body.
fn whole_answer(got: &[u8]) -> bool {
    let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    got.len() >= end + 4 + length
}

/// A connection that has had one answer and is kept alive.
async fn idle_connection(addr: SocketAddr) -> anyhow::Result<TcpStream> {
    let mut stream = TcpStream::connect(addr).await?;
    stream
        .write_all(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await?;
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    while !whole_answer(&got) {
        let n = stream.read(&mut buf).await?;
        ensure!(n > 0, "closed before its answer");
        got.extend_from_slice(&buf[..n]);
    }
    ensure!(
        got.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    Ok(stream)
}

/// p99 of `CALLERS` callers making `CALLS_EACH` calls each.
async fn callers_p99(base: &str) -> anyhow::Result<Duration> {
    let http = reqwest::Client::builder().no_proxy().build()?;
    for _ in 0..50 {
        call(&http, base, BEARER).await?;
    }
    let mut callers = JoinSet::new();
    for _ in 0..CALLERS {
        let (http, base) = (http.clone(), base.to_owned());
        callers.spawn(async move {
            let mut samples = Vec::with_capacity(CALLS_EACH);
            for _ in 0..CALLS_EACH {
                let started = Instant::now();
                call(&http, &base, BEARER).await?;
                samples.push(started.elapsed());
            }
            anyhow::Ok(samples)
        });
    }
    let mut samples = Vec::new();
    while let Some(done) = callers.join_next().await {
        samples.extend(done??);
    }
    samples.sort_unstable();
    Ok(samples[samples.len() * 99 / 100])
}

async fn open_connections(
    addr: SocketAddr,
    n: usize,
    held: &mut Vec<TcpStream>,
) -> anyhow::Result<()> {
    for batch in (0..n).collect::<Vec<_>>().chunks(200) {
        let mut opening = JoinSet::new();
        for _ in batch {
            opening.spawn(idle_connection(addr));
        }
        while let Some(done) = opening.join_next().await {
            held.push(done??);
        }
    }
    Ok(())
}

async fn open_on_gateway(metrics: &str) -> anyhow::Result<usize> {
    let http = reqwest::Client::builder().no_proxy().build()?;
    let text = http.get(metrics).send().await?.text().await?;
    text.lines()
        .find_map(|l| l.strip_prefix("aegis_connections_open "))
        .context("aegis_connections_open")?
        .trim()
        .parse::<f64>()
        .map(|v| v as usize)
        .map_err(|e| anyhow!("aegis_connections_open: {e}"))
}

/// The figures with none held, then with each of `counts` held (rising).
pub async fn measure(upstream: SocketAddr, counts: &[usize]) -> anyhow::Result<Vec<Held>> {
    let most = counts.iter().copied().max().unwrap_or(0);
    let gateway = start(upstream, most).await?;
    let pid = gateway.child.id();
    let addr: SocketAddr = gateway.base.trim_start_matches("http://").parse()?;
    let p99 = callers_p99(&gateway.base).await?;
    let base_rss = rss_mb(pid)?;
    let mut figures = vec![Held {
        connections: 0,
        rss_mb: base_rss,
        kb_per_connection: 0.0,
        p99,
    }];
    let mut held = Vec::with_capacity(most);
    for &count in counts {
        open_connections(addr, count - held.len(), &mut held).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let on_gateway = open_on_gateway(&gateway.metrics).await?;
        ensure!(
            on_gateway >= count,
            "the gateway holds {on_gateway} connections, not {count}"
        );
        let rss = rss_mb(pid)?;
        let p99 = callers_p99(&gateway.base).await?;
        figures.push(Held {
            connections: count,
            rss_mb: rss,
            kb_per_connection: (rss - base_rss) * 1024.0 / count as f64,
            p99,
        });
    }
    Ok(figures)
}
