//! The one writer of `audit.log`: the file, the chain, rotation and
//! fault handling. It lives behind a mutex in [`super::AuditLog`]; a caller
//! appends its entry with one `write` while holding it, so the entry is in
//! the file (the kernel's page cache) before `record` returns and survives
//! the process being killed. When the entry reaches the disk is the sync
//! policy's business (`super::sync`): fsyncs are counted here by position
//! (bytes appended since start) and callers that wait for theirs are
//! answered by [`Writer::settle`].
//!
//! Faults: before each write the path is checked against the open file
//! (deleted or replaced → recreated with a `log_reopened` entry that names
//! the chain value it continues from; made read-only → the write fails),
//! looked up only when the inotify watch of `super::watch` saw something
//! happen to it.
//! A failed write is cut back to the file's length before it, the file is
//! closed, and the caller gets the error; the next write reopens the file,
//! and the first entry written after a failure is a `log_reopened` entry.
//! The sequence number and chain value of a failed write are not kept. A
//! failed fsync closes the file the same way (the entries it covered may
//! or may not be on disk: the kernel said the write-back failed).
//!
//! Rotation: when the file has reached `max_bytes`, it is fsynced, then
//! `audit.log.K` becomes `audit.log.K+1` (with `keep` set, those beyond it
//! are dropped; by default none is), `audit.log` becomes `audit.log.1`,
//! and the new `audit.log` starts with a `log_rotated` entry chained to the
//! last value of the previous file (and naming it as `detail.prev_chain`).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::oneshot;

use super::AuditError;
use super::chain::{ChainHex, ChainKey, GENESIS, hex_digits};
use super::entry::{EntryBody, Event, EventKind, FORMAT_VERSION, close_line, now_rfc3339};
use super::lock::{LogLock, lock_log};
use super::log_file::{open_append, read_tail, sync_dir, take_over_empty, too_little_room};
use super::watch::PathWatch;

/// Room reserved per entry of a group: more than a tool call's usual
/// line, so the buffer rarely grows while it is written.
const LINE_BYTES_HINT: usize = 512;

/// Answers once an fsync covers the entry (or failed to).
pub(super) type Fsynced = oneshot::Receiver<Result<(), AuditError>>;

/// A caller waiting for the fsync that covers its entry.
struct Waiter {
    /// The position just past the entry.
    position: u64,
    reply: oneshot::Sender<Result<(), AuditError>>,
}

#[derive(Debug, Clone)]
pub(super) struct WriterConfig {
    pub path: PathBuf,
    pub key: ChainKey,
    pub max_bytes: u64,
    /// Rotated files kept; `None`: all.
    pub keep: Option<usize>,
    /// The `replica` member of every entry (`REPLICA_ID`).
    pub replica: Option<String>,
}

pub(super) struct Writer {
    cfg: WriterConfig,
    /// The exclusive lock on the log (`audit.lock`), held while the writer
    /// runs: a second process on the same log cannot fork the chain.
    _lock: LogLock,
    /// Shared with the fsync that runs outside the lock.
    file: Option<Arc<File>>,
    ident: (u64, u64),
    /// Says when the path must be looked up again (with the open file).
    watch: Option<PathWatch>,
    /// Length of the open file (every write complete).
    len: u64,
    /// Bytes written since start, over every file: an entry's position.
    appended: u64,
    /// Bytes known to be on disk (or given up on after a failed fsync).
    synced: u64,
    waiters: Vec<Waiter>,
    seq: u64,
    chain: String,
    /// Why the file was closed, for the next `log_reopened` entry.
    closed_because: Option<&'static str>,
}

