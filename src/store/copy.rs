//! Copies of a SQLite store for backups: taken from the live database file
//! without opening it the way the gateway does (no migration, no key), and
//! checked afterwards (SQLite's integrity check, the schema level it holds).

use std::path::Path;
use std::time::Duration;

use sqlx::Sqlite;
use sqlx::sqlite::{SqliteConnectOptions, SqlitePool, SqlitePoolOptions};

use super::StoreError;
use super::open::SQLITE_FILE_NAME;
use super::schema::SchemaLevel;
use super::sql::schema::{store_level, vacuum_into};

async fn pool(file: &Path, read_only: bool) -> Result<SqlitePool, StoreError> {
    if !file.is_file() {
        return Err(StoreError::Open(format!(
            "{} does not exist: there is no store there",
            file.display()
        )));
    }
    let options = SqliteConnectOptions::new()
        .filename(file)
        .create_if_missing(false)
        .read_only(read_only)
        .busy_timeout(Duration::from_secs(5));
    SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .map_err(|err| StoreError::Open(format!("cannot open {}: {err}", file.display())))
}

/// Copies the store in `data_dir` into `file` (absent; made 0600) while a
/// gateway may be writing to it; returns the copy's schema level.
pub async fn copy_sqlite_store(data_dir: &Path, file: &Path) -> Result<SchemaLevel, StoreError> {
    let pool = pool(&data_dir.join(SQLITE_FILE_NAME), false).await?;
    let level = store_level::<Sqlite>(&pool).await?;
    vacuum_into::<Sqlite>(&pool, file).await?;
    pool.close().await;
    Ok(level)
}

/// SQLite's integrity check of a copied database, and its schema level.
pub async fn check_sqlite_copy(file: &Path) -> Result<SchemaLevel, StoreError> {
    let pool = pool(file, true).await?;
    let verdict: (String,) = sqlx::query_as("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await?;
    if verdict.0 != "ok" {
        return Err(StoreError::Open(format!(
            "{} fails SQLite's integrity check: {}",
            file.display(),
            verdict.0
        )));
    }
    let level = store_level::<Sqlite>(&pool).await?;
    pool.close().await;
    Ok(level)
}
