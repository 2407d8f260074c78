//! The schema's SQL: what the store says it applied (sqlx's
//! `_sqlx_migrations`) and its history (`aegis_schema_history`: each
//! migration's compatibility, the binary that applied it and the backup
//! taken before), the copy a SQLite store makes of itself before migrating
//! (`VACUUM INTO`), and the opening that puts them together with the plan
//! of `store::schema`.
//!
//! The history table is created by this code, not by a numbered migration:
//! a binary from before it would refuse a store holding a migration it does
//! not know, and the history exists to say which of those it may serve on.
//! A binary that does not know the table never reads it.
//!
//! For the same reason the indexes of [`OPENING_INDEXES`] are created here
//! (`IF NOT EXISTS`) rather than by a migration 0011: the previous release
//! (0010) predates the history, and its migrator refuses to start on a
//! store holding any migration it does not know, so a rolling upgrade
//! whose old replica restarts would break. An index changes nothing any
//! binary reads. The next release's first migration adopts them (with `IF
//! NOT EXISTS`), and this list goes.

use std::path::Path;

use sqlx::Pool;

use super::backend::{Backend, migrator, stmt};
use super::{SqlStore, StoreError};
use crate::store::schema::backup::{self as folders, BackupManifest, MANIFEST_FORMAT};
use crate::store::schema::{
    AppliedMigration, Compatibility, KnownMigration, MIGRATIONS, MigrateMode, OpenReport,
    RecordedMigration, SchemaLevel, SchemaPlan, SchemaStatus, StoreOpening, binary_level, plan,
};

/// The history's name, in the store.
pub(crate) const HISTORY_TABLE: &str = "aegis_schema_history";
const SQLX_TABLE: &str = "_sqlx_migrations";
/// The database file's name inside a backup folder.
pub(crate) const BACKUP_DB_FILE: &str = "aegis.db";

/// Indexes the opening keeps, outside the numbered migrations (see the
/// module's doc): the admin's pages, all grants or one client's, and the
/// client list, ordered by age without a sort of every row, and a login
/// looked up without regard to case without a scan (issue 55).
pub(crate) const OPENING_INDEXES: [&str; 4] = [
    "CREATE INDEX IF NOT EXISTS grants_created ON grants (created_at, id)",
    "CREATE INDEX IF NOT EXISTS grants_client_created ON grants (client_id, created_at, id)",
    "CREATE INDEX IF NOT EXISTS grants_login_lower ON grants (LOWER(login))",
    "CREATE INDEX IF NOT EXISTS clients_created ON clients (created_at, client_id)",
];

/// What the store says about its schema.
#[derive(Debug, Clone, Default)]
pub(crate) struct SchemaState {
    pub applied: Vec<AppliedMigration>,
    pub recorded: Vec<RecordedMigration>,
    pub has_history: bool,
}

async fn table_exists<DB: Backend>(
    conn: &mut DB::Connection,
    table: &'static str,
) -> Result<bool, StoreError> {
    let row = stmt::<DB>(DB::TABLE_EXISTS)
        .bind(table)
        .fetch_optional(conn)
        .await?;
    Ok(match row {
        Some(row) => row.int("n")? > 0,
        None => false,
    })
}

/// Reads `_sqlx_migrations` and the history (either may be missing).
pub(crate) async fn read_state<DB: Backend>(pool: &Pool<DB>) -> Result<SchemaState, StoreError> {
    let mut state = SchemaState::default();
    let mut conn = pool.acquire().await?;
    if table_exists::<DB>(&mut conn, SQLX_TABLE).await? {
        let rows = stmt::<DB>(
            "SELECT version, CAST(CASE WHEN success THEN 1 ELSE 0 END AS BIGINT) AS ok \
             FROM _sqlx_migrations ORDER BY version",
        )
        .fetch_all(&mut conn)
        .await?;
        for row in rows {
            state.applied.push(AppliedMigration {
                level: SchemaLevel(row.int("version")?),
                succeeded: row.int("ok")? == 1,
            });
        }
    }
    state.has_history = table_exists::<DB>(&mut conn, HISTORY_TABLE).await?;
    if state.has_history {
        let rows = stmt::<DB>(
            "SELECT version, description, oldest_reader, applied_by, backup \
             FROM aegis_schema_history ORDER BY version",
        )
        .fetch_all(&mut conn)
        .await?;
        for row in rows {
            state.recorded.push(RecordedMigration {
                level: SchemaLevel(row.int("version")?),
                description: row.text("description")?,
                compatibility: Compatibility::from_oldest_reader(SchemaLevel(
                    row.int("oldest_reader")?,
                )),
                applied_by: row.opt_text("applied_by")?,
                backup: row.opt_text("backup")?,
            });
        }
    }
    Ok(state)
}

