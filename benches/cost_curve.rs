//! The cost curve (issue 55): what one request costs as the team grows.
//! For each size the store is filled through its own API (clients, people
//! with five live grants each, tokens, page sessions), then over real
//! loopback HTTP: `/admin` (unfiltered, by user, by client, the client
//! list's second page) and `/account` (p50 of their latency), and the
//! OAuth path's CPU per call, per refresh and per revocation (the whole
//! process's CPU, client and fake Gitea included, as the load bench
//! counts it). Then `/admin` over a week of activity of many people, the
//! audit log at size (`audit verify` beside `sha256sum` and `openssl`'s
//! HMAC, rotation and the disk it takes), the forwarder's catch-up of
//! a backlog, and idle kept-alive connections (the release binary's
//! memory per connection held, a caller's p99 beside them). Every figure is printed with its ratio to the smallest size;
//! no thresholds. The table and the SVG it draws are in
//! `docs/benchmarks.md`.
//!
//! Run: `cargo bench --bench cost_curve` (full size: about 12 minutes and
//! 3 GB of disk); CI's smoke run: `COST_SMOKE=1 cargo bench --profile dev
//! --bench cost_curve`.
//! Environment:
//! - `COST_SIZES`: grants per size, comma-separated (default
//!   `100,1000,10000,100000`; smoke `100,500`)
//! - `COST_ACTIVITY_PEOPLE`: people with a week of activity (default
//!   5000, 8 busy hours a day; smoke 50)
//! - `COST_AUDIT_ENTRIES`: the log's size (default 10,000,000; smoke
//!   20,000); `COST_BACKLOG_ENTRIES`: the forwarder's backlog (default
//!   720,000, an hour at 100 calls a second; smoke 10,000)
//! - `COST_CONNECTIONS`: idle kept-alive connections held, rising
//!   (default `1000,10000`; smoke `50,200`)
//! - `COST_POSTGRES_URL`: a server URL; each size then also runs on a fresh
//!   database of it
//! - `COST_SVG`: where the plot goes (default `target/cost-curve.svg`)

#[path = "support/bench_kit.rs"]
mod bench_kit;
#[path = "support/cost_audit.rs"]
mod cost_audit;
#[path = "support/cost_connections.rs"]
mod cost_connections;
#[path = "support/cost_fill.rs"]
mod cost_fill;
#[path = "support/cost_plot.rs"]
mod cost_plot;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aegis_gitea_mcp::app::App;
use aegis_gitea_mcp::config::{Settings, SettingsSource};
use anyhow::{Context, anyhow, ensure};
use serde_json::json;

use bench_kit::process_cpu;
use cost_fill::Filled;

const GITEA_TOKEN: &str = "cost-bench-gitea-admin-token";
const AUDIT_KEY: &str = "cost-bench-audit-key-0123456789abcdef";
const PAGE_VIEWS: usize = 100;
const OPS: usize = 300;

struct Config {
    sizes: Vec<usize>,
    people: usize,
    audit_entries: u64,
    backlog_entries: u64,
    connections: Vec<usize>,
    postgres: Option<String>,
    svg: String,
}

impl Config {
    fn from_env() -> anyhow::Result<Self> {
        let smoke = std::env::var("COST_SMOKE").is_ok_and(|v| v == "1");
        let var = |name: &str, full: &str, small: &str| {
            std::env::var(name).unwrap_or_else(|_| if smoke { small } else { full }.to_owned())
        };
        Ok(Self {
            sizes: var("COST_SIZES", "100,1000,10000,100000", "100,500")
                .split(',')
                .map(|s| s.trim().parse().context("COST_SIZES"))
                .collect::<anyhow::Result<_>>()?,
            people: var("COST_ACTIVITY_PEOPLE", "5000", "50").parse()?,
            audit_entries: var("COST_AUDIT_ENTRIES", "10000000", "20000").parse()?,
            backlog_entries: var("COST_BACKLOG_ENTRIES", "720000", "10000").parse()?,
            connections: var("COST_CONNECTIONS", "1000,10000", "50,200")
                .split(',')
                .map(|s| s.trim().parse().context("COST_CONNECTIONS"))
                .collect::<anyhow::Result<_>>()?,
            postgres: std::env::var("COST_POSTGRES_URL").ok(),
            svg: var("COST_SVG", "target/cost-curve.svg", "target/cost-curve.svg"),
        })
    }
}

