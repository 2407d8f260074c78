//! The hash-chained audit log: `DATA_DIR/audit.log`, JSON lines, one writer.
//! Format and chain in `entry` and `chain`, the writer (rotation, fault
//! handling) in `writer`, what tells it its path changed in `watch`, when
//! entries are fsynced (`AUDIT_SYNC`) in `sync`, `audit verify` in
//! `verify`, shipping it off the host in `forward`, a copy for a backup
//! in `snapshot`.
//! See `docs/audit.md`. Knows no MCP: callers build [`Event`]s.
//!
//! Tool calls are strict (a call whose `tool_call_started` entry cannot be
//! written is refused); OAuth and admin events are best effort
//! ([`AuditLog::record_best_effort`] logs a warning when the write fails).

pub mod chain;
pub(crate) mod entry;
pub mod forward;
mod lock;
mod log_file;
pub mod snapshot;
mod sync;
pub mod verify;
mod watch;
mod writer;

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use secrecy::{ExposeSecret, SecretString};

pub use chain::ChainKey;
pub use entry::{AuditIdentity, Event, EventKind, Outcome};
pub use sync::{AuditSync, DEFAULT_SYNC_INTERVAL};

/// The log's file name inside `DATA_DIR`.
pub const AUDIT_FILE_NAME: &str = "audit.log";
/// The lock file beside the log: one writing process per log.
pub const AUDIT_LOCK_NAME: &str = "audit.lock";
pub use crate::config::DEFAULT_AUDIT_MAX_BYTES as DEFAULT_MAX_BYTES;

/// Why the audit log refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuditError {
    /// The log could not be opened or its opening entries written (stops startup).
    #[error("the audit log {path} cannot be written: {reason}")]
    Open { path: String, reason: String },
    /// Another process holds the log's lock (two processes on one log
    /// would fork the chain): startup stops with exit code 2.
    #[error(
        "the audit log is in use by another process (it holds {lock}); give each replica its own DATA_DIR"
    )]
    Locked { lock: String },
    /// A write or fsync failed; the entry is not (or, after a failed
    /// fsync, maybe not) in the log.
    #[error("the audit log is unavailable: {0}")]
    Unavailable(String),
    /// The writer is gone.
    #[error("the audit log writer has stopped")]
    Stopped,
}

impl AuditError {
    fn open(err: std::io::Error) -> Self {
        Self::Open {
            path: String::new(),
            reason: err.to_string(),
        }
    }
}

/// Where and how the log is written.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    pub data_dir: PathBuf,
    pub key: ChainKey,
    pub max_bytes: u64,
    /// Rotated files kept; `None` keeps every one (the default): a log
    /// that drops its oldest file on size lets anyone who can make calls
    /// decide when history disappears.
    pub keep_files: Option<usize>,
    /// Where write latencies are observed, when set.
    pub metrics: Option<Arc<crate::metrics::Metrics>>,
    /// Written into every entry as `replica` (`REPLICA_ID`).
    pub replica: Option<String>,
    /// When entries are fsynced (`AUDIT_SYNC`).
    pub sync: AuditSync,
}

impl AuditOptions {
    pub fn new(data_dir: &Path, key: Option<&SecretString>) -> Self {
        Self {
            data_dir: data_dir.to_path_buf(),
            key: ChainKey::new(key.map(|k| k.expose_secret().as_bytes())),
            max_bytes: DEFAULT_MAX_BYTES,
            keep_files: None,
            metrics: None,
            replica: None,
            sync: AuditSync::default(),
        }
    }
}

/// A cheap handle to the one writer.
#[derive(Clone)]
pub struct AuditLog {
    durable: Arc<sync::Durable>,
    inner: Arc<Info>,
    /// Stops the flusher (after a last fsync) when the last handle goes.
    _stop: Arc<StopOnDrop>,
}

struct StopOnDrop(Arc<sync::Durable>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop();
    }
}

struct Info {
    path: PathBuf,
    keyed: bool,
    metrics: Option<Arc<crate::metrics::Metrics>>,
    /// How far behind the sink is, when the log is forwarded.
    forward: OnceLock<Arc<forward::ForwardState>>,
}

impl std::fmt::Debug for AuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditLog")
            .field("path", &self.inner.path)
            .field("keyed", &self.inner.keyed)
            .finish()
    }
}

impl AuditLog {
    /// Opens `data_dir/audit.log` with the default rotation size.
    pub async fn open(data_dir: &Path, key: Option<&SecretString>) -> Result<Self, AuditError> {
        Self::open_with(AuditOptions::new(data_dir, key)).await
    }

