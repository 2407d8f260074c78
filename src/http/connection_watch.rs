//! The clocks of one client connection (issue 43), kept apart:
//!
//! - the **header-read timeout** ([`HEADER_READ_TIMEOUT`]), from the first
//!   byte of a request to the end of its head: a client that dribbles a
//!   head (slowloris) is closed, and so is a new connection that sends no
//!   request at all;
//! - the **idle timeout**, between the end of one answer (its last byte
//!   leaving, which may be well after hyper took the body whole) and the
//!   first byte of the next request on a kept-alive connection: for a trusted proxy
//!   (`FORWARDED_ALLOW_IPS`), `IDLE_CONNECTION_TIMEOUT_SECONDS`, longer than
//!   a load balancer keeps its idle connections to us, so that the balancer
//!   closes them, not we (when the server closes first, the balancer can
//!   send a request on the connection at that very moment and report an
//!   error to its client: nginx's "upstream prematurely closed
//!   connection"); for anyone else the header-read timeout, so an idle
//!   connection is cheap to hold for no one (the red team's F2, issue 53);
//! - the **send timeout** ([`SEND_TIMEOUT`]): an answer the client does not
//!   read, so that no byte leaves for that long, closes the connection,
//!   request in flight or not, and while bytes leave no other clock runs (F2: four clients that never read held their
//!   slots with no timer at all).
//!
//! The listener may also **evict** a connection that sits idle, to give its
//! slot to a new one when every slot is taken (`occupancy`).
//!
//! hyper has one timer for both (its HTTP/1 header-read timeout starts as
//! soon as a connection goes idle), so the listener turns it off and a
//! [`ConnectionWatch`] beside each connection enforces both. It learns
//! what it needs from two places: [`WatchedStream`], the socket, sees the
//! first bytes of a request arrive while nothing is in flight; the
//! service, through [`ConnectionWatch::request_started`] and the
//! [`InFlight`] guard that the answer's body carries until it has been
//! sent, sees requests begin and end.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long a client has to send a request head, from its first byte; and
/// how long a new connection has to send its first request.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an answer may make no progress at all (the client reads
/// nothing) before its connection is closed.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// What the watch knows of one connection.
#[derive(Debug)]
struct State {
    /// Requests received and not yet answered in full.
    in_flight: u32,
    /// When the last answer was sent in full (its last byte left), or
    /// when the connection opened.
    idle_since: Instant,
    /// When the first bytes of a request arrived while nothing was in
    /// flight, until its head has been read.
    head_started: Option<Instant>,
    /// Whether a request has arrived on this connection yet.
    served: bool,
    /// When a write found the socket full, until a byte leaves again.
    stalled_since: Option<Instant>,
    /// The listener took this connection's slot back.
    evicted: bool,
}

/// The deadlines of one connection; shared by its socket, its service and
/// the task that closes it when a deadline passes.
#[derive(Debug)]
pub struct ConnectionWatch {
    state: Mutex<State>,
    /// Wakes the watching task when a deadline may have come closer.
    changed: Notify,
    idle_timeout: Duration,
    /// HTTP/1 only: on HTTP/2, bytes arrive while idle (pings, settings)
    /// and say nothing about a request head.
    heads: std::sync::atomic::AtomicBool,
}