async fn loopback_listener() -> anyhow::Result<(tokio::net::TcpListener, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    Ok((listener, addr))
}

/// The fake Gitea: `GET /api/v1/user`, the one call measured, and the
/// version the gateway asks for at start.
async fn spawn_upstream() -> anyhow::Result<SocketAddr> {
    let (listener, addr) = loopback_listener().await?;
    let router = axum::Router::new()
        .route(
            "/api/v1/user",
            axum::routing::get(|| async { axum::Json(json!({"id": 1, "login": "admin"})) }),
        )
        .route(
            "/api/v1/version",
            axum::routing::get(|| async { axum::Json(json!({"version": "1.27.1"})) }),
        );
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(addr)
}

/// A gateway with OAuth on a fresh store, in front of the fake Gitea.
async fn gateway(
    upstream: SocketAddr,
    data_dir: &std::path::Path,
    database_url: Option<&str>,
) -> anyhow::Result<(String, Arc<App>)> {
    let (listener, addr) = loopback_listener().await?;
    let base = format!("http://{addr}");
    let mut pairs: Vec<(String, String)> = [
        ("GITEA_URL", format!("http://{upstream}")),
        ("GITEA_TOKEN", GITEA_TOKEN.into()),
        ("PUBLIC_BASE_URL", base.clone()),
        ("DATA_DIR", data_dir.display().to_string()),
        ("AUDIT_HMAC_KEY", AUDIT_KEY.into()),
        ("GITEA_OAUTH_CLIENT_ID", "cost-bench-app".into()),
        (
            "GITEA_OAUTH_CLIENT_SECRET",
            "cost-bench-app-secret-0123456789".into(),
        ),
        (
            "TOKEN_ENCRYPTION_KEY",
            "cost-bench-token-key-0123456789abcdef".into(),
        ),
        ("ADMIN_LOGINS", "root".into()),
        ("OAUTH_MAX_CLIENTS", "1000000".into()),
        ("RATE_LIMIT_PER_IP", "0".into()),
        ("RATE_LIMIT_PER_TOKEN", "0".into()),
        ("RATE_LIMIT_SIGN_INS_PER_IP", "0".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    if let Some(url) = database_url {
        pairs.push(("DATABASE_URL".into(), url.to_owned()));
    }
    let settings = Settings::from_source(&SettingsSource::from_pairs(pairs))
        .map_err(|e| anyhow!("settings: {e}"))?;
    let app = App::build(settings)
        .await
        .map_err(|e| anyhow!("App::build: {e}"))?;
    let router = aegis_gitea_mcp::http::router(app.clone());
    tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    Ok((base, app))
}

fn percentile(mut samples: Vec<Duration>, p: f64) -> Duration {
    samples.sort_unstable();
    let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
    samples[rank.clamp(1, samples.len()) - 1]
}

/// p50 of `PAGE_VIEWS` GETs of `path` with the session `cookie`.
async fn page_p50(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    cookie: &str,
) -> anyhow::Result<Duration> {
    let mut samples = Vec::with_capacity(PAGE_VIEWS);
    for _ in 0..PAGE_VIEWS + 5 {
        let started = Instant::now();
        let response = http
            .get(format!("{base}{path}"))
            .header("cookie", format!("aegis_session={cookie}"))
            .send()
            .await?;
        ensure!(
            response.status().is_success(),
            "{path}: {}",
            response.status()
        );
        response.bytes().await?;
        samples.push(started.elapsed());
    }
    Ok(percentile(samples.split_off(5), 50.0))
}

/// CPU per call of `op` over `n` runs: the median of five batches, so that
/// a batch the gateway's background work fell into (the store's pruning
/// every five minutes, a WAL checkpoint) does not decide the figure.
async fn cpu_per<F, Fut>(n: usize, mut op: F) -> anyhow::Result<Duration>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    const BATCHES: usize = 5;
    let per_batch = (n / BATCHES).max(1);
    let mut batches = Vec::with_capacity(BATCHES);
    for batch in 0..BATCHES {
        let before = process_cpu();
        for i in batch * per_batch..(batch + 1) * per_batch {
            op(i).await?;
        }
        batches.push((process_cpu() - before) / per_batch as u32);
    }
    batches.sort_unstable();
    Ok(batches[BATCHES / 2])
}

/// One size's row: the measurement's name and its figure.
type Row = BTreeMap<&'static str, f64>;

async fn measure_size(
    http: &reqwest::Client,
    upstream: SocketAddr,
    grants: usize,
    database_url: Option<&str>,
) -> anyhow::Result<Row> {
    let data = tempfile::tempdir_in("target")?;
    let (base, app) = gateway(upstream, data.path(), database_url).await?;
    let filling = Instant::now();
    let filled: Filled = cost_fill::fill(&app, grants, OPS).await?;
    eprintln!(
        "  filled {grants} grants in {:.1} s",
        filling.elapsed().as_secs_f64()
    );
    if let Some(url) = database_url {
        // The statistics autovacuum would gather within the minute; a
        // planner without them guesses on a table filled a moment ago.
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(url).await?;
        sqlx::query("ANALYZE").execute(&mut conn).await?;
    }
    let mut row = Row::new();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let admin = &filled.admin_cookie;
    row.insert(
        "/admin p50 ms",
        ms(page_p50(http, &base, "/admin", admin).await?),
    );
    let by_user = format!("/admin?user=user{}", grants / 10);
    row.insert(
        "/admin?user p50 ms",
        ms(page_p50(http, &base, &by_user, admin).await?),
    );
    let by_client = format!("/admin?client={}", filled.client_id);
    row.insert(
        "/admin?client p50 ms",
        ms(page_p50(http, &base, &by_client, admin).await?),
    );
    row.insert(
        "/admin clients p2 ms",
        ms(page_p50(http, &base, "/admin?clients=2", admin).await?),
    );
    row.insert(
        "/account p50 ms",
        ms(page_p50(http, &base, "/account", &filled.person_cookie).await?),
    );
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    for _ in 0..20 {
        cost_connections::call(http, &base, &filled.access_token).await?;
    }
    let per_call = cpu_per(OPS * 3, |_| {
        cost_connections::call(http, &base, &filled.access_token)
    })
    .await?;
    row.insert("OAuth call CPU µs", us(per_call));
    let refresh = cpu_per(OPS, |i| {
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", filled.refresh_tokens[i].as_str()),
            ("client_id", filled.client_id.as_str()),
        ];
        let request = http.post(format!("{base}/token")).form(&form);
        async move {
            let response = request.send().await?;
            ensure!(
                response.status().is_success(),
                "refresh: {}",
                response.text().await?
            );
            Ok(())
        }
    })
    .await?;
    row.insert("refresh CPU µs", us(refresh));
    let revoke = cpu_per(OPS, |i| {
        let request = http
            .post(format!("{base}/revoke"))
            .form(&[("token", filled.to_revoke[i].as_str())]);
        async move {
            let response = request.send().await?;
            ensure!(
                response.status().is_success(),
                "revoke: {}",
                response.status()
            );
            Ok(())
        }
    })
    .await?;
    row.insert("revocation CPU µs", us(revoke));
    Ok(row)
}

