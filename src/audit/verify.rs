//! `audit verify`: checks the chain over files given in order (oldest
//! first), or by default `DATA_DIR/audit.log.N … audit.log.1, audit.log`.
//! Several chains at once (one per replica): each directory given is a
//! chain of its own.

use std::path::{Path, PathBuf};

use super::AUDIT_FILE_NAME;
use super::chain::{BadLine, ChainKey, ChainLink, Verifier, last_entry_of};

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

/// Verifies `files` in the order given. Each file is verified on its own,
/// from the last entry of the file before it (read from that file's tail),
/// several at once, streamed a buffer at a time: the chain needs each
/// entry's predecessor, which the log holds, so files need not wait for
/// one another (issue 55: a 10-million-entry log). The first bad line in
/// file order is reported.
pub fn verify_files(files: &[PathBuf], key: &ChainKey) -> VerifyReport {
    let seeds = match seeds_of(files) {
        Ok(seeds) => seeds,
        Err(bad) => return bad,
    };
    let results: Vec<std::sync::Mutex<Option<FileOutcome>>> =
        files.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len())
        .max(1);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= files.len() {
                        break;
                    }
                    let outcome = verify_file(i, &files[i], key, seeds[i].as_ref());
                    *results[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(outcome);
                }
            });
        }
    });
    let mut entries = 0;
    let mut anchored_at = None;
    let mut last_seq = None;
    for (i, result) in results.into_iter().enumerate() {
        let outcome = result
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .expect("every file was verified");
        match outcome {
            FileOutcome::Bad(report) => return report,
            FileOutcome::Ok(verified) => {
                if anchored_at.is_none() && seeds[i].is_none() {
                    anchored_at = verified.anchored_at;
                }
                entries += verified.entries;
                last_seq = verified.last_seq.or(last_seq);
            }
        }
    }
    VerifyReport::Ok {
        entries,
        keyed: key.is_keyed(),
        anchored_at,
        last_seq,
    }
}

/// One file's verification.
enum FileOutcome {
    Ok(Verified),
    Bad(VerifyReport),
}

struct Verified {
    entries: u64,
    anchored_at: Option<u64>,
    last_seq: Option<u64>,
}

/// The entry each file continues from: the last complete entry of the
/// nearest earlier file that has one (`None` for the first).
fn seeds_of(files: &[PathBuf]) -> Result<Vec<Option<ChainLink>>, VerifyReport> {
    let mut seeds = Vec::with_capacity(files.len());
    let mut seed = None;
    for path in files {
        seeds.push(seed.clone());
        if let Some(last) = tail_entry(path)? {
            seed = Some(last);
        }
    }
    Ok(seeds)
}

/// The last complete entry of `path`, read from its end.
fn tail_entry(path: &Path) -> Result<Option<ChainLink>, VerifyReport> {
    use std::io::{Read, Seek, SeekFrom};
    let cannot = |err: std::io::Error| VerifyReport::Bad {
        file: path.to_path_buf(),
        line: 0,
        why: format!("cannot be read: {err}"),
    };
    let mut file = std::fs::File::open(path).map_err(cannot)?;
    let len = file.metadata().map_err(cannot)?.len();
    let mut window = 64 * 1024;
    loop {
        let start = len.saturating_sub(window);
        file.seek(SeekFrom::Start(start)).map_err(cannot)?;
        let mut tail = Vec::with_capacity(window as usize);
        file.read_to_end(&mut tail).map_err(cannot)?;
        // A window that starts mid-line: skip to the first whole one.
        let whole = match start {
            0 => &tail[..],
            _ => match tail.iter().position(|b| *b == b'\n') {
                Some(at) => &tail[at + 1..],
                None => &[][..],
            },
        };
        if let Some(last) = last_entry_of(whole) {
            return Ok(Some(last));
        }
        if start == 0 {
            return Ok(None);
        }
        window *= 4;
    }
}

/// Verifies one file, from `seed` (the entry before its first).
fn verify_file(
    source: usize,
    path: &Path,
    key: &ChainKey,
    seed: Option<&(u64, Vec<u8>)>,
) -> FileOutcome {
    use std::io::BufRead;
    let cannot = |err: std::io::Error| {
        FileOutcome::Bad(VerifyReport::Bad {
            file: path.to_path_buf(),
            line: 0,
            why: format!("cannot be read: {err}"),
        })
    };
    let bad = |b: BadLine| {
        FileOutcome::Bad(VerifyReport::Bad {
            file: path.to_path_buf(),
            line: b.line,
            why: b.why,
        })
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) => return cannot(err),
    };
    let mut verifier = match seed {
        Some((seq, chain)) => Verifier::after(key.clone(), *seq, chain),
        None => Verifier::new(key.clone()),
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::with_capacity(1024);
    let mut line_no = 0;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) => return cannot(err),
        }
        line_no += 1;
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if let Err(b) = verifier.line(source, line_no, text) {
            return bad(b);
        }
    }
    if let Err(b) = verifier.end_of_source() {
        return bad(b);
    }
    FileOutcome::Ok(Verified {
        entries: verifier.entries,
        anchored_at: verifier.anchored_at,
        last_seq: verifier.last().map(|(seq, _)| seq),
    })
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
