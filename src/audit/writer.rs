//! The one writer: a dedicated thread owns `audit.log`. Callers send an
//! event and a reply channel; the thread takes everything queued (one
//! group), assigns sequence numbers and chain values in order, writes the
//! group with one `write`, calls `fdatasync` once, and only then answers
//! every caller of the group: **an entry is durable when `record` returns
//! `Ok`**. Concurrent calls therefore share fsyncs (group commit).
//!
//! Faults: before each group the path is checked against the open file
//! (deleted or replaced → recreated with a `log_reopened` entry that names
//! the chain value it continues from; made read-only → the group fails).
//! A failed write or fsync is cut back to the last durable length, the file
//! is closed, and every caller of the group gets the error; the next group
//! reopens the file, and the first entry written after a failure is a
//! `log_reopened` entry. Nothing of a failed group is acknowledged, and the
//! sequence numbers and chain value of a failed group are not kept.
//!
//! Rotation: when the file has reached `max_bytes`, `audit.log.K` becomes
//! `audit.log.K+1` (with `keep` set, those beyond it are dropped; by
//! default none is), `audit.log`
//! becomes `audit.log.1`, and the new `audit.log` starts with a
//! `log_rotated` entry chained to the last value of the previous file (and
//! naming it as `detail.prev_chain`).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::sync::{mpsc, oneshot};

use super::AuditError;
use super::chain::{ChainKey, GENESIS, parse_line};
use super::entry::{EntryBody, Event, EventKind, FORMAT_VERSION, line, now_rfc3339};
use super::lock::{LogLock, lock_log};

/// Most entries written as one group.
const MAX_GROUP: usize = 4096;
/// How much of a file is read at a time when searching backwards for the
/// last line (which may be of any length).
const TAIL_BYTES: u64 = 256 * 1024;

/// One caller's entry and where to answer.
pub(super) struct Request {
    pub event: Event,
    pub reply: oneshot::Sender<Result<u64, AuditError>>,
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

/// What the end of an existing file says.
struct Tail {
    /// The last complete entry: (seq, chain).
    last: Option<(u64, String)>,
    /// Bytes after the last newline that are not a complete entry.
    torn_bytes: Option<u64>,
    /// The file ends with a complete entry lacking its newline.
    needs_newline: bool,
}

pub(super) struct Writer {
    cfg: WriterConfig,
    /// The exclusive lock on the log (`audit.lock`), held while the writer
    /// runs: a second process on the same log cannot fork the chain.
    _lock: LogLock,
    file: Option<File>,
    ident: (u64, u64),
    /// Durable length of the open file.
    len: u64,
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
            len: 0,
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
            .detail("version", env!("CARGO_PKG_VERSION"));
        group.events.push(opened);
        writer.commit(group).map_err(AuditError::open)?;
        Ok(writer)
    }

    /// Runs the writer until every sender is gone.
    pub fn run(mut self, mut rx: mpsc::Receiver<Request>) {
        while let Some(first) = rx.blocking_recv() {
            let mut requests = vec![first];
            while requests.len() < MAX_GROUP {
                match rx.try_recv() {
                    Ok(r) => requests.push(r),
                    Err(_) => break,
                }
            }
            let events: Vec<Event> = requests.iter().map(|r| r.event.clone()).collect();
            match self.write_group(events) {
                Ok(seqs) => {
                    for (request, seq) in requests.into_iter().zip(seqs) {
                        let _ = request.reply.send(Ok(seq));
                    }
                }
                Err(err) => {
                    tracing::error!(error = %err, "the audit log could not be written");
                    let err = AuditError::Unavailable(err.to_string());
                    for request in requests {
                        let _ = request.reply.send(Err(err.clone()));
                    }
                }
            }
        }
    }

    /// Writes the callers' events (after any housekeeping entries) as one
    /// group; the sequence numbers of the callers' entries.
    fn write_group(&mut self, events: Vec<Event>) -> io::Result<Vec<u64>> {
        let mut group = Group::default();
        self.check_file();
        if self.file.is_none() {
            let reason = self.closed_because.unwrap_or("write failure");
            self.open_file(&mut group, Some(reason))?;
        } else if self.len >= self.cfg.max_bytes {
            self.rotate(&mut group)?;
        }
        let count = events.len() as u64;
        group.events.extend(events);
        self.commit(group)?;
        self.closed_because = None;
        Ok((self.seq + 1 - count..=self.seq).collect())
    }