/// `/admin` over a week of activity of `people` people, and of 10.
async fn activity(
    http: &reqwest::Client,
    upstream: SocketAddr,
    people: usize,
) -> anyhow::Result<Vec<(usize, f64, f64)>> {
    let mut out = Vec::new();
    // Fifty people at least: more than the charts show (20), so that both
    // views draw as many charts.
    for size in [50, people] {
        let data = tempfile::tempdir_in("target")?;
        let (base, app) = gateway(upstream, data.path(), None).await?;
        let filled = cost_fill::fill(&app, size.max(5) * 5, 0).await?;
        let filling = Instant::now();
        cost_fill::fill_activity(&app, size, 8).await?;
        eprintln!(
            "  a week of activity of {size} people in {:.1} s",
            filling.elapsed().as_secs_f64()
        );
        // The first view computes the charts; the next minute's are served.
        let started = Instant::now();
        page_p50_once(http, &base, &filled.admin_cookie).await?;
        let cold = started.elapsed();
        let warm = page_p50(http, &base, "/admin", &filled.admin_cookie).await?;
        out.push((
            size,
            cold.as_secs_f64() * 1000.0,
            warm.as_secs_f64() * 1000.0,
        ));
    }
    Ok(out)
}

async fn page_p50_once(http: &reqwest::Client, base: &str, cookie: &str) -> anyhow::Result<()> {
    let response = http
        .get(format!("{base}/admin"))
        .header("cookie", format!("aegis_session={cookie}"))
        .send()
        .await?;
    ensure!(
        response.status().is_success(),
        "/admin: {}",
        response.status()
    );
    response.bytes().await?;
    Ok(())
}

