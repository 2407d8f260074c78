//! The seam between the one SQL implementation and the two sqlx drivers.
//!
//! Generic sqlx code normally carries a long list of higher-ranked bounds
//! (`for<'c> &'c mut DB::Connection: Executor<'c>`, `i64: Encode<DB>`, …)
//! that Rust does not imply from a trait, so every impl block would repeat
//! them. Instead [`Backend`] names the handful of operations the store
//! needs, each implemented for the concrete driver where those bounds are
//! known; the store's code is then generic over `DB: Backend` alone. The
//! SQL itself is shared: `$1, $2, …` placeholders, `RETURNING` and
//! `ON CONFLICT` mean the same on SQLite and PostgreSQL.

use std::borrow::Cow;

use futures::future::BoxFuture;
use sqlx::migrate::{MigrateError, Migration, MigrationType, Migrator};
use sqlx::{Database, Pool, Postgres, SqlSafeStr, Sqlite};

use crate::store::StoreError;

/// A query as the store builds it: static SQL, owned arguments.
pub(crate) type Query<DB> = sqlx::query::Query<'static, DB, <DB as Database>::Arguments>;

/// One bound value. The store binds only integers and text, either of
/// which may be NULL (bound with its type, which PostgreSQL needs).
pub(crate) enum Param<'a> {
    Int(Option<i64>),
    Text(Option<&'a str>),
}

impl From<i64> for Param<'_> {
    fn from(value: i64) -> Self {
        Self::Int(Some(value))
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(value: Option<i64>) -> Self {
        Self::Int(value)
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(value: &'a str) -> Self {
        Self::Text(Some(value))
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(value: &'a String) -> Self {
        Self::Text(Some(value))
    }
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(value: Option<&'a str>) -> Self {
        Self::Text(value)
    }
}

/// What the store needs from a driver.
pub(crate) trait Backend: Database {
    /// `sqlite` or `postgres`, as [`crate::store::Store::backend`].
    const LABEL: &'static str;
    /// Opens a transaction that will read, then write. SQLite must take the
    /// write lock up front (`BEGIN IMMEDIATE`): a deferred transaction that
    /// has read cannot wait for the lock and fails with SQLITE_BUSY instead.
    /// PostgreSQL's plain `BEGIN` (READ COMMITTED) is serialised by row
    /// locks that the store takes with its first write.
    const BEGIN_WRITE: &'static str;
    /// Whether several processes can share one store of this backend
    /// (PostgreSQL), so that what they must agree on lives in it.
    const SHARED_BY_PROCESSES: bool;
    /// Takes the cross-process lock on one grant's upstream refresh inside
    /// a transaction (`$1` the grant id), held until it ends; `None` where
    /// the store serves one process (SQLite).
    const UPSTREAM_REFRESH_LOCK: Option<&'static str>;
    /// Takes the cross-process lock of the store's opening (its indexes
    /// and history) inside a transaction; `None` where the store serves
    /// one process (SQLite).
    const OPENING_LOCK: Option<&'static str>;
    /// The versioned migrations' SQL, `(version, sql)`; their descriptions
    /// and compatibility are `store::schema::MIGRATIONS`.
    const MIGRATIONS: &'static [(i64, &'static str)];
    /// Counts the tables named `$1` (as `n`).
    const TABLE_EXISTS: &'static str;
    /// Creates the schema history if it is missing (`sql/schema.rs`).
    const CREATE_SCHEMA_HISTORY: &'static str;
    /// Copies the live database into the file `$1`, consistently; `None`
    /// where the backend's own tools do it (PostgreSQL's `pg_dump`).
    const COPY_INTO: Option<&'static str>;

    fn bind(query: Query<Self>, param: Param<'_>) -> Query<Self>;
    /// Runs a statement; the number of rows it affected.
    fn execute(conn: &mut Self::Connection, query: Query<Self>)
    -> BoxFuture<'_, sqlx::Result<u64>>;
    fn fetch_optional(
        conn: &mut Self::Connection,
        query: Query<Self>,
    ) -> BoxFuture<'_, sqlx::Result<Option<Self::Row>>>;
    fn fetch_all(
        conn: &mut Self::Connection,
        query: Query<Self>,
    ) -> BoxFuture<'_, sqlx::Result<Vec<Self::Row>>>;
    fn get_int(row: &Self::Row, column: &str) -> sqlx::Result<Option<i64>>;
    fn get_text(row: &Self::Row, column: &str) -> sqlx::Result<Option<String>>;
    fn run_migrations<'p>(
        pool: &'p Pool<Self>,
        migrator: &'p Migrator,
    ) -> BoxFuture<'p, Result<(), MigrateError>>;
}