impl Writer {
    /// Opens (or creates) the log, resumes the chain from the last complete
    /// line, and writes `log_recovered` (after a torn line) and `log_opened`.
    /// Any failure here stops startup.
    pub fn start(cfg: WriterConfig) -> Result<Self, AuditError> {
        let lock = lock_log(&cfg.path)?;
        let mut writer = Self {
            _lock: lock,
            cfg,
            file: None,
            ident: (0, 0),
            watch: None,
            len: 0,
            appended: 0,
            synced: 0,
            waiters: Vec::new(),
            seq: 0,
            chain: GENESIS.to_owned(),
            closed_because: None,
        };
        // An empty or missing file after a rotation continues the previous file's chain.
        let rotated = writer.cfg.path.with_extension("log.1");
        let current_empty = std::fs::metadata(&writer.cfg.path).map_or(true, |m| m.len() == 0);
        if current_empty && rotated.exists() {
            let tail = read_tail(&rotated).map_err(AuditError::open)?;
            if let Some((seq, chain)) = tail.last {
                writer.seq = seq;
                writer.chain = chain;
            }
        }
        let mut group = Group::default();
        writer
            .open_file(&mut group, None)
            .map_err(AuditError::open)?;
        let opened = Event::new(EventKind::LogOpened)
            .detail(
                "chain",
                if writer.cfg.key.is_keyed() {
                    "hmac-sha256"
                } else {
                    "sha256"
                },
            )
            .detail("version", crate::build_info::VERSION);
        group.events.push(opened);
        writer.commit(group).map_err(AuditError::open)?;
        // `log_opened` is durable before the first call is served.
        let file = writer.file.clone().expect("opened above");
        file.sync_data().map_err(AuditError::open)?;
        writer.synced = writer.appended;
        Ok(writer)
    }

    /// Appends `event`; its sequence number, and with `wait` a receiver
    /// that answers once the entry is fsynced.
    pub fn append(
        &mut self,
        event: Event,
        wait: bool,
    ) -> Result<(u64, Option<Fsynced>), AuditError> {
        match self.write_group(Some(event)) {
            Ok(seq) => {
                let receiver = wait.then(|| {
                    let (reply, receiver) = oneshot::channel();
                    self.waiters.push(Waiter {
                        position: self.appended,
                        reply,
                    });
                    receiver
                });
                Ok((seq, receiver))
            }
            Err(err) => {
                tracing::error!(error = %err, "the audit log could not be written");
                Err(AuditError::Unavailable(err.to_string()))
            }
        }
    }

    /// Tries to reopen a closed log (its `log_reopened` entry is the
    /// attempt), without an entry of a caller's: how the log resumes when
    /// no call comes to try it (a balancer routes around an unhealthy
    /// replica). Nothing happens when the log is open.
    pub fn resume(&mut self) -> Result<(), AuditError> {
        if self.file.is_some() {
            return Ok(());
        }
        // The reopening entry is small: that it fits does not mean a call's
        // would (a full disk, a file-size limit). Reopen only with room for
        // several calls, or /health would say writable while the next call
        // is refused.
        if let Some(short) = too_little_room(&self.cfg.path) {
            return Err(AuditError::Unavailable(short));
        }
        self.write_group(None)
            .map(drop)
            .map_err(|err| AuditError::Unavailable(err.to_string()))
    }

    /// Whether callers wait for an fsync.
    pub fn has_waiters(&self) -> bool {
        !self.waiters.is_empty()
    }

    /// The open file and the position an fsync of it now would cover,
    /// when something written is not yet on disk.
    pub fn unsynced(&self) -> Option<(Arc<File>, u64)> {
        let file = self.file.as_ref()?;
        (self.appended > self.synced).then(|| (file.clone(), self.appended))
    }

    /// Records the outcome of an fsync of `file` that covered everything
    /// up to `position`, and answers the callers it covered. A failure
    /// closes the file (when it is still the open one).
    pub fn settle(&mut self, file: &Arc<File>, position: u64, synced: io::Result<()>) {
        let (answer, covered) = match synced {
            Ok(()) => (Ok(()), position),
            Err(err) => {
                tracing::error!(error = %err, "the audit log could not be fsynced");
                if self
                    .file
                    .as_ref()
                    .is_some_and(|open| Arc::ptr_eq(open, file))
                {
                    self.file = None;
                    self.closed_because = Some("an fsync failed");
                }
                // Whoever waits wrote to the file that failed: all fail,
                // and nothing written so far is waited on again.
                (Err(AuditError::Unavailable(err.to_string())), self.appended)
            }
        };
        self.synced = self.synced.max(covered);
        let (done, waiting) = std::mem::take(&mut self.waiters)
            .into_iter()
            .partition(|w| w.position <= covered);
        self.waiters = waiting;
        for waiter in done {
            let _ = waiter.reply.send(answer.clone());
        }
    }

