//! The accept loop: HTTP/1.1 and HTTP/2 (prior knowledge) connections on
//! one listener, with the limits that keep one client from taking the
//! server away from the others (the security review's slowloris, F3):
//!
//! - a **header-read timeout**: a connection that does not deliver a whole
//!   request head within [`HEADER_READ_TIMEOUT`] of its first byte is
//!   closed, and so is a new one that sends nothing at all;
//! - an **idle timeout**, separate from it: a trusted proxy's kept-alive
//!   connection may wait [`ConnectionLimits::idle_timeout`] for its next
//!   request, longer than a load balancer keeps it; anyone else's, the
//!   header-read timeout (see `connection_watch`), and every request head
//!   of theirs, a pipelined one too, is read within it (hyper's own header
//!   timer, which knows what it holds unparsed: the red team's F5);
//! - a **send timeout**: an answer nobody reads closes its connection;
//! - a **global connection cap** (`MAX_CONNECTIONS`), held below the
//!   process's descriptor limit so that accepting never fails for want of a
//!   descriptor, and a **per-client cap** (`MAX_CONNECTIONS_PER_IP`, per
//!   IPv4 address or IPv6 /64), not applied to the trusted proxies of
//!   `FORWARDED_ALLOW_IPS`; at a cap the connection idle longest gives up
//!   its slot (`occupancy`).
//!
//! Past a cap with every connection busy, the new connection is accepted
//! and closed at once, so the descriptor is free again and the client sees
//! a prompt reset rather than a hang. Written over hyper-util rather than
//! `axum::serve`, which sets no timer (so no header timeout) and has no
//! connection limits.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::http::HeaderValue;
use axum::http::header::CONNECTION;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;

use crate::app::Draining;

use super::connection_watch::{ConnectionWatch, WatchedStream};
pub use super::connection_watch::{HEADER_READ_TIMEOUT, SEND_TIMEOUT};
use super::occupancy::{Occupancy, Slot, is_proxy, take_slot};

/// Descriptors left for everything that is not a client connection (the
/// store, the audit log, connections to Gitea).
const RESERVED_DESCRIPTORS: usize = 256;

/// The HTTP/2 connection preface; a connection that starts with a part of
/// it is waited on until it can be told apart from HTTP/1.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The connection limits of one listener.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Open connections at most, all clients together.
    pub max_connections: usize,
    /// Open connections at most from one address.
    pub max_per_ip: usize,
    /// Addresses the per-address cap does not apply to, and the only ones
    /// given the long idle timeout (trusted proxies).
    pub exempt: Vec<ipnet::IpNet>,
    /// How long a trusted proxy's kept-alive connection may wait for its
    /// next request (anyone else's: [`HEADER_READ_TIMEOUT`]).
    pub idle_timeout: Duration,
}

impl ConnectionLimits {
    /// `max_connections`, lowered to what the descriptor limit leaves.
    pub fn within_descriptor_limit(mut self) -> Self {
        if let Some(limit) = descriptor_limit() {
            let usable = limit.saturating_sub(RESERVED_DESCRIPTORS).max(16);
            if usable < self.max_connections {
                tracing::warn!(
                    max_connections = self.max_connections,
                    usable,
                    descriptor_limit = limit,
                    "MAX_CONNECTIONS lowered to fit RLIMIT_NOFILE"
                );
                self.max_connections = usable;
            }
        }
        self
    }
}

/// The soft `RLIMIT_NOFILE`; `None` when unlimited.
fn descriptor_limit() -> Option<usize> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// What a listener does once told to stop.
#[derive(Debug, Clone)]
pub struct Stopping {
    /// Set when the signal comes; `/health` reads it.
    pub draining: Draining,
    /// How long connections are still accepted and answered, every answer
    /// closing its HTTP/1 connection, before the idle ones are closed.
    pub drain: Duration,
    /// How long requests in flight then get to finish.
    pub grace: Duration,
}

impl Stopping {
    /// No drain, and [`DEFAULT_GRACE`]: for a listener no balancer uses.
    pub fn at_once() -> Self {
        Self {
            draining: Draining::default(),
            drain: Duration::ZERO,
            grace: DEFAULT_GRACE,
        }
    }
}

/// The grace of a listener with no call that waits on Gitea.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// At the end of a drain, how long connections already accepted get to
/// send their first request before the idle ones are closed: a balancer
/// writes on a connection as soon as it has it.
const FIRST_REQUEST_WAIT: Duration = Duration::from_secs(1);

/// Serves `router` on `listener` under `limits` until `signal` resolves,
/// then drains and stops as `stopping` says.
///
/// At the signal the listener does not close idle kept-alive connections
/// at once: a balancer may be writing a request on one of them, which
/// would then fail, and nginx does not send a POST again. For
/// `stopping.drain` it goes on accepting and answering, each HTTP/1
/// answer with `Connection: close`, so every connection the balancer
/// uses once more closes cleanly after its answer, and `/health` says
/// 503 so that the balancer sends nothing new. Then it stops accepting,
/// closes what is idle and waits up to `stopping.grace` for the rest.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stopping: Stopping,
    signal: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_counted(
        listener,
        router,
        limits,
        stopping,
        signal,
        Occupancy::default(),
    )
    .await
}

