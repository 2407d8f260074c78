//! Housekeeping: pruning expired rows, and the two walks over every
//! encrypted value (startup verification and rekeying after a key
//! rotation).

use async_trait::async_trait;

use super::backend::stmt;
use super::{Backend, SqlStore, confirmations, grants, page_sessions, pending};
use crate::store::StoreMaintenance;
use crate::store::schema::SchemaStatus;
use crate::store::{PruneCounts, StoreError, UnixTime};

/// Revoked grants are kept this long (for `grant_of_token` on a late
/// revocation request and for the audit trail), then deleted.
const REVOKED_GRANT_RETENTION: i64 = 30 * 24 * 60 * 60;
/// How long a confirmation is kept past its expiry (or its use).
const CONFIRMATION_RETENTION: i64 = 24 * 60 * 60;

/// A never-activated grant younger than this is kept even without a code:
/// the callback stores the grant first and its code right after, and a
/// prune between the two must not pull the grant from under the code.
const UNACTIVATED_GRACE: i64 = 60;

impl<DB: Backend> SqlStore<DB> {
    /// Every ciphertext in the store.
    async fn sealed_values(
        &self,
        conn: &mut DB::Connection,
    ) -> Result<Vec<SealedValue>, StoreError> {
        let mut values = Vec::new();
        let grants = stmt::<DB>(
            "SELECT id, gitea_access_token_enc, gitea_refresh_token_enc FROM grants ORDER BY id",
        )
        .fetch_all(&mut *conn)
        .await?;
        for grant in grants {
            let id = grant.text("id")?;
            if let Some(refresh) = grant.opt_text("gitea_refresh_token_enc")? {
                values.push(SealedValue {
                    column: SealedColumn::GiteaRefreshToken,
                    row: id.clone(),
                    ciphertext: refresh,
                });
            }
            values.push(SealedValue {
                column: SealedColumn::GiteaAccessToken,
                row: id,
                ciphertext: grant.text("gitea_access_token_enc")?,
            });
        }
        let pending = stmt::<DB>(
            "SELECT id_hash, upstream_pkce_verifier_enc FROM pending_authorizations \
             WHERE upstream_pkce_verifier_enc IS NOT NULL ORDER BY id_hash",
        )
        .fetch_all(&mut *conn)
        .await?;
        for row in pending {
            values.push(SealedValue {
                column: SealedColumn::PkceVerifier,
                row: row.text("id_hash")?,
                ciphertext: row.text("upstream_pkce_verifier_enc")?,
            });
        }
        let sessions = stmt::<DB>(
            "SELECT id_hash, gitea_access_token_enc FROM page_sessions ORDER BY id_hash",
        )
        .fetch_all(&mut *conn)
        .await?;
        for row in sessions {
            values.push(SealedValue {
                column: SealedColumn::PageSessionGiteaToken,
                row: row.text("id_hash")?,
                ciphertext: row.text("gitea_access_token_enc")?,
            });
        }
        let confirmations =
            stmt::<DB>("SELECT id, arguments_enc, summary_enc FROM confirmations ORDER BY id")
                .fetch_all(&mut *conn)
                .await?;
        for row in confirmations {
            let id = row.text("id")?;
            if let Some(summary) = row.opt_text("summary_enc")? {
                values.push(SealedValue {
                    column: SealedColumn::ConfirmationSummary,
                    row: id.clone(),
                    ciphertext: summary,
                });
            }
            values.push(SealedValue {
                column: SealedColumn::ConfirmationArguments,
                row: id,
                ciphertext: row.text("arguments_enc")?,
            });
        }
        Ok(values)
    }
}

/// The encrypted columns.
#[derive(Debug, Clone, Copy)]
enum SealedColumn {
    GiteaAccessToken,
    GiteaRefreshToken,
    PkceVerifier,
    PageSessionGiteaToken,
    ConfirmationArguments,
    ConfirmationSummary,
}

impl SealedColumn {
    fn table(self) -> &'static str {
        match self {
            Self::GiteaAccessToken | Self::GiteaRefreshToken => grants::TABLE,
            Self::PkceVerifier => pending::TABLE,
            Self::PageSessionGiteaToken => page_sessions::TABLE,
            Self::ConfirmationArguments | Self::ConfirmationSummary => confirmations::TABLE,
        }
    }

    /// `$1` the new ciphertext, `$2` the row id. The rows are locked by
    /// the rekey transaction, so the value read is still the value there.
    fn rewrite_sql(self) -> &'static str {
        match self {
            Self::GiteaAccessToken => "UPDATE grants SET gitea_access_token_enc = $1 WHERE id = $2",
            Self::GiteaRefreshToken => {
                "UPDATE grants SET gitea_refresh_token_enc = $1 WHERE id = $2"
            }
            Self::PkceVerifier => {
                "UPDATE pending_authorizations SET upstream_pkce_verifier_enc = $1 \
                 WHERE id_hash = $2"
            }
            Self::PageSessionGiteaToken => {
                "UPDATE page_sessions SET gitea_access_token_enc = $1 WHERE id_hash = $2"
            }
            Self::ConfirmationArguments => {
                "UPDATE confirmations SET arguments_enc = $1 WHERE id = $2"
            }
            Self::ConfirmationSummary => "UPDATE confirmations SET summary_enc = $1 WHERE id = $2",
        }
    }
}

/// One stored ciphertext and where it lives (`row`: an id or a hash,
/// never a secret).
struct SealedValue {
    column: SealedColumn,
    row: String,
    ciphertext: String,
}