/// The newest migration the store holds (0 for none), read now: another
/// replica may have migrated since this one opened.
pub(crate) async fn store_level<DB: Backend>(pool: &Pool<DB>) -> Result<SchemaLevel, StoreError> {
    let mut conn = pool.acquire().await?;
    let row = stmt::<DB>(
        "SELECT CAST(COALESCE(MAX(version), 0) AS BIGINT) AS level FROM _sqlx_migrations \
         WHERE success",
    )
    .fetch_optional(&mut conn)
    .await?;
    Ok(SchemaLevel(match row {
        Some(row) => row.int("level")?,
        None => 0,
    }))
}

/// Records each known migration the store holds that its history lacks:
/// `applied_now` with this binary and `backup`, the others as applied by an
/// earlier version. An existing row is left as it is.
async fn record<DB: Backend>(
    pool: &Pool<DB>,
    state: &SchemaState,
    applied_now: &[KnownMigration],
    backup: Option<&str>,
    opening: &StoreOpening,
) -> Result<(), StoreError> {
    // One transaction, under the opening's lock where replicas share the
    // store: PostgreSQL's `IF NOT EXISTS` is no guard against another
    // replica creating the same table or index at the same moment (found
    // by three replicas starting together on a new database).
    let mut tx = pool.begin().await?;
    if let Some(lock) = DB::OPENING_LOCK {
        stmt::<DB>(lock).execute(&mut tx).await?;
    }
    for index in OPENING_INDEXES {
        stmt::<DB>(index).execute(&mut tx).await?;
    }
    stmt::<DB>(DB::CREATE_SCHEMA_HISTORY)
        .execute(&mut tx)
        .await?;
    let applied_before = |level: SchemaLevel| state.applied.iter().any(|a| a.level == level);
    for known in MIGRATIONS {
        let now = applied_now.iter().any(|m| m.level == known.level);
        if !now && !applied_before(known.level) {
            continue;
        }
        if state.recorded.iter().any(|r| r.level == known.level) {
            continue;
        }
        let (applied_by, backup) = if now {
            (Some(opening.binary_version.as_str()), backup)
        } else {
            (None, None)
        };
        stmt::<DB>(
            "INSERT INTO aegis_schema_history \
             (version, description, oldest_reader, applied_by, backup, recorded_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (version) DO NOTHING",
        )
        .bind(known.level.0)
        .bind(known.description)
        .bind(known.compatibility.oldest_reader().0)
        .bind(applied_by)
        .bind(backup)
        .bind(opening.now)
        .execute(&mut tx)
        .await?;
    }
    tx.commit().await?;
    Ok(())
}

/// A consistent copy of a live SQLite store into `file` (which must not
/// exist): `VACUUM INTO` reads one snapshot while writers go on.
pub(crate) async fn vacuum_into<DB: Backend>(
    pool: &Pool<DB>,
    file: &Path,
) -> Result<(), StoreError> {
    let Some(sql) = DB::COPY_INTO else {
        return Err(StoreError::Unsupported(
            "a PostgreSQL store is backed up with pg_dump (docs/operations.md#backups)",
        ));
    };
    // VACUUM INTO writes only into a file that is absent or empty: make it
    // empty and private first, so the copy is never readable by others.
    drop(folders::private_file(file).map_err(|e| StoreError::Open(e.to_string()))?);
    let mut conn = pool.acquire().await?;
    let path = file.to_string_lossy();
    stmt::<DB>(sql)
        .bind(path.as_ref())
        .execute(&mut conn)
        .await?;
    Ok(())
}

