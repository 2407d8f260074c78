//! The pages' lists in SQL: a page of live grants (filtered, counted),
//! a login's or a client's live grants, a page of clients with their live
//! grants counted. No Gitea session is read, let alone decrypted.

use async_trait::async_trait;

use super::backend::{SqlRow, stmt};
use super::clients::client_from_row;
use super::{Backend, SqlStore};
use crate::store::{
    CLIENTS_PER_LOOKUP, COUNTED_AHEAD, ClientRecord, ClientSummary, GiteaApp, GrantFilter,
    GrantSummary, ListLength, ListingStore, Paged, StoreError,
};

/// The columns [`summary_from_row`] reads (a macro, for `concat!`).
macro_rules! summary_columns {
    () => {
        "g.id, g.login, g.client_id, g.scope, g.resource, g.gitea_app, g.redirect_uri, \
         g.created_at, g.last_used_at"
    };
}

/// A page of live grants (redeemed, not ended) and its count, by filter:
/// one static statement each, so every one can use its index
/// (`grants_created`, `grants_login`, `grants_client_created`), newest
/// first without a sort of every live grant. The count stops
/// [`COUNTED_AHEAD`] rows past the page's start: what a page view costs
/// does not grow with the table. `+` and `|| ''` change no value; they keep
/// the planners (SQLite's has no statistics here) off the indexes that
/// would read every live grant: `grants_revoked`, whose one key all live
/// grants share, and a client's index when a login is named (a login's
/// grants are few: the per-login cap).
const PAGES: [(&str, &str); 4] = [
    (
        concat!(
            "SELECT ",
            summary_columns!(),
            " FROM grants g WHERE +g.revoked_at IS NULL \
         AND g.activated_at IS NOT NULL ORDER BY g.created_at DESC, g.id DESC LIMIT $1 OFFSET $2"
        ),
        "SELECT COUNT(*) AS n FROM (SELECT 1 FROM grants g WHERE +g.revoked_at IS NULL \
         AND g.activated_at IS NOT NULL LIMIT $1) counted",
    ),
    (
        concat!(
            "SELECT ",
            summary_columns!(),
            " FROM grants g WHERE g.login = $3 \
         AND +g.revoked_at IS NULL AND g.activated_at IS NOT NULL \
         ORDER BY g.created_at DESC, g.id DESC LIMIT $1 OFFSET $2"
        ),
        "SELECT COUNT(*) AS n FROM (SELECT 1 FROM grants g WHERE g.login = $2 \
         AND +g.revoked_at IS NULL AND g.activated_at IS NOT NULL LIMIT $1) counted",
    ),
    (
        concat!(
            "SELECT ",
            summary_columns!(),
            " FROM grants g WHERE g.client_id = $3 \
         AND +g.revoked_at IS NULL AND g.activated_at IS NOT NULL \
         ORDER BY g.created_at DESC, g.id DESC LIMIT $1 OFFSET $2"
        ),
        "SELECT COUNT(*) AS n FROM (SELECT 1 FROM grants g WHERE g.client_id = $2 \
         AND +g.revoked_at IS NULL AND g.activated_at IS NOT NULL LIMIT $1) counted",
    ),
    (
        concat!(
            "SELECT ",
            summary_columns!(),
            " FROM grants g WHERE g.login = $3 \
         AND g.client_id || '' = $4 AND +g.revoked_at IS NULL AND g.activated_at IS NOT NULL \
         ORDER BY g.created_at DESC, g.id DESC LIMIT $1 OFFSET $2"
        ),
        "SELECT COUNT(*) AS n FROM (SELECT 1 FROM grants g WHERE g.login = $2 \
         AND g.client_id || '' = $3 AND +g.revoked_at IS NULL AND g.activated_at IS NOT NULL \
         LIMIT $1) counted",
    ),
];

