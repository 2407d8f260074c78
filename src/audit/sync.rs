//! When audit entries reach the disk (`AUDIT_SYNC`), and the thread that
//! fsyncs them.
//!
//! Every entry is written to the file (one `write`, under the writer's
//! lock) before its caller goes on, whatever the policy: the write-ahead
//! entry of a call is in the file before the call goes upstream, and a
//! call whose entry cannot be written is refused. A process that is
//! killed loses nothing written. The policy only says what a power loss or
//! kernel crash may take:
//!
//! - [`AuditSync::Interval`] (the default): the flusher fsyncs what was
//!   written at most `AUDIT_SYNC_INTERVAL_MS` apart, and at shutdown; no
//!   call waits for a disk. A power loss can take the entries of the last
//!   interval. This is PostgreSQL's `synchronous_commit = off` with its WAL
//!   writer, and auditd's `flush = incremental_async`.
//! - [`AuditSync::Always`]: a caller waits until an fsync covers its entry.
//!   The flusher runs one fsync after another while anyone waits, so
//!   concurrent callers share them (group commit, as PostgreSQL's
//!   `synchronous_commit = on`).
//!
//! The fsync runs outside the writer's lock, on a shared handle to the
//! file, so writers are not held up by the disk.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::writer::Writer;

pub use crate::config::{AuditSync, DEFAULT_SYNC_INTERVAL};

/// The writer and what wakes its flusher.
pub(super) struct Durable {
    writer: Mutex<Writer>,
    wake: Condvar,
    policy: AuditSync,
    /// Set (under the writer's lock, so the flusher cannot miss it) at shutdown.
    stopping: AtomicBool,
}

impl Durable {
    /// The writer under `policy`, with its flusher thread started.
    pub fn start(writer: Writer, policy: AuditSync) -> std::io::Result<Arc<Self>> {
        let durable = Arc::new(Self {
            writer: Mutex::new(writer),
            wake: Condvar::new(),
            policy,
            stopping: AtomicBool::new(false),
        });
        let flusher = durable.clone();
        std::thread::Builder::new()
            .name("audit-fsync".into())
            .spawn(move || flusher.run())?;
        Ok(durable)
    }

    pub fn policy(&self) -> AuditSync {
        self.policy
    }

    /// The writer. A panic while it was held cannot leave a half-written
    /// entry behind (a write is one `write_all`, cut back on failure), so a
    /// poisoned lock is taken over.
    pub fn writer(&self) -> MutexGuard<'_, Writer> {
        self.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes the flusher: someone waits for an fsync.
    pub fn notify(&self) {
        self.wake.notify_one();
    }

    /// Fsyncs what is written, now (shutdown, tests).
    pub fn flush(&self) {
        self.writer().sync_now();
    }

    /// Stops the flusher after one last fsync.
    pub fn stop(&self) {
        let mut writer = self.writer();
        self.stopping.store(true, Ordering::Relaxed);
        self.wake.notify_one();
        writer.sync_now();
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    fn run(self: Arc<Self>) {
        loop {
            let pending = {
                let mut writer = self.writer();
                match self.policy {
                    AuditSync::Always => {
                        while !writer.has_waiters() && !self.stopping() {
                            writer = self.wake.wait(writer).unwrap_or_else(|p| p.into_inner());
                        }
                    }
                    AuditSync::Interval(every) => {
                        writer = self
                            .wake
                            .wait_timeout(writer, every)
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                    }
                }
                if self.stopping() {
                    writer.sync_now();
                    return;
                }
                writer.unsynced()
            };
            if let Some((file, position)) = pending {
                let synced = file.sync_data();
                self.writer().settle(&file, position, synced);
            }
        }
    }
}
