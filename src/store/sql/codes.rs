//! Our authorization codes (hashes only), capped at `max_codes` unexpired
//! rows, and their exactly-once redemption.

use async_trait::async_trait;

use super::backend::{SqlRow, stmt};
use super::{Backend, SqlStore};
use crate::store::CodeStore;
use crate::store::{AuthCodeRecord, CodeRedemption, SecretHash, StoreError, UnixTime};

/// The columns [`code_from_row`] reads.
macro_rules! code_columns {
    () => {
        "code_hash, grant_id, client_id, redirect_uri, code_challenge, resource, scope, \
         created_at, expires_at, redeemed_at"
    };
}

impl<DB: Backend> SqlStore<DB> {
    /// [`Self::insert_code`] inside the caller's transaction (which
    /// the caller rolls back on an error).
    pub(super) async fn insert_code_in(
        &self,
        tx: &mut DB::Connection,
        code: &AuthCodeRecord,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        Self::lock_cap(&mut *tx, "codes").await?;
        let live = stmt::<DB>("SELECT COUNT(*) AS n FROM auth_codes WHERE expires_at > $1")
            .bind(now)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::Corrupt("code count"))?
            .int("n")?;
        if u64::try_from(live).unwrap_or(0) >= self.limits.max_codes {
            return Err(StoreError::Full { what: "codes" });
        }
        stmt::<DB>(concat!(
            "INSERT INTO auth_codes (",
            code_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        ))
        .bind(code.code_hash.as_str())
        .bind(&code.grant_id)
        .bind(&code.client_id)
        .bind(&code.redirect_uri)
        .bind(&code.code_challenge)
        .bind(&code.resource)
        .bind(&code.scope)
        .bind(code.created_at)
        .bind(code.expires_at)
        .bind(code.redeemed_at)
        .execute(&mut *tx)
        .await?;
        Ok(())
    }
}

fn code_from_row<DB: Backend>(row: &SqlRow<DB>) -> Result<AuthCodeRecord, StoreError> {
    Ok(AuthCodeRecord {
        code_hash: SecretHash::from_stored(row.text("code_hash")?),
        grant_id: row.text("grant_id")?,
        client_id: row.text("client_id")?,
        redirect_uri: row.text("redirect_uri")?,
        code_challenge: row.text("code_challenge")?,
        resource: row.text("resource")?,
        scope: row.text("scope")?,
        created_at: row.int("created_at")?,
        expires_at: row.int("expires_at")?,
        redeemed_at: row.opt_int("redeemed_at")?,
    })
}

#[async_trait]
impl<DB: Backend> CodeStore for SqlStore<DB> {
    async fn insert_code(&self, code: &AuthCodeRecord, now: UnixTime) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        if let Err(err) = self.insert_code_in(&mut tx, code, now).await {
            tx.rollback().await?;
            return Err(err);
        }
        tx.commit().await?;
        Ok(())
    }

    /// The first write is a compare-and-swap on `redeemed_at IS NULL`: of
    /// concurrent redemptions exactly one matches (on PostgreSQL the others
    /// wait for its row lock, then re-check and match nothing). An expired
    /// code that was never spent is `Unknown` (and does not activate its
    /// grant); a spent one stays `AlreadyRedeemed` until pruned, so a
    /// replay is still recognised.
    async fn redeem_code(
        &self,
        code_hash: &SecretHash,
        now: UnixTime,
    ) -> Result<CodeRedemption, StoreError> {
        let code_hash = code_hash.as_str();
        let mut tx = self.begin_write().await?;
        let spent = stmt::<DB>(concat!(
            "UPDATE auth_codes SET redeemed_at = $2 \
             WHERE code_hash = $1 AND redeemed_at IS NULL AND expires_at > $2 RETURNING ",
            code_columns!()
        ))
        .bind(code_hash)
        .bind(now)
        .fetch_optional(&mut tx)
        .await?;
        if let Some(row) = spent {
            let code = code_from_row(&row)?;
            stmt::<DB>(
                "UPDATE grants SET activated_at = $2 WHERE id = $1 AND activated_at IS NULL",
            )
            .bind(&code.grant_id)
            .bind(now)
            .execute(&mut tx)
            .await?;
            tx.commit().await?;
            return Ok(CodeRedemption::Redeemed(code));
        }
        let existing = stmt::<DB>(concat!(
            "SELECT ",
            code_columns!(),
            " FROM auth_codes WHERE code_hash = $1"
        ))
        .bind(code_hash)
        .fetch_optional(&mut tx)
        .await?;
        tx.rollback().await?;
        match existing.map(|row| code_from_row(&row)).transpose()? {
            Some(code) if code.redeemed_at.is_some() => Ok(CodeRedemption::AlreadyRedeemed(code)),
            _ => Ok(CodeRedemption::Unknown),
        }
    }
}