    /// Closes the file when its path no longer leads to it, or it was made read-only.
    fn check_file(&mut self) {
        if self.file.is_none() {
            return;
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

    fn close(&mut self, why: &'static str) {
        self.file = None;
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
                let file = open_append(&path, true)?;
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
        self.len = meta.len();
        self.file = Some(file);
        Ok(())
    }

    /// `audit.log` → `audit.log.1` (older ones shifted; beyond `keep`, when
    /// set, dropped),
    /// and a new `audit.log` starting with `log_rotated`.
    fn rotate(&mut self, group: &mut Group) -> io::Result<()> {
        self.file = None;
        self.closed_because = Some("rotation failed");
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

    /// Chains, writes and fsyncs a group; on failure cuts the file back to
    /// its durable length, closes it and keeps nothing of the group.
    fn commit(&mut self, group: Group) -> io::Result<()> {
        let mut seq = self.seq;
        let mut chain = self.chain.clone();
        let mut buf = group.prefix;
        let ts = now_rfc3339();
        for event in &group.events {
            seq += 1;
            let canonical = EntryBody {
                v: FORMAT_VERSION,
                seq,
                ts: &ts,
                replica: self.cfg.replica.as_deref(),
                event,
            }
            .canonical();
            chain = self.cfg.key.next(&chain, &canonical);
            buf.push_str(&line(&canonical, &chain));
        }
        let Some(file) = self.file.as_mut() else {
            return Err(io::Error::other("the audit log is not open"));
        };
        let written = file
            .write_all(buf.as_bytes())
            .and_then(|()| file.sync_data());
        if let Err(err) = written {
            let _ = file.set_len(self.len);
            let _ = file.sync_data();
            self.close("a write or fsync failed");
            return Err(err);
        }
        self.len += buf.len() as u64;
        self.seq = seq;
        self.chain = chain;
        Ok(())
    }
}

/// Housekeeping before the callers' entries: a newline ending a torn line,
/// then entries such as `log_recovered` or `log_rotated`.
#[derive(Default)]
struct Group {
    prefix: String,
    events: Vec<Event>,
}

fn open_append(path: &Path, create: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).read(true).mode(0o600);
    if create {
        options.create_new(true);
    }
    options.open(path)
}

fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

/// Reads the end of `path`: the last complete entry and whether the last line is torn.
fn read_tail(path: &Path) -> io::Result<Tail> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    // The last newline ends the last complete line; what follows it is a
    // fragment (torn, or an entry missing its newline). Lines of any length
    // are found: the file is searched backwards in chunks, and only the
    // last line and the fragment are read.
    let last_newline = newline_before(&mut file, len)?;
    let (line_start, line_end) = match last_newline {
        Some(end) => (newline_before(&mut file, end)?.map_or(0, |nl| nl + 1), end),
        None => (0, 0),
    };
    let fragment_start = last_newline.map_or(0, |nl| nl + 1);
    let fragment = read_range(&mut file, fragment_start, len)?;
    let last_line = read_range(&mut file, line_start, line_end)?;
    let mut tail = Tail {
        last: None,
        torn_bytes: None,
        needs_newline: false,
    };
    if !fragment.is_empty() {
        match std::str::from_utf8(&fragment).ok().map(parse_line) {
            Some(Ok(entry)) => {
                tail.last = Some((entry.seq, entry.chain));
                tail.needs_newline = true;
                return Ok(tail);
            }
            _ => tail.torn_bytes = Some(fragment.len() as u64),
        }
    }
    // An empty line other than the file's first: two newlines in a row.
    if last_line.is_empty() && line_start > 0 {
        return Err(io::Error::other("the audit log ends with an empty line"));
    }
    if !last_line.is_empty() {
        let parsed = std::str::from_utf8(&last_line)
            .ok()
            .map(parse_line)
            .and_then(Result::ok)
            .ok_or_else(|| {
                io::Error::other(
                    "the audit log's last complete line is not an entry; check it with `audit verify` and move it away",
                )
            })?;
        tail.last = Some((parsed.seq, parsed.chain));
    }
    Ok(tail)
}

/// The offset of the last `\n` before `end`, searching backwards in
/// [`TAIL_BYTES`] chunks; `None` when there is none.
fn newline_before(file: &mut File, end: u64) -> io::Result<Option<u64>> {
    let mut chunk_end = end;
    let mut chunk = Vec::new();
    while chunk_end > 0 {
        let chunk_start = chunk_end.saturating_sub(TAIL_BYTES);
        chunk.resize((chunk_end - chunk_start) as usize, 0);
        file.seek(SeekFrom::Start(chunk_start))?;
        file.read_exact(&mut chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(Some(chunk_start + i as u64));
        }
        chunk_end = chunk_start;
    }
    Ok(None)
}

/// The bytes `start..end` of `file`.
fn read_range(file: &mut File, start: u64, end: u64) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0; end.saturating_sub(start) as usize];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}
