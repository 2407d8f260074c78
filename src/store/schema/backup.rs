//! Backup folders: what one holds (`manifest.json`: who made it, at which
//! schema, each file with its size and SHA-256), how a folder is made
//! private, and the folders a SQLite store keeps of itself before its
//! migrations (`DATA_DIR/backups/before-schema-NNNN-…`, the newest few).
//! The copy itself is SQL (`VACUUM INTO`, `sql/schema.rs`); an operator's
//! backup (`store backup`) adds the audit log.

use std::fs::{self, DirBuilder, OpenOptions, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::SchemaLevel;
use crate::store::UnixTime;

/// The folder in `DATA_DIR` that holds the backups taken before migrations.
pub const BACKUPS_DIR: &str = "backups";
/// The description of a backup folder's contents.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The manifest's format; a restore refuses any other.
pub const MANIFEST_FORMAT: &str = "aegis-gitea-mcp backup 1";
const BEFORE_MIGRATION_PREFIX: &str = "before-schema-";

/// What a backup folder holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupManifest {
    pub format: String,
    pub created_at: UnixTime,
    /// The binary that took it.
    pub binary_version: String,
    /// The store's schema level in the copy.
    pub schema: i64,
    /// Why it was taken: `operator` (`store backup`) or `before migration NNNN`.
    pub reason: String,
    pub files: Vec<BackupFile>,
    /// The audit log's last sequence number in the copy, when it holds the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_last_seq: Option<u64>,
}

/// One file of a backup, by its name inside the folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupFile {
    pub name: String,
    pub bytes: u64,
    pub sha256: String,
}

/// Why a backup folder cannot be made, read or trusted.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{0}: not a backup of this gateway (no readable {MANIFEST_FILE} of format \"{MANIFEST_FORMAT}\")"
    )]
    NotABackup(PathBuf),
    #[error("{path}: {what}")]
    Damaged { path: PathBuf, what: String },
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> BackupError + '_ {
    move |source| BackupError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Makes `dir` (and its parents) with mode 0700; an existing one is
/// tightened to 0700.
pub fn private_dir(dir: &Path) -> Result<(), BackupError> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_error(dir))?;
    fs::set_permissions(dir, Permissions::from_mode(0o700)).map_err(io_error(dir))
}

/// Creates an empty file, mode 0600, that must not exist yet.
pub fn private_file(path: &Path) -> Result<fs::File, BackupError> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_error(path))
}

/// A new, empty, private folder for a backup taken before migrating a store
/// at `from` (in `data_dir/backups`).
pub fn new_before_migration_folder(
    data_dir: &Path,
    from: SchemaLevel,
    now: UnixTime,
) -> Result<PathBuf, BackupError> {
    let parent = data_dir.join(BACKUPS_DIR);
    private_dir(&parent)?;
    let stamp = chrono::DateTime::from_timestamp(now, 0)
        .map(|t| t.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|| now.to_string());
    let mut folder = parent.join(format!("{BEFORE_MIGRATION_PREFIX}{from}-{stamp}"));
    // Two migrations within a second (a test, a retry): keep both.
    let mut n = 1;
    while folder.exists() {
        n += 1;
        folder = parent.join(format!("{BEFORE_MIGRATION_PREFIX}{from}-{stamp}-{n}"));
    }
    fs::create_dir(&folder).map_err(io_error(&folder))?;
    fs::set_permissions(&folder, Permissions::from_mode(0o700)).map_err(io_error(&folder))?;
    Ok(folder)
}

/// The SHA-256 of a file, and its size.
pub fn digest(path: &Path) -> Result<BackupFile, BackupError> {
    let mut file = fs::File::open(path).map_err(io_error(path))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buffer).map_err(io_error(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        bytes += n as u64;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(BackupFile {
        name,
        bytes,
        sha256: hex::encode(hasher.finalize()),
    })
}

/// Writes `manifest` into `folder` (0600) and syncs the folder's files and
/// the folder itself, so a backup that exists is whole.
pub fn seal(folder: &Path, manifest: &BackupManifest) -> Result<(), BackupError> {
    for file in &manifest.files {
        let path = folder.join(&file.name);
        fs::File::open(&path)
            .and_then(|f| f.sync_all())
            .map_err(io_error(&path))?;
    }
    let path = folder.join(MANIFEST_FILE);
    let text = serde_json::to_string_pretty(manifest).unwrap_or_default();
    let mut file = private_file(&path)?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io_error(&path))?;
    fs::File::open(folder)
        .and_then(|d| d.sync_all())
        .map_err(io_error(folder))
}

/// The manifest of a backup folder.
pub fn read_manifest(folder: &Path) -> Result<BackupManifest, BackupError> {
    let path = folder.join(MANIFEST_FILE);
    let text = fs::read_to_string(&path).map_err(|_| BackupError::NotABackup(folder.into()))?;
    let manifest: BackupManifest =
        serde_json::from_str(&text).map_err(|_| BackupError::NotABackup(folder.into()))?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(BackupError::NotABackup(folder.into()));
    }
    Ok(manifest)
}