    /// Creates `data_dir` (0700) when missing, opens the log, resumes its
    /// chain, writes `log_opened` durably and starts the flusher. Fails
    /// when the log cannot be written: startup stops.
    pub async fn open_with(options: AuditOptions) -> Result<Self, AuditError> {
        let path = options.data_dir.join(AUDIT_FILE_NAME);
        let display = path.display().to_string();
        let with_path = |err: AuditError| match err {
            AuditError::Open { reason, .. } => AuditError::Open {
                path: display.clone(),
                reason,
            },
            other => other,
        };
        if !options.key.is_keyed() {
            tracing::warn!(
                "AUDIT_HMAC_KEY is not set: the audit chain is plain SHA-256, which anyone able to edit the file can recompute"
            );
        }
        let config = writer::WriterConfig {
            path: path.clone(),
            key: options.key.clone(),
            max_bytes: options.max_bytes.max(1),
            keep: options.keep_files.map(|k| k.max(1)),
            replica: options.replica.clone(),
        };
        let data_dir = options.data_dir.clone();
        let started = tokio::task::spawn_blocking(move || {
            if !data_dir.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&data_dir)
                    .map_err(AuditError::open)?;
            }
            writer::Writer::start(config)
        })
        .await
        .map_err(|_| AuditError::Stopped)?
        .map_err(with_path)?;
        let durable = sync::Durable::start(started, options.sync)
            .map_err(|e| with_path(AuditError::open(e)))?;
        Ok(Self {
            _stop: Arc::new(StopOnDrop(durable.clone())),
            durable,
            inner: Arc::new(Info {
                path,
                keyed: options.key.is_keyed(),
                metrics: options.metrics.clone(),
                forward: OnceLock::new(),
            }),
        })
    }

    /// The current log file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn is_keyed(&self) -> bool {
        self.inner.keyed
    }

    /// When entries are fsynced.
    pub fn sync_policy(&self) -> AuditSync {
        self.durable.policy()
    }

    /// Masks the event's strings once more and writes it. `Ok` carries the
    /// entry's sequence number; the entry is then in the file (it survives
    /// the process being killed), and under `AUDIT_SYNC=always` on disk.
    pub async fn record(&self, event: Event) -> Result<u64, AuditError> {
        if self
            .inner
            .forward
            .get()
            .is_some_and(|state| state.blocked())
        {
            return Err(AuditError::Unavailable(
                "the audit sink has not taken entries for longer than AUDIT_FORWARD_MAX_LAG_MINUTES"
                    .to_owned(),
            ));
        }
        let began = std::time::Instant::now();
        let event = event.masked();
        let waits = self.durable.policy().waits();
        // One `write` under the lock, on this thread: no hand-off to
        // another thread unless the caller waits for the disk.
        let appended = self.durable.writer().append(event, waits);
        if let Some(metrics) = &self.inner.metrics {
            metrics.set_audit_writable(appended.is_ok());
        }
        let (seq, fsynced) = appended?;
        if let Some(fsynced) = fsynced {
            self.durable.notify();
            fsynced.await.map_err(|_| AuditError::Stopped)??;
        }
        if let Some(metrics) = &self.inner.metrics {
            metrics.observe_audit_write(began.elapsed());
        }
        Ok(seq)
    }

    /// Writable, or made writable now: a closed log is reopened (with its
    /// `log_reopened` entry) when the disk has room again. `/health` calls
    /// it, so a replica no balancer sends calls to still recovers.
    pub async fn check_writable(&self) -> bool {
        let durable = self.durable.clone();
        let resumed = tokio::task::spawn_blocking(move || durable.writer().resume()).await;
        let writable = matches!(resumed, Ok(Ok(())));
        if let Some(metrics) = &self.inner.metrics {
            metrics.set_audit_writable(writable);
        }
        writable
    }

    /// Ships the log off the host (`AUDIT_FORWARD_URL`): starts the
    /// forwarder, and from now on refuses entries while it is blocked.
    pub fn forward_to(
        &self,
        settings: &crate::config::AuditForwardSettings,
        data_dir: &Path,
        hostname: &str,
    ) -> Result<Arc<forward::ForwardState>, forward::ForwardError> {
        // Not an `AuditLog`: the forwarder must not keep the writer open.
        let durable = self.durable.clone();
        let written = Arc::new(move || durable.writer().last_seq());
        let state = forward::spawn(
            settings,
            data_dir,
            hostname,
            written,
            self.inner.metrics.clone(),
        )?;
        let _ = self.inner.forward.set(state.clone());
        Ok(state)
    }

    /// The forwarder's state, when the log is forwarded.
    pub fn forwarding(&self) -> Option<&Arc<forward::ForwardState>> {
        self.inner.forward.get()
    }

    /// Fsyncs every entry written so far (at shutdown).
    pub async fn flush(&self) {
        let durable = self.durable.clone();
        let _ = tokio::task::spawn_blocking(move || durable.flush()).await;
    }

    /// As [`record`](Self::record), for events that must not stop what they
    /// describe (OAuth, admin pages): a failure is logged as a warning.
    pub async fn record_best_effort(&self, event: Event) {
        let kind = event.event.as_str();
        if let Err(err) = self.record(event).await {
            tracing::warn!(event = kind, error = %err, "an audit entry could not be written");
        }
    }

    /// A rate-limit hit, for the rate limiter to call (once per window and
    /// key is the caller's business). `key_kind` says what was limited
    /// (`ip`, `token`…), never the key itself; `route` a route template.
    pub async fn rate_limited(
        &self,
        key_kind: &str,
        identity: Option<AuditIdentity>,
        route: Option<&str>,
    ) {
        let mut event = Event::new(EventKind::RateLimited).detail("key_kind", key_kind);
        event.identity = identity;
        event.route = route.map(str::to_owned);
        self.record_best_effort(event).await;
    }
}
