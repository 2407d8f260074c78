//! Confirmations: calls waiting for their person's decision. Capped at
//! `max_pending_confirmations_per_grant` unexpired pending ones per grant;
//! every decision and every use is one conditional UPDATE, so of two
//! racing approvals, or two racing retries of an approved call, one wins.

use async_trait::async_trait;
use secrecy::{ExposeSecret, SecretString};

use super::backend::{SqlRow, stmt};
use super::{Backend, SqlStore};
use crate::store::ConfirmationStore;
use crate::store::{Confirmation, ConfirmationState, StoreError, UnixTime};

/// The columns [`SqlStore::confirmation_from_row`] reads.
macro_rules! confirmation_columns {
    () => {
        "id, grant_id, login, client_id, tool, digest, summary, method, route, arguments_enc, \
         state, created_at, expires_at, decided_at, decided_by, summary_enc"
    };
}

pub(super) const TABLE: &str = "confirmations";

impl<DB: Backend> SqlStore<DB> {
    fn confirmation_from_row(&self, row: &SqlRow<DB>) -> Result<Confirmation, StoreError> {
        let id = row.text("id")?;
        Ok(Confirmation {
            arguments: self.unseal(TABLE, &id, &row.text("arguments_enc")?)?,
            grant_id: row.text("grant_id")?,
            login: row.text("login")?,
            client_id: row.text("client_id")?,
            tool: row.text("tool")?,
            digest: row.text("digest")?,
            // Rows from before migration 0010 keep theirs in `summary`.
            summary: match row.opt_text("summary_enc")? {
                Some(sealed) => self.unseal(TABLE, &id, &sealed)?.expose_secret().to_owned(),
                None => row.text("summary")?,
            },
            method: row.text("method")?,
            route: row.text("route")?,
            state: ConfirmationState::parse(&row.text("state")?)
                .ok_or(StoreError::Corrupt("confirmation state"))?,
            created_at: row.int("created_at")?,
            expires_at: row.int("expires_at")?,
            decided_at: row.opt_int("decided_at")?,
            decided_by: row.opt_text("decided_by")?,
            id,
        })
    }
}

#[async_trait]
impl<DB: Backend> ConfirmationStore for SqlStore<DB> {
    /// One transaction, serialised with every other confirmation insert by
    /// the `confirmations` row of `store_locks`.
    async fn insert_confirmation(&self, c: &Confirmation, now: UnixTime) -> Result<(), StoreError> {
        let arguments = self.seal(&c.arguments);
        let summary = self.seal(&SecretString::from(c.summary.clone()));
        let mut tx = self.begin_write().await?;
        Self::lock_cap(&mut tx, "confirmations").await?;
        let open = stmt::<DB>(
            "SELECT COUNT(*) AS n FROM confirmations \
             WHERE grant_id = $1 AND state = 'pending' AND expires_at > $2",
        )
        .bind(&c.grant_id)
        .bind(now)
        .fetch_optional(&mut tx)
        .await?
        .ok_or(StoreError::Corrupt("confirmation count"))?
        .int("n")?;
        if u64::try_from(open).unwrap_or(0) >= self.limits.max_pending_confirmations_per_grant {
            tx.rollback().await?;
            return Err(StoreError::Full {
                what: "pending confirmations of this connection",
            });
        }
        stmt::<DB>(concat!(
            "INSERT INTO confirmations (",
            confirmation_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
        ))
        .bind(&c.id)
        .bind(&c.grant_id)
        .bind(&c.login)
        .bind(&c.client_id)
        .bind(&c.tool)
        .bind(&c.digest)
        .bind("")
        .bind(&c.method)
        .bind(&c.route)
        .bind(&arguments)
        .bind(c.state.as_str())
        .bind(c.created_at)
        .bind(c.expires_at)
        .bind(c.decided_at)
        .bind(c.decided_by.as_deref())
        .bind(&summary)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn get_confirmation(&self, id: &str) -> Result<Option<Confirmation>, StoreError> {
        let mut conn = self.conn().await?;
        let row = stmt::<DB>(concat!(
            "SELECT ",
            confirmation_columns!(),
            " FROM confirmations WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&mut conn)
        .await?;
        row.map(|row| self.confirmation_from_row(&row)).transpose()
    }

    async fn open_confirmation(
        &self,
        grant_id: &str,
        digest: &str,
    ) -> Result<Option<Confirmation>, StoreError> {
        let mut conn = self.conn().await?;
        let row = stmt::<DB>(concat!(
            "SELECT ",
            confirmation_columns!(),
            " FROM confirmations WHERE grant_id = $1 AND digest = $2 AND state <> 'used' \
             ORDER BY created_at DESC, id LIMIT 1"
        ))
        .bind(grant_id)
        .bind(digest)
        .fetch_optional(&mut conn)
        .await?;
        row.map(|row| self.confirmation_from_row(&row)).transpose()
    }

    async fn decide_confirmation(
        &self,
        id: &str,
        login: &str,
        approve: bool,
        use_by: UnixTime,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let state = if approve {
            ConfirmationState::Approved
        } else {
            ConfirmationState::Denied
        };
        let mut conn = self.conn().await?;
        let updated = stmt::<DB>(
            "UPDATE confirmations SET state = $3, decided_at = $4, decided_by = $2, \
             expires_at = $5 \
             WHERE id = $1 AND state = 'pending' AND expires_at > $4 AND LOWER(login) = LOWER($2)",
        )
        .bind(id)
        .bind(login)
        .bind(state.as_str())
        .bind(now)
        .bind(use_by)
        .execute(&mut conn)
        .await?;
        Ok(updated == 1)
    }

    async fn use_approval(&self, id: &str, now: UnixTime) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let updated = stmt::<DB>(
            "UPDATE confirmations SET state = 'used', decided_at = $2 \
             WHERE id = $1 AND state = 'approved' AND expires_at > $2",
        )
        .bind(id)
        .bind(now)
        .execute(&mut conn)
        .await?;
        Ok(updated == 1)
    }

    async fn delete_confirmation(&self, id: &str) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let deleted = stmt::<DB>("DELETE FROM confirmations WHERE id = $1")
            .bind(id)
            .execute(&mut conn)
            .await?;
        Ok(deleted == 1)
    }

    async fn list_pending_confirmations(
        &self,
        login: Option<&str>,
        now: UnixTime,
        limit: u64,
    ) -> Result<Vec<Confirmation>, StoreError> {
        let mut conn = self.conn().await?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = match login {
            Some(login) => {
                stmt::<DB>(concat!(
                    "SELECT ",
                    confirmation_columns!(),
                    " FROM confirmations WHERE LOWER(login) = LOWER($1) AND state = 'pending' \
                     AND expires_at > $2 ORDER BY created_at DESC, id LIMIT $3"
                ))
                .bind(login)
                .bind(now)
                .bind(limit)
                .fetch_all(&mut conn)
                .await?
            }
            None => {
                stmt::<DB>(concat!(
                    "SELECT ",
                    confirmation_columns!(),
                    " FROM confirmations WHERE state = 'pending' AND expires_at > $1 \
                     ORDER BY created_at DESC, id LIMIT $2"
                ))
                .bind(now)
                .bind(limit)
                .fetch_all(&mut conn)
                .await?
            }
        };
        rows.iter()
            .map(|row| self.confirmation_from_row(row))
            .collect()
    }
}
