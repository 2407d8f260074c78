//! Reading the local log as it grows, for the forwarder: the complete
//! lines after a sequence number, across rotations. The log is the source
//! of truth; this only reads it (no lock, no write).
//!
//! Position: the file (by inode, which a rename keeps) and a byte offset.
//! After a rotation the rest of the renamed file is read first, then each
//! newer file in order (`audit.log.N` … `audit.log.1`, then `audit.log`),
//! however many rotations happened meanwhile. When the position is lost (a
//! restart, or the file dropped by `AUDIT_KEEP_FILES`) the files are
//! scanned for the first line after the cursor.
//!
//! Every line returned continues the sequence: a line whose number skips
//! some is still returned (the entries in between are gone), and the gap
//! is counted in [`Follower::missing`], which the forwarder reports
//! (`/health`, a metric, the log): a copy with a hole is never passed off
//! as complete (the red team's F1).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::super::AUDIT_FILE_NAME;
use super::super::chain::parse_line;
use super::super::verify::default_files;

/// The most read from a file in one go.
const READ_CHUNK: u64 = 1 << 20;
/// Files one read moves through at most (the rest waits for the next).
const MAX_FILES_PER_READ: usize = 64;

/// One entry to forward: the line as written (without its newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub seq: u64,
    pub event: String,
    pub text: String,
    /// When it was written (its `ts`), for how long it has waited.
    pub written_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// A place in one file. The file is named by its device and inode, which
/// a rename keeps, and by the sequence number of its first entry: a file
/// dropped by `AUDIT_KEEP_FILES` frees its inode, and the next new
/// `audit.log` may get the same number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Position {
    dev: u64,
    ino: u64,
    /// `None` while the file has no complete line.
    first: Option<u64>,
    offset: u64,
}

impl Position {
    /// The start of the file at `path` (with metadata `meta`).
    fn start_of(path: &Path, meta: &std::fs::Metadata) -> io::Result<Self> {
        Ok(Self {
            dev: meta.dev(),
            ino: meta.ino(),
            first: first_seq(path)?,
            offset: 0,
        })
    }

    /// Whether the file at `path` (with metadata `meta`) is this
    /// position's file. A position taken before the file had a line
    /// accepts whatever its first line now is.
    fn is_in(&self, path: &Path, meta: &std::fs::Metadata) -> io::Result<bool> {
        if meta.dev() != self.dev || meta.ino() != self.ino {
            return Ok(false);
        }
        Ok(match self.first {
            None => true,
            Some(first) => first_seq(path)? == Some(first),
        })
    }
}

/// The sequence number of the first entry of the file at `path`.
fn first_seq(path: &Path) -> io::Result<Option<u64>> {
    let (lines, _) = read_lines_with_offsets(path, 0, 1)?;
    Ok(lines.first().map(|(_, line)| line.seq))
}

/// Follows `data_dir`'s log from after sequence number `after`.
#[derive(Debug)]
pub struct Follower {
    data_dir: PathBuf,
    after: u64,
    at: Option<Position>,
    /// Entries whose numbers the sequence skipped: their file was gone
    /// (dropped by `AUDIT_KEEP_FILES` before they were forwarded), or the
    /// log itself has a hole.
    pub missing: u64,
}

impl Follower {
    pub fn new(data_dir: &Path, after: u64) -> Self {
        Self {
            data_dir: data_dir.to_path_buf(),
            after,
            at: None,
            missing: 0,
        }
    }

