//! Registered clients: dynamic registrations and cached metadata documents,
//! capped at `max_clients`, with a per-network allowance of unused dynamic
//! registrations that grows with the network's use, and unused ones
//! removed an hour after registering.

use async_trait::async_trait;

use super::backend::{SqlRow, Stmt, stmt};
use super::{Backend, EndingTx, SqlStore};
use crate::store::ClientStore;
use crate::store::{
    ClientRecord, EndedGrant, ORPHANED_CLIENT_TTL, RESERVED_CLIENT_SHARE, Registration, Removed,
    SMALL_NETWORK_SHARE, SecretHash, StoreError, TokenEndpointAuthMethod, UNUSED_REGISTRATION_TTL,
    UNUSED_REGISTRATIONS_PER_NETWORK, UnixTime,
};

const INSERT_CLIENT: &str = "INSERT INTO clients (client_id, client_name, redirect_uris, \
     token_endpoint_auth_method, grant_types, response_types, scope, registration, \
     secret_hash, metadata, created_at, expires_at, registered_from) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";

/// Removes clients that no sign-in used within [`UNUSED_REGISTRATION_TTL`]
/// of registering (or of fetching their metadata document: fetched again
/// when it is used).
const DELETE_UNUSED_REGISTRATIONS: &str = "DELETE FROM clients \
     WHERE registration IN ('dcr', 'cimd') \
     AND first_used_at IS NULL AND created_at <= $1 \
     AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.client_id = clients.client_id)";

/// Used clients none of whose grants has been live since `$1`: the red
/// team's F1 (used registrations were kept for good). At most 1,000 a
/// pruning round.
const SELECT_ORPHANED_CLIENTS: &str = "SELECT client_id FROM clients \
     WHERE registration IN ('dcr', 'cimd') \
     AND first_used_at IS NOT NULL AND created_at <= $1 \
     AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.client_id = clients.client_id \
     AND (g.revoked_at IS NULL OR g.revoked_at > $1)) \
     ORDER BY created_at LIMIT 1000";

// A metadata document never replaces a dynamically registered client of
// the same id (they cannot collide in practice: theirs is an https URL).
const UPSERT_METADATA_CLIENT: &str = "INSERT INTO clients (client_id, client_name, \
     redirect_uris, token_endpoint_auth_method, grant_types, response_types, scope, \
     registration, secret_hash, metadata, created_at, expires_at, registered_from) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
     ON CONFLICT (client_id) DO UPDATE SET client_name = excluded.client_name, \
     redirect_uris = excluded.redirect_uris, \
     token_endpoint_auth_method = excluded.token_endpoint_auth_method, \
     grant_types = excluded.grant_types, response_types = excluded.response_types, \
     scope = excluded.scope, secret_hash = excluded.secret_hash, \
     metadata = excluded.metadata, created_at = excluded.created_at, \
     expires_at = excluded.expires_at \
     WHERE clients.registration = 'cimd'";

/// The columns [`client_from_row`] reads (a macro, for `concat!`).
macro_rules! client_columns {
    () => {
        "client_id, client_name, redirect_uris, token_endpoint_auth_method, grant_types, \
         response_types, scope, registration, secret_hash, metadata, created_at, expires_at"
    };
}
pub(super) use client_columns;

impl<DB: Backend> SqlStore<DB> {
    /// Inside the caller's transaction: deletes a client with everything
    /// hanging off it (its grants revoked, their tokens and codes deleted,
    /// its pending requests and consent records removed). Whether it
    /// existed.
    pub(super) async fn delete_client_in(
        tx: &mut EndingTx<'_, DB>,
        client_id: &str,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let existed = stmt::<DB>("DELETE FROM clients WHERE client_id = $1")
            .bind(client_id)
            .execute(tx.conn())
            .await?
            > 0;
        stmt::<DB>("UPDATE grants SET revoked_at = $2 WHERE client_id = $1 AND revoked_at IS NULL")
            .bind(client_id)
            .bind(now)
            .execute(tx.conn())
            .await?;
        for sql in [
            "DELETE FROM tokens WHERE grant_id IN (SELECT id FROM grants WHERE client_id = $1)",
            "DELETE FROM auth_codes WHERE client_id = $1",
            "DELETE FROM pending_authorizations WHERE client_id = $1",
            "DELETE FROM consents WHERE client_id = $1",
        ] {
            stmt::<DB>(sql).bind(client_id).execute(tx.conn()).await?;
        }
        Ok(existed)
    }