impl ConnectionWatch {
    /// The watch of a new connection, which speaks HTTP/1 until
    /// [`Self::speaks_http2`] says otherwise.
    pub fn new(idle_timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                in_flight: 0,
                idle_since: Instant::now(),
                head_started: None,
                served: false,
                stalled_since: None,
                evicted: false,
            }),
            changed: Notify::new(),
            idle_timeout,
            heads: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// The connection turned out to speak HTTP/2 (prior knowledge).
    pub fn speaks_http2(&self) {
        self.heads
            .store(false, std::sync::atomic::Ordering::Relaxed);
    }

    /// Since when the connection has waited for a request, when it does:
    /// no request in flight, no head arriving, no answer stalled. What the
    /// listener may evict.
    pub fn idle_since(&self) -> Option<Instant> {
        let state = self.state();
        (state.in_flight == 0
            && state.head_started.is_none()
            && state.stalled_since.is_none()
            && !state.evicted)
            .then_some(state.idle_since)
    }

    /// The listener takes the connection's slot back: it closes at once.
    pub fn evict(&self) {
        self.state().evicted = true;
        self.changed.notify_one();
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Plain counters and instants: consistent even after a panic.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The moment this connection is to be closed, as things stand: while
    /// a request is in flight, only when its answer stalls (the request's
    /// own timeouts apply).
    fn deadline(&self) -> Option<Instant> {
        let state = self.state();
        let stalled = state.stalled_since.map(|since| since + SEND_TIMEOUT);
        if state.evicted {
            Some(Instant::now())
        } else if stalled.is_some() || state.in_flight > 0 {
            // An answer on its way, its request in flight or its last
            // bytes already handed to hyper: only a stall ends it.
            stalled
        } else if let Some(started) = state.head_started {
            Some(started + HEADER_READ_TIMEOUT)
        } else if !state.served {
            Some(state.idle_since + HEADER_READ_TIMEOUT)
        } else {
            Some(state.idle_since + self.idle_timeout)
        }
    }

    /// Bytes arrived on the socket.
    fn bytes_arrived(&self) {
        if !self.heads.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let mut state = self.state();
        if state.in_flight == 0 && state.head_started.is_none() {
            state.head_started = Some(Instant::now());
            drop(state);
            self.changed.notify_one();
        }
    }

    /// A request's head has been read and the service called: it is in
    /// flight until the returned guard is dropped (the answer's body
    /// carries it until the body has been sent).
    pub fn request_started(self: &Arc<Self>) -> InFlight {
        let mut state = self.state();
        state.in_flight += 1;
        state.head_started = None;
        state.served = true;
        InFlight(self.clone())
    }

    /// Resolves when the connection is to be closed: a head took too long,
    /// or the connection sat idle too long. Never while a request is in
    /// flight.
    pub async fn expired(&self) {
        loop {
            let changed = self.changed.notified();
            match self.deadline() {
                None => changed.await,
                Some(deadline) if deadline <= Instant::now() => return,
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = changed => {}
                    }
                }
            }
        }
    }
}

impl ConnectionWatch {
    /// A write found the socket's buffer full.
    fn write_stalled(&self) {
        let mut state = self.state();
        if state.stalled_since.is_none() {
            state.stalled_since = Some(Instant::now());
            drop(state);
            self.changed.notify_one();
        }
    }

    /// Bytes left for the client. With no request in flight they are the
    /// end of an answer whose body hyper has taken whole: the connection
    /// is idle from its last byte, not from the hand-over.
    fn write_progressed(&self) {
        let mut state = self.state();
        let was_stalled = state.stalled_since.take().is_some();
        if state.in_flight == 0 {
            state.idle_since = Instant::now();
        }
        drop(state);
        // A deadline only moves later here: the watch, woken at the
        // earlier one, looks again (no wake-up per write).
        if was_stalled {
            self.changed.notify_one();
        }
    }

    /// What a write of the socket said.
    fn wrote(&self, polled: &Poll<io::Result<usize>>) {
        match polled {
            Poll::Pending => self.write_stalled(),
            Poll::Ready(Ok(n)) if *n > 0 => self.write_progressed(),
            Poll::Ready(_) => {}
        }
    }
}

/// One request in flight on a watched connection; dropping it ends it.
#[derive(Debug)]
pub struct InFlight(Arc<ConnectionWatch>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.idle_since = Instant::now();
            drop(state);
            self.0.changed.notify_one();
        }
    }
}

/// A socket that tells its [`ConnectionWatch`] when bytes arrive.
#[derive(Debug)]
pub struct WatchedStream<S> {
    inner: S,
    watch: Arc<ConnectionWatch>,
}

