//! The one implementation of [`OAuthStore`], over sqlx, for SQLite and
//! PostgreSQL alike: [`SqlStore<DB>`] is generic over a [`Backend`] and
//! every statement is written once. One file per table group; this one
//! holds the store itself, the trait impl (delegation only) and the
//! helpers they share (transactions, encryption, revocation).
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
         g.last_used_at, g.revoked_at"
    };
}

mod backend;
mod clients;
mod codes;
mod grants;
mod maintenance;
mod page_sessions;
mod pending;
mod tokens;

use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};
use sqlx::pool::PoolConnection;
use sqlx::{Pool, Transaction};

pub(crate) use backend::Backend;
use backend::{migrator, stmt};

use super::cipher::TokenCipher;
use super::{
    AuthCodeRecord, ClientRecord, CodeRedemption, GiteaTokens, GrantRecord, NewToken, OAuthStore,
    PageSession, PendingAuthorization, PruneCounts, RefreshOutcome, ResolvedAccess, StoreError,
    StoreLimits, UnixTime, UpstreamLeg,
};

/// The OAuth store over one sqlx pool.
pub(crate) struct SqlStore<DB: Backend> {
    pool: Pool<DB>,
    cipher: TokenCipher,
    limits: StoreLimits,
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
    /// Applies the migrations, then wraps the pool.
    pub(crate) async fn migrate(
        pool: Pool<DB>,
        cipher: TokenCipher,
        limits: StoreLimits,
    ) -> Result<Self, StoreError> {
        DB::run_migrations(&pool, &migrator::<DB>())
            .await
            .map_err(StoreError::Migration)?;
        Ok(Self {
            pool,
            cipher,
            limits,
        })
    }

    /// A connection for single statements (each its own transaction).
    async fn conn(&self) -> Result<PoolConnection<DB>, StoreError> {
        Ok(self.pool.acquire().await?)
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
        conn: &mut DB::Connection,
        grant_id: &str,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let revoked =
            stmt::<DB>("UPDATE grants SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
                .bind(grant_id)
                .bind(now)
                .execute(&mut *conn)
                .await?;
        stmt::<DB>("DELETE FROM tokens WHERE grant_id = $1")
            .bind(grant_id)
            .execute(&mut *conn)
            .await?;
        stmt::<DB>("DELETE FROM auth_codes WHERE grant_id = $1")
            .bind(grant_id)
            .execute(&mut *conn)
            .await?;
        Ok(revoked > 0)
    }
}

#[async_trait]
impl<DB: Backend> OAuthStore for SqlStore<DB> {
    fn backend(&self) -> &'static str {
        DB::LABEL
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        stmt::<DB>("SELECT 1").fetch_optional(&mut conn).await?;
        Ok(())
    }

    async fn insert_client(&self, client: &ClientRecord, now: UnixTime) -> Result<(), StoreError> {
        self.insert_client_impl(client, now).await
    }

    async fn upsert_metadata_client(&self, client: &ClientRecord) -> Result<(), StoreError> {
        self.upsert_metadata_client_impl(client).await
    }

    async fn get_client(&self, client_id: &str) -> Result<Option<ClientRecord>, StoreError> {
        self.get_client_impl(client_id).await
    }

    async fn delete_client(&self, client_id: &str, now: UnixTime) -> Result<bool, StoreError> {
        self.delete_client_impl(client_id, now).await
    }

    async fn list_clients(&self) -> Result<Vec<ClientRecord>, StoreError> {
        self.list_clients_impl().await
    }

    async fn insert_pending(
        &self,
        pending: &PendingAuthorization,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        self.insert_pending_impl(pending, now).await
    }

    async fn get_pending(
        &self,
        id_hash: &str,
        now: UnixTime,
    ) -> Result<Option<PendingAuthorization>, StoreError> {
        self.get_pending_impl(id_hash, now).await
    }

    async fn approve_pending(
        &self,
        id_hash: &str,
        upstream: &UpstreamLeg,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        self.approve_pending_impl(id_hash, upstream, now).await
    }

    async fn delete_pending(&self, id_hash: &str) -> Result<bool, StoreError> {
        self.delete_pending_impl(id_hash).await
    }

