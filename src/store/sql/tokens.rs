//! Our access and refresh tokens (hashes only): issuing, resolving, and
//! the refresh-token rotation state machine of [`RefreshOutcome`].
//!
//! Refresh tokens carry a state: `active` (the one to use next),
//! `previous` (the one just rotated away from, honoured for
//! [`PREVIOUS_REFRESH_GRACE_SECS`], each use replacing the pair it minted
//! before) and `retired` (presenting it is reuse). Access tokens are always
//! `active`. Every token records the refresh token that minted it, so at
//! most one pair minted from one token is live.

use async_trait::async_trait;

use super::backend::stmt;
use super::{Backend, EndingTx, SqlStore};
use crate::store::TokenStore;
use crate::store::{
    GrantRecord, NewToken, PREVIOUS_REFRESH_GRACE_SECS, RefreshOutcome, ResolvedAccess, SecretHash,
    StoreError, UnixTime,
};

impl<DB: Backend> SqlStore<DB> {
    /// The access token whose hash is `token_hash`, unexpired, with its
    /// live grant: one read on one connection.
    async fn resolve_access_token_once(
        &self,
        token_hash: &str,
        now: UnixTime,
    ) -> Result<Option<ResolvedAccess>, StoreError> {
        let mut conn = self.conn().await?;
        let row = stmt::<DB>(concat!(
            "SELECT t.scope AS token_scope, t.expires_at AS token_expires_at, ",
            grant_columns!(),
            " FROM tokens t JOIN grants g ON g.id = t.grant_id WHERE t.token_hash = $1 \
             AND t.kind = 'access' AND t.expires_at > $2 AND g.revoked_at IS NULL"
        ))
        .bind(token_hash)
        .bind(now)
        .fetch_optional(&mut conn)
        .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(ResolvedAccess {
            scope: row.text("token_scope")?,
            expires_at: row.int("token_expires_at")?,
            grant: self.grant_from_row(&row)?,
        }))
    }

    /// Row-locks an unrevoked grant for the rest of the transaction (a
    /// no-op update of a column no index holds: SQLite rewrites the entry
    /// of every index holding an assigned column, value changed or not);
    /// false when it is revoked or unknown.
    async fn lock_live_grant(
        conn: &mut DB::Connection,
        grant_id: &str,
    ) -> Result<bool, StoreError> {
        let locked = stmt::<DB>(
            "UPDATE grants SET last_used_at = last_used_at WHERE id = $1 AND revoked_at IS NULL",
        )
        .bind(grant_id)
        .execute(conn)
        .await?;
        Ok(locked > 0)
    }

    /// Finds an unexpired refresh token of `client_id`, row-locks its live
    /// grant, and re-reads the token's state under that lock: a rotation
    /// that held the lock may have moved it on (on PostgreSQL each
    /// statement sees the latest committed state). `Err` is the outcome to
    /// answer without changing anything.
    async fn lock_refresh_token(
        conn: &mut DB::Connection,
        token_hash: &str,
        client_id: &str,
        now: UnixTime,
    ) -> Result<Result<(String, Presented), RefreshOutcome>, StoreError> {
        let owner = stmt::<DB>(
            "SELECT t.grant_id, g.client_id FROM tokens t JOIN grants g ON g.id = t.grant_id \
             WHERE t.token_hash = $1 AND t.kind = 'refresh'",
        )
        .bind(token_hash)
        .fetch_optional(&mut *conn)
        .await?;
        let Some(owner) = owner else {
            return Ok(Err(RefreshOutcome::Invalid));
        };
        // A grant's client never changes, so this needs no lock.
        if owner.text("client_id")? != client_id {
            return Ok(Err(RefreshOutcome::WrongClient));
        }
        let grant_id = owner.text("grant_id")?;
        if !Self::lock_live_grant(&mut *conn, &grant_id).await? {
            return Ok(Err(RefreshOutcome::Invalid));
        }
        let token =
            stmt::<DB>("SELECT state, expires_at, rotated_at FROM tokens WHERE token_hash = $1")
                .bind(token_hash)
                .fetch_optional(&mut *conn)
                .await?;
        match token {
            Some(token) if token.int("expires_at")? > now => {
                let state = presented(&token.text("state")?, token.opt_int("rotated_at")?, now)?;
                Ok(Ok((grant_id, state)))
            }
            _ => Ok(Err(RefreshOutcome::Invalid)),
        }
    }

    /// Inserts `tokens` as active; `minted_by` is the hash of the refresh
    /// token presented to mint them (`None` for a code redemption's pair).
    async fn insert_tokens_in(
        conn: &mut DB::Connection,
        grant_id: &str,
        tokens: &[NewToken],
        minted_by: Option<&str>,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        for token in tokens {
            stmt::<DB>(
                "INSERT INTO tokens (token_hash, grant_id, kind, state, scope, created_at, \
                 expires_at, minted_by) VALUES ($1, $2, $3, 'active', $4, $5, $6, $7)",
            )
            .bind(token.token_hash.as_str())
            .bind(grant_id)
            .bind(token.kind.as_str())
            .bind(&token.scope)
            .bind(now)
            .bind(token.expires_at)
            .bind(minted_by)
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }

    /// Moves the refresh tokens of a rotation along: for a rotation of the
    /// active token, the older previous one is retired and this one becomes
    /// previous (its grace starts now); for a retry within the previous
    /// token's grace, the pair it minted before is replaced (its refresh
    /// token retired, so presenting it is reuse; its access token deleted),
    /// leaving one live pair.
    async fn advance_rotation(
        tx: &mut EndingTx<'_, DB>,
        grant_id: &str,
        token_hash: &str,
        state: PresentedState,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        match state {
            PresentedState::Active => {
                stmt::<DB>(
                    "UPDATE tokens SET state = CASE WHEN token_hash = $2 THEN 'previous' \
                     ELSE 'retired' END, rotated_at = CASE WHEN token_hash = $2 THEN $3 \
                     ELSE rotated_at END WHERE grant_id = $1 AND kind = 'refresh' \
                     AND (state = 'previous' OR token_hash = $2)",
                )
                .bind(grant_id)
                .bind(token_hash)
                .bind(now)
                .execute(tx.conn())
                .await?;
            }
            PresentedState::PreviousInGrace => {
                stmt::<DB>(
                    "UPDATE tokens SET state = 'retired' WHERE grant_id = $1 \
                     AND kind = 'refresh' AND minted_by = $2",
                )
                .bind(grant_id)
                .bind(token_hash)
                .execute(tx.conn())
                .await?;
                stmt::<DB>(
                    "DELETE FROM tokens WHERE grant_id = $1 AND kind = 'access' \
                     AND minted_by = $2",
                )
                .bind(grant_id)
                .bind(token_hash)
                .execute(tx.conn())
                .await?;
            }
        }
        Ok(())
    }
}