    /// The sequence number of the last entry written.
    pub fn last_seq(&self) -> u64 {
        self.seq
    }

    /// Fsyncs what is written, here and now (rotation, closing, shutdown).
    pub fn sync_now(&mut self) {
        if let Some((file, position)) = self.unsynced() {
            let synced = file.sync_data();
            self.settle(&file, position, synced);
        } else {
            self.synced = self.appended;
        }
    }

    /// Writes the caller's event (after any housekeeping entries) as one
    /// group; the last sequence number written, the caller's when given.
    fn write_group(&mut self, caller: Option<Event>) -> io::Result<u64> {
        let mut group = Group::default();
        self.check_file();
        if self.file.is_none() {
            let reason = self.closed_because.unwrap_or("write failure");
            self.open_file(&mut group, Some(reason))?;
        } else if self.len >= self.cfg.max_bytes {
            self.rotate(&mut group)?;
        }
        group.caller = caller;
        self.commit(group)?;
        self.closed_because = None;
        Ok(self.seq)
    }

    /// Closes the file when its path no longer leads to it, or it was made read-only.
    fn check_file(&mut self) {
        let Some(file) = &self.file else {
            return;
        };
        if let Some(watch) = &mut self.watch
            && watch.is_watching()
        {
            if !watch.path_may_have_changed() {
                return;
            }
            // Something happened: watch the path as it is now (a link
            // replaced by one to the same place is a new inode), then look.
            // What happens after the new watch starts is in the lookup.
            let mut fresh = PathWatch::new(&self.cfg.path, file);
            fresh.path_may_have_changed();
            self.watch = Some(fresh);
        }
        match std::fs::metadata(&self.cfg.path) {
            Err(_) => self.close("the file went missing"),
            Ok(m) if (m.dev(), m.ino()) != self.ident => self.close("the file was replaced"),
            Ok(m) if m.permissions().mode() & 0o200 == 0 => {
                self.close("the file was made read-only")
            }
            Ok(_) => {}
        }
    }

    /// Closes the file after fsyncing what was written to it, so no
    /// waiting caller is left behind.
    fn close(&mut self, why: &'static str) {
        self.sync_now();
        self.file = None;
        self.watch = None;
        self.closed_because = Some(why);
    }