/// As [`serve`], counting the open connections into `open` (the
/// `aegis_connections_open` gauge).
pub async fn serve_with_gauge(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stopping: Stopping,
    signal: impl Future<Output = ()>,
    open: prometheus_client::metrics::gauge::Gauge,
) -> std::io::Result<()> {
    let occupancy = Occupancy::with_gauge(open);
    serve_counted(listener, router, limits, stopping, signal, occupancy).await
}

async fn serve_counted(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stopping: Stopping,
    signal: impl Future<Output = ()>,
    occupancy: Occupancy,
) -> std::io::Result<()> {
    let connections = Connections::new(router, limits, stopping.draining.clone(), occupancy);
    connections.accept_until(&listener, signal).await;
    stopping.draining.begin();
    if !stopping.drain.is_zero() {
        tracing::info!(
            drain_secs = stopping.drain.as_secs(),
            "draining: answering with Connection: close"
        );
        connections
            .accept_until(&listener, tokio::time::sleep(stopping.drain))
            .await;
        // Closing the listener resets the connections the kernel holds
        // for it, requests and all: take them first.
        connections.accept_queued(&listener).await;
    }
    drop(listener);
    if !stopping.drain.is_zero() {
        // Closing a connection before its first request arrives loses
        // that request, as an idle one does.
        connections.first_requests(FIRST_REQUEST_WAIT).await;
    }
    if tokio::time::timeout(stopping.grace, connections.graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            grace_secs = stopping.grace.as_secs(),
            "requests still in flight after the shutdown grace; closing them"
        );
    }
    Ok(())
}

/// The open connections of one listener and what serves them.
struct Connections {
    occupancy: Arc<Mutex<Occupancy>>,
    /// Accepted connections whose first request has not started.
    awaiting_first_request: Arc<AtomicUsize>,
    graceful: GracefulShutdown,
    /// For trusted proxies: hyper's header timer off (it would also close
    /// idle connections), the watch keeps the clocks apart.
    proxy_builder: Arc<Builder<TokioExecutor>>,
    /// For everyone else: hyper's header timer on, at the short idle
    /// timeout they get anyway; it covers a pipelined head too.
    client_builder: Arc<Builder<TokioExecutor>>,
    router: Router,
    limits: ConnectionLimits,
    draining: Draining,
}

impl Connections {
    fn new(
        router: Router,
        limits: ConnectionLimits,
        draining: Draining,
        occupancy: Occupancy,
    ) -> Self {
        let builder = |header_read_timeout: Option<Duration>| {
            let mut builder = Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(header_read_timeout);
            builder
                .http2()
                .timer(TokioTimer::new())
                .keep_alive_interval(Some(Duration::from_secs(30)))
                .keep_alive_timeout(Duration::from_secs(10));
            Arc::new(builder)
        };
        Self {
            occupancy: Arc::new(Mutex::new(occupancy)),
            awaiting_first_request: Arc::default(),
            graceful: GracefulShutdown::new(),
            proxy_builder: builder(None),
            client_builder: builder(Some(HEADER_READ_TIMEOUT)),
            router,
            limits,
            draining,
        }
    }

    /// The watch of a new connection from `peer`, and its slot: `None`
    /// past a cap with every connection in the way busy.
    fn admit(&self, peer: SocketAddr) -> Option<(Arc<ConnectionWatch>, Slot)> {
        let idle_timeout = if is_proxy(&self.limits, peer.ip()) {
            self.limits.idle_timeout
        } else {
            HEADER_READ_TIMEOUT
        };
        let watch = ConnectionWatch::new(idle_timeout);
        let slot = take_slot(&self.occupancy, &self.limits, peer.ip(), watch.clone())?;
        Some((watch, slot))
    }