/// A presented refresh token that may still be rotated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PresentedState {
    Active,
    /// Rotated away from at most [`PREVIOUS_REFRESH_GRACE_SECS`] ago.
    PreviousInGrace,
}

/// What a presented refresh token's stored state means now.
enum Presented {
    Rotatable(PresentedState),
    /// Retired, or previous past its grace: reuse.
    Reuse,
}

fn presented(
    state: &str,
    rotated_at: Option<UnixTime>,
    now: UnixTime,
) -> Result<Presented, StoreError> {
    Ok(match state {
        "active" => Presented::Rotatable(PresentedState::Active),
        "previous" => match rotated_at {
            Some(at) if now - at <= PREVIOUS_REFRESH_GRACE_SECS => {
                Presented::Rotatable(PresentedState::PreviousInGrace)
            }
            // Rows from before rotated_at existed count as past their grace.
            _ => Presented::Reuse,
        },
        "retired" => Presented::Reuse,
        _ => return Err(StoreError::Corrupt("token state")),
    })
}

#[async_trait]
impl<DB: Backend> TokenStore for SqlStore<DB> {
    /// Stores the pair, under the grant's row lock so a concurrent
    /// revocation either sees these tokens (and deletes them) or has
    /// already revoked the grant, in which case nothing is stored: tokens
    /// of a revoked grant would never resolve anyway.
    async fn insert_tokens(
        &self,
        grant_id: &str,
        tokens: &[NewToken],
        now: UnixTime,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        if !Self::lock_live_grant(&mut tx, grant_id).await? {
            tx.rollback().await?;
            return Ok(());
        }
        Self::insert_tokens_in(&mut tx, grant_id, tokens, None, now).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn resolve_access_token(
        &self,
        token_hash: &SecretHash,
        now: UnixTime,
    ) -> Result<Option<ResolvedAccess>, StoreError> {
        let token_hash = token_hash.as_str();
        if let Some(known) = self.resolved.get(token_hash, now) {
            return Ok(Some(known));
        }
        // Read before the lookup: a write that commits during it makes
        // what it read stale, and `put` then keeps nothing.
        let generation = self.resolved.generation();
        let found = self
            .read_retrying(|| self.resolve_access_token_once(token_hash, now))
            .await?;
        if let Some(access) = &found {
            self.resolved.put(token_hash, access, generation, now);
        }
        Ok(found)
    }

    /// One transaction. The token's grant row is locked before the token's
    /// state is (re-)read, so rotations of one grant run one after another
    /// on PostgreSQL too; on SQLite `BEGIN IMMEDIATE` already does that.
    async fn rotate_refresh_token(
        &self,
        token_hash: &SecretHash,
        client_id: &str,
        new_tokens: &[NewToken],
        now: UnixTime,
    ) -> Result<RefreshOutcome, StoreError> {
        let token_hash = token_hash.as_str();
        let mut tx = self.begin_ending().await?;
        let (grant_id, state) =
            match Self::lock_refresh_token(&mut tx, token_hash, client_id, now).await? {
                Ok(found) => found,
                Err(outcome) => {
                    tx.rollback().await?;
                    return Ok(outcome);
                }
            };
        let state = match state {
            Presented::Rotatable(state) => state,
            Presented::Reuse => {
                Self::revoke_in(&mut tx, &grant_id, now).await?;
                tx.commit().await?;
                return Ok(RefreshOutcome::ReuseDetected { grant_id });
            }
        };
        Self::advance_rotation(&mut tx, &grant_id, token_hash, state, now).await?;
        Self::insert_tokens_in(&mut tx, &grant_id, new_tokens, Some(token_hash), now).await?;
        stmt::<DB>("UPDATE grants SET last_used_at = $2 WHERE id = $1")
            .bind(&grant_id)
            .bind(now)
            .execute(&mut tx)
            .await?;
        let grant = self.grant_in(&mut tx, &grant_id).await?;
        tx.commit().await?;
        match grant {
            Some(grant) => Ok(RefreshOutcome::Rotated {
                grant: Box::new(grant),
            }),
            None => Err(StoreError::Corrupt("grant vanished under its lock")),
        }
    }

    async fn grant_of_token(
        &self,
        token_hash: &SecretHash,
    ) -> Result<Option<GrantRecord>, StoreError> {
        let token_hash = token_hash.as_str();
        let mut conn = self.conn().await?;
        let row = stmt::<DB>(concat!(
            "SELECT ",
            grant_columns!(),
            " FROM tokens t JOIN grants g ON g.id = t.grant_id WHERE t.token_hash = $1"
        ))
        .bind(token_hash)
        .fetch_optional(&mut conn)
        .await?;
        row.map(|row| self.grant_from_row(&row)).transpose()
    }
}