#[async_trait]
impl<DB: Backend> StoreMaintenance for SqlStore<DB> {
    fn backend(&self) -> &'static str {
        DB::LABEL
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let mut conn = self.conn().await?;
        stmt::<DB>("SELECT 1").fetch_optional(&mut conn).await?;
        Ok(())
    }

    async fn schema_status(&self) -> Result<SchemaStatus, StoreError> {
        let store = super::schema::store_level(&self.pool).await?;
        Ok(SchemaStatus {
            store,
            binary: self.schema.binary,
        })
    }

    async fn copy_into(&self, file: &std::path::Path) -> Result<(), StoreError> {
        super::schema::vacuum_into(&self.pool, file).await
    }

    /// Each statement stands alone (no long write lock); the grant rule
    /// runs after expired codes are gone, so "no code left" means "every
    /// code expired". Tokens and codes of deleted grants go with them
    /// (`ON DELETE CASCADE`) and are not counted.
    async fn prune(&self, now: UnixTime) -> Result<PruneCounts, StoreError> {
        let clients = self.delete_orphaned_clients(now).await?;
        let mut conn = self.conn().await?;
        let clients = clients + Self::delete_unused_registrations(&mut conn, now).await?;
        let pending = stmt::<DB>("DELETE FROM pending_authorizations WHERE expires_at <= $1")
            .bind(now)
            .execute(&mut conn)
            .await?;
        let codes = stmt::<DB>("DELETE FROM auth_codes WHERE expires_at <= $1")
            .bind(now)
            .execute(&mut conn)
            .await?;
        let tokens = stmt::<DB>("DELETE FROM tokens WHERE expires_at <= $1")
            .bind(now)
            .execute(&mut conn)
            .await?;
        let grants = stmt::<DB>(
            "DELETE FROM grants WHERE (activated_at IS NULL AND created_at <= $2 \
             AND NOT EXISTS (SELECT 1 FROM auth_codes c WHERE c.grant_id = grants.id)) \
             OR (revoked_at IS NOT NULL AND revoked_at <= $3)",
        )
        .bind(now)
        .bind(now - UNACTIVATED_GRACE)
        .bind(now - REVOKED_GRANT_RETENTION)
        .execute(&mut conn)
        .await?;
        let page_sessions = stmt::<DB>("DELETE FROM page_sessions WHERE expires_at <= $1")
            .bind(now)
            .execute(&mut conn)
            .await?;
        // Kept a day past their expiry, so a late retry hears "expired".
        let confirmations = stmt::<DB>(
            "DELETE FROM confirmations WHERE expires_at <= $1 OR (state = 'used' AND decided_at <= $1)",
        )
        .bind(now - CONFIRMATION_RETENTION)
        .execute(&mut conn)
        .await?;
        let mut activity = 0;
        for table in [
            "DELETE FROM activity_hours WHERE hour < $1",
            "DELETE FROM activity_tools WHERE day < $1",
            "DELETE FROM activity_recent WHERE at < $1",
        ] {
            activity += stmt::<DB>(table)
                .bind(now - super::activity::ACTIVITY_RETENTION)
                .execute(&mut conn)
                .await?;
        }
        stmt::<DB>("DELETE FROM rate_limit_hits WHERE minute < $1")
            .bind(now / 60 - super::rate_limits::KEPT_MINUTES)
            .execute(&mut conn)
            .await?;
        Ok(PruneCounts {
            clients,
            pending,
            codes,
            tokens,
            grants,
            page_sessions,
            confirmations,
            activity,
        })
    }

    /// Decrypts every stored ciphertext once; the count of values checked.
    async fn verify_decryptable(&self) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let mut checked = 0;
        for value in self.sealed_values(&mut conn).await? {
            self.unseal(value.column.table(), &value.row, &value.ciphertext)?;
            checked += 1;
        }
        Ok(checked)
    }

    /// One transaction: every row holding ciphertext is locked first (a
    /// no-op update) so no concurrent write is overwritten with the value
    /// read here; then each value not already under the newest key is
    /// decrypted and written back under it. Idempotent: a second run
    /// rewrites nothing. Any undecryptable value aborts the whole rekey.
    async fn rekey(&self) -> Result<u64, StoreError> {
        let mut tx = self.begin_write().await?;
        stmt::<DB>("UPDATE grants SET gitea_access_token_enc = gitea_access_token_enc")
            .execute(&mut tx)
            .await?;
        stmt::<DB>(
            "UPDATE pending_authorizations \
             SET upstream_pkce_verifier_enc = upstream_pkce_verifier_enc \
             WHERE upstream_pkce_verifier_enc IS NOT NULL",
        )
        .execute(&mut tx)
        .await?;
        stmt::<DB>("UPDATE page_sessions SET gitea_access_token_enc = gitea_access_token_enc")
            .execute(&mut tx)
            .await?;
        let mut rewritten = 0;
        for value in self.sealed_values(&mut tx).await? {
            if self.cipher.is_current(&value.ciphertext) {
                continue;
            }
            let plain = self.unseal(value.column.table(), &value.row, &value.ciphertext)?;
            stmt::<DB>(value.column.rewrite_sql())
                .bind(&self.seal(&plain))
                .bind(&value.row)
                .execute(&mut tx)
                .await?;
            rewritten += 1;
        }
        tx.commit().await?;
        Ok(rewritten)
    }
}
