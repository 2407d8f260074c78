//! The one implementation of [`Store`], over sqlx, for SQLite and
//! PostgreSQL alike: [`SqlStore<DB>`] is generic over a [`Backend`] and
//! every statement is written once. One file per aggregate, each holding
//! its SQL and its trait's impl (`ClientStore` in `clients.rs`, …); this
//! one holds the store itself and the helpers they share (transactions,
//! encryption, revocation).
//!
//! Concurrency rule used throughout: the first write of a transaction is
//! the one that decides (a conditional `UPDATE`/`DELETE … RETURNING`, or a
//! no-op `UPDATE` whose only purpose is the row lock), so two racing
//! requests are ordered by the database, on PostgreSQL by the row lock and
//! on SQLite by the write lock that `BEGIN IMMEDIATE` takes.

/// The grant columns [`SqlStore::grant_from_row`] reads, for queries that
/// alias `grants` as `g` (a macro, for `concat!`).
macro_rules! grant_columns {
    () => {
        "g.id, g.login, g.client_id, g.scope, g.resource, g.gitea_access_token_enc, \
         g.gitea_refresh_token_enc, g.gitea_expires_at, g.created_at, g.activated_at, \
         g.last_used_at, g.revoked_at, g.gitea_subject, g.gitea_tokens_version, g.gitea_issued_at, \
         g.gitea_app, g.redirect_uri"
    };
}

mod activity;
mod backend;
mod clients;
mod codes;
mod confirmations;
mod ending;
mod grants;
mod listing;
mod maintenance;
mod page_sessions;
mod pending;
mod rate_limits;
mod resolved;
pub(super) mod schema;
mod tokens;

use secrecy::{ExposeSecret, SecretString};
use sqlx::pool::PoolConnection;
use sqlx::{Pool, Transaction};

pub(crate) use backend::Backend;
use backend::stmt;
use ending::EndingTx;

use super::cipher::TokenCipher;
use super::{StoreError, StoreLimits, UnixTime};

/// How often a read that lost its connection is run again
/// ([`SqlStore::read_retrying`]), and the first pause before it (doubled
/// each time: 20, 40, 80 ms).
const LOST_CONNECTION_RETRIES: usize = 3;
const LOST_CONNECTION_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// The store over one sqlx pool.
pub(crate) struct SqlStore<DB: Backend> {
    pool: Pool<DB>,
    cipher: TokenCipher,
    limits: StoreLimits,
    /// Access tokens resolved within the last second.
    resolved: resolved::ResolvedCache,
    /// The schema level this binary carries, and the store's at opening.
    schema: crate::store::schema::SchemaStatus,
}

impl<DB: Backend> std::fmt::Debug for SqlStore<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &DB::LABEL)
            .field("limits", &self.limits)
            .field("cipher", &self.cipher)
            .finish_non_exhaustive()
    }
}

impl<DB: Backend> SqlStore<DB> {
    /// Brings the schema to this binary's level, or serves on a newer one
    /// it may, or refuses ([`crate::store::schema::plan`]); then wraps the
    /// pool. `sqlite_dir`: the data directory of a SQLite store, where its
    /// backups before migrations go.
    pub(crate) async fn open(
        pool: Pool<DB>,
        cipher: TokenCipher,
        limits: StoreLimits,
        opening: &crate::store::schema::StoreOpening,
        sqlite_dir: Option<&std::path::Path>,
    ) -> Result<(Self, crate::store::schema::OpenReport), StoreError> {
        let opened = Self::open_schema(&pool, opening, sqlite_dir).await?;
        let store = Self {
            pool,
            cipher,
            limits,
            resolved: resolved::ResolvedCache::default(),
            schema: opened.status,
        };
        Ok((store, opened))
    }

    /// A connection for single statements (each its own transaction).
    async fn conn(&self) -> Result<PoolConnection<DB>, StoreError> {
        Ok(self.pool.acquire().await?)
    }

    /// A read-only lookup, run again when the connection it ran on turned
    /// out to be gone (PostgreSQL restarted, or ended the session). A
    /// retry takes another connection from the pool, which checks an idle
    /// one before handing it out (`test_before_acquire`) and, once the
    /// server is down, waits for it to accept connections again within
    /// the acquire timeout. A fast restart ends sessions one by one, so a
    /// connection opened while it runs can be ended too: a few retries, a
    /// moment apart. Only reads: a write that failed part-way may or may
    /// not have committed.
    async fn read_retrying<T, F, Fut>(&self, read: F) -> Result<T, StoreError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<T, StoreError>>,
    {
        let mut pause = LOST_CONNECTION_PAUSE;
        for _ in 0..LOST_CONNECTION_RETRIES {
            match read().await {
                Err(err) if err.is_lost_connection() => {
                    tracing::info!(error = %err, "a store connection was lost; reading again on another");
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                done => return done,
            }
        }
        read().await
    }

    /// A transaction that will read then write (see
    /// [`Backend::BEGIN_WRITE`]).
    async fn begin_write(&self) -> Result<Transaction<'static, DB>, StoreError> {
        Ok(self.pool.begin_with(DB::BEGIN_WRITE).await?)
    }

    /// Serialises a count-then-insert on one capped table: the first write
    /// of the transaction locks that table's row in `store_locks`.
    async fn lock_cap(conn: &mut DB::Connection, name: &'static str) -> Result<(), StoreError> {
        stmt::<DB>("UPDATE store_locks SET name = name WHERE name = $1")
            .bind(name)
            .execute(conn)
            .await?;
        Ok(())
    }

    fn seal(&self, secret: &SecretString) -> String {
        self.cipher.encrypt(secret.expose_secret())
    }

    /// Decrypts a stored value; `row` names the row in the error (an id or
    /// a hash, never a secret).
    fn unseal(
        &self,
        table: &'static str,
        row: &str,
        ciphertext: &str,
    ) -> Result<SecretString, StoreError> {
        self.cipher
            .decrypt(ciphertext)
            .ok_or_else(|| StoreError::Undecryptable {
                table,
                row: row.to_owned(),
            })
    }

    /// Revokes a grant and deletes its tokens and codes, inside the caller's
    /// transaction. Returns whether it was unrevoked before.
    async fn revoke_in(
        tx: &mut EndingTx<'_, DB>,
        grant_id: &str,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let revoked =
            stmt::<DB>("UPDATE grants SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
                .bind(grant_id)
                .bind(now)
                .execute(tx.conn())
                .await?;
        stmt::<DB>("DELETE FROM tokens WHERE grant_id = $1")
            .bind(grant_id)
            .execute(tx.conn())
            .await?;
        stmt::<DB>("DELETE FROM auth_codes WHERE grant_id = $1")
            .bind(grant_id)
            .execute(tx.conn())
            .await?;
        Ok(revoked > 0)
    }
}

/// A store lock held by its transaction: released by committing it.
#[async_trait::async_trait]
impl<DB: Backend> crate::store::HeldLock for Transaction<'static, DB> {
    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        (*self).commit().await?;
        Ok(())
    }
}
