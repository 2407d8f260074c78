//! Shipping the audit log off the host (`AUDIT_FORWARD_URL`,
//! `docs/audit.md`). The local log stays the source of truth and keeps the
//! write-ahead rule; a background task follows it (`follow`) and sends each
//! entry, exactly as written, to one sink: syslog over TLS (`syslog`) or
//! HTTPS JSON lines (`http`). After the sink takes a batch, the last
//! sequence number is persisted (`cursor`), so an outage or a restart
//! delays entries and loses none.
//!
//! [`ForwardState`] says how far behind the sink is, for `/health`, the
//! metrics and (with `AUDIT_FORWARD_MAX_LAG_MINUTES`) the log itself, which
//! then refuses entries, and so tool calls, while an entry has waited
//! longer than that: as Vault stops serving when no audit device works.

mod cursor;
pub(crate) mod follow;
mod http;
mod syslog;

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

pub use cursor::{CURSOR_FILE_NAME, Cursor};
use follow::{Follower, LogLine};

use crate::config::{AuditForwardSettings, ForwardProtocol, SYSLOG_TLS_PORT};
use crate::metrics::Metrics;

/// Entries sent in one batch at most.
const BATCH: usize = 500;
/// How often the log is looked at when the sink has caught up.
const POLL: Duration = Duration::from_millis(200);
/// Waits between attempts while the sink is down: doubling up to the last.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_LAST: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// A setting that cannot work (stops startup).
    #[error("{0}")]
    Config(&'static str),
    #[error("AUDIT_FORWARD_CA_FILE: {0}")]
    CaFile(String),
    #[error("the forwarding cursor: {0}")]
    Cursor(String),
    /// The sink did not take a batch (retried).
    #[error("{0}")]
    Sink(String),
}

/// How far behind the sink is; shared by the forwarder, `/health`, and
/// the log (which refuses entries while `blocked`).
pub struct ForwardState {
    /// `scheme://host:port`, nothing more.
    pub sink: String,
    max_lag: Option<Duration>,
    forwarded: AtomicU64,
    lag_seconds: AtomicU64,
    up: AtomicBool,
    blocked: AtomicBool,
    /// Entries the log's sequence skipped, never forwarded (a file dropped
    /// before it was read, a hole in the log): the copy is incomplete.
    missing: AtomicU64,
    /// Since when an entry has waited for the sink, when the entries'
    /// own times are not known (nothing read yet).
    waiting_since: Mutex<Option<Instant>>,
    /// Where the log ends now, so that `/health` counts the backlog when
    /// asked, not when the forwarder last looked (it sleeps up to 30 s
    /// between tries while the sink is down).
    written: WrittenSeq,
}

/// What `/health` shows of forwarding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForwardStatus {
    pub forwarded_seq: u64,
    pub lag_entries: u64,
    pub lag_seconds: u64,
    pub sink_up: bool,
    /// Calls are refused: an entry waited longer than the bound.
    pub blocked: bool,
    /// Entries the copy will never have (a gap in the sequence).
    pub missing_entries: u64,
}

impl std::fmt::Debug for ForwardState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForwardState")
            .field("sink", &self.sink)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

impl ForwardState {
    fn new(sink: String, max_lag: Option<Duration>, forwarded: u64, written: WrittenSeq) -> Self {
        Self {
            sink,
            max_lag,
            forwarded: AtomicU64::new(forwarded),
            lag_seconds: AtomicU64::new(0),
            up: AtomicBool::new(true),
            blocked: AtomicBool::new(false),
            missing: AtomicU64::new(0),
            waiting_since: Mutex::new(None),
            written,
        }
    }

    /// Whether the operator bounded the lag (`AUDIT_FORWARD_MAX_LAG_MINUTES`).
    pub fn bounded(&self) -> bool {
        self.max_lag.is_some()
    }

    /// Whether entries (and so tool calls) are refused now.
    pub fn blocked(&self) -> bool {
        self.blocked.load(Ordering::Relaxed)
    }

    pub fn status(&self) -> ForwardStatus {
        let forwarded = self.forwarded.load(Ordering::Relaxed);
        ForwardStatus {
            forwarded_seq: forwarded,
            lag_entries: (self.written)().saturating_sub(forwarded),
            lag_seconds: self.lag_seconds.load(Ordering::Relaxed),
            sink_up: self.up.load(Ordering::Relaxed),
            blocked: self.blocked(),
            missing_entries: self.missing.load(Ordering::Relaxed),
        }
    }

