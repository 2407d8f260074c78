//! Pending authorizations: an `/authorize` request parked while the user
//! decides, then (once approved) while the user is away at Gitea. Capped
//! at `max_pending` unexpired rows.

use async_trait::async_trait;

use super::backend::{SqlRow, stmt};
use super::{Backend, SqlStore};
use crate::store::PendingStore;
use crate::store::{
    ClientAuthorization, PendingAuthorization, PendingFlow, PendingSignIn, PendingTake, ReturnPage,
    SecretHash, StoreError, UnixTime, UpstreamKey, UpstreamLeg,
};

/// The columns [`SqlStore::pending_from_row`] reads.
macro_rules! pending_columns {
    () => {
        "id_hash, flow, client_id, redirect_uri, state, code_challenge, resource, scope, \
         csrf_hash, created_at, expires_at, upstream_state_hash, upstream_pkce_verifier_enc, \
         upstream_binding_hash, upstream_nonce_hash"
    };
}

pub(super) const TABLE: &str = "pending_authorizations";

impl<DB: Backend> SqlStore<DB> {
    fn pending_from_row(&self, row: &SqlRow<DB>) -> Result<PendingAuthorization, StoreError> {
        let id_hash = row.text("id_hash")?;
        let upstream = match (
            row.opt_text("upstream_state_hash")?,
            row.opt_text("upstream_pkce_verifier_enc")?,
            row.opt_text("upstream_binding_hash")?,
        ) {
            (None, None, None) => None,
            (Some(state_hash), Some(verifier), Some(binding_hash)) => Some(UpstreamLeg {
                state_hash: SecretHash::from_stored(state_hash),
                pkce_verifier: self.unseal(TABLE, &id_hash, &verifier)?,
                binding_hash: SecretHash::from_stored(binding_hash),
                // A leg parked before nonces existed matches no ID token.
                nonce_hash: row
                    .opt_text("upstream_nonce_hash")?
                    .map_or_else(SecretHash::unmatchable, SecretHash::from_stored),
            }),
            _ => return Err(StoreError::Corrupt("pending upstream leg")),
        };
        // One table for both flows: a page sign-in keeps the page it
        // returns to in `redirect_uri` and leaves the client's columns empty.
        let flow = match PendingFlow::parse(&row.text("flow")?) {
            Some(PendingFlow::Authorize) => PendingSignIn::Client(ClientAuthorization {
                client_id: row.text("client_id")?,
                redirect_uri: row.text("redirect_uri")?,
                state: row.opt_text("state")?,
                code_challenge: row.text("code_challenge")?,
                resource: row.text("resource")?,
                scope: row.text("scope")?,
                csrf_hash: SecretHash::from_stored(row.text("csrf_hash")?),
            }),
            Some(PendingFlow::PageSignIn) => {
                PendingSignIn::Page(ReturnPage::from_path(&row.text("redirect_uri")?))
            }
            None => return Err(StoreError::Corrupt("flow")),
        };
        Ok(PendingAuthorization {
            id_hash: SecretHash::from_stored(id_hash),
            flow,
            created_at: row.int("created_at")?,
            expires_at: row.int("expires_at")?,
            upstream,
        })
    }
}

