//! Where the store lives and how it is opened: the SQLite file in
//! `DATA_DIR` (created owner-only) or a PostgreSQL pool from
//! `DATABASE_URL`, then its schema brought to this binary's level (or
//! served as it is, or refused: `schema`). The caller runs
//! [`Store::verify_decryptable`] afterwards.

use std::fs::{self, OpenOptions, Permissions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Postgres, Sqlite};

use super::cipher::TokenCipher;
use super::schema::{
    MIGRATIONS, MigrateMode, OpenReport, RecordedMigration, SchemaLevel, SchemaPlan, StoreOpening,
    plan,
};
use super::sql::SqlStore;
use super::sql::schema::read_state;
use super::{Store, StoreError, StoreLimits};

/// The SQLite database's name inside `DATA_DIR`.
pub const SQLITE_FILE_NAME: &str = "aegis.db";

/// How long a statement waits for another connection's write lock.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// SQLite serialises writers anyway; a few connections let reads overlap.
const SQLITE_MAX_CONNECTIONS: u32 = 8;
const POSTGRES_MAX_CONNECTIONS: u32 = 10;
const POSTGRES_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// Which backend, and where.
#[derive(Clone)]
pub enum StoreLocation {
    /// The data directory; the database is `SQLITE_FILE_NAME` inside it.
    Sqlite(PathBuf),
    /// A `postgres://` URL. A secret (it may carry a password): never
    /// logged, never put in an error.
    Postgres(SecretString),
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite(dir) => f.debug_tuple("Sqlite").field(dir).finish(),
            Self::Postgres(_) => f.write_str("Postgres([REDACTED])"),
        }
    }
}

impl StoreLocation {
    /// From `DATA_DIR` and `DATABASE_URL`: a `postgres://` or
    /// `postgresql://` URL selects PostgreSQL; anything else (or nothing)
    /// the SQLite file in the data directory.
    pub fn from_parts(data_dir: &Path, database_url: Option<&SecretString>) -> Self {
        match database_url {
            Some(url) if is_postgres_url(url.expose_secret()) => Self::Postgres(url.clone()),
            _ => Self::Sqlite(data_dir.to_path_buf()),
        }
    }

    /// The SQLite database file, for the SQLite backend.
    pub fn sqlite_file(&self) -> Option<PathBuf> {
        match self {
            Self::Sqlite(dir) => Some(dir.join(SQLITE_FILE_NAME)),
            Self::Postgres(_) => None,
        }
    }

    /// `sqlite` or `postgres`, for logs (never the URL).
    pub fn backend(&self) -> &'static str {
        match self {
            Self::Sqlite(_) => "sqlite",
            Self::Postgres(_) => "postgres",
        }
    }
}

fn is_postgres_url(url: &str) -> bool {
    let scheme = url.split_once("://").map(|(scheme, _)| scheme);
    scheme
        .is_some_and(|s| s.eq_ignore_ascii_case("postgres") || s.eq_ignore_ascii_case("postgresql"))
}

/// Opens the store and applies pending migrations (backing a SQLite store
/// up first), as a binary of unknown version: for tools and tests. The
/// gateway opens with [`open_store_with`].
pub async fn open_store(
    location: &StoreLocation,
    cipher: TokenCipher,
    limits: StoreLimits,
) -> Result<Arc<dyn Store>, StoreError> {
    let opening = StoreOpening::auto("unknown", 0);
    Ok(open_store_with(location, cipher, limits, &opening).await?.0)
}

/// Opens the store as `opening` says, and what opening did.
pub async fn open_store_with(
    location: &StoreLocation,
    cipher: TokenCipher,
    limits: StoreLimits,
    opening: &StoreOpening,
) -> Result<(Arc<dyn Store>, OpenReport), StoreError> {
    match location {
        StoreLocation::Sqlite(dir) => {
            let file = prepare_sqlite_file(dir)?;
            let options = SqliteConnectOptions::new()
                .filename(&file)
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true);
            let pool = SqlitePoolOptions::new()
                .max_connections(SQLITE_MAX_CONNECTIONS)
                .connect_with(options)
                .await
                .map_err(|err| {
                    StoreError::Open(format!("cannot open {}: {err}", file.display()))
                })?;
            let (store, report) =
                SqlStore::<Sqlite>::open(pool, cipher, limits, opening, Some(dir)).await?;
            // The WAL and shared-memory files exist now; SQLite gives them
            // the database file's mode, but make sure.
            for suffix in ["-wal", "-shm"] {
                let mut sidecar = file.clone().into_os_string();
                sidecar.push(suffix);
                restrict_existing(Path::new(&sidecar))?;
            }
            Ok((Arc::new(store), report))
        }
        StoreLocation::Postgres(url) => {
            let pool = postgres_pool(url, POSTGRES_MAX_CONNECTIONS).await?;
            let (store, report) =
                SqlStore::<Postgres>::open(pool, cipher, limits, opening, None).await?;
            Ok((Arc::new(store), report))
        }
    }
}