    /// Inside a write transaction: whether one more client fits, after
    /// removing dynamic registrations that were never used.
    async fn make_room_for_client(
        &self,
        conn: &mut DB::Connection,
        network: Option<&str>,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        Self::lock_cap(conn, "clients").await?;
        let mut count = client_count::<DB>(&mut *conn).await?;
        if count >= self.limits.max_clients {
            Self::delete_unused_registrations(conn, now).await?;
            count = client_count::<DB>(&mut *conn).await?;
        }
        if count >= self.limits.max_clients {
            return Ok(false);
        }
        // The reserved share is for networks that hold little (F1): one
        // network never takes the last of the table, however much it used.
        let reserve = self.limits.max_clients / RESERVED_CLIENT_SHARE;
        if count >= self.limits.max_clients - reserve
            && let Some(network) = network
        {
            let small = (self.limits.max_clients / SMALL_NETWORK_SHARE)
                .max(UNUSED_REGISTRATIONS_PER_NETWORK);
            return Ok(network_count::<DB>(&mut *conn, network).await? < small);
        }
        Ok(true)
    }

    pub(super) async fn delete_unused_registrations(
        conn: &mut DB::Connection,
        now: UnixTime,
    ) -> Result<u64, StoreError> {
        stmt::<DB>(DELETE_UNUSED_REGISTRATIONS)
            .bind(now - UNUSED_REGISTRATION_TTL)
            .execute(conn)
            .await
    }

    /// Deletes the clients whose grants all ended more than
    /// [`ORPHANED_CLIENT_TTL`] ago, each with its consents and pending
    /// requests, a bounded batch per call (the pruning runs every few
    /// minutes), in one ending transaction.
    pub(super) async fn delete_orphaned_clients(&self, now: UnixTime) -> Result<u64, StoreError> {
        let mut tx = self.begin_ending().await?;
        let orphaned = stmt::<DB>(SELECT_ORPHANED_CLIENTS)
            .bind(now - ORPHANED_CLIENT_TTL)
            .fetch_all(tx.conn())
            .await?;
        let mut deleted = 0;
        for row in &orphaned {
            if Self::delete_client_in(&mut tx, &row.text("client_id")?, now).await? {
                deleted += 1;
            }
        }
        tx.commit().await?;
        Ok(deleted)
    }

    /// Inside the clients' cap lock: whether `network` already holds its
    /// allowance of unused recent registrations: the fixed slack plus one
    /// for each of its recent registrations that a sign-in used.
    async fn network_quota_spent(
        conn: &mut DB::Connection,
        network: &str,
        now: UnixTime,
    ) -> Result<bool, StoreError> {
        let row = stmt::<DB>(
            "SELECT COALESCE(SUM(CASE WHEN first_used_at IS NULL THEN 1 ELSE 0 END), 0) AS unused, \
             COALESCE(SUM(CASE WHEN first_used_at IS NULL THEN 0 ELSE 1 END), 0) AS used \
             FROM clients WHERE registered_from = $1 AND created_at > $2",
        )
        .bind(network)
        .bind(now - UNUSED_REGISTRATION_TTL)
        .fetch_optional(conn)
        .await?
        .ok_or(StoreError::Corrupt("registration count"))?;
        let count = |column| row.int(column).map(|n| u64::try_from(n).unwrap_or(0));
        Ok(count("unused")? >= UNUSED_REGISTRATIONS_PER_NETWORK + count("used")?)
    }
}

async fn client_count<DB: Backend>(conn: &mut DB::Connection) -> Result<u64, StoreError> {
    let row = stmt::<DB>("SELECT COUNT(*) AS n FROM clients")
        .fetch_optional(conn)
        .await?
        .ok_or(StoreError::Corrupt("client count"))?;
    Ok(u64::try_from(row.int("n")?).unwrap_or(0))
}

fn ended_grant<DB: Backend>(row: &SqlRow<DB>) -> Result<EndedGrant, StoreError> {
    Ok(EndedGrant {
        id: row.text("id")?,
        login: row.text("login")?,
        client_id: row.text("client_id")?,
    })
}

