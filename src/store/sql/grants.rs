//! Grants (one user's authorization of one client, holding that user's
//! Gitea tokens, encrypted) and the consent registry. Capped at
//! `max_grants_per_login` unrevoked grants per login, least recently used
//! first out.

use async_trait::async_trait;

use super::backend::{SqlRow, stmt};
use super::{Backend, EndingTx, SqlStore};
use crate::store::GrantStore;
use crate::store::{
    AuthCodeRecord, GiteaApp, GiteaTokens, GrantRecord, StoreError, UnixTime, UpstreamRefreshLock,
};

pub(super) const TABLE: &str = "grants";

/// The window of [`StoreLimits::max_new_clients_per_login`].
///
/// [`StoreLimits::max_new_clients_per_login`]: crate::store::StoreLimits::max_new_clients_per_login
const NEW_CLIENT_WINDOW: UnixTime = 60 * 60;

impl<DB: Backend> SqlStore<DB> {
    /// Unrevoked, activated grants, of one login or all, newest first.
    async fn listed_grants(&self, login: Option<&str>) -> Result<Vec<GrantRecord>, StoreError> {
        let mut conn = self.conn().await?;
        let rows = match login {
            Some(login) => {
                stmt::<DB>(concat!(
                    "SELECT ",
                    grant_columns!(),
                    " FROM grants g WHERE g.login = $1 AND g.revoked_at IS NULL \
                     AND g.activated_at IS NOT NULL ORDER BY g.created_at DESC, g.id DESC"
                ))
                .bind(login)
                .fetch_all(&mut conn)
                .await?
            }
            None => {
                stmt::<DB>(concat!(
                    "SELECT ",
                    grant_columns!(),
                    " FROM grants g WHERE g.revoked_at IS NULL \
                     AND g.activated_at IS NOT NULL ORDER BY g.created_at DESC, g.id DESC"
                ))
                .fetch_all(&mut conn)
                .await?
            }
        };
        rows.iter().map(|row| self.grant_from_row(row)).collect()
    }