fn summary_from_row<DB: Backend>(row: &SqlRow<DB>) -> Result<GrantSummary, StoreError> {
    Ok(GrantSummary {
        id: row.text("id")?,
        login: row.text("login")?,
        client_id: row.text("client_id")?,
        scope: row.text("scope")?,
        resource: row.text("resource")?,
        gitea_app: match row.opt_text("gitea_app")? {
            None => GiteaApp::ReadWrite,
            Some(app) => GiteaApp::parse(&app).ok_or(StoreError::Corrupt("gitea_app"))?,
        },
        redirect_uri: row.opt_text("redirect_uri")?,
        created_at: row.int("created_at")?,
        last_used_at: row.opt_int("last_used_at")?,
    })
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl<DB: Backend> SqlStore<DB> {
    async fn page_by(
        &self,
        which: usize,
        params: &[&str],
        offset: u64,
        limit: u64,
    ) -> Result<Paged<GrantSummary>, StoreError> {
        let (page, total) = PAGES[which];
        let mut conn = self.conn().await?;
        let cap = offset.saturating_add(COUNTED_AHEAD);
        let mut counted = stmt::<DB>(total).bind(int(cap.saturating_add(1)));
        for param in params {
            counted = counted.bind(*param);
        }
        let total = counted
            .fetch_optional(&mut conn)
            .await?
            .ok_or(StoreError::Corrupt("grant count"))?
            .int("n")?;
        let mut listed = stmt::<DB>(page).bind(int(limit)).bind(int(offset));
        for param in params {
            listed = listed.bind(*param);
        }
        let rows = listed.fetch_all(&mut conn).await?;
        Ok(Paged {
            items: rows
                .iter()
                .map(summary_from_row)
                .collect::<Result<_, _>>()?,
            total: ListLength::counted_to(count(total), cap),
        })
    }

    /// The login as stored, when `login` names one without regard to case
    /// (Gitea's logins are case-insensitive).
    async fn stored_login(&self, login: &str) -> Result<Option<String>, StoreError> {
        let mut conn = self.conn().await?;
        let row = stmt::<DB>(
            "SELECT login FROM grants WHERE LOWER(login) = LOWER($1) \
             AND revoked_at IS NULL LIMIT 1",
        )
        .bind(login)
        .fetch_optional(&mut conn)
        .await?;
        row.map(|row| row.text("login")).transpose()
    }
}

/// [`CLIENTS_PER_LOOKUP`] ids at once; unused places are bound to an
/// empty string, which no client id is.
const CLIENTS_BY_IDS: &str = concat!(
    "SELECT ",
    super::clients::client_columns!(),
    " FROM clients WHERE client_id IN ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)"
);

#[async_trait]
impl<DB: Backend> ListingStore for SqlStore<DB> {
    async fn page_grants(
        &self,
        filter: &GrantFilter,
        offset: u64,
        limit: u64,
    ) -> Result<Paged<GrantSummary>, StoreError> {
        let client = filter.client_id.as_deref();
        let Some(login) = filter.login.as_deref() else {
            return match client {
                None => self.page_by(0, &[], offset, limit).await,
                Some(client) => self.page_by(2, &[client], offset, limit).await,
            };
        };
        let by_login = |login: &str| {
            let login = login.to_owned();
            async move {
                match client {
                    None => self.page_by(1, &[&login], offset, limit).await,
                    Some(client) => self.page_by(3, &[&login, client], offset, limit).await,
                }
            }
        };
        let exact = by_login(login).await?;
        if exact.total.goes_past(0) {
            return Ok(exact);
        }
        match self.stored_login(login).await? {
            Some(stored) if stored != login => by_login(&stored).await,
            _ => Ok(exact),
        }
    }

    async fn grant_summaries_of(&self, login: &str) -> Result<Vec<GrantSummary>, StoreError> {
        Ok(self
            .page_grants(
                &GrantFilter {
                    login: Some(login.to_owned()),
                    client_id: None,
                },
                0,
                self.limits.max_grants_per_login.max(1),
            )
            .await?
            .items)
    }

    async fn live_grants_of_client(
        &self,
        client_id: &str,
    ) -> Result<Vec<GrantSummary>, StoreError> {
        let mut conn = self.conn().await?;
        let rows = stmt::<DB>(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM grants g WHERE g.client_id = $1 AND +g.revoked_at IS NULL"
        ))
        .bind(client_id)
        .fetch_all(&mut conn)
        .await?;
        rows.iter().map(summary_from_row).collect()
    }

    async fn clients_by_ids(&self, ids: &[&str]) -> Result<Vec<ClientRecord>, StoreError> {
        let mut conn = self.conn().await?;
        let mut found = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(CLIENTS_PER_LOOKUP) {
            let mut looked_up = stmt::<DB>(CLIENTS_BY_IDS);
            for place in 0..CLIENTS_PER_LOOKUP {
                looked_up = looked_up.bind(chunk.get(place).copied().unwrap_or(""));
            }
            for row in looked_up.fetch_all(&mut conn).await? {
                found.push(client_from_row(&row)?);
            }
        }
        Ok(found)
    }

    async fn page_clients(
        &self,
        offset: u64,
        limit: u64,
    ) -> Result<Paged<ClientSummary>, StoreError> {
        let mut conn = self.conn().await?;
        let cap = offset.saturating_add(COUNTED_AHEAD);
        let total =
            stmt::<DB>("SELECT COUNT(*) AS n FROM (SELECT 1 FROM clients LIMIT $1) counted")
                .bind(int(cap.saturating_add(1)))
                .fetch_optional(&mut conn)
                .await?
                .ok_or(StoreError::Corrupt("client count"))?
                .int("n")?;
        let rows = stmt::<DB>(concat!(
            "SELECT ",
            super::clients::client_columns!(),
            ", (SELECT COUNT(*) FROM (SELECT 1 FROM grants g \
             WHERE g.client_id = page.client_id AND +g.revoked_at IS NULL \
             AND g.activated_at IS NOT NULL LIMIT $3) counted) AS live_grants \
             FROM (SELECT * FROM clients ORDER BY created_at, client_id LIMIT $1 OFFSET $2) page \
             ORDER BY created_at, client_id"
        ))
        .bind(int(limit))
        .bind(int(offset))
        .bind(int(COUNTED_AHEAD + 1))
        .fetch_all(&mut conn)
        .await?;
        let items = rows
            .iter()
            .map(|row| {
                Ok(ClientSummary {
                    client: client_from_row(row)?,
                    grants: ListLength::counted_to(count(row.int("live_grants")?), COUNTED_AHEAD),
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(Paged {
            items,
            total: ListLength::counted_to(count(total), cap),
        })
    }
}