/// The clients registered from `network`.
async fn network_count<DB: Backend>(
    conn: &mut DB::Connection,
    network: &str,
) -> Result<u64, StoreError> {
    let row = stmt::<DB>("SELECT COUNT(*) AS n FROM clients WHERE registered_from = $1")
        .bind(network)
        .fetch_optional(conn)
        .await?
        .ok_or(StoreError::Corrupt("client count"))?;
    Ok(u64::try_from(row.int("n")?).unwrap_or(0))
}

fn bind_client<'a, DB: Backend>(
    query: Stmt<DB>,
    client: &'a ClientRecord,
) -> Result<Stmt<DB>, StoreError> {
    let list = |values: &'a Vec<String>| {
        serde_json::to_string(values).map_err(|_| StoreError::Corrupt("client list"))
    };
    let redirect_uris = list(&client.redirect_uris)?;
    let grant_types = list(&client.grant_types)?;
    let response_types = list(&client.response_types)?;
    let metadata = client.metadata.to_string();
    Ok(query
        .bind(&client.client_id)
        .bind(client.client_name.as_deref())
        .bind(&redirect_uris)
        .bind(client.token_endpoint_auth_method.as_str())
        .bind(&grant_types)
        .bind(&response_types)
        .bind(client.scope.as_deref())
        .bind(client.registration.as_str())
        .bind(client.secret_hash.as_ref().map(SecretHash::as_str))
        .bind(&metadata)
        .bind(client.created_at)
        .bind(client.expires_at))
}

pub(super) fn client_from_row<DB: Backend>(row: &SqlRow<DB>) -> Result<ClientRecord, StoreError> {
    let list = |column: &'static str| -> Result<Vec<String>, StoreError> {
        serde_json::from_str(&row.text(column)?).map_err(|_| StoreError::Corrupt(column))
    };
    Ok(ClientRecord {
        client_id: row.text("client_id")?,
        client_name: row.opt_text("client_name")?,
        redirect_uris: list("redirect_uris")?,
        token_endpoint_auth_method: TokenEndpointAuthMethod::parse(
            &row.text("token_endpoint_auth_method")?,
        )
        .ok_or(StoreError::Corrupt("token_endpoint_auth_method"))?,
        grant_types: list("grant_types")?,
        response_types: list("response_types")?,
        scope: row.opt_text("scope")?,
        registration: Registration::parse(&row.text("registration")?)
            .ok_or(StoreError::Corrupt("registration"))?,
        secret_hash: row.opt_text("secret_hash")?.map(SecretHash::from_stored),
        metadata: serde_json::from_str(&row.text("metadata")?)
            .map_err(|_| StoreError::Corrupt("metadata"))?,
        created_at: row.int("created_at")?,
        expires_at: row.opt_int("expires_at")?,
    })
}

