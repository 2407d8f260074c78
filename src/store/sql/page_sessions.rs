//! Page sessions: a person signed in to the gateway's own pages, holding
//! that person's Gitea access token (encrypted). Capped at
//! `max_page_sessions_per_login` unexpired sessions per login, oldest first
//! out.

use async_trait::async_trait;

use super::backend::{SqlRow, stmt};
use super::{Backend, SqlStore};
use crate::store::PageSessionStore;
use crate::store::{PageSession, SecretHash, StoreError, UnixTime};

/// The columns [`SqlStore::page_session_from_row`] reads.
macro_rules! page_session_columns {
    () => {
        "id_hash, login, is_admin, gitea_access_token_enc, created_at, expires_at"
    };
}

pub(super) const TABLE: &str = "page_sessions";

impl<DB: Backend> SqlStore<DB> {
    /// A page session from a row selected with `page_session_columns!()`,
    /// its Gitea token decrypted (the error names the row by its hash).
    fn page_session_from_row(&self, row: &SqlRow<DB>) -> Result<PageSession, StoreError> {
        let id_hash = row.text("id_hash")?;
        let gitea_access_token =
            self.unseal(TABLE, &id_hash, &row.text("gitea_access_token_enc")?)?;
        let is_admin = match row.int("is_admin")? {
            0 => false,
            1 => true,
            _ => return Err(StoreError::Corrupt("is_admin")),
        };
        Ok(PageSession {
            login: row.text("login")?,
            is_admin,
            gitea_access_token,
            created_at: row.int("created_at")?,
            expires_at: row.int("expires_at")?,
            id_hash: SecretHash::from_stored(id_hash),
        })
    }
}

#[async_trait]
impl<DB: Backend> PageSessionStore for SqlStore<DB> {
    /// One transaction, serialised with every other page-session insert by
    /// the `page_sessions` row of `store_locks`: the login's expired
    /// sessions are dropped (they count for nothing), then its oldest
    /// unexpired ones until the new one fits, then the insert.
    async fn insert_page_session(
        &self,
        session: &PageSession,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        let token = self.seal(&session.gitea_access_token);
        let mut tx = self.begin_write().await?;
        Self::lock_cap(&mut tx, "page_sessions").await?;
        stmt::<DB>("DELETE FROM page_sessions WHERE login = $1 AND expires_at <= $2")
            .bind(&session.login)
            .bind(now)
            .execute(&mut tx)
            .await?;
        let held = stmt::<DB>(
            "SELECT id_hash FROM page_sessions WHERE login = $1 \
             ORDER BY created_at, id_hash",
        )
        .bind(&session.login)
        .fetch_all(&mut tx)
        .await?;
        let cap = usize::try_from(self.limits.max_page_sessions_per_login).unwrap_or(usize::MAX);
        let excess = (held.len() + 1).saturating_sub(cap);
        for row in held.iter().take(excess) {
            stmt::<DB>("DELETE FROM page_sessions WHERE id_hash = $1")
                .bind(&row.text("id_hash")?)
                .execute(&mut tx)
                .await?;
        }
        stmt::<DB>(concat!(
            "INSERT INTO page_sessions (",
            page_session_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6)"
        ))
        .bind(session.id_hash.as_str())
        .bind(&session.login)
        .bind(i64::from(session.is_admin))
        .bind(&token)
        .bind(session.created_at)
        .bind(session.expires_at)
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn get_page_session(
        &self,
        id_hash: &SecretHash,
        now: UnixTime,
    ) -> Result<Option<PageSession>, StoreError> {
        let id_hash = id_hash.as_str();
        self.read_retrying(|| async move {
            let mut conn = self.conn().await?;
            let row = stmt::<DB>(concat!(
                "SELECT ",
                page_session_columns!(),
                " FROM page_sessions WHERE id_hash = $1 AND expires_at > $2"
            ))
            .bind(id_hash)
            .bind(now)
            .fetch_optional(&mut conn)
            .await?;
            row.map(|row| self.page_session_from_row(&row)).transpose()
        })
        .await
    }

    async fn delete_page_session(&self, id_hash: &SecretHash) -> Result<bool, StoreError> {
        let id_hash = id_hash.as_str();
        let mut conn = self.conn().await?;
        let deleted = stmt::<DB>("DELETE FROM page_sessions WHERE id_hash = $1")
            .bind(id_hash)
            .execute(&mut conn)
            .await?;
        Ok(deleted > 0)
    }
}