    /// Up to `max` complete lines after the last one returned, in order.
    pub fn read(&mut self, max: usize) -> io::Result<Vec<LogLine>> {
        let mut out = Vec::new();
        // A rotated file's rest, then each newer file: one round per file.
        for _ in 0..=MAX_FILES_PER_READ {
            let Some(at) = self.at else {
                self.at = self.locate()?;
                if self.at.is_none() {
                    return Ok(out);
                }
                continue;
            };
            let live = self.data_dir.join(AUDIT_FILE_NAME);
            let live_meta = match std::fs::metadata(&live) {
                Ok(meta) => meta,
                // Between a rotation's rename and the new file.
                Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(out),
                Err(err) => return Err(err),
            };
            let on_live = at.is_in(&live, &live_meta)?;
            let path = if on_live {
                live.clone()
            } else {
                match self.file_with(at)? {
                    Some(path) => path,
                    None => {
                        // The file went away unread: start again from the
                        // cursor (what is gone is counted as missing).
                        self.at = None;
                        continue;
                    }
                }
            };
            let (lines, offset) = read_lines(&path, at.offset, max - out.len())?;
            for line in lines {
                if line.seq > self.after {
                    self.missing += line.seq - self.after - 1;
                    self.after = line.seq;
                    out.push(line);
                }
            }
            // A position taken before its file had a line learns it now.
            let first = match at.first {
                None => first_seq(&path)?,
                known => known,
            };
            self.at = Some(Position {
                offset,
                first,
                ..at
            });
            if out.len() >= max || on_live {
                return Ok(out);
            }
            if offset < std::fs::metadata(&path)?.len() {
                return Ok(out);
            }
            // The renamed file is read to its end: on to the next newer one.
            self.at = match self.next_file(&path)? {
                Some(next) => Some(next),
                None => Some(Position::start_of(&live, &live_meta)?),
            };
        }
        Ok(out)
    }

    /// The start of the file after `path` in the log's order (oldest
    /// rotated file first, `audit.log` last).
    fn next_file(&self, path: &Path) -> io::Result<Option<Position>> {
        let files = default_files(&self.data_dir);
        let Some(next) = files
            .iter()
            .position(|file| file == path)
            .and_then(|i| files.get(i + 1))
        else {
            return Ok(None);
        };
        match std::fs::metadata(next) {
            Ok(meta) => Position::start_of(next, &meta).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// The rotated file that is `at`'s file, if it is still there.
    fn file_with(&self, at: Position) -> io::Result<Option<PathBuf>> {
        for path in default_files(&self.data_dir) {
            if let Ok(meta) = std::fs::metadata(&path)
                && at.is_in(&path, &meta)?
            {
                return Ok(Some(path));
            }
        }
        Ok(None)
    }

    /// The position of the first line after the cursor, scanning the files
    /// oldest first; at the live file's end when there is none.
    fn locate(&mut self) -> io::Result<Option<Position>> {
        let files = default_files(&self.data_dir);
        let mut first_seen: Option<u64> = None;
        for path in &files {
            let Ok(meta) = std::fs::metadata(path) else {
                continue;
            };
            let mut offset = 0;
            loop {
                let (lines, next) = read_lines_with_offsets(path, offset, 4096)?;
                if lines.is_empty() {
                    break;
                }
                for (start, line) in lines {
                    first_seen.get_or_insert(line.seq);
                    // `read` counts the entries before it that are gone.
                    if line.seq > self.after {
                        return Ok(Some(Position {
                            offset: start,
                            ..Position::start_of(path, &meta)?
                        }));
                    }
                }
                offset = next;
            }
        }
        let live = self.data_dir.join(AUDIT_FILE_NAME);
        match std::fs::metadata(&live) {
            Ok(meta) => Ok(Some(Position {
                offset: meta.len(),
                ..Position::start_of(&live, &meta)?
            })),
            Err(_) => Ok(None),
        }
    }
}

/// Up to `max` complete lines of `path` from `offset`, and the offset after
/// the last one read. A line without its newline yet is left for later.
fn read_lines(path: &Path, offset: u64, max: usize) -> io::Result<(Vec<LogLine>, u64)> {
    let (lines, next) = read_lines_with_offsets(path, offset, max)?;
    Ok((lines.into_iter().map(|(_, line)| line).collect(), next))
}

fn read_lines_with_offsets(
    path: &Path,
    offset: u64,
    max: usize,
) -> io::Result<(Vec<(u64, LogLine)>, u64)> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), offset)),
        Err(err) => return Err(err),
    };
    let len = file.metadata()?.len();
    if len <= offset || max == 0 {
        return Ok((Vec::new(), offset));
    }
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = Vec::new();
    file.take((len - offset).min(READ_CHUNK))
        .read_to_end(&mut buf)?;
    let mut out = Vec::new();
    let mut start = 0usize;
    while out.len() < max {
        let Some(end) = buf[start..].iter().position(|&b| b == b'\n') else {
            break;
        };
        let raw = &buf[start..start + end];
        let at = offset + start as u64;
        start += end + 1;
        let Ok(text) = std::str::from_utf8(raw) else {
            tracing::warn!(file = %path.display(), offset = at, "an audit log line is not UTF-8; not forwarded");
            continue;
        };
        match parse_line(text) {
            Ok(parsed) => out.push((
                at,
                LogLine {
                    seq: parsed.seq,
                    event: parsed.event,
                    written_at: written_at(text),
                    text: text.to_owned(),
                },
            )),
            Err(why) => {
                tracing::warn!(file = %path.display(), offset = at, why, "an audit log line is not an entry; not forwarded");
            }
        }
    }
    Ok((out, offset + start as u64))
}

