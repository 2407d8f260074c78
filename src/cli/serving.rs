//! `serve`'s listeners: binding the addresses the settings name, serving
//! the router (and `/metrics` on its own listener) under the connection
//! limits, and stopping on SIGTERM or Ctrl-C: the drain, then the activity
//! figures and the last audit entries on disk before exit.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::{BindError, CliError};
use crate::app::App;
use crate::http::listener::{self, ConnectionLimits, HEADER_READ_TIMEOUT, Stopping};

/// Binds `address`, or says which settings chose it and why it failed.
pub(super) async fn bind(
    address: SocketAddr,
    settings: &'static str,
) -> Result<tokio::net::TcpListener, CliError> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|source| {
            CliError::Bind(BindError {
                address,
                settings,
                source,
            })
        })
}

pub(super) async fn serve_http(
    app: Arc<App>,
    listener: tokio::net::TcpListener,
    metrics: Option<tokio::net::TcpListener>,
) -> Result<(), CliError> {
    tracing::info!(
        address = %listener.local_addr()?,
        tools = app.admission().tools(&crate::surface::Surface::default()).len(),
        "serving MCP at /mcp"
    );
    if let Some(metrics) = metrics {
        serve_metrics(app.clone(), metrics).await?;
    }
    let settings = app.settings();
    let limits = ConnectionLimits {
        max_connections: settings.max_connections,
        max_per_ip: settings.max_connections_per_ip,
        exempt: settings.forwarded_allow_ips.clone(),
        idle_timeout: settings.idle_connection_timeout,
    }
    .within_descriptor_limit();
    tracing::info!(
        max_connections = limits.max_connections,
        max_per_ip = limits.max_per_ip,
        header_read_timeout_secs = HEADER_READ_TIMEOUT.as_secs(),
        idle_timeout_secs = limits.idle_timeout.as_secs(),
        client_idle_timeout_secs = HEADER_READ_TIMEOUT.as_secs(),
        send_timeout_secs = crate::http::listener::SEND_TIMEOUT.as_secs(),
        "connection limits (idle_timeout_secs for FORWARDED_ALLOW_IPS, client_idle_timeout_secs for every other peer)"
    );
    if settings.forwarded_allow_ips.is_empty() && settings.public_base_url.scheme() == "https" {
        // The gateway serves plain HTTP: an https public URL means a proxy
        // in front, which should be named (docs/replicas.md).
        tracing::warn!(
            "PUBLIC_BASE_URL is https but FORWARDED_ALLOW_IPS names no proxy: the proxy in front gets a client's 10 s idle timeout (not IDLE_CONNECTION_TIMEOUT_SECONDS) and may lose requests to the keep-alive race, and every caller counts as its address; list it in FORWARDED_ALLOW_IPS"
        );
    }
    let router = crate::http::router(app.clone());
    let stopping = Stopping {
        draining: app.draining().clone(),
        drain: settings.shutdown_drain,
        // A call may wait GITEA_TIMEOUT_SECONDS for Gitea, then answer.
        grace: settings.limits.gitea_timeout + Duration::from_secs(5),
    };
    app.metrics().set_connections_max(limits.max_connections);
    let open = app.metrics().connections_open();
    listener::serve_with_gauge(listener, router, limits, stopping, shutdown_signal(), open).await?;
    // The activity figures of the last seconds, then, under
    // AUDIT_SYNC=interval, the last audit entries: on disk before exit.
    if let Some(activity) = app.call_services().activity() {
        activity.flush().await;
    }
    app.audit().flush().await;
    Ok(())
}

/// `/metrics` on its own listener (`METRICS_BIND`, bound at startup with
/// the main one), in the background.
async fn serve_metrics(app: Arc<App>, listener: tokio::net::TcpListener) -> Result<(), CliError> {
    let bound = listener.local_addr()?;
    if !bound.ip().is_loopback() {
        tracing::warn!(address = %bound, "METRICS_BIND is not a loopback address: keep it off the public network");
    }
    tracing::info!(address = %bound, "serving Prometheus metrics at /metrics");
    // A scraper or two: a small cap, and the same header timeout.
    let limits = ConnectionLimits {
        max_connections: 64,
        max_per_ip: 16,
        exempt: Vec::new(),
        idle_timeout: app.settings().idle_connection_timeout,
    }
    .within_descriptor_limit();
    let router = crate::http::metrics::router(app);
    tokio::spawn(async move {
        let stopped = listener::serve(
            listener,
            router,
            limits,
            Stopping::at_once(),
            shutdown_signal(),
        );
        if let Err(err) = stopped.await {
            tracing::error!(error = %err, "the metrics listener stopped");
        }
    });
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down");
}