    /// Opens the file for appending: an existing one resumes from its tail
    /// (a torn line gets a newline and `log_recovered`); a missing one is
    /// created (0600), starting with an anchor when the chain is not new.
    /// With `reopen`, a `log_reopened` entry says why.
    fn open_file(&mut self, group: &mut Group, reopen: Option<&'static str>) -> io::Result<()> {
        let path = self.cfg.path.clone();
        match std::fs::metadata(&path) {
            Ok(m) if m.permissions().mode() & 0o200 == 0 || !m.is_file() => {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "the audit log file is read-only or not a regular file",
                ));
            }
            Ok(m) if m.len() > 0 => {
                let tail = read_tail(&path)?;
                if let Some((seq, chain)) = tail.last {
                    self.seq = seq;
                    self.chain = chain;
                }
                let file = open_append(&path, false)?;
                self.adopt(file)?;
                if tail.needs_newline {
                    group.prefix.push('\n');
                }
                if let Some(torn) = tail.torn_bytes {
                    group.prefix.push('\n');
                    group.events.push(
                        Event::new(EventKind::LogRecovered)
                            .detail("torn_line_bytes", torn)
                            .detail("why", "the last line was incomplete (a write cut short by a crash or failure)"),
                    );
                }
                if let Some(why) = reopen {
                    group
                        .events
                        .push(Event::new(EventKind::LogReopened).detail("why", why));
                }
            }
            _ => {
                let file = match open_append(&path, true) {
                    // An empty file put in its place (renamed over the log,
                    // say) is taken over as a new one, private like one.
                    Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                        take_over_empty(&path)?
                    }
                    opened => opened?,
                };
                sync_dir(&path)?;
                self.adopt(file)?;
                if let Some(why) = reopen {
                    let mut event = Event::new(EventKind::LogReopened).detail("why", why);
                    if self.seq > 0 {
                        event = event.detail("prev_chain", &self.chain);
                    }
                    group.events.push(event);
                } else if self.seq > 0 {
                    group
                        .events
                        .push(Event::new(EventKind::LogRotated).detail("prev_chain", &self.chain));
                }
            }
        }
        Ok(())
    }

    fn adopt(&mut self, file: File) -> io::Result<()> {
        let meta = file.metadata()?;
        self.ident = (meta.dev(), meta.ino());
        self.watch = Some(PathWatch::new(&self.cfg.path, &file));
        self.len = meta.len();
        self.file = Some(Arc::new(file));
        Ok(())
    }

    /// `audit.log` → `audit.log.1` (older ones shifted; beyond `keep`, when
    /// set, dropped),
    /// and a new `audit.log` starting with `log_rotated`.
    fn rotate(&mut self, group: &mut Group) -> io::Result<()> {
        // The previous file is complete on disk before its successor
        // names its last chain value.
        self.close("rotation failed");
        let path = self.cfg.path.clone();
        let numbered = |k: usize| path.with_extension(format!("log.{k}"));
        let mut highest = 0;
        while numbered(highest + 1).exists() {
            highest += 1;
        }
        let keep = self.cfg.keep.unwrap_or(usize::MAX);
        for k in (1..=highest).rev() {
            if k >= keep {
                std::fs::remove_file(numbered(k))?;
            } else {
                std::fs::rename(numbered(k), numbered(k + 1))?;
            }
        }
        std::fs::rename(&self.cfg.path, numbered(1))?;
        let file = open_append(&self.cfg.path, true)?;
        sync_dir(&self.cfg.path)?;
        self.adopt(file)?;
        group.events.push(
            Event::new(EventKind::LogRotated)
                .detail("prev_chain", &self.chain)
                .detail(
                    "previous_file",
                    numbered(1)
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                ),
        );
        Ok(())
    }

    /// Chains and writes a group; on failure cuts the file back to its
    /// length before it, closes it and keeps nothing of the group.
    fn commit(&mut self, group: Group) -> io::Result<()> {
        let mut seq = self.seq;
        // The group's lines are written into one buffer, each canonical entry
        // chained where it lies, its chain value on the stack: the buffer and
        // the timestamp are the group's only allocations (issue 30).
        let mut last: Option<ChainHex> = None;
        let mut buf = group.prefix.into_bytes();
        let events = group.events.iter().chain(&group.caller);
        buf.reserve(events.clone().count() * LINE_BYTES_HINT);
        let ts = now_rfc3339();
        for event in events {
            seq += 1;
            let start = buf.len();
            EntryBody {
                v: FORMAT_VERSION,
                seq,
                ts: &ts,
                replica: self.cfg.replica.as_deref(),
                event,
            }
            .write_canonical(&mut buf);
            let prev = last
                .as_ref()
                .map_or(self.chain.as_bytes(), |value| &value[..]);
            let value = self.cfg.key.next_hex(prev, &buf[start..]);
            close_line(&mut buf, hex_digits(&value));
            last = Some(value);
        }
        let Some(file) = self.file.clone() else {
            return Err(io::Error::other("the audit log is not open"));
        };
        if let Err(err) = (&*file).write_all(&buf) {
            let _ = file.set_len(self.len);
            self.close("a write failed");
            return Err(err);
        }
        self.len += buf.len() as u64;
        self.appended += buf.len() as u64;
        self.seq = seq;
        if let Some(value) = last {
            self.chain.clear();
            self.chain.push_str(hex_digits(&value));
        }
        Ok(())
    }
}

/// One `write`: housekeeping (a newline ending a torn line, then entries
/// such as `log_recovered` or `log_rotated`), then the caller's entry.
#[derive(Default)]
struct Group {
    prefix: String,
    events: Vec<Event>,
    caller: Option<Event>,
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