/// A pool on the PostgreSQL database `url` names.
async fn postgres_pool(
    url: &SecretString,
    connections: u32,
) -> Result<sqlx::Pool<Postgres>, StoreError> {
    // sqlx's parse error may quote the URL: replace it wholesale.
    let options = PgConnectOptions::from_str(url.expose_secret())
        .map_err(|_| StoreError::Open("DATABASE_URL is not a valid PostgreSQL URL".to_owned()))?;
    PgPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(POSTGRES_ACQUIRE_TIMEOUT)
        .connect_with(options)
        .await
        .map_err(|err| StoreError::Open(format!("cannot connect to PostgreSQL: {err}")))
}

/// What a store holds and what this binary would do with it, read without
/// changing anything (`store migrate --check`). `None`: there is no store
/// yet (a SQLite file that does not exist).
pub async fn inspect_store(
    location: &StoreLocation,
    binary_version: &str,
) -> Result<Option<SchemaInspection>, StoreError> {
    let state = match location {
        StoreLocation::Sqlite(dir) => {
            let file = dir.join(SQLITE_FILE_NAME);
            if !file.exists() {
                return Ok(None);
            }
            let options = SqliteConnectOptions::new()
                .filename(&file)
                .create_if_missing(false)
                .busy_timeout(SQLITE_BUSY_TIMEOUT);
            let pool = SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(options)
                .await
                .map_err(|err| {
                    StoreError::Open(format!("cannot open {}: {err}", file.display()))
                })?;
            read_state::<Sqlite>(&pool).await?
        }
        StoreLocation::Postgres(url) => {
            read_state::<Postgres>(&postgres_pool(url, 1).await?).await?
        }
    };
    let plan = plan(
        MIGRATIONS,
        &state.applied,
        &state.recorded,
        MigrateMode::Auto,
        binary_version,
    );
    Ok(Some(SchemaInspection {
        store: state
            .applied
            .iter()
            .map(|a| a.level)
            .max()
            .unwrap_or(SchemaLevel(0)),
        recorded: state.recorded,
        plan,
    }))
}

/// A store's schema as `store migrate --check` reports it.
#[derive(Debug, Clone)]
pub struct SchemaInspection {
    /// The newest migration the store holds.
    pub store: SchemaLevel,
    /// Its history, as far as it was kept.
    pub recorded: Vec<RecordedMigration>,
    /// What this binary would do with it when migrating at start.
    pub plan: SchemaPlan,
}

/// Creates the data directory (0700) if missing and the database file
/// (0600) if missing, tightens an existing file that is readable by
/// others, and refuses a database path that is a symlink (it could point
/// the store at a file someone else controls).
fn prepare_sqlite_file(dir: &Path) -> Result<PathBuf, StoreError> {
    if !dir.exists() {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|err| open_error("cannot create the data directory", dir, &err))?;
        // DirBuilder's mode is filtered by the umask; set it exactly.
        fs::set_permissions(dir, Permissions::from_mode(0o700))
            .map_err(|err| open_error("cannot restrict the data directory", dir, &err))?;
    }
    let file = dir.join(SQLITE_FILE_NAME);
    match fs::symlink_metadata(&file) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(StoreError::Open(format!(
                "{} is a symlink; refusing to open it as the database",
                file.display()
            )));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(StoreError::Open(format!(
                "{} is not a regular file",
                file.display()
            )));
        }
        Ok(_) => {
            restrict_existing(&file)?;
            check_sqlite_header(&file)?;
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            // O_EXCL: never follows a symlink planted in the meantime.
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&file)
                .map_err(|err| open_error("cannot create", &file, &err))?;
            fs::set_permissions(&file, Permissions::from_mode(0o600))
                .map_err(|err| open_error("cannot restrict", &file, &err))?;
        }
        Err(err) => return Err(open_error("cannot inspect", &file, &err)),
    }
    Ok(file)
}