    /// Looks at the log's end; `oldest_age` is how long the oldest entry
    /// not yet taken by the sink has waited, when it has been read. How many wait, for how long, and whether that is past the
    /// bound: the lag is that entry's age (the red team's F2: counting from
    /// when the backlog was last empty blocked calls under steady traffic
    /// to a healthy sink that never let the backlog empty).
    fn observe(&self, oldest_age: Option<Duration>, now: Instant) {
        let forwarded = self.forwarded.load(Ordering::Relaxed);
        let waiting = (self.written)().saturating_sub(forwarded);
        let mut since = self.waiting_since.lock().unwrap_or_else(|p| p.into_inner());
        let lag = match (waiting, oldest_age, *since) {
            (0, _, _) => {
                *since = None;
                Duration::ZERO
            }
            (_, Some(age), _) => {
                *since = now.checked_sub(age);
                age
            }
            (_, None, None) => {
                *since = Some(now);
                Duration::ZERO
            }
            (_, None, Some(at)) => now.saturating_duration_since(at),
        };
        self.lag_seconds.store(lag.as_secs(), Ordering::Relaxed);
        self.blocked
            .store(self.max_lag.is_some_and(|max| lag > max), Ordering::Relaxed);
    }
}

/// The sink of the settings.
enum Sink {
    Syslog(syslog::SyslogSink),
    Http(http::HttpSink),
}

impl Sink {
    async fn send(&mut self, lines: &[LogLine]) -> Result<(), ForwardError> {
        match self {
            Self::Syslog(sink) => sink.send(lines).await,
            Self::Http(sink) => sink.send(lines).await,
        }
    }
}

/// Where the written entries end: the log's last sequence number.
pub type WrittenSeq = Arc<dyn Fn() -> u64 + Send + Sync>;

/// Starts forwarding `data_dir`'s log; `written` says how far the log is.
/// Fails (and startup stops) on settings that cannot work: an unreadable
/// CA file, a damaged cursor.
pub fn spawn(
    settings: &AuditForwardSettings,
    data_dir: &Path,
    hostname: &str,
    written: WrittenSeq,
    metrics: Option<Arc<Metrics>>,
) -> Result<Arc<ForwardState>, ForwardError> {
    let cursor = Cursor::new(data_dir);
    let mut after = cursor
        .load()
        .map_err(|err| ForwardError::Cursor(err.to_string()))?;
    if after > written() {
        // A cursor past the log's end: the data dir holds a new log (the
        // old one moved away or restored from an older backup). Its
        // entries are all new to the sink.
        tracing::warn!(
            cursor = after,
            "the forwarding cursor is past the audit log's last entry; forwarding the log from its start"
        );
        after = 0;
    }
    let host = settings
        .url
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let extra_roots = read_ca_file(settings.ca_file.as_deref())?;
    let (sink, port) = match settings.protocol {
        ForwardProtocol::SyslogTls | ForwardProtocol::SyslogTcp => {
            let port = settings.url.port().unwrap_or(SYSLOG_TLS_PORT);
            let tls = (settings.protocol == ForwardProtocol::SyslogTls)
                .then(|| tls_config(&extra_roots))
                .transpose()?;
            let sink = syslog::SyslogSink::new(host.clone(), port, tls, hostname.to_owned())?;
            (Sink::Syslog(sink), port)
        }
        ForwardProtocol::Http => {
            let roots = extra_roots
                .iter()
                .map(|der| reqwest::Certificate::from_der(der.as_ref()))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|err| ForwardError::CaFile(err.to_string()))?;
            let sink =
                http::HttpSink::new(settings.url.clone(), roots, settings.authorization.as_ref())?;
            let port = settings.url.port_or_known_default().unwrap_or(443);
            (Sink::Http(sink), port)
        }
    };
    let label = format!("{}://{host}:{port}", settings.url.scheme());
    let state = Arc::new(ForwardState::new(label, settings.max_lag, after, written));
    let task = Forwarder {
        state: state.clone(),
        data_dir: data_dir.to_path_buf(),
        follower: Some(Follower::new(data_dir, after)),
        cursor,
        sink,
        metrics,
    };
    tokio::spawn(task.run());
    Ok(state)
}

