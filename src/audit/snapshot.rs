//! A copy of a live audit log for a backup: the rotated files and the
//! current one, oldest first, each cut after its last whole line, so the
//! copy is a prefix of the chain that `audit verify` passes. The writer
//! goes on meanwhile: every file is opened before any is read, and the
//! opening is tried again when a rotation renamed files between the
//! listing and the opens (an open file keeps its contents whatever its
//! name becomes). Also the lock that keeps a gateway off a data directory
//! while it is restored.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::forward::CURSOR_FILE_NAME;
use super::verify::default_files;
use super::{AUDIT_FILE_NAME, AuditError};

/// How often the files are listed and opened again when a rotation moved
/// them in between.
const ATTEMPTS: usize = 5;

/// Copies the audit log of `data_dir` (and the forwarder's cursor, when
/// there is one) into `dest`, which exists. Returns the copied files' names
/// in `dest`, the log's oldest first and the cursor last.
pub fn copy_log(data_dir: &Path, dest: &Path) -> io::Result<Vec<String>> {
    let opened = open_stable(data_dir)?;
    let mut names = Vec::new();
    for (path, mut file) in opened {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| AUDIT_FILE_NAME.to_owned());
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        // The writer may be in the middle of a line: keep whole lines only.
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        write_private(&dest.join(&name), &bytes[..whole])?;
        names.push(name);
    }
    let cursor = data_dir.join(CURSOR_FILE_NAME);
    if let Ok(text) = fs::read(&cursor) {
        write_private(&dest.join(CURSOR_FILE_NAME), &text)?;
        names.push(CURSOR_FILE_NAME.to_owned());
    }
    Ok(names)
}

/// The log's files, opened, oldest first, from one listing that did not
/// change while they were opened.
fn open_stable(data_dir: &Path) -> io::Result<Vec<(PathBuf, File)>> {
    for _ in 0..ATTEMPTS {
        let before = identities(data_dir);
        let mut opened = Vec::new();
        for path in default_files(data_dir) {
            match File::open(&path) {
                Ok(file) => opened.push((path, file)),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => return Err(err),
            }
        }
        if identities(data_dir) == before {
            return Ok(opened);
        }
    }
    Err(io::Error::other(
        "the audit log kept rotating while it was copied; try again",
    ))
}

/// Each log file's name and inode, oldest first.
fn identities(data_dir: &Path) -> Vec<(PathBuf, u64)> {
    default_files(data_dir)
        .into_iter()
        .filter_map(|p| fs::metadata(&p).ok().map(|m| (p, m.ino())))
        .collect()
}

fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Holds the lock of the log in `data_dir` (the one a running gateway
/// holds): while it lives no gateway starts there, and taking it fails
/// when one runs.
pub struct DataDirLock {
    _lock: super::lock::LogLock,
}

/// Takes the lock of `data_dir`'s log; [`AuditError::Locked`] when a
/// gateway holds it.
pub fn lock_data_dir(data_dir: &Path) -> Result<DataDirLock, AuditError> {
    Ok(DataDirLock {
        _lock: super::lock::lock_log(&data_dir.join(AUDIT_FILE_NAME))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_keeps_whole_lines_oldest_first_and_the_cursor() {
        let data = tempfile::tempdir().unwrap();
        let dest = tempfile::tempdir().unwrap();
        fs::write(data.path().join("audit.log.2"), "one\n").unwrap();
        fs::write(data.path().join("audit.log.1"), "two\n").unwrap();
        fs::write(data.path().join("audit.log"), "three\nfou").unwrap();
        fs::write(data.path().join(CURSOR_FILE_NAME), "2").unwrap();
        let names = copy_log(data.path(), dest.path()).unwrap();
        assert_eq!(
            names,
            ["audit.log.2", "audit.log.1", "audit.log", CURSOR_FILE_NAME]
        );
        assert_eq!(
            fs::read_to_string(dest.path().join("audit.log")).unwrap(),
            "three\n"
        );
        let mode = fs::metadata(dest.path().join("audit.log.2"))
            .unwrap()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_data_dir_without_a_log_copies_nothing() {
        let data = tempfile::tempdir().unwrap();
        let dest = tempfile::tempdir().unwrap();
        assert!(copy_log(data.path(), dest.path()).unwrap().is_empty());
    }
}