    /// Accepts and serves connections until `until` resolves.
    async fn accept_until(&self, listener: &TcpListener, until: impl Future<Output = ()>) {
        tokio::pin!(until);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(err) => {
                        // Out of descriptors or a connection reset before
                        // accept: wait a moment rather than spin.
                        tracing::warn!(error = %err, "accept failed");
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                },
                () = &mut until => return,
            };
            match self.admit(peer) {
                Some((watch, slot)) => self.spawn(stream, peer, watch, slot),
                None => drop(stream),
            }
        }
    }

    /// Accepts what is already queued, without waiting for more.
    async fn accept_queued(&self, listener: &TcpListener) {
        // A zero timeout polls the accept once: ready, or not queued.
        while let Ok(Ok((stream, peer))) =
            tokio::time::timeout(Duration::ZERO, listener.accept()).await
        {
            if let Some((watch, slot)) = self.admit(peer) {
                self.spawn(stream, peer, watch, slot);
            }
        }
    }

    /// Waits, at most `wait`, until every accepted connection has started
    /// its first request (or gone).
    async fn first_requests(&self, wait: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        while self.awaiting_first_request.load(Ordering::Acquire) > 0
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    fn spawn(&self, stream: TcpStream, peer: SocketAddr, watch: Arc<ConnectionWatch>, slot: Slot) {
        let _ = stream.set_nodelay(true);
        let first_request = FirstRequest::new(&self.awaiting_first_request);
        let router = self.router.clone();
        let builder = if is_proxy(&self.limits, peer.ip()) {
            self.proxy_builder.clone()
        } else {
            self.client_builder.clone()
        };
        let watcher = self.graceful.watcher();
        let draining = self.draining.clone();
        tokio::spawn(async move {
            let _slot = slot;
            // Evicted while it has sent nothing yet: closed like any other.
            let protocol = tokio::select! {
                protocol = first_bytes_arrive(&stream, HEADER_READ_TIMEOUT) => protocol,
                () = watch.expired() => None,
            };
            let Some(protocol) = protocol else {
                return;
            };
            let http1 = protocol == Protocol::Http1;
            if !http1 {
                watch.speaks_http2();
            }
            let service = router
                .map_request(move |mut request: axum::http::Request<Incoming>| {
                    request.extensions_mut().insert(ConnectInfo(peer));
                    request
                })
                .map_future({
                    let watch = watch.clone();
                    let first_request = first_request.clone();
                    move |answer| {
                        first_request.started();
                        let in_flight = watch.request_started();
                        let draining = draining.clone();
                        async move {
                            answer.await.map(|mut response: axum::response::Response| {
                                // HTTP/2 has no such header: its GOAWAY
                                // names the last stream that is answered.
                                if http1 && draining.is_draining() {
                                    response
                                        .headers_mut()
                                        .insert(CONNECTION, HeaderValue::from_static("close"));
                                }
                                // The body holds the request in flight until
                                // it has been sent (or the connection is gone).
                                response.map(|body| {
                                    body.map_frame(move |frame| {
                                        let _held = &in_flight;
                                        frame
                                    })
                                })
                            })
                        }
                    }
                });
            let connection = builder.serve_connection_with_upgrades(
                TokioIo::new(WatchedStream::new(stream, watch.clone())),
                TowerToHyperService::new(service),
            );
            tokio::select! {
                _ = watcher.watch(connection) => {}
                // A head too slow, or idle too long: dropping the
                // connection closes it.
                () = watch.expired() => {}
            }
        });
    }
}

/// One accepted connection in [`Connections`]'s count of those whose first
/// request has not started: out of it at the first request, or when the
/// connection goes.
struct FirstRequest {
    awaiting: Arc<AtomicUsize>,
    started: AtomicBool,
}

impl FirstRequest {
    fn new(awaiting: &Arc<AtomicUsize>) -> Arc<Self> {
        awaiting.fetch_add(1, Ordering::AcqRel);
        Arc::new(Self {
            awaiting: awaiting.clone(),
            started: AtomicBool::new(false),
        })
    }

    fn started(&self) {
        if !self.started.swap(true, Ordering::AcqRel) {
            self.awaiting.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for FirstRequest {
    fn drop(&mut self) {
        self.started();
    }
}

/// Which protocol a connection speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http1,
    /// HTTP/2 with prior knowledge (it starts with the preface).
    Http2,
}

/// The protocol of a connection whose first bytes are `first` (at most the
/// preface's length), or `None` while they are a part of the preface.
fn protocol_of(first: &[u8]) -> Option<Protocol> {
    if !H2_PREFACE.starts_with(first) {
        Some(Protocol::Http1)
    } else if first.len() == H2_PREFACE.len() {
        Some(Protocol::Http2)
    } else {
        None
    }
}

/// Waits until `stream` has sent enough to tell HTTP/1 from HTTP/2: a byte
/// that is not the start of the HTTP/2 preface, or the whole preface.
/// `None` when that does not happen within `limit`, or the peer closed.
/// (The header-read timeout only starts once the protocol is known.)
async fn first_bytes_arrive(stream: &TcpStream, limit: Duration) -> Option<Protocol> {
    let wait = async {
        let mut buf = [0u8; 24];
        loop {
            if stream.readable().await.is_err() {
                return None;
            }
            match stream.peek(&mut buf).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => match protocol_of(&buf[..n]) {
                    Some(protocol) => return Some(protocol),
                    // A part of the preface: wait for the rest.
                    None => tokio::time::sleep(Duration::from_millis(5)).await,
                },
            }
        }
    };
    tokio::time::timeout(limit, wait).await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bytes_tell_the_protocol() {
        assert_eq!(
            protocol_of(b"GET /health/live HTTP/1.1\r\nHost: 127.0"),
            Some(Protocol::Http1)
        );
        assert_eq!(protocol_of(b"P"), None);
        assert_eq!(protocol_of(b"PRI * HTTP/2.0\r\n"), None);
        assert_eq!(protocol_of(b"POST /mcp"), Some(Protocol::Http1));
        assert_eq!(protocol_of(H2_PREFACE), Some(Protocol::Http2));
    }
}