struct Forwarder {
    state: Arc<ForwardState>,
    data_dir: std::path::PathBuf,
    /// `None` only while a read runs on the blocking pool.
    follower: Option<Follower>,
    cursor: Cursor,
    sink: Sink,
    metrics: Option<Arc<Metrics>>,
}

impl Forwarder {
    async fn run(mut self) {
        let mut batch: Vec<LogLine> = Vec::new();
        let mut retry = RETRY_FIRST;
        loop {
            if batch.is_empty() {
                batch = self.read().await;
            }
            self.observe(&batch);
            if batch.is_empty() {
                tokio::time::sleep(POLL).await;
                continue;
            }
            match self.sink.send(&batch).await {
                Ok(()) => {
                    let last = batch.last().map_or(0, |line| line.seq);
                    self.taken(last, batch.len() as u64).await;
                    batch.clear();
                    retry = RETRY_FIRST;
                }
                Err(err) => {
                    if self.state.up.swap(false, Ordering::Relaxed) {
                        tracing::warn!(sink = %self.state.sink, error = %err, "the audit sink does not take entries; retrying");
                    }
                    self.observe(&batch);
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(RETRY_LAST);
                }
            }
        }
    }

    /// The next lines of the log (on the blocking pool: it reads files).
    async fn read(&mut self) -> Vec<LogLine> {
        let Some(mut follower) = self.follower.take() else {
            return Vec::new();
        };
        let joined = tokio::task::spawn_blocking(move || {
            let read = follower.read(BATCH);
            (follower, read)
        })
        .await;
        let Ok((follower, read)) = joined else {
            // The read panicked: start again from what the sink has.
            let forwarded = self.state.forwarded.load(Ordering::Relaxed);
            self.follower = Some(Follower::new(&self.data_dir, forwarded));
            return Vec::new();
        };
        let missing = follower.missing;
        if missing > self.state.missing.swap(missing, Ordering::Relaxed) {
            tracing::error!(
                entries = missing,
                "audit entries are missing from the log's sequence (dropped by AUDIT_KEEP_FILES before they were forwarded, or a hole in the log): the forwarded copy has a gap"
            );
        }
        self.follower = Some(follower);
        read.unwrap_or_else(|err| {
            tracing::warn!(error = %err, "the audit log could not be read for forwarding");
            Vec::new()
        })
    }

    /// The sink took everything up to `last`.
    async fn taken(&mut self, last: u64, count: u64) {
        let cursor = self.cursor.clone();
        let stored = tokio::task::spawn_blocking(move || cursor.store(last)).await;
        if !matches!(stored, Ok(Ok(()))) {
            // The entries are at the sink; a restart may send them again.
            tracing::warn!("the forwarding cursor could not be stored");
        }
        self.state.forwarded.store(last, Ordering::Relaxed);
        if !self.state.up.swap(true, Ordering::Relaxed) {
            tracing::info!(sink = %self.state.sink, "the audit sink takes entries again");
        }
        if let Some(metrics) = &self.metrics {
            metrics.count_audit_forwarded(count);
        }
        self.observe(&[]);
    }

    /// Updates the state; `waiting` is the batch not yet taken (its first
    /// entry is the oldest that waits).
    fn observe(&self, waiting: &[LogLine]) {
        let oldest_age = waiting
            .first()
            .and_then(|line| line.written_at)
            .map(|at| (chrono::Utc::now() - at).to_std().unwrap_or(Duration::ZERO));
        self.state.observe(oldest_age, Instant::now());
        if let Some(metrics) = &self.metrics {
            let status = self.state.status();
            metrics.set_audit_forward(
                status.sink_up,
                status.lag_entries,
                status.lag_seconds,
                status.missing_entries,
            );
        }
    }
}

/// The certificates of `AUDIT_FORWARD_CA_FILE` (PEM), trusted besides the
/// system's roots.
fn read_ca_file(path: Option<&Path>) -> Result<Vec<CertificateDer<'static>>, ForwardError> {
    let Some(path) = path else {
        return Ok(Vec::new());
    };
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|err| ForwardError::CaFile(format!("{}: {err}", path.display())))?;
    if certs.is_empty() {
        return Err(ForwardError::CaFile(format!(
            "{} holds no certificate",
            path.display()
        )));
    }
    Ok(certs)
}