/// The `ts` of an entry's line (`"ts":"2026-01-01T00:00:00.000Z"`, the
/// third field the writer writes).
fn written_at(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let start = text.find("\"ts\":\"")? + 6;
    let end = start + text[start..].find('"')?;
    chrono::DateTime::parse_from_rfc3339(&text[start..end])
        .ok()
        .map(|t| t.with_timezone(&chrono::Utc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::chain::{ChainKey, sample_log};

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    fn seqs(lines: &[LogLine]) -> Vec<u64> {
        lines.iter().map(|l| l.seq).collect()
    }

    #[test]
    fn reads_every_line_after_the_cursor_in_order() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "audit.log",
            &sample_log(&ChainKey::new(None), 5),
        );
        let mut follower = Follower::new(dir.path(), 2);
        assert_eq!(seqs(&follower.read(100).unwrap()), [3, 4, 5]);
        assert!(follower.read(100).unwrap().is_empty());
    }

    #[test]
    fn a_line_without_its_newline_waits() {
        let dir = tempfile::tempdir().unwrap();
        let log = sample_log(&ChainKey::new(None), 3);
        let cut = log.len() - 10;
        write(dir.path(), "audit.log", &log[..cut]);
        let mut follower = Follower::new(dir.path(), 0);
        assert_eq!(seqs(&follower.read(100).unwrap()), [1, 2]);
        write(dir.path(), "audit.log", &log);
        assert_eq!(seqs(&follower.read(100).unwrap()), [3]);
    }

    #[test]
    fn follows_a_growing_file_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let log = sample_log(&ChainKey::new(None), 6);
        write(dir.path(), "audit.log", &log);
        let mut follower = Follower::new(dir.path(), 0);
        assert_eq!(seqs(&follower.read(4).unwrap()), [1, 2, 3, 4]);
        assert_eq!(seqs(&follower.read(4).unwrap()), [5, 6]);
    }

    #[test]
    fn after_a_rotation_finishes_the_old_file_then_reads_the_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = sample_log(&ChainKey::new(None), 6);
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        write(dir.path(), "audit.log", &lines[..2].concat());
        let mut follower = Follower::new(dir.path(), 0);
        assert_eq!(seqs(&follower.read(100).unwrap()), [1, 2]);
        // More is written, then the file is renamed and a new one started.
        std::fs::write(dir.path().join("audit.log"), lines[..4].concat()).unwrap();
        std::fs::rename(dir.path().join("audit.log"), dir.path().join("audit.log.1")).unwrap();
        write(dir.path(), "audit.log", &lines[4..].concat());
        let mut got = follower.read(100).unwrap();
        got.extend(follower.read(100).unwrap());
        assert_eq!(seqs(&got), [3, 4, 5, 6]);
    }

    #[test]
    fn a_restart_resumes_from_the_cursor_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let log = sample_log(&ChainKey::new(None), 6);
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        write(dir.path(), "audit.log.1", &lines[..3].concat());
        write(dir.path(), "audit.log", &lines[3..].concat());
        let mut follower = Follower::new(dir.path(), 2);
        let mut got = follower.read(100).unwrap();
        got.extend(follower.read(100).unwrap());
        assert_eq!(seqs(&got), [3, 4, 5, 6]);
        assert_eq!(follower.missing, 0);
    }

    #[test]
    fn entries_whose_file_is_gone_are_counted_as_missing() {
        let dir = tempfile::tempdir().unwrap();
        let log = sample_log(&ChainKey::new(None), 6);
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        write(dir.path(), "audit.log", &lines[3..].concat());
        let mut follower = Follower::new(dir.path(), 1);
        assert_eq!(seqs(&follower.read(100).unwrap()), [4, 5, 6]);
        assert_eq!(follower.missing, 2);
    }

    /// Renames as the writer's rotation does: `audit.log.k` to `k + 1`,
    /// `audit.log` to `audit.log.1`, then a new `audit.log` with `text`.
    fn rotate(dir: &Path, text: &str) {
        let mut highest = 0;
        while dir.join(format!("audit.log.{}", highest + 1)).exists() {
            highest += 1;
        }
        for k in (1..=highest).rev() {
            std::fs::rename(
                dir.join(format!("audit.log.{k}")),
                dir.join(format!("audit.log.{}", k + 1)),
            )
            .unwrap();
        }
        std::fs::rename(dir.join("audit.log"), dir.join("audit.log.1")).unwrap();
        write(dir, "audit.log", text);
    }

    /// The red team's F1: with the sink down across several rotations,
    /// the follower went from the file it was in straight to the live one,
    /// and the files between were never forwarded.
    #[test]
    fn every_rotated_file_is_read_in_order_after_several_rotations() {
        let dir = tempfile::tempdir().unwrap();
        let log = sample_log(&ChainKey::new(None), 70);
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        write(dir.path(), "audit.log", &lines[..15].concat());
        let mut follower = Follower::new(dir.path(), 0);
        assert_eq!(
            seqs(&follower.read(100).unwrap()),
            (1..=15).collect::<Vec<_>>()
        );
        // The sink is down: nothing is read while the log grows and rotates
        // five times.
        write(dir.path(), "audit.log", &lines[..20].concat());
        for chunk in [20..30, 30..40, 40..50, 50..60, 60..70] {
            rotate(dir.path(), &lines[chunk].concat());
        }
        let mut got = Vec::new();
        for _ in 0..20 {
            got.extend(follower.read(7).unwrap());
        }
        assert_eq!(seqs(&got), (16..=70).collect::<Vec<_>>());
        assert_eq!(follower.missing, 0);
    }

    /// A file dropped by `AUDIT_KEEP_FILES` frees its inode, and the next
    /// new `audit.log` often gets the same number: the follower took it
    /// for the file it was in, waited for it to grow past the old offset,
    /// and forwarded nothing more (a gateway test hung in 1 run of 7). The
    /// same device and inode with another first entry is another file.
    #[test]
    fn a_new_file_on_the_inode_of_a_dropped_one_is_read_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let log = sample_log(&ChainKey::new(None), 30);
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        write(dir.path(), "audit.log", &lines[..20].concat());
        let mut follower = Follower::new(dir.path(), 0);
        assert_eq!(follower.read(100).unwrap().len(), 20);
        // Rewritten in place: the same inode, shorter, entries 26 to 30.
        std::fs::write(dir.path().join("audit.log"), lines[25..].concat()).unwrap();
        assert_eq!(seqs(&follower.read(100).unwrap()), [26, 27, 28, 29, 30]);
        assert_eq!(follower.missing, 5);
    }

    /// A gap in the sequence is counted, never passed over in silence.
    #[test]
    fn a_gap_in_the_sequence_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let log = sample_log(&ChainKey::new(None), 10);
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        let holed = [&lines[..4], &lines[7..]].concat().concat();
        write(dir.path(), "audit.log", &holed);
        let mut follower = Follower::new(dir.path(), 0);
        assert_eq!(seqs(&follower.read(100).unwrap()), [1, 2, 3, 4, 8, 9, 10]);
        assert_eq!(follower.missing, 3);
    }
}