/// Backs the store up into a new folder in `data_dir/backups` before
/// migrating it from `from`; returns the folder.
async fn back_up_before_migrating<DB: Backend>(
    pool: &Pool<DB>,
    data_dir: &Path,
    from: SchemaLevel,
    opening: &StoreOpening,
) -> Result<std::path::PathBuf, StoreError> {
    let open_error = |e: folders::BackupError| StoreError::Open(e.to_string());
    let folder =
        folders::new_before_migration_folder(data_dir, from, opening.now).map_err(open_error)?;
    let file = folder.join(BACKUP_DB_FILE);
    vacuum_into(pool, &file).await?;
    let manifest = BackupManifest {
        format: MANIFEST_FORMAT.into(),
        created_at: opening.now,
        binary_version: opening.binary_version.clone(),
        schema: from.0,
        reason: format!("before migration {}", SchemaLevel(from.0 + 1)),
        files: vec![folders::digest(&file).map_err(open_error)?],
        audit_last_seq: None,
    };
    folders::seal(&folder, &manifest).map_err(open_error)?;
    Ok(folder)
}

impl<DB: Backend> SqlStore<DB> {
    /// Reads the store's schema, decides with [`plan`], and migrates,
    /// serves or refuses; `sqlite_dir` is the data directory of a SQLite
    /// store (where its backups go).
    pub(crate) async fn open_schema(
        pool: &Pool<DB>,
        opening: &StoreOpening,
        sqlite_dir: Option<&Path>,
    ) -> Result<OpenReport, StoreError> {
        let state = read_state(pool).await?;
        let decided = plan(
            MIGRATIONS,
            &state.applied,
            &state.recorded,
            opening.migrate,
            &opening.binary_version,
        );
        let mut opened = OpenReport {
            status: SchemaStatus {
                store: binary_level(),
                binary: binary_level(),
            },
            applied: Vec::new(),
            backup: None,
            serving_newer: false,
        };
        match decided {
            SchemaPlan::Refuse(refusal) => return Err(StoreError::Schema(refusal)),
            SchemaPlan::Create { pending } => {
                DB::run_migrations(pool, &migrator::<DB>(false))
                    .await
                    .map_err(StoreError::Migration)?;
                record(pool, &state, &pending, None, opening).await?;
                opened.applied = pending;
            }
            SchemaPlan::Migrate { from, pending } => {
                let backup = match sqlite_dir {
                    Some(dir) if opening.keep_backups > 0 => {
                        Some(back_up_before_migrating(pool, dir, from, opening).await?)
                    }
                    _ => None,
                };
                DB::run_migrations(pool, &migrator::<DB>(false))
                    .await
                    .map_err(StoreError::Migration)?;
                let backup_text = backup.as_ref().map(|b| b.to_string_lossy().into_owned());
                record(pool, &state, &pending, backup_text.as_deref(), opening).await?;
                if let Some(dir) = sqlite_dir {
                    folders::prune_before_migration(dir, opening.keep_backups);
                }
                opened.applied = pending;
                opened.backup = backup;
            }
            SchemaPlan::UpToDate { .. } => {
                // Checks the applied files' checksums; applies nothing.
                DB::run_migrations(pool, &migrator::<DB>(false))
                    .await
                    .map_err(StoreError::Migration)?;
                if opening.migrate == MigrateMode::Auto {
                    record(pool, &state, &[], None, opening).await?;
                }
            }
            SchemaPlan::ServeNewer { store, .. } => {
                DB::run_migrations(pool, &migrator::<DB>(true))
                    .await
                    .map_err(StoreError::Migration)?;
                opened.status.store = store;
                opened.serving_newer = true;
            }
        }
        Ok(opened)
    }
}