/// Checks every file the manifest names: present, of its size and digest,
/// and named plainly (no path can leave the folder).
pub fn check_files(folder: &Path, manifest: &BackupManifest) -> Result<(), BackupError> {
    for file in &manifest.files {
        let plain = !file.name.is_empty()
            && !file.name.starts_with('.')
            && !file.name.contains(['/', '\\', '\0']);
        if !plain {
            return Err(BackupError::Damaged {
                path: folder.into(),
                what: format!(
                    "the manifest names a file {:?} outside the folder",
                    file.name
                ),
            });
        }
        let found = digest(&folder.join(&file.name))?;
        if found.bytes != file.bytes || found.sha256 != file.sha256 {
            return Err(BackupError::Damaged {
                path: folder.join(&file.name),
                what: "differs from the manifest (size or SHA-256): the backup is damaged".into(),
            });
        }
    }
    Ok(())
}

/// A backup taken before a migration, as `DATA_DIR/backups` holds it.
#[derive(Debug, Clone)]
pub struct BackupFolder {
    pub path: PathBuf,
    pub manifest: BackupManifest,
}

/// The backups taken before migrations in `data_dir`, oldest first.
pub fn before_migration_folders(data_dir: &Path) -> Vec<BackupFolder> {
    let Ok(entries) = fs::read_dir(data_dir.join(BACKUPS_DIR)) else {
        return Vec::new();
    };
    let mut folders: Vec<BackupFolder> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(BEFORE_MIGRATION_PREFIX)
        })
        .filter_map(|e| {
            let path = e.path();
            read_manifest(&path)
                .ok()
                .map(|manifest| BackupFolder { path, manifest })
        })
        .collect();
    folders.sort_by(|a, b| (a.manifest.created_at, &a.path).cmp(&(b.manifest.created_at, &b.path)));
    folders
}

/// Removes all but the newest `keep` backups taken before migrations
/// (never an operator's); returns what it removed.
pub fn prune_before_migration(data_dir: &Path, keep: usize) -> Vec<PathBuf> {
    let folders = before_migration_folders(data_dir);
    let excess = folders.len().saturating_sub(keep);
    let mut removed = Vec::new();
    for folder in folders.into_iter().take(excess) {
        match fs::remove_dir_all(&folder.path) {
            Ok(()) => removed.push(folder.path),
            Err(err) => tracing::warn!(
                folder = %folder.path.display(),
                error = %err,
                "an old backup taken before a migration could not be removed"
            ),
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(created_at: UnixTime, files: Vec<BackupFile>) -> BackupManifest {
        BackupManifest {
            format: MANIFEST_FORMAT.into(),
            created_at,
            binary_version: "0.1.0".into(),
            schema: 10,
            reason: "before migration 0011".into(),
            files,
            audit_last_seq: None,
        }
    }

    #[test]
    fn a_sealed_folder_reads_back_and_checks() {
        let dir = tempfile::tempdir().unwrap();
        let folder =
            new_before_migration_folder(dir.path(), SchemaLevel(10), 1_800_000_000).unwrap();
        assert!(folder.ends_with("backups/before-schema-0010-20270115T080000Z"));
        fs::write(folder.join("aegis.db"), b"a database").unwrap();
        let m = manifest(
            1_800_000_000,
            vec![digest(&folder.join("aegis.db")).unwrap()],
        );
        seal(&folder, &m).unwrap();
        assert_eq!(read_manifest(&folder).unwrap(), m);
        check_files(&folder, &m).unwrap();
        let mode = fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_changed_file_is_damage() {
        let dir = tempfile::tempdir().unwrap();
        let folder = new_before_migration_folder(dir.path(), SchemaLevel(3), 0).unwrap();
        fs::write(folder.join("aegis.db"), b"a database").unwrap();
        let m = manifest(0, vec![digest(&folder.join("aegis.db")).unwrap()]);
        seal(&folder, &m).unwrap();
        fs::write(folder.join("aegis.db"), b"a databasf").unwrap();
        let err = check_files(&folder, &m).unwrap_err().to_string();
        assert!(err.contains("the backup is damaged"), "{err}");
    }

    #[test]
    fn a_manifest_cannot_name_a_file_outside_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = manifest(0, vec![]);
        m.files.push(BackupFile {
            name: "../aegis.db".into(),
            bytes: 0,
            sha256: String::new(),
        });
        let err = check_files(dir.path(), &m).unwrap_err().to_string();
        assert!(err.contains("outside the folder"), "{err}");
    }

    #[test]
    fn pruning_keeps_the_newest_and_never_an_operators_backup() {
        let dir = tempfile::tempdir().unwrap();
        for (i, at) in [300, 100, 200, 400].into_iter().enumerate() {
            let folder =
                new_before_migration_folder(dir.path(), SchemaLevel(i as i64 + 1), at).unwrap();
            seal(&folder, &manifest(at, vec![])).unwrap();
        }
        let operator = dir.path().join(BACKUPS_DIR).join("nightly");
        fs::create_dir(&operator).unwrap();
        seal(&operator, &manifest(0, vec![])).unwrap();
        let removed = prune_before_migration(dir.path(), 2);
        assert_eq!(removed.len(), 2);
        let left: Vec<i64> = before_migration_folders(dir.path())
            .iter()
            .map(|f| f.manifest.created_at)
            .collect();
        assert_eq!(left, vec![300, 400]);
        assert!(operator.exists());
    }
}