    /// [`Self::insert_grant`] inside the caller's transaction.
    async fn insert_grant_in(
        &self,
        tx: &mut EndingTx<'_, DB>,
        grant: &GrantRecord,
        now: UnixTime,
    ) -> Result<Vec<String>, StoreError> {
        let access = self.seal(&grant.gitea.access_token);
        let refresh = grant.gitea.refresh_token.as_ref().map(|t| self.seal(t));
        Self::lock_cap(&mut *tx, "grants").await?;
        if !self.may_connect_client(&mut *tx, grant, now).await? {
            return Err(StoreError::QuotaSpent {
                what: "new clients for this account",
            });
        }
        let held = stmt::<DB>(
            "SELECT id, client_id FROM grants WHERE login = $1 AND revoked_at IS NULL \
             ORDER BY COALESCE(last_used_at, activated_at, created_at), created_at, id",
        )
        .bind(&grant.login)
        .fetch_all(&mut *tx)
        .await?;
        let cap = usize::try_from(self.limits.max_grants_per_login).unwrap_or(usize::MAX);
        let excess = (held.len() + 1).saturating_sub(cap);
        let mut evicted = Vec::with_capacity(excess);
        let mut orphaned = Vec::new();
        for row in held.iter().take(excess) {
            let id = row.text("id")?;
            Self::revoke_in(&mut *tx, &id, now).await?;
            orphaned.push(row.text("client_id")?);
            evicted.push(id);
        }
        stmt::<DB>(
            "INSERT INTO grants (id, login, client_id, scope, resource, gitea_access_token_enc, \
             gitea_refresh_token_enc, gitea_expires_at, created_at, activated_at, last_used_at, \
             revoked_at, gitea_subject, gitea_issued_at, gitea_app, redirect_uri) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind(&grant.id)
        .bind(&grant.login)
        .bind(&grant.client_id)
        .bind(&grant.scope)
        .bind(&grant.resource)
        .bind(&access)
        .bind(refresh.as_deref())
        .bind(grant.gitea.expires_at)
        .bind(grant.created_at)
        .bind(grant.activated_at)
        .bind(grant.last_used_at)
        .bind(grant.revoked_at)
        .bind(grant.gitea_subject.as_deref())
        .bind(grant.gitea.issued_at)
        .bind(grant.gitea_app.as_str())
        .bind(grant.redirect_uri.as_deref())
        .execute(&mut *tx)
        .await?;
        // The client has been used: it is no longer an unused registration.
        stmt::<DB>(
            "UPDATE clients SET first_used_at = $2 WHERE client_id = $1 AND first_used_at IS NULL",
        )
        .bind(&grant.client_id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        // A client the cap left without a live grant goes with it (F1).
        for client_id in orphaned {
            let live = stmt::<DB>(
                "SELECT 1 AS live FROM grants WHERE client_id = $1 AND revoked_at IS NULL",
            )
            .bind(&client_id)
            .fetch_optional(&mut *tx)
            .await?;
            if live.is_none() {
                Self::delete_client_in(&mut *tx, &client_id, now).await?;
            }
        }
        Ok(evicted)
    }

    /// Inside the grants' cap lock: whether `grant`'s login may connect its
    /// client: one it has connected before, or a new one while it has
    /// connected fewer than `max_new_clients_per_login` new clients within
    /// the hour (the red team's F1).
    async fn may_connect_client(
        &self,
        tx: &mut DB::Connection,
        grant: &GrantRecord,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let known = stmt::<DB>("SELECT 1 AS known FROM grants WHERE login = $1 AND client_id = $2")
            .bind(&grant.login)
            .bind(&grant.client_id)
            .fetch_optional(&mut *tx)
            .await?;
        if known.is_some() {
            return Ok(true);
        }
        // The clients this login first connected within the window.
        let recent = stmt::<DB>(
            "SELECT COUNT(DISTINCT g.client_id) AS n FROM grants g WHERE g.login = $1 \
             AND g.created_at >= $2 AND NOT EXISTS (SELECT 1 FROM grants o \
             WHERE o.login = $1 AND o.client_id = g.client_id AND o.created_at < $2)",
        )
        .bind(&grant.login)
        .bind(now - NEW_CLIENT_WINDOW)
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(StoreError::Corrupt("new client count"))?
        .int("n")?;
        Ok(u64::try_from(recent).unwrap_or(u64::MAX) < self.limits.max_new_clients_per_login)
    }

    /// A grant by id, on the caller's connection or transaction.
    pub(super) async fn grant_in(
        &self,
        conn: &mut DB::Connection,
        grant_id: &str,
    ) -> Result<Option<GrantRecord>, StoreError> {
        let row = stmt::<DB>(concat!(
            "SELECT ",
            grant_columns!(),
            " FROM grants g WHERE g.id = $1"
        ))
        .bind(grant_id)
        .fetch_optional(conn)
        .await?;
        row.map(|row| self.grant_from_row(&row)).transpose()
    }

    /// [`Self::record_consent`] on the caller's connection.
    async fn record_consent_in(
        conn: &mut DB::Connection,
        login: &str,
        client_id: &str,
        scope: &str,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        stmt::<DB>(
            "INSERT INTO consents (login, client_id, scope, first_approved_at, last_approved_at) \
             VALUES ($1, $2, $3, $4, $4) ON CONFLICT (login, client_id) DO UPDATE \
             SET scope = excluded.scope, last_approved_at = excluded.last_approved_at",
        )
        .bind(login)
        .bind(client_id)
        .bind(scope)
        .bind(now)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// A grant from a row selected with `grant_columns!()`, its Gitea
    /// tokens decrypted.
    pub(super) fn grant_from_row(&self, row: &SqlRow<DB>) -> Result<GrantRecord, StoreError> {
        let id = row.text("id")?;
        let access_token = self.unseal(TABLE, &id, &row.text("gitea_access_token_enc")?)?;
        let refresh_token = row
            .opt_text("gitea_refresh_token_enc")?
            .map(|sealed| self.unseal(TABLE, &id, &sealed))
            .transpose()?;
        Ok(GrantRecord {
            login: row.text("login")?,
            client_id: row.text("client_id")?,
            scope: row.text("scope")?,
            resource: row.text("resource")?,
            gitea: GiteaTokens {
                access_token,
                refresh_token,
                expires_at: row.opt_int("gitea_expires_at")?,
                issued_at: row.opt_int("gitea_issued_at")?,
            },
            gitea_subject: row.opt_text("gitea_subject")?,
            gitea_app: match row.opt_text("gitea_app")? {
                None => GiteaApp::ReadWrite,
                Some(app) => GiteaApp::parse(&app).ok_or(StoreError::Corrupt("gitea_app"))?,
            },
            gitea_tokens_version: row.int("gitea_tokens_version")?,
            redirect_uri: row.opt_text("redirect_uri")?,
            created_at: row.int("created_at")?,
            activated_at: row.opt_int("activated_at")?,
            last_used_at: row.opt_int("last_used_at")?,
            revoked_at: row.opt_int("revoked_at")?,
            id,
        })
    }
}

#[async_trait]
impl<DB: Backend> GrantStore for SqlStore<DB> {
    async fn insert_grant(
        &self,
        grant: &GrantRecord,
        now: UnixTime,
    ) -> Result<Vec<String>, StoreError> {
        // An ending transaction: the per-login cap may evict a grant.
        let mut tx = self.begin_ending().await?;
        let evicted = self.insert_grant_in(&mut tx, grant, now).await?;
        tx.commit().await?;
        Ok(evicted)
    }

    async fn get_grant(&self, grant_id: &str) -> Result<Option<GrantRecord>, StoreError> {
        self.read_retrying(|| async move {
            let mut conn = self.conn().await?;
            self.grant_in(&mut conn, grant_id).await
        })
        .await
    }

    async fn update_gitea_tokens(
        &self,
        grant_id: &str,
        replaced_version: i64,
        tokens: &GiteaTokens,
    ) -> Result<bool, StoreError> {
        let access = self.seal(&tokens.access_token);
        let refresh = tokens.refresh_token.as_ref().map(|t| self.seal(t));
        let mut tx = self.begin_ending().await?;
        let replaced = stmt::<DB>(
            "UPDATE grants SET gitea_access_token_enc = $2, gitea_refresh_token_enc = $3, \
             gitea_expires_at = $4, gitea_issued_at = $6, \
             gitea_tokens_version = gitea_tokens_version + 1 \
             WHERE id = $1 AND gitea_tokens_version = $5 AND revoked_at IS NULL",
        )
        .bind(grant_id)
        .bind(&access)
        .bind(refresh.as_deref())
        .bind(tokens.expires_at)
        .bind(replaced_version)
        .bind(tokens.issued_at)
        .execute(tx.conn())
        .await?;
        tx.commit().await?;
        Ok(replaced == 1)
    }

    async fn lock_upstream_refresh(
        &self,
        grant_id: &str,
    ) -> Result<UpstreamRefreshLock, StoreError> {
        let Some(sql) = DB::UPSTREAM_REFRESH_LOCK else {
            return Ok(UpstreamRefreshLock::in_process());
        };
        let mut tx = self.pool.begin().await?;
        stmt::<DB>(sql).bind(grant_id).execute(&mut tx).await?;
        Ok(UpstreamRefreshLock::held(Box::new(tx)))
    }

    async fn revoke_grant_at_version(
        &self,
        grant_id: &str,
        version: i64,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let mut tx = self.begin_ending().await?;
        let current = stmt::<DB>("SELECT gitea_tokens_version FROM grants WHERE id = $1")
            .bind(grant_id)
            .fetch_optional(&mut tx)
            .await?
            .map(|row| row.int("gitea_tokens_version"))
            .transpose()?;
        if current != Some(version) {
            return Ok(false);
        }
        let revoked = Self::revoke_in(&mut tx, grant_id, now).await?;
        tx.commit().await?;
        Ok(revoked)
    }

    /// Writes at most once per second per grant: a burst of requests on
    /// one token does not queue a burst of writes.
    async fn touch_grant(&self, grant_id: &str, now: UnixTime) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        stmt::<DB>(
            "UPDATE grants SET last_used_at = $2 \
             WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)",
        )
        .bind(grant_id)
        .bind(now)
        .execute(&mut conn)
        .await?;
        // Resolved tokens carry the grant's last use: the resolver would
        // record it again on every call until they were looked up anew.
        self.resolved.used(grant_id, now);
        Ok(())
    }

    async fn revoke_grant(&self, grant_id: &str, now: UnixTime) -> Result<bool, StoreError> {
        let mut tx = self.begin_ending().await?;
        let found = Self::revoke_in(&mut tx, grant_id, now).await?;
        tx.commit().await?;
        Ok(found)
    }

    async fn list_grants_for_login(&self, login: &str) -> Result<Vec<GrantRecord>, StoreError> {
        self.listed_grants(Some(login)).await
    }

    async fn list_grants(&self) -> Result<Vec<GrantRecord>, StoreError> {
        self.listed_grants(None).await
    }

    /// Unrevoked, activated grants, newest first; of one login when given.
    async fn count_active_grants(&self) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let n = stmt::<DB>(
            "SELECT COUNT(*) AS n FROM grants WHERE revoked_at IS NULL AND activated_at IS NOT NULL",
        )
        .fetch_optional(&mut conn)
        .await?
        .ok_or(StoreError::Corrupt("grant count"))?
        .int("n")?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// One row per (login, client): the latest approved scope, and when
    /// the client was first and last approved.
    async fn record_consent(
        &self,
        login: &str,
        client_id: &str,
        scope: &str,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        Self::record_consent_in(&mut conn, login, client_id, scope, now).await
    }

    /// The grant, its consent and its code, in one transaction: a sign-in
    /// is stored whole or not at all.
    async fn store_authorization(
        &self,
        grant: &GrantRecord,
        code: &AuthCodeRecord,
        now: UnixTime,
    ) -> Result<Vec<String>, StoreError> {
        let mut tx = self.begin_ending().await?;
        // Cap locks in one order everywhere: grants, then codes.
        let evicted = self.insert_grant_in(&mut tx, grant, now).await?;
        Self::record_consent_in(&mut tx, &grant.login, &grant.client_id, &grant.scope, now).await?;
        if let Err(err) = self.insert_code_in(&mut tx, code, now).await {
            tx.rollback().await?;
            return Err(err);
        }
        tx.commit().await?;
        Ok(evicted)
    }

    /// One transaction, first locking the `grants` row of `store_locks`
    /// so that an `insert_grant` for the login is ordered before (and then
    /// revoked here) or after; each grant then goes as in
    /// [`Self::revoke_grant`], its tokens and codes with it. A grant
    /// revoked concurrently by someone else is not counted.
    async fn revoke_grants_for_login(&self, login: &str, now: UnixTime) -> Result<u64, StoreError> {
        let mut tx = self.begin_ending().await?;
        Self::lock_cap(&mut tx, "grants").await?;
        let held =
            stmt::<DB>("SELECT id FROM grants WHERE login = $1 AND revoked_at IS NULL ORDER BY id")
                .bind(login)
                .fetch_all(&mut tx)
                .await?;
        let mut revoked = 0;
        for row in &held {
            if Self::revoke_in(&mut tx, &row.text("id")?, now).await? {
                revoked += 1;
            }
        }
        tx.commit().await?;
        Ok(revoked)
    }
}