fn print_rows(title: &str, sizes: &[usize], rows: &[Row]) -> Vec<cost_plot::Series> {
    println!("\n{title}");
    let names: Vec<&str> = rows
        .first()
        .map(|r| r.keys().copied().collect())
        .unwrap_or_default();
    print!("{:<24}", "size (grants)");
    for size in sizes {
        print!("{size:>16}");
    }
    println!();
    let mut series = Vec::new();
    for name in names {
        print!("{name:<24}");
        let first = rows[0][name];
        let mut points = Vec::new();
        for (size, row) in sizes.iter().zip(rows) {
            let ratio = row[name] / first;
            print!("{:>9.2} ({ratio:.2}×)", row[name]);
            points.push((*size, ratio));
        }
        println!();
        series.push(cost_plot::Series {
            name: format!("{title}: {name}"),
            points,
        });
    }
    series
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let config = Config::from_env()?;
    aegis_gitea_mcp::tls::install_crypto_provider();
    std::fs::create_dir_all("target")?;
    let upstream = spawn_upstream().await?;
    let http = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()?;

    let mut series = Vec::new();
    let mut backends: Vec<(&str, Option<String>)> = vec![("SQLite", None)];
    if let Some(server) = &config.postgres {
        backends.push(("PostgreSQL", Some(server.clone())));
    }
    for (label, server) in &backends {
        // The smallest size once more, first, its figures left out: the
        // first size measured otherwise pays for a cold process (caches,
        // the allocator's first pages, the pool's first connections).
        eprintln!("{label}: warming up");
        let warm_db = match server {
            Some(server) => Some(fresh_database(server, "aegis_cost_warm").await?),
            None => None,
        };
        measure_size(&http, upstream, config.sizes[0], warm_db.as_deref()).await?;
        let mut rows = Vec::new();
        for (i, &size) in config.sizes.iter().enumerate() {
            eprintln!("{label}: {size} grants");
            let database = match server {
                Some(server) => Some(fresh_database(server, &format!("aegis_cost_{i}")).await?),
                None => None,
            };
            rows.push(measure_size(&http, upstream, size, database.as_deref()).await?);
        }
        series.extend(print_rows(
            &format!("{label}, by grants"),
            &config.sizes,
            &rows,
        ));
    }

    println!("\n/admin over a week of activity (8 busy hours a day)");
    let charts = activity(&http, upstream, config.people).await?;
    for (people, cold, warm) in &charts {
        println!(
            "  {people:>6} people: first view {cold:.2} ms, p50 then {warm:.2} ms ({:.2}× the 50 people's)",
            warm / charts[0].2
        );
    }

    let logs = tempfile::tempdir_in("target")?;
    eprintln!("writing {} audit entries", config.audit_entries);
    let wrote = cost_audit::write_log(logs.path(), config.audit_entries, AUDIT_KEY).await?;
    let speeds = cost_audit::verify_speeds(logs.path(), AUDIT_KEY)?;
    let mb = |d: Duration| speeds.bytes as f64 / 1e6 / d.as_secs_f64();
    println!(
        "\nThe audit log: {} entries, {:.0} MB in {} files, written in {:.1} s",
        speeds.entries,
        speeds.bytes as f64 / 1e6,
        aegis_gitea_mcp::audit::verify::default_files(logs.path())
            .iter()
            .filter(|f| f.exists())
            .count(),
        wrote.as_secs_f64()
    );
    println!(
        "  audit verify     {:>8.2} s  {:>7.0} MB/s",
        speeds.verify.as_secs_f64(),
        mb(speeds.verify)
    );
    println!(
        "  sha256sum        {:>8.2} s  {:>7.0} MB/s  (verify at {:.2}× its speed)",
        speeds.sha256sum.as_secs_f64(),
        mb(speeds.sha256sum),
        speeds.sha256sum.as_secs_f64() / speeds.verify.as_secs_f64()
    );
    if let Some(hmac) = speeds.openssl_hmac {
        println!(
            "  openssl -hmac    {:>8.2} s  {:>7.0} MB/s  (verify at {:.2}× its speed)",
            hmac.as_secs_f64(),
            mb(hmac),
            hmac.as_secs_f64() / speeds.verify.as_secs_f64()
        );
    }
    drop(logs);

    let backlog = tempfile::tempdir_in("target")?;
    cost_audit::write_log(backlog.path(), config.backlog_entries, AUDIT_KEY).await?;
    let rate = cost_audit::catch_up(backlog.path(), AUDIT_KEY, config.backlog_entries).await?;
    println!(
        "\nThe forwarder: a backlog of {} entries taken at {rate:.0} entries/s, {:.1}× the write rate of 100 calls a second (200 entries/s)",
        config.backlog_entries,
        rate / 200.0
    );

    let bound_dir = tempfile::tempdir_in("target")?;
    let (max_bytes, keep) = (4 * 1024 * 1024, 3);
    let bound_entries = (config.backlog_entries / 4).max(200_000);
    let (largest, bound) =
        cost_audit::disk_bound(bound_dir.path(), bound_entries, max_bytes, keep).await?;
    println!(
        "\nRotation: {bound_entries} entries into files of {} MB, {keep} kept: the directory at most {:.1} MB, the bound {:.1} MB ({:.2}× it)",
        max_bytes / (1024 * 1024),
        largest as f64 / 1e6,
        bound as f64 / 1e6,
        largest as f64 / bound as f64
    );
    drop(bound_dir);

    println!(
        "\nIdle kept-alive connections held (the release binary in its own process; callers at c=8)"
    );
    let held = cost_connections::measure(upstream, &config.connections).await?;
    for h in &held {
        println!(
            "  {:>6} held: RSS {:>7.1} MB ({:>5.1} kB each), p99 {:>6.2} ms ({:.2}× with none)",
            h.connections,
            h.rss_mb,
            h.kb_per_connection,
            h.p99.as_secs_f64() * 1000.0,
            h.p99.as_secs_f64() / held[0].p99.as_secs_f64()
        );
    }

    std::fs::write(
        &config.svg,
        cost_plot::svg("Cost against size, as a ratio to the smallest", &series),
    )?;
    println!("\nplot: {}", config.svg);
    Ok(())
}

/// A fresh database on the PostgreSQL server `server` (its URL names a
/// database to connect to first).
async fn fresh_database(server: &str, name: &str) -> anyhow::Result<String> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(server).await?;
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&mut conn)
            .await?;
    }
    let (head, _) = server
        .rsplit_once('/')
        .context("COST_POSTGRES_URL: no database")?;
    Ok(format!("{head}/{name}"))
}