impl<S> WatchedStream<S> {
    pub fn new(inner: S, watch: Arc<ConnectionWatch>) -> Self {
        Self { inner, watch }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WatchedStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.watch.bytes_arrived();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WatchedStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch.wrote(&polled);
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch.wrote(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IDLE: Duration = Duration::from_secs(620);

    /// Whether the watch has expired once the paused clock has moved by `by`.
    async fn expired_after(watch: &ConnectionWatch, by: Duration) -> bool {
        tokio::time::timeout(by, watch.expired()).await.is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_new_connection_has_the_header_timeout_for_its_first_request() {
        let watch = ConnectionWatch::new(IDLE);
        assert!(!expired_after(&watch, HEADER_READ_TIMEOUT - Duration::from_millis(1)).await);
        assert!(expired_after(&watch, Duration::from_millis(2)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_kept_alive_connection_waits_the_idle_timeout_not_the_header_timeout() {
        let watch = ConnectionWatch::new(IDLE);
        drop(watch.request_started());
        assert!(!expired_after(&watch, Duration::from_secs(600)).await);
        assert!(expired_after(&watch, Duration::from_secs(21)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_head_dribbled_on_a_kept_alive_connection_still_has_ten_seconds() {
        let watch = ConnectionWatch::new(IDLE);
        drop(watch.request_started());
        assert!(!expired_after(&watch, Duration::from_secs(300)).await);
        watch.bytes_arrived();
        assert!(!expired_after(&watch, HEADER_READ_TIMEOUT - Duration::from_millis(1)).await);
        assert!(expired_after(&watch, Duration::from_millis(2)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn nothing_expires_while_a_request_is_in_flight() {
        let watch = ConnectionWatch::new(IDLE);
        let request = watch.request_started();
        // Body bytes of the request in flight are not a new head.
        watch.bytes_arrived();
        assert!(!expired_after(&watch, Duration::from_secs(3600)).await);
        drop(request);
        assert!(!expired_after(&watch, Duration::from_secs(600)).await);
        assert!(expired_after(&watch, Duration::from_secs(21)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_the_client_does_not_read_closes_the_connection_after_the_send_timeout() {
        let watch = ConnectionWatch::new(IDLE);
        let request = watch.request_started();
        watch.write_stalled();
        assert!(!expired_after(&watch, SEND_TIMEOUT - Duration::from_millis(1)).await);
        assert!(expired_after(&watch, Duration::from_millis(2)).await);
        drop(request);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_that_makes_progress_keeps_its_connection() {
        let watch = ConnectionWatch::new(IDLE);
        let _request = watch.request_started();
        for _ in 0..10 {
            watch.write_stalled();
            assert!(!expired_after(&watch, SEND_TIMEOUT / 2).await);
            watch.write_progressed();
        }
        assert!(!expired_after(&watch, Duration::from_secs(3600)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn an_answer_still_leaving_after_its_body_was_handed_over_is_not_idle() {
        // hyper drops the body (and its in-flight guard) once it has taken
        // the last bytes, before they have left: a slow reader of a long
        // answer was cut by the idle timer (helper-4's probe, issue 53).
        let watch = ConnectionWatch::new(HEADER_READ_TIMEOUT);
        drop(watch.request_started());
        for _ in 0..10 {
            assert!(!expired_after(&watch, HEADER_READ_TIMEOUT / 2).await);
            watch.write_progressed();
        }
        watch.write_stalled();
        assert!(!expired_after(&watch, SEND_TIMEOUT - Duration::from_millis(1)).await);
        assert!(expired_after(&watch, Duration::from_millis(2)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_goes_idle_from_the_last_byte_of_its_answer() {
        let watch = ConnectionWatch::new(HEADER_READ_TIMEOUT);
        drop(watch.request_started());
        tokio::time::advance(HEADER_READ_TIMEOUT / 2).await;
        watch.write_progressed();
        assert!(
            watch
                .idle_since()
                .is_some_and(|since| since.elapsed() < Duration::from_millis(1))
        );
        assert!(!expired_after(&watch, HEADER_READ_TIMEOUT - Duration::from_millis(1)).await);
        assert!(expired_after(&watch, Duration::from_millis(2)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn an_evicted_connection_closes_at_once_and_only_an_idle_one_is_offered() {
        let watch = ConnectionWatch::new(IDLE);
        let request = watch.request_started();
        assert!(watch.idle_since().is_none(), "a request in flight");
        drop(request);
        assert!(watch.idle_since().is_some());
        watch.evict();
        assert!(watch.idle_since().is_none());
        assert!(expired_after(&watch, Duration::from_millis(1)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn on_http2_bytes_while_idle_are_not_a_request_head() {
        let watch = ConnectionWatch::new(IDLE);
        watch.speaks_http2();
        drop(watch.request_started());
        watch.bytes_arrived();
        assert!(!expired_after(&watch, Duration::from_secs(600)).await);
        assert!(expired_after(&watch, Duration::from_secs(21)).await);
    }
}