#[async_trait]
impl<DB: Backend> ClientStore for SqlStore<DB> {
    async fn insert_client(
        &self,
        client: &ClientRecord,
        registered_from: Option<&str>,
        now: UnixTime,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        if !self
            .make_room_for_client(&mut tx, registered_from, now)
            .await?
        {
            tx.rollback().await?;
            return Err(StoreError::Full { what: "clients" });
        }
        if let Some(network) = registered_from
            && Self::network_quota_spent(&mut tx, network, now).await?
        {
            tx.rollback().await?;
            return Err(StoreError::QuotaSpent {
                what: "registrations from this network",
            });
        }
        bind_client(stmt::<DB>(INSERT_CLIENT), client)?
            .bind(registered_from)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Capped like [`Self::insert_client`] when the document is new
    /// (a refresh of a cached one does not grow the table); the document's
    /// `created_at` (its fetch time) is the clock for the eviction rule.
    async fn upsert_metadata_client(&self, client: &ClientRecord) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        let known = stmt::<DB>("SELECT 1 AS known FROM clients WHERE client_id = $1")
            .bind(&client.client_id)
            .fetch_optional(&mut tx)
            .await?
            .is_some();
        if !known
            && !self
                .make_room_for_client(&mut tx, None, client.created_at)
                .await?
        {
            tx.rollback().await?;
            return Err(StoreError::Full { what: "clients" });
        }
        bind_client(stmt::<DB>(UPSERT_METADATA_CLIENT), client)?
            .bind(None::<&str>)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn get_client(&self, client_id: &str) -> Result<Option<ClientRecord>, StoreError> {
        self.read_retrying(|| async move {
            let mut conn = self.conn().await?;
            let row = stmt::<DB>(concat!(
                "SELECT ",
                client_columns!(),
                " FROM clients WHERE client_id = $1"
            ))
            .bind(client_id)
            .fetch_optional(&mut conn)
            .await?;
            row.map(|row| client_from_row(&row)).transpose()
        })
        .await
    }

    /// Deletes the client with everything hanging off it: its grants are
    /// revoked (their tokens and codes deleted), its pending requests and
    /// consent records removed.
    async fn delete_client(&self, client_id: &str, now: UnixTime) -> Result<bool, StoreError> {
        let mut tx = self.begin_ending().await?;
        let existed = Self::delete_client_in(&mut tx, client_id, now).await?;
        tx.commit().await?;
        Ok(existed)
    }

    async fn remove_everything_of_login(
        &self,
        login: &str,
        now: UnixTime,
    ) -> Result<Removed, StoreError> {
        let mut tx = self.begin_ending().await?;
        Self::lock_cap(&mut tx, "grants").await?;
        // The clients it used that no one else holds a live grant for.
        let clients = stmt::<DB>(
            "SELECT DISTINCT g.client_id FROM grants g WHERE g.login = $1 \
             AND NOT EXISTS (SELECT 1 FROM grants o WHERE o.client_id = g.client_id \
             AND o.login <> $1 AND o.revoked_at IS NULL)",
        )
        .bind(login)
        .fetch_all(&mut tx)
        .await?;
        let live = stmt::<DB>(
            "SELECT id, login, client_id FROM grants WHERE login = $1 AND revoked_at IS NULL",
        )
        .bind(login)
        .fetch_all(&mut tx)
        .await?;
        let mut removed = Removed::default();
        for row in &live {
            if Self::revoke_in(&mut tx, &row.text("id")?, now).await? {
                removed.ended.push(ended_grant(row)?);
            }
        }
        for row in &clients {
            if Self::delete_client_in(&mut tx, &row.text("client_id")?, now).await? {
                removed.clients += 1;
            }
        }
        tx.commit().await?;
        Ok(removed)
    }

    async fn remove_everything_of_network(
        &self,
        network: &str,
        now: UnixTime,
    ) -> Result<Removed, StoreError> {
        let mut tx = self.begin_ending().await?;
        Self::lock_cap(&mut tx, "grants").await?;
        let live = stmt::<DB>(
            "SELECT id, login, client_id FROM grants WHERE revoked_at IS NULL AND client_id IN \
             (SELECT client_id FROM clients WHERE registered_from = $1)",
        )
        .bind(network)
        .fetch_all(&mut tx)
        .await?;
        let mut removed = Removed::default();
        for row in &live {
            if Self::revoke_in(&mut tx, &row.text("id")?, now).await? {
                removed.ended.push(ended_grant(row)?);
            }
        }
        let clients = stmt::<DB>("SELECT client_id FROM clients WHERE registered_from = $1")
            .bind(network)
            .fetch_all(&mut tx)
            .await?;
        for row in &clients {
            if Self::delete_client_in(&mut tx, &row.text("client_id")?, now).await? {
                removed.clients += 1;
            }
        }
        tx.commit().await?;
        Ok(removed)
    }

    async fn count_clients(&self) -> Result<u64, StoreError> {
        let mut conn = self.conn().await?;
        let n = stmt::<DB>("SELECT COUNT(*) AS n FROM clients")
            .fetch_optional(&mut conn)
            .await?
            .ok_or(StoreError::Corrupt("client count"))?
            .int("n")?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn list_clients(&self) -> Result<Vec<ClientRecord>, StoreError> {
        let mut conn = self.conn().await?;
        let rows = stmt::<DB>(concat!(
            "SELECT ",
            client_columns!(),
            " FROM clients ORDER BY created_at, client_id"
        ))
        .fetch_all(&mut conn)
        .await?;
        rows.iter().map(client_from_row).collect()
    }
}
