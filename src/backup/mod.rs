//! `store backup` and `store restore` on a SQLite data directory: a
//! consistent copy taken while the gateway serves (the database by SQLite's
//! `VACUUM INTO`, the audit log cut after its last whole line, the
//! forwarder's cursor), described by a manifest with each file's SHA-256;
//! and its way back, checked before anything is replaced. A PostgreSQL
//! store is backed up with `pg_dump` (docs/operations.md#backups).
//!
//! A restore never deletes: a store it replaces is moved aside, and an
//! audit log that exists is kept and goes on (the backup's copy of the log
//! is restored only into a data directory that has none), so no entry
//! ever written is lost.

use std::fs;
use std::path::{Path, PathBuf};

use crate::audit::verify::{VerifyReport, verify_files};
use crate::audit::{AUDIT_FILE_NAME, AuditError, ChainKey};
use crate::config::Settings;
use crate::store::schema::StoreOpening;
use crate::store::schema::backup::{
    self as folders, BackupError, BackupManifest, MANIFEST_FORMAT, private_dir,
};
use crate::store::{
    SQLITE_FILE_NAME, StoreError, StoreLimits, StoreLocation, check_sqlite_copy, copy_sqlite_store,
    open_store_with,
};

/// Why a backup or a restore did not happen. Nothing was replaced.
#[derive(Debug, thiserror::Error)]
pub enum BackupFailure {
    #[error(
        "the store is PostgreSQL (DATABASE_URL): back it up with pg_dump and each replica's DATA_DIR audit log with `store backup`'s sibling, a file copy (docs/operations.md#backups)"
    )]
    Postgres,
    #[error("{0} exists and is not empty: name a new folder")]
    NotEmpty(PathBuf),
    #[error(
        "{0} holds a store: `store restore --force` moves it aside (into DATA_DIR/replaced-…) and puts the backup in its place"
    )]
    HasStore(PathBuf),
    #[error("a gateway is running on this DATA_DIR: stop it first")]
    InUse(AuditError),
    #[error("TOKEN_ENCRYPTION_KEY is required to check that the backup's secrets open")]
    NoKey,
    #[error("the audit log in the backup does not verify: {0}")]
    AuditChain(String),
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Folder(#[from] BackupError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl BackupFailure {
    fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Self + '_ {
        move |source| Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// A backup written.
#[derive(Debug, Clone)]
pub struct Taken {
    pub folder: PathBuf,
    pub manifest: BackupManifest,
    /// What `audit verify` said of the copied log.
    pub audit: Option<VerifyReport>,
}

/// Writes a backup of the SQLite data directory into `dest` (a new or
/// empty folder).
pub async fn take(settings: &Settings, dest: &Path, now: i64) -> Result<Taken, BackupFailure> {
    let StoreLocation::Sqlite(data_dir) = crate::app::store_location(settings) else {
        return Err(BackupFailure::Postgres);
    };
    if fs::read_dir(dest).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(BackupFailure::NotEmpty(dest.into()));
    }
    private_dir(dest)?;
    let db = dest.join(SQLITE_FILE_NAME);
    let level = copy_sqlite_store(&data_dir, &db).await?;
    check_sqlite_copy(&db).await?;
    let copied =
        crate::audit::snapshot::copy_log(&data_dir, dest).map_err(BackupFailure::io(dest))?;
    let audit = verify_copied_log(settings, dest, &copied)?;
    let mut files = vec![folders::digest(&db)?];
    for name in &copied {
        files.push(folders::digest(&dest.join(name))?);
    }
    let manifest = BackupManifest {
        format: MANIFEST_FORMAT.into(),
        created_at: now,
        binary_version: crate::build_info::VERSION.into(),
        schema: level.0,
        reason: "operator".into(),
        audit_last_seq: match &audit {
            Some(VerifyReport::Ok { last_seq, .. }) => *last_seq,
            _ => None,
        },
        files,
    };
    folders::seal(dest, &manifest)?;
    Ok(Taken {
        folder: dest.into(),
        manifest,
        audit,
    })
}

/// The copied log's files, oldest first (not the cursor), verified.
fn verify_copied_log(
    settings: &Settings,
    folder: &Path,
    copied: &[String],
) -> Result<Option<VerifyReport>, BackupFailure> {
    let files: Vec<PathBuf> = copied
        .iter()
        .filter(|name| name.starts_with(AUDIT_FILE_NAME))
        .map(|name| folder.join(name))
        .collect();
    if files.is_empty() {
        return Ok(None);
    }
    let key = settings
        .audit_hmac_key
        .as_ref()
        .map(|k| secrecy::ExposeSecret::expose_secret(k).as_bytes().to_vec());
    let report = verify_files(&files, &ChainKey::new(key.as_deref()));
    match report {
        VerifyReport::Bad { .. } => Err(BackupFailure::AuditChain(report.to_string())),
        ok => Ok(Some(ok)),
    }
}