/// TLS for the syslog sink: the system's roots and the CA file's, verified
/// as the platform does (rustls-platform-verifier, as reqwest does).
fn tls_config(
    extra_roots: &[CertificateDer<'static>],
) -> Result<Arc<rustls::ClientConfig>, ForwardError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new_with_extra_roots(
        extra_roots.iter().cloned(),
        provider.clone(),
    )
    .map_err(|_| ForwardError::Config("the TLS verifier could not be built"))?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|_| ForwardError::Config("TLS could not be set up"))?
        .dangerous()
        // Not dangerous: the platform verifier checks the chain and the name.
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state over a log whose end the test moves.
    fn state_over(max_lag: Option<Duration>, forwarded: u64) -> (ForwardState, Arc<AtomicU64>) {
        let end = Arc::new(AtomicU64::new(forwarded));
        let read = end.clone();
        let written: WrittenSeq = Arc::new(move || read.load(Ordering::Relaxed));
        (
            ForwardState::new("x".into(), max_lag, forwarded, written),
            end,
        )
    }

    /// The log has entries up to `written`; the state looks at it.
    fn observe(
        (state, end): &(ForwardState, Arc<AtomicU64>),
        written: u64,
        oldest_age: Option<Duration>,
        now: Instant,
    ) {
        end.store(written, Ordering::Relaxed);
        state.observe(oldest_age, now);
    }

    /// The red team's replay of F1 saw `lag_entries: 0` while a down sink
    /// had dozens of entries to take: the count was the forwarder's, from
    /// before it went to sleep between tries.
    #[test]
    fn the_backlog_is_counted_when_asked() {
        let log = state_over(None, 10);
        observe(&log, 10, None, Instant::now());
        log.1.store(70, Ordering::Relaxed);
        assert_eq!(log.0.status().lag_entries, 60);
    }

    #[test]
    fn nothing_waiting_is_no_lag() {
        let log = state_over(Some(Duration::from_secs(60)), 10);
        let state = &log.0;
        observe(&log, 10, None, Instant::now());
        assert_eq!(state.status().lag_entries, 0);
        assert!(!state.blocked());
    }

    #[test]
    fn the_lag_is_counted_from_when_an_entry_first_waited() {
        let log = state_over(Some(Duration::from_secs(60)), 10);
        let state = &log.0;
        let start = Instant::now();
        observe(&log, 12, None, start);
        observe(&log, 13, None, start + Duration::from_secs(30));
        let status = state.status();
        assert_eq!((status.lag_entries, status.lag_seconds), (3, 30));
        assert!(!status.blocked);
        observe(&log, 13, None, start + Duration::from_secs(61));
        assert!(state.blocked());
    }

    #[test]
    fn catching_up_unblocks_at_once() {
        let log = state_over(Some(Duration::from_secs(60)), 10);
        let state = &log.0;
        let start = Instant::now();
        observe(&log, 12, None, start);
        observe(&log, 12, None, start + Duration::from_secs(120));
        assert!(state.blocked());
        state.forwarded.store(12, Ordering::Relaxed);
        observe(&log, 12, None, start + Duration::from_secs(121));
        assert!(!state.blocked());
        assert_eq!(state.status().lag_seconds, 0);
    }

    /// The red team's F2: under steady traffic the backlog is never empty,
    /// but no entry waits long; the lag is the oldest waiting entry's age.
    #[test]
    fn the_lag_is_the_oldest_waiting_entrys_age() {
        let log = state_over(Some(Duration::from_secs(60)), 10);
        let state = &log.0;
        let start = Instant::now();
        for second in 0..300 {
            // A new entry every second, each taken 1.5 s after it was written.
            state.forwarded.store(10 + second, Ordering::Relaxed);
            observe(
                &log,
                12 + second,
                Some(Duration::from_millis(1500)),
                start + Duration::from_secs(second),
            );
            assert!(!state.blocked(), "blocked after {second} s");
        }
        assert_eq!(state.status().lag_seconds, 1);
        observe(
            &log,
            400,
            Some(Duration::from_secs(61)),
            start + Duration::from_secs(301),
        );
        assert!(state.blocked());
    }

    #[test]
    fn without_a_bound_nothing_is_ever_refused() {
        let log = state_over(None, 0);
        let state = &log.0;
        let start = Instant::now();
        observe(&log, 5, None, start);
        observe(&log, 5, None, start + Duration::from_secs(86_400));
        assert!(!state.blocked());
        assert_eq!(state.status().lag_seconds, 86_400);
    }
}
