//! Reading the local log as it grows, for the forwarder: the complete
//! lines after a sequence number, across rotations. The log is the source
//! of truth; this only reads it (no lock, no write).
//!
//! Position: the file (by inode, which a rename keeps) and a byte offset.
//! After a rotation the rest of the renamed file is read first, then the
//! new `audit.log` from its start. When the position is lost (a restart,
//! or the file dropped by `AUDIT_KEEP_FILES`) the files are scanned for
//! the first line after the cursor.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::super::AUDIT_FILE_NAME;
use super::super::chain::parse_line;
use super::super::verify::default_files;

/// The most read from a file in one go.
const READ_CHUNK: u64 = 1 << 20;

/// One entry to forward: the line as written (without its newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub seq: u64,
    pub event: String,
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Position {
    dev: u64,
    ino: u64,
    offset: u64,
}

/// Follows `data_dir`'s log from after sequence number `after`.
#[derive(Debug)]
pub struct Follower {
    data_dir: PathBuf,
    after: u64,
    at: Option<Position>,
    /// Entries never seen because their file was gone (dropped by
    /// `AUDIT_KEEP_FILES` before they were forwarded).
    pub skipped: u64,
}

impl Follower {
    pub fn new(data_dir: &Path, after: u64) -> Self {
        Self {
            data_dir: data_dir.to_path_buf(),
            after,
            at: None,
            skipped: 0,
        }
    }

    /// Up to `max` complete lines after the last one returned, in order.
    pub fn read(&mut self, max: usize) -> io::Result<Vec<LogLine>> {
        let mut out = Vec::new();
        // A few rounds at most: a rotated file's rest, then the live file.
        for _ in 0..4 {
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
            let on_live = live_meta.dev() == at.dev && live_meta.ino() == at.ino;
            let path = if on_live {
                live.clone()
            } else {
                match self.file_with(at)? {
                    Some(path) => path,
                    None => {
                        // The file went away unread: start again from the
                        // cursor (what is gone is counted as skipped).
                        self.at = None;
                        continue;
                    }
                }
            };
            let (lines, offset) = read_lines(&path, at.offset, max - out.len())?;
            for line in lines {
                if line.seq > self.after {
                    self.after = line.seq;
                    out.push(line);
                }
            }
            self.at = Some(Position { offset, ..at });
            if out.len() >= max || on_live {
                return Ok(out);
            }
            // The renamed file is read to its end: on to the live one.
            if offset >= std::fs::metadata(&path)?.len() {
                self.at = Some(Position {
                    dev: live_meta.dev(),
                    ino: live_meta.ino(),
                    offset: 0,
                });
            } else {
                return Ok(out);
            }
        }
        Ok(out)
    }

    /// The rotated file that is `at`'s file, if it is still there.
    fn file_with(&self, at: Position) -> io::Result<Option<PathBuf>> {
        for path in default_files(&self.data_dir) {
            if let Ok(meta) = std::fs::metadata(&path)
                && meta.dev() == at.dev
                && meta.ino() == at.ino
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
                    if line.seq > self.after {
                        if line.seq > self.after + 1 && self.after > 0 {
                            self.skipped += line.seq - self.after - 1;
                        }
                        return Ok(Some(Position {
                            dev: meta.dev(),
                            ino: meta.ino(),
                            offset: start,
                        }));
                    }
                }
                offset = next;
            }
        }
        let live = self.data_dir.join(AUDIT_FILE_NAME);
        Ok(std::fs::metadata(&live).ok().map(|meta| Position {
            dev: meta.dev(),
            ino: meta.ino(),
            offset: meta.len(),
        }))
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
        assert_eq!(follower.skipped, 0);
    }

    #[test]
    fn entries_whose_file_is_gone_are_counted_as_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let log = sample_log(&ChainKey::new(None), 6);
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        write(dir.path(), "audit.log", &lines[3..].concat());
        let mut follower = Follower::new(dir.path(), 1);
        assert_eq!(seqs(&follower.read(100).unwrap()), [4, 5, 6]);
        assert_eq!(follower.skipped, 2);
    }
}
