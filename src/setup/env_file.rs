//! The env file `setup` writes: rendering (values quoted so they read back
//! unchanged through the gateway's parser, dotenvy) and writing (atomically,
//! mode 0600 from the first byte, never over an existing file without
//! `--force`, never through a symlink).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use rand::Rng;

/// Why the env file cannot be (or was not) written. Names the path, never a
/// value from the file.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{path} already exists; pass --force to replace it (it is left unchanged)")]
    Exists { path: String },
    #[error("{path} is a symlink; refusing to write through it (name the real file instead)")]
    Symlink { path: String },
    #[error("{path} exists and is not a regular file")]
    NotAFile { path: String },
    #[error("the directory of {path} does not exist (setup does not create directories)")]
    NoDirectory { path: String },
    #[error("{path} names no file")]
    NoFileName { path: String },
    #[error("{path} could not be written: {why}")]
    Io { path: String, why: String },
    #[error("the value of {key} cannot be stored in an env file: {why}")]
    Value {
        key: &'static str,
        why: &'static str,
    },
}

/// Renders `KEY=VALUE` lines under a comment header. Fails on a value
/// dotenvy could not read back (a control character such as a newline).
pub fn render(header: &[String], pairs: &[(&'static str, String)]) -> Result<String, OutputError> {
    let mut out = String::new();
    for line in header {
        for part in line.lines() {
            out.push_str("# ");
            out.push_str(part);
            out.push('\n');
        }
    }
    if !header.is_empty() {
        out.push('\n');
    }
    for (key, value) in pairs {
        out.push_str(key);
        out.push('=');
        out.push_str(&quote(key, value)?);
        out.push('\n');
    }
    Ok(out)
}

/// A value as dotenvy reads it back: bare when it holds only characters
/// dotenvy takes literally, else single-quoted (no substitution, no
/// escapes inside), a `'` closed, escaped and reopened (`'\''`).
fn quote(key: &'static str, value: &str) -> Result<String, OutputError> {
    if value.chars().any(char::is_control) {
        return Err(OutputError::Value {
            key,
            why: "it contains a control character",
        });
    }
    let bare = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.,:/@%+=~".contains(c));
    if bare {
        return Ok(value.to_owned());
    }
    Ok(format!("'{}'", value.replace('\'', r"'\''")))
}

/// The current UTC time as RFC 3339 (`2026-01-31T09:05:00Z`).
pub fn utc_timestamp(now: SystemTime) -> String {
    let secs = now
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Checks that `target` may be written: no symlink, nothing but a regular
/// file, an existing file only with `force`, an existing directory.
pub fn check_target(target: &Path, force: bool) -> Result<(), OutputError> {
    let path = target.display().to_string();
    if target.file_name().is_none() {
        return Err(OutputError::NoFileName { path });
    }
    match std::fs::symlink_metadata(target) {
        Ok(meta) if meta.file_type().is_symlink() => return Err(OutputError::Symlink { path }),
        Ok(meta) if !meta.is_file() => return Err(OutputError::NotAFile { path }),
        Ok(_) if !force => return Err(OutputError::Exists { path }),
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => {
            return Err(OutputError::Io {
                path,
                why: err.to_string(),
            });
        }
    }
    if !directory_of(target).is_dir() {
        return Err(OutputError::NoDirectory { path });
    }
    Ok(())
}

fn directory_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A temporary file beside the target, created (mode 0600, `create_new`)
/// before anything is done in Gitea, so an unwritable directory stops
/// `setup` early. [`PendingFile::commit`] renames it over the target;
/// dropping it uncommitted removes it.
#[derive(Debug)]
pub struct PendingFile {
    target: PathBuf,
    temp: PathBuf,
    file: Option<File>,
    force: bool,
}

impl PendingFile {
    /// Checks the target ([`check_target`]) and creates the temporary file.
    pub fn prepare(target: &Path, force: bool) -> Result<Self, OutputError> {
        check_target(target, force)?;
        let dir = directory_of(target);
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut attempt = 0;
        loop {
            let mut suffix = [0u8; 6];
            rand::rng().fill_bytes(&mut suffix);
            let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
            let temp = dir.join(format!(".{name}.setup-{suffix}.tmp"));
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&temp)
            {
                Ok(file) => {
                    return Ok(Self {
                        target: target.to_path_buf(),
                        temp,
                        file: Some(file),
                        force,
                    });
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 5 => {
                    attempt += 1;
                }
                Err(err) => {
                    return Err(OutputError::Io {
                        path: target.display().to_string(),
                        why: format!("cannot create a file in {}: {err}", dir.display()),
                    });
                }
            }
        }
    }

    /// Writes `contents`, syncs, and renames the temporary file over the
    /// target (checked again first), then syncs the directory.
    pub fn commit(mut self, contents: &str) -> Result<(), OutputError> {
        let path = self.target.display().to_string();
        let io = |why: std::io::Error| OutputError::Io {
            path: path.clone(),
            why: why.to_string(),
        };
        let mut file = self.file.take().expect("a pending file has its handle");
        file.write_all(contents.as_bytes()).map_err(io)?;
        file.sync_all().map_err(io)?;
        drop(file);
        check_target(&self.target, self.force)?;
        if !self.force {
            // A hard link fails if the target appeared since the check, so a
            // file created meanwhile is never replaced; where links are not
            // supported, the rename below does it (after the check above).
            match std::fs::hard_link(&self.temp, &self.target) {
                Ok(()) => {
                    let _ = std::fs::remove_file(&self.temp);
                    self.temp = PathBuf::new();
                    sync_directory(&self.target);
                    return Ok(());
                }
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                    return Err(OutputError::Exists { path });
                }
                Err(_) => {}
            }
        }
        // `rename` replaces a symlink itself, never what it points to.
        std::fs::rename(&self.temp, &self.target).map_err(io)?;
        // Renamed: nothing left to clean up.
        self.temp = PathBuf::new();
        sync_directory(&self.target);
        Ok(())
    }
}

/// Makes the new directory entry durable (best effort).
fn sync_directory(target: &Path) {
    if let Ok(dir) = File::open(directory_of(target)) {
        let _ = dir.sync_all();
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        if !self.temp.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    use super::*;

    fn read_back(text: &str) -> Vec<(String, String)> {
        dotenvy::from_read_iter(text.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .expect("dotenvy reads what render wrote")
    }

    #[test]
    fn values_round_trip_through_dotenvy() {
        let odd = [
            "plain-Value_1.2:3/4@5%6+7=8~9,0",
            "https://gitea.example.com",
            "http://[::1]:8080",
            "with space",
            "has#hash",
            " leading and trailing ",
            "dollar $HOME and ${HOME}",
            "single ' quote",
            "''",
            "double \" quote",
            "back\\slash",
            "ünïcödé",
            "",
        ];
        let pairs: Vec<(&'static str, String)> =
            odd.iter().map(|v| ("KEY", (*v).to_owned())).collect();
        let text = render(&["header".to_owned()], &pairs).unwrap();
        let back = read_back(&text);
        assert_eq!(back.len(), odd.len());
        for ((key, value), expected) in back.iter().zip(odd) {
            assert_eq!(key, "KEY");
            assert_eq!(value, expected);
        }
    }

    #[test]
    fn simple_values_stay_bare() {
        let text = render(
            &[],
            &[
                ("GITEA_URL", "https://gitea.example.com".to_owned()),
                ("MCP_PORT", "8080".to_owned()),
            ],
        )
        .unwrap();
        assert_eq!(text, "GITEA_URL=https://gitea.example.com\nMCP_PORT=8080\n");
    }

    #[test]
    fn header_lines_are_comments() {
        let text = render(
            &["one".to_owned(), "two\nthree".to_owned()],
            &[("K", "v".to_owned())],
        )
        .unwrap();
        assert_eq!(text, "# one\n# two\n# three\n\nK=v\n");
        assert_eq!(read_back(&text), [("K".to_owned(), "v".to_owned())]);
    }

    #[test]
    fn control_characters_are_refused_naming_the_key_only() {
        let err = render(&[], &[("GITEA_TOKEN", "abc\ndef".to_owned())]).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("GITEA_TOKEN"));
        assert!(!msg.contains("abc"));
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(utc_timestamp(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400 + 3_723);
        assert_eq!(utc_timestamp(t), "2000-02-29T01:02:03Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_767_225_599);
        assert_eq!(utc_timestamp(t), "2025-12-31T23:59:59Z");
    }

    #[test]
    fn writes_with_mode_0600_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join(".env");
        PendingFile::prepare(&target, false)
            .unwrap()
            .commit("K=v\n")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "K=v\n");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_existing_file_needs_force() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.env");
        std::fs::write(&target, "OLD=1\n").unwrap();
        let err = PendingFile::prepare(&target, false).unwrap_err();
        assert!(matches!(err, OutputError::Exists { .. }));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "OLD=1\n");
        PendingFile::prepare(&target, true)
            .unwrap()
            .commit("NEW=1\n")
            .unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "NEW=1\n");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_symlink_is_refused_even_with_force() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::write(&real, "R=1\n").unwrap();
        let link = dir.path().join(".env");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        for force in [false, true] {
            let err = PendingFile::prepare(&link, force).unwrap_err();
            assert!(matches!(err, OutputError::Symlink { .. }), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "R=1\n");
    }

    #[test]
    fn a_missing_directory_or_a_directory_target_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = PendingFile::prepare(&dir.path().join("nope/.env"), false).unwrap_err();
        assert!(matches!(err, OutputError::NoDirectory { .. }), "{err}");
        let err = PendingFile::prepare(dir.path(), true).unwrap_err();
        assert!(matches!(err, OutputError::NotAFile { .. }), "{err}");
    }

    #[test]
    fn dropping_an_uncommitted_file_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let pending = PendingFile::prepare(&dir.path().join(".env"), false).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        drop(pending);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_target_that_appears_meanwhile_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join(".env");
        let pending = PendingFile::prepare(&target, false).unwrap();
        std::fs::write(&target, "THEIRS=1\n").unwrap();
        let err = pending.commit("OURS=1\n").unwrap_err();
        assert!(matches!(err, OutputError::Exists { .. }));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "THEIRS=1\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
