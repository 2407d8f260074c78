//! `audit verify`: checks the chain over files given in order (oldest
//! first), or by default `DATA_DIR/audit.log.N … audit.log.1, audit.log`.

use std::path::{Path, PathBuf};

use super::AUDIT_FILE_NAME;
use super::chain::{BadLine, ChainKey, Verifier, lines};

/// The outcome of a verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyReport {
    Ok {
        entries: u64,
        keyed: bool,
        /// Set when the files do not start at sequence number 1 (older
        /// rotated files were dropped or not given).
        anchored_at: Option<u64>,
        last_seq: Option<u64>,
    },
    Bad {
        file: PathBuf,
        line: usize,
        why: String,
    },
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        matches!(self, Self::Ok { .. })
    }
}

impl std::fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Ok {
                entries,
                keyed,
                anchored_at,
                ..
            } => {
                write!(
                    f,
                    "ok: {entries} entries verified ({})",
                    if *keyed { "keyed" } else { "unkeyed" }
                )?;
                // Say so when older entries were not checked: dropped or
                // deleted files must not pass unnoticed.
                match anchored_at {
                    Some(seq) => write!(
                        f,
                        "; the chain starts at sequence {seq}, not 1: older entries were not checked (files not given, rotated away or deleted)"
                    ),
                    None => Ok(()),
                }
            }
            Self::Bad { file, line, why } => {
                write!(f, "line {line} of {}: {why}", file.display())
            }
        }
    }
}

/// The log files of `data_dir`, oldest first: `audit.log.N` … `audit.log.1`, `audit.log`.
pub fn default_files(data_dir: &Path) -> Vec<PathBuf> {
    let prefix = format!("{AUDIT_FILE_NAME}.");
    let mut rotated: Vec<(u64, PathBuf)> = std::fs::read_dir(data_dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix(&prefix)?.parse::<u64>().ok()?;
            Some((n, e.path()))
        })
        .collect();
    rotated.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut files: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    files.push(data_dir.join(AUDIT_FILE_NAME));
    files
}

/// Verifies `files` in the order given.
pub fn verify_files(files: &[PathBuf], key: &ChainKey) -> VerifyReport {
    let mut verifier = Verifier::new(key.clone());
    let bad = |files: &[PathBuf], b: BadLine| VerifyReport::Bad {
        file: files[b.source].clone(),
        line: b.line,
        why: b.why,
    };
    for (source, path) in files.iter().enumerate() {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(err) => {
                return VerifyReport::Bad {
                    file: path.clone(),
                    line: 0,
                    why: format!("cannot be read: {err}"),
                };
            }
        };
        // Per line, so a torn multi-byte character spoils only its own line.
        let text = String::from_utf8_lossy(&bytes);
        for (i, line) in lines(&text).enumerate() {
            if let Err(b) = verifier.line(source, i + 1, line) {
                return bad(files, b);
            }
        }
        if let Err(b) = verifier.end_of_source() {
            return bad(files, b);
        }
    }
    VerifyReport::Ok {
        entries: verifier.entries,
        keyed: key.is_keyed(),
        anchored_at: verifier.anchored_at,
        last_seq: verifier.last().map(|(s, _)| *s),
    }
}