/// The migrator of one backend, from the SQL embedded at build time;
/// `ignore_newer`: applied migrations it does not carry are no error (a
/// newer store this binary may serve on, `store::schema::plan`).
pub(crate) fn migrator<DB: Backend>(ignore_newer: bool) -> Migrator {
    let migrations = DB::MIGRATIONS
        .iter()
        .zip(crate::store::schema::MIGRATIONS)
        .map(|(&(version, sql), known)| {
            debug_assert_eq!(version, known.level.0);
            Migration::new(
                version,
                Cow::Borrowed(known.description),
                MigrationType::Simple,
                sql.into_sql_str(),
                false,
            )
        })
        .collect();
    let mut migrator = Migrator::with_migrations(migrations);
    migrator.set_ignore_missing(ignore_newer);
    migrator
}

/// A statement being built: `stmt("…").bind(a).bind(b).execute(conn)`.
pub(crate) struct Stmt<DB: Backend>(Query<DB>);

pub(crate) fn stmt<DB: Backend>(sql: &'static str) -> Stmt<DB> {
    Stmt(sqlx::query(sql))
}

impl<DB: Backend> Stmt<DB> {
    pub(crate) fn bind<'a>(self, param: impl Into<Param<'a>>) -> Self {
        Self(DB::bind(self.0, param.into()))
    }

    /// Runs it; how many rows it affected.
    pub(crate) async fn execute(self, conn: &mut DB::Connection) -> Result<u64, StoreError> {
        Ok(DB::execute(conn, self.0).await?)
    }

    pub(crate) async fn fetch_optional(
        self,
        conn: &mut DB::Connection,
    ) -> Result<Option<SqlRow<DB>>, StoreError> {
        Ok(DB::fetch_optional(conn, self.0).await?.map(SqlRow))
    }

    pub(crate) async fn fetch_all(
        self,
        conn: &mut DB::Connection,
    ) -> Result<Vec<SqlRow<DB>>, StoreError> {
        let rows = DB::fetch_all(conn, self.0).await?;
        Ok(rows.into_iter().map(SqlRow).collect())
    }
}

/// A result row, read by column name.
pub(crate) struct SqlRow<DB: Backend>(DB::Row);

impl<DB: Backend> SqlRow<DB> {
    pub(crate) fn opt_int(&self, column: &'static str) -> Result<Option<i64>, StoreError> {
        Ok(DB::get_int(&self.0, column)?)
    }

    pub(crate) fn int(&self, column: &'static str) -> Result<i64, StoreError> {
        self.opt_int(column)?.ok_or(StoreError::Corrupt(column))
    }

    pub(crate) fn opt_text(&self, column: &'static str) -> Result<Option<String>, StoreError> {
        Ok(DB::get_text(&self.0, column)?)
    }

    pub(crate) fn text(&self, column: &'static str) -> Result<String, StoreError> {
        self.opt_text(column)?.ok_or(StoreError::Corrupt(column))
    }
}