    async fn take_pending_by_upstream_state(
        &self,
        state_hash: &str,
    ) -> Result<Option<PendingAuthorization>, StoreError> {
        self.take_pending_by_upstream_state_impl(state_hash).await
    }

    async fn insert_grant(
        &self,
        grant: &GrantRecord,
        now: UnixTime,
    ) -> Result<Vec<String>, StoreError> {
        self.insert_grant_impl(grant, now).await
    }

    async fn get_grant(&self, grant_id: &str) -> Result<Option<GrantRecord>, StoreError> {
        self.get_grant_impl(grant_id).await
    }

    async fn update_gitea_tokens(
        &self,
        grant_id: &str,
        tokens: &GiteaTokens,
    ) -> Result<(), StoreError> {
        self.update_gitea_tokens_impl(grant_id, tokens).await
    }

    async fn touch_grant(&self, grant_id: &str, now: UnixTime) -> Result<(), StoreError> {
        self.touch_grant_impl(grant_id, now).await
    }

    async fn revoke_grant(&self, grant_id: &str, now: UnixTime) -> Result<bool, StoreError> {
        self.revoke_grant_impl(grant_id, now).await
    }

    async fn list_grants_for_login(&self, login: &str) -> Result<Vec<GrantRecord>, StoreError> {
        self.list_grants_impl(Some(login)).await
    }

    async fn list_grants(&self) -> Result<Vec<GrantRecord>, StoreError> {
        self.list_grants_impl(None).await
    }

    async fn count_active_grants(&self) -> Result<u64, StoreError> {
        self.count_active_grants_impl().await
    }

    async fn record_consent(
        &self,
        login: &str,
        client_id: &str,
        scope: &str,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        self.record_consent_impl(login, client_id, scope, now).await
    }

    async fn insert_code(&self, code: &AuthCodeRecord, now: UnixTime) -> Result<(), StoreError> {
        self.insert_code_impl(code, now).await
    }

    async fn store_authorization(
        &self,
        grant: &GrantRecord,
        code: &AuthCodeRecord,
        now: UnixTime,
    ) -> Result<Vec<String>, StoreError> {
        self.store_authorization_impl(grant, code, now).await
    }

    async fn redeem_code(
        &self,
        code_hash: &str,
        now: UnixTime,
    ) -> Result<CodeRedemption, StoreError> {
        self.redeem_code_impl(code_hash, now).await
    }

    async fn insert_tokens(
        &self,
        grant_id: &str,
        tokens: &[NewToken],
        now: UnixTime,
    ) -> Result<(), StoreError> {
        self.insert_tokens_impl(grant_id, tokens, now).await
    }

    async fn resolve_access_token(
        &self,
        token_hash: &str,
        now: UnixTime,
    ) -> Result<Option<ResolvedAccess>, StoreError> {
        self.resolve_access_token_impl(token_hash, now).await
    }

    async fn rotate_refresh_token(
        &self,
        token_hash: &str,
        client_id: &str,
        new_tokens: &[NewToken],
        now: UnixTime,
    ) -> Result<RefreshOutcome, StoreError> {
        self.rotate_refresh_token_impl(token_hash, client_id, new_tokens, now)
            .await
    }

    async fn grant_of_token(&self, token_hash: &str) -> Result<Option<GrantRecord>, StoreError> {
        self.grant_of_token_impl(token_hash).await
    }

    async fn revoke_grants_for_login(&self, login: &str, now: UnixTime) -> Result<u64, StoreError> {
        self.revoke_grants_for_login_impl(login, now).await
    }

    async fn insert_page_session(
        &self,
        session: &PageSession,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        self.insert_page_session_impl(session, now).await
    }

    async fn get_page_session(
        &self,
        id_hash: &str,
        now: UnixTime,
    ) -> Result<Option<PageSession>, StoreError> {
        self.get_page_session_impl(id_hash, now).await
    }

    async fn delete_page_session(&self, id_hash: &str) -> Result<bool, StoreError> {
        self.delete_page_session_impl(id_hash).await
    }

    async fn prune(&self, now: UnixTime) -> Result<PruneCounts, StoreError> {
        self.prune_impl(now).await
    }

    async fn verify_decryptable(&self) -> Result<u64, StoreError> {
        self.verify_decryptable_impl().await
    }

    async fn rekey(&self) -> Result<u64, StoreError> {
        self.rekey_impl().await
    }
}
