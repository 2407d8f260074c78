//! `audit verify`: checks the chain over files given in order (oldest
//! first), or by default `DATA_DIR/audit.log.N … audit.log.1, audit.log`.
//! Several chains at once (one per replica): each directory given is a
//! chain of its own.

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

/// One chain to verify: what to call it, and its files oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainFiles {
    pub name: PathBuf,
    pub files: Vec<PathBuf>,
}

/// The chains named by `audit verify`'s arguments: each directory is a
/// chain (its [`default_files`]); consecutive file arguments are one chain,
/// in the order given. `is_dir` says which arguments are directories.
pub fn chains_of(paths: &[PathBuf], is_dir: impl Fn(&Path) -> bool) -> Vec<ChainFiles> {
    let mut chains: Vec<ChainFiles> = Vec::new();
    let mut files_run = false;
    for path in paths {
        if is_dir(path) {
            chains.push(ChainFiles {
                name: path.clone(),
                files: default_files(path),
            });
            files_run = false;
        } else if files_run && let Some(chain) = chains.last_mut() {
            chain.files.push(path.clone());
        } else {
            chains.push(ChainFiles {
                name: path.clone(),
                files: vec![path.clone()],
            });
            files_run = true;
        }
    }
    chains
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

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(names: &[&str]) -> Vec<PathBuf> {
        names.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn each_directory_is_a_chain_of_its_own() {
        let chains = chains_of(&paths(&["r1", "r2"]), |_| true);
        assert_eq!(chains.len(), 2);
        assert_eq!(chains[0].name, PathBuf::from("r1"));
        assert_eq!(chains[0].files, paths(&["r1/audit.log"]));
        assert_eq!(chains[1].files, paths(&["r2/audit.log"]));
    }

    #[test]
    fn consecutive_files_are_one_chain_in_the_order_given() {
        let is_dir = |p: &Path| p == Path::new("r2");
        let chains = chains_of(&paths(&["a.log.1", "a.log", "r2", "b.log"]), is_dir);
        let files: Vec<_> = chains.iter().map(|c| c.files.clone()).collect();
        assert_eq!(
            files,
            [
                paths(&["a.log.1", "a.log"]),
                paths(&["r2/audit.log"]),
                paths(&["b.log"])
            ]
        );
    }
}