/// The driver side of [`Backend`]: identical bodies, which compile only
/// against a concrete driver, hence the macro.
macro_rules! impl_backend {
    (
        $db:ty, $label:literal, $begin:literal, $shared:literal, $refresh_lock:expr,
        $opening_lock:expr, $folder:literal,
        $table_exists:literal, $history:literal, $copy_into:expr
    ) => {
        impl Backend for $db {
            const LABEL: &'static str = $label;
            const SHARED_BY_PROCESSES: bool = $shared;
            const BEGIN_WRITE: &'static str = $begin;
            const UPSTREAM_REFRESH_LOCK: Option<&'static str> = $refresh_lock;
            const OPENING_LOCK: Option<&'static str> = $opening_lock;
            const TABLE_EXISTS: &'static str = $table_exists;
            const CREATE_SCHEMA_HISTORY: &'static str = $history;
            const COPY_INTO: Option<&'static str> = $copy_into;
            const MIGRATIONS: &'static [(i64, &'static str)] = &[
                (
                    1,
                    include_str!(concat!("../../../migrations/", $folder, "/0001_init.sql")),
                ),
                (
                    2,
                    include_str!(concat!(
                        "../../../migrations/",
                        $folder,
                        "/0002_page_sessions.sql"
                    )),
                ),
                (
                    3,
                    include_str!(concat!(
                        "../../../migrations/",
                        $folder,
                        "/0003_security_review.sql"
                    )),
                ),
                (
                    4,
                    include_str!(concat!(
                        "../../../migrations/",
                        $folder,
                        "/0004_replicas.sql"
                    )),
                ),
                (
                    5,
                    include_str!(concat!(
                        "../../../migrations/",
                        $folder,
                        "/0005_gitea_token_lifetime.sql"
                    )),
                ),
                (
                    6,
                    include_str!(concat!(
                        "../../../migrations/",
                        $folder,
                        "/0006_gitea_apps.sql"
                    )),
                ),
                (
                    7,
                    include_str!(concat!(
                        "../../../migrations/",
                        $folder,
                        "/0007_confirmations.sql"
                    )),
                ),
                (
                    8,
                    include_str!(concat!(
                        "../../../migrations/",
                        $folder,
                        "/0008_activity.sql"
                    )),
                ),
                (
                    9,
                    include_str!(concat!(
                        "../../../migrations/",
                        $folder,
                        "/0009_grant_redirect_uri.sql"
                    )),
                ),
                (
                    10,
                    include_str!(concat!(
                        "../../../migrations/",
                        $folder,
                        "/0010_confirmation_summary_sealed.sql"
                    )),
                ),
            ];

            fn bind(query: Query<Self>, param: Param<'_>) -> Query<Self> {
                match param {
                    Param::Int(value) => query.bind(value),
                    Param::Text(value) => query.bind(value),
                }
            }

            fn execute(
                conn: &mut Self::Connection,
                query: Query<Self>,
            ) -> BoxFuture<'_, sqlx::Result<u64>> {
                Box::pin(async move { Ok(query.execute(conn).await?.rows_affected()) })
            }

            fn fetch_optional(
                conn: &mut Self::Connection,
                query: Query<Self>,
            ) -> BoxFuture<'_, sqlx::Result<Option<Self::Row>>> {
                Box::pin(query.fetch_optional(conn))
            }

            fn fetch_all(
                conn: &mut Self::Connection,
                query: Query<Self>,
            ) -> BoxFuture<'_, sqlx::Result<Vec<Self::Row>>> {
                Box::pin(query.fetch_all(conn))
            }

            fn get_int(row: &Self::Row, column: &str) -> sqlx::Result<Option<i64>> {
                sqlx::Row::try_get(row, column)
            }

            fn get_text(row: &Self::Row, column: &str) -> sqlx::Result<Option<String>> {
                sqlx::Row::try_get(row, column)
            }

            fn run_migrations<'p>(
                pool: &'p Pool<Self>,
                migrator: &'p Migrator,
            ) -> BoxFuture<'p, Result<(), MigrateError>> {
                Box::pin(migrator.run(pool))
            }
        }
    };
}

impl_backend!(
    Sqlite,
    "sqlite",
    "BEGIN IMMEDIATE",
    false,
    None,
    None,
    "sqlite",
    "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = $1",
    "CREATE TABLE IF NOT EXISTS aegis_schema_history (\
         version INTEGER PRIMARY KEY, description TEXT NOT NULL, \
         oldest_reader INTEGER NOT NULL, applied_by TEXT, backup TEXT, \
         recorded_at INTEGER NOT NULL) STRICT",
    Some("VACUUM INTO $1")
);
// A transaction-scoped advisory lock on a 64-bit hash of the grant id: it
// blocks nothing but other refreshes of that grant (a row lock would also
// hold up every touch and revocation of the grant while Gitea answers).
impl_backend!(
    Postgres,
    "postgres",
    "BEGIN",
    true,
    Some("SELECT pg_advisory_xact_lock(hashtextextended('aegis upstream refresh ' || $1, 0))"),
    Some("SELECT pg_advisory_xact_lock(hashtextextended('aegis store opening', 0))"),
    "postgres",
    "SELECT COUNT(*) AS n FROM information_schema.tables \
     WHERE table_schema = current_schema() AND table_name = $1",
    "CREATE TABLE IF NOT EXISTS aegis_schema_history (\
         version BIGINT PRIMARY KEY, description TEXT NOT NULL, \
         oldest_reader BIGINT NOT NULL, applied_by TEXT, backup TEXT, \
         recorded_at BIGINT NOT NULL)",
    None
);