#[async_trait]
impl<DB: Backend> PendingStore for SqlStore<DB> {
    async fn insert_pending(
        &self,
        pending: &PendingAuthorization,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        let upstream = pending.upstream.as_ref();
        let verifier = upstream.map(|leg| self.seal(&leg.pkce_verifier));
        let client = match &pending.flow {
            PendingSignIn::Client(client) => Some(client),
            PendingSignIn::Page(_) => None,
        };
        let mut tx = self.begin_write().await?;
        Self::lock_cap(&mut tx, "pending").await?;
        let live =
            stmt::<DB>("SELECT COUNT(*) AS n FROM pending_authorizations WHERE expires_at > $1")
                .bind(now)
                .fetch_optional(&mut tx)
                .await?
                .ok_or(StoreError::Corrupt("pending count"))?
                .int("n")?;
        if u64::try_from(live).unwrap_or(0) >= self.limits.max_pending {
            tx.rollback().await?;
            return Err(StoreError::Full {
                what: "pending authorizations",
            });
        }
        stmt::<DB>(concat!(
            "INSERT INTO pending_authorizations (",
            pending_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
        ))
        .bind(pending.id_hash.as_str())
        .bind(pending.flow.flow().as_str())
        .bind(client.map_or("", |c| c.client_id.as_str()))
        .bind(match &pending.flow {
            PendingSignIn::Client(c) => c.redirect_uri.as_str(),
            PendingSignIn::Page(page) => page.path(),
        })
        .bind(client.and_then(|c| c.state.as_deref()))
        .bind(client.map_or("", |c| c.code_challenge.as_str()))
        .bind(client.map_or("", |c| c.resource.as_str()))
        .bind(client.map_or("", |c| c.scope.as_str()))
        .bind(client.map_or("", |c| c.csrf_hash.as_str()))
        .bind(pending.created_at)
        .bind(pending.expires_at)
        .bind(upstream.map(|leg| leg.state_hash.as_str()))
        .bind(verifier.as_deref())
        .bind(upstream.map(|leg| leg.binding_hash.as_str()))
        .bind(upstream.map(|leg| leg.nonce_hash.as_str()))
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn get_pending(
        &self,
        id_hash: &SecretHash,
        now: UnixTime,
    ) -> Result<Option<PendingAuthorization>, StoreError> {
        let mut conn = self.conn().await?;
        let row = stmt::<DB>(concat!(
            "SELECT ",
            pending_columns!(),
            " FROM pending_authorizations WHERE id_hash = $1 AND expires_at > $2"
        ))
        .bind(id_hash.as_str())
        .bind(now)
        .fetch_optional(&mut conn)
        .await?;
        row.map(|row| self.pending_from_row(&row)).transpose()
    }

    /// One conditional UPDATE: only an unexpired request without an
    /// upstream leg matches, so of two racing approvals one wins.
    async fn approve_pending(
        &self,
        id_hash: &SecretHash,
        upstream: &UpstreamLeg,
        granted_scope: &str,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let verifier = self.seal(&upstream.pkce_verifier);
        let mut conn = self.conn().await?;
        let updated = stmt::<DB>(
            "UPDATE pending_authorizations SET upstream_state_hash = $2, \
             upstream_pkce_verifier_enc = $3, upstream_binding_hash = $4, \
             upstream_nonce_hash = $6, scope = $7 \
             WHERE id_hash = $1 AND expires_at > $5 AND upstream_state_hash IS NULL",
        )
        .bind(id_hash.as_str())
        .bind(upstream.state_hash.as_str())
        .bind(&verifier)
        .bind(upstream.binding_hash.as_str())
        .bind(now)
        .bind(upstream.nonce_hash.as_str())
        .bind(granted_scope)
        .execute(&mut conn)
        .await?;
        Ok(updated == 1)
    }

    async fn delete_pending(&self, id_hash: &SecretHash) -> Result<bool, StoreError> {
        let mut conn = self.conn().await?;
        let deleted = stmt::<DB>("DELETE FROM pending_authorizations WHERE id_hash = $1")
            .bind(id_hash.as_str())
            .execute(&mut conn)
            .await?;
        Ok(deleted > 0)
    }

    /// `DELETE … RETURNING`: the row is gone the moment it is read, so a
    /// second callback with the same state finds nothing.
    async fn take_pending_by_upstream_state(
        &self,
        key: &UpstreamKey,
    ) -> Result<PendingTake, StoreError> {
        let mut conn = self.conn().await?;
        let row = stmt::<DB>(concat!(
            "DELETE FROM pending_authorizations WHERE upstream_state_hash = $1 \
             AND upstream_binding_hash = $2 RETURNING ",
            pending_columns!()
        ))
        .bind(key.state_hash.as_str())
        .bind(key.binding_hash.as_str())
        .fetch_optional(&mut conn)
        .await?;
        if let Some(row) = row {
            return Ok(PendingTake::Taken(Box::new(self.pending_from_row(&row)?)));
        }
        let elsewhere = stmt::<DB>(
            "SELECT 1 AS found FROM pending_authorizations WHERE upstream_state_hash = $1",
        )
        .bind(key.state_hash.as_str())
        .fetch_optional(&mut conn)
        .await?;
        Ok(match elsewhere {
            Some(_) => PendingTake::OtherBrowser,
            None => PendingTake::Unknown,
        })
    }
}