/// The first 16 bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Refuses an existing database file that is not a SQLite database: empty,
/// truncated or foreign. SQLite would treat an empty file as a new
/// database, and the gateway would start with every client and grant gone.
/// The one empty file that is sound is a WAL database whose pages are all
/// still in `aegis.db-wal` (not yet checkpointed); SQLite recovers it.
fn check_sqlite_header(file: &Path) -> Result<(), StoreError> {
    use std::io::Read;
    let mut header = Vec::with_capacity(SQLITE_HEADER.len());
    fs::File::open(file)
        .and_then(|f| f.take(SQLITE_HEADER.len() as u64).read_to_end(&mut header))
        .map_err(|err| open_error("cannot read", file, &err))?;
    if header == SQLITE_HEADER {
        return Ok(());
    }
    let mut wal = file.as_os_str().to_owned();
    wal.push("-wal");
    let wal_holds_pages = fs::metadata(&wal).is_ok_and(|meta| meta.len() > 0);
    if header.is_empty() && wal_holds_pages {
        return Ok(());
    }
    let found = if header.is_empty() {
        "is empty (0 bytes)".to_owned()
    } else {
        "does not start with the SQLite header".to_owned()
    };
    Err(StoreError::Open(format!(
        "{} {found}: it is not a SQLite database. A missing file means a new store, but \
         this one exists: restore it from a backup, or delete it to start with an empty store \
         (every client and grant is lost)",
        file.display()
    )))
}

/// chmod 0600 a file that exists with wider bits; nothing if it is absent.
fn restrict_existing(path: &Path) -> Result<(), StoreError> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o077 != 0 => {
            fs::set_permissions(path, Permissions::from_mode(0o600))
                .map_err(|err| open_error("cannot restrict", path, &err))
        }
        Ok(_) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(open_error("cannot inspect", path, &err)),
    }
}

fn open_error(what: &str, path: &Path, err: &std::io::Error) -> StoreError {
    StoreError::Open(format!("{what} {}: {err}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_postgres_url_selects_postgres() {
        for url in [
            "postgres://u:p@h/db",
            "postgresql://h/db",
            "POSTGRES://h/db",
        ] {
            let url = SecretString::from(url);
            let location = StoreLocation::from_parts(Path::new("/data"), Some(&url));
            assert!(matches!(location, StoreLocation::Postgres(_)), "{url:?}");
        }
    }

    #[test]
    fn anything_else_is_the_sqlite_file_in_the_data_dir() {
        let other = SecretString::from("sqlite://elsewhere.db");
        for url in [None, Some(&other)] {
            let location = StoreLocation::from_parts(Path::new("/data"), url);
            assert_eq!(
                location.sqlite_file(),
                Some(PathBuf::from("/data/aegis.db"))
            );
        }
    }

    #[test]
    fn a_missing_file_becomes_a_new_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = prepare_sqlite_file(dir.path()).unwrap();
        assert_eq!(fs::metadata(&file).unwrap().len(), 0);
    }

    #[test]
    fn an_existing_empty_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SQLITE_FILE_NAME), b"").unwrap();
        let err = prepare_sqlite_file(dir.path()).unwrap_err().to_string();
        assert!(err.contains("is empty (0 bytes)"), "{err}");
    }

    #[test]
    fn an_existing_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SQLITE_FILE_NAME), b"PK\x03\x04 a zip").unwrap();
        let err = prepare_sqlite_file(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("does not start with the SQLite header"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_file_with_a_wal_holding_pages_is_opened() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SQLITE_FILE_NAME), b"").unwrap();
        fs::write(dir.path().join("aegis.db-wal"), b"wal frames").unwrap();
        assert!(prepare_sqlite_file(dir.path()).is_ok());
    }

    #[test]
    fn debug_hides_the_url() {
        let url = SecretString::from("postgres://user:hunter2@db/aegis");
        let shown = format!(
            "{:?}",
            StoreLocation::from_parts(Path::new("/d"), Some(&url))
        );
        assert!(!shown.contains("hunter2"));
        assert!(!shown.contains("db/aegis"));
    }
}