/// What a restore did.
#[derive(Debug, Clone)]
pub struct Restored {
    pub manifest: BackupManifest,
    /// Where the store it replaced went.
    pub moved_aside: Option<PathBuf>,
    /// Whether the backup's audit log was put in place (the data directory
    /// had none); otherwise the log there was kept.
    pub audit_restored: bool,
}

/// Puts the backup in `folder` back into the SQLite data directory, after
/// checking its files against the manifest and that this binary, with the
/// configured keys, opens it. `force`: a store already there is moved
/// aside rather than refused.
pub async fn restore(
    settings: &Settings,
    folder: &Path,
    force: bool,
    now: i64,
) -> Result<Restored, BackupFailure> {
    let StoreLocation::Sqlite(data_dir) = crate::app::store_location(settings) else {
        return Err(BackupFailure::Postgres);
    };
    let manifest = folders::read_manifest(folder)?;
    folders::check_files(folder, &manifest)?;
    private_dir(&data_dir)?;
    // Held until the restore ends: no gateway starts here meanwhile.
    let _lock = crate::audit::snapshot::lock_data_dir(&data_dir).map_err(BackupFailure::InUse)?;
    check_opens(settings, folder, &data_dir, now).await?;
    let live = data_dir.join(SQLITE_FILE_NAME);
    let moved_aside = if live.exists() {
        if !force {
            return Err(BackupFailure::HasStore(live));
        }
        Some(move_store_aside(&data_dir, now)?)
    } else {
        None
    };
    put_in_place(&folder.join(SQLITE_FILE_NAME), &live)?;
    let has_log = crate::audit::verify::default_files(&data_dir)
        .iter()
        .any(|f| f.exists());
    let audit_restored = !has_log && manifest.audit_last_seq.is_some();
    if audit_restored {
        for file in manifest.files.iter().filter(|f| f.name != SQLITE_FILE_NAME) {
            put_in_place(&folder.join(&file.name), &data_dir.join(&file.name))?;
        }
    }
    fs::File::open(&data_dir)
        .and_then(|d| d.sync_all())
        .map_err(BackupFailure::io(&data_dir))?;
    Ok(Restored {
        manifest,
        moved_aside,
        audit_restored,
    })
}

/// Opens a scratch copy of the backup's database as the gateway would
/// (migrating the copy if it is older) and decrypts every secret in it.
async fn check_opens(
    settings: &Settings,
    folder: &Path,
    data_dir: &Path,
    now: i64,
) -> Result<(), BackupFailure> {
    if settings.token_encryption_keys.is_empty() {
        return Err(BackupFailure::NoKey);
    }
    let scratch = data_dir.join(format!(".restore-check-{now}"));
    let _ = fs::remove_dir_all(&scratch);
    private_dir(&scratch)?;
    let checked = async {
        fs::copy(
            folder.join(SQLITE_FILE_NAME),
            scratch.join(SQLITE_FILE_NAME),
        )
        .map_err(BackupFailure::io(&scratch))?;
        let cipher = crate::store::cipher::TokenCipher::new(&settings.token_encryption_keys)
            .map_err(|e| BackupFailure::Store(StoreError::Open(e.to_string())))?;
        let mut opening = StoreOpening::auto(crate::build_info::VERSION, now);
        opening.keep_backups = 0;
        let (store, _) = open_store_with(
            &StoreLocation::Sqlite(scratch.clone()),
            cipher,
            StoreLimits::default(),
            &opening,
        )
        .await?;
        store.verify_decryptable().await?;
        Ok(())
    }
    .await;
    let _ = fs::remove_dir_all(&scratch);
    checked
}

/// Moves the store's files (the database and its WAL companions) into a
/// new `DATA_DIR/replaced-…` folder; returns it.
fn move_store_aside(data_dir: &Path, now: i64) -> Result<PathBuf, BackupFailure> {
    let stamp = chrono::DateTime::from_timestamp(now, 0)
        .map(|t| t.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|| now.to_string());
    let aside = data_dir.join(format!("replaced-{stamp}"));
    private_dir(&aside)?;
    for suffix in ["", "-wal", "-shm"] {
        let name = format!("{SQLITE_FILE_NAME}{suffix}");
        let from = data_dir.join(&name);
        if from.exists() {
            fs::rename(&from, aside.join(&name)).map_err(BackupFailure::io(&from))?;
        }
    }
    Ok(aside)
}

/// Copies `from` to `to` through a temporary file beside it (0600,
/// synced, renamed): `to` is the old file or the whole new one, never a
/// part.
fn put_in_place(from: &Path, to: &Path) -> Result<(), BackupFailure> {
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = to.with_file_name(format!(".{name}.restoring"));
    let _ = fs::remove_file(&temporary);
    let mut source = fs::File::open(from).map_err(BackupFailure::io(from))?;
    let mut file = folders::private_file(&temporary)?;
    std::io::copy(&mut source, &mut file)
        .and_then(|_| file.sync_all())
        .map_err(BackupFailure::io(&temporary))?;
    fs::rename(&temporary, to).map_err(BackupFailure::io(to))
}
