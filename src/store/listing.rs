//! What the pages list (`/admin`, `/account`): grants and clients a page
//! at a time, filtered and counted in the database, and grants without
//! their Gitea sessions, which stay encrypted in the store (issue 55:
//! `/admin` loaded and decrypted every grant to show 50 of them).

use async_trait::async_trait;

use super::{ClientRecord, GiteaApp, GrantRecord, StoreError, UnixTime};

/// A grant as the pages list it: everything but its Gitea session, which
/// stays encrypted in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantSummary {
    pub id: String,
    pub login: String,
    pub client_id: String,
    pub scope: String,
    pub resource: String,
    pub gitea_app: GiteaApp,
    pub redirect_uri: Option<String>,
    pub created_at: UnixTime,
    pub last_used_at: Option<UnixTime>,
}

impl GrantRecord {
    /// The summary of this grant.
    pub fn summary(&self) -> GrantSummary {
        GrantSummary {
            id: self.id.clone(),
            login: self.login.clone(),
            client_id: self.client_id.clone(),
            scope: self.scope.clone(),
            resource: self.resource.clone(),
            gitea_app: self.gitea_app,
            redirect_uri: self.redirect_uri.clone(),
            created_at: self.created_at,
            last_used_at: self.last_used_at,
        }
    }
}

/// Which live grants a page lists: a login's (exact, else without regard
/// to case), a client's, both, or all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantFilter {
    pub login: Option<String>,
    pub client_id: Option<String>,
}

/// One page of a list, and how long the whole list is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paged<T> {
    pub items: Vec<T>,
    pub total: u64,
}

/// A client and how many live grants it holds.
#[derive(Debug, Clone)]
pub struct ClientSummary {
    pub client: ClientRecord,
    pub grants: u64,
}

/// What the pages list, a page at a time and without the Gitea sessions
/// (issue 55: `/admin` loaded and decrypted every grant to show 50): the
/// cost of a page is that of its rows, whatever the tables hold.
#[async_trait]
pub trait ListingStore: Send + Sync {
    /// Live grants (activated, unrevoked) matching `filter`, newest first:
    /// `limit` of them after `offset`, and how many match.
    async fn page_grants(
        &self,
        filter: &GrantFilter,
        offset: u64,
        limit: u64,
    ) -> Result<Paged<GrantSummary>, StoreError>;
    /// Every live grant of `login` (at most the per-login cap), newest first.
    async fn grant_summaries_of(&self, login: &str) -> Result<Vec<GrantSummary>, StoreError>;
    /// The live grants of `client_id`.
    async fn live_grants_of_client(&self, client_id: &str)
    -> Result<Vec<GrantSummary>, StoreError>;
    /// Clients, oldest first, `limit` after `offset`, each with its live
    /// grants counted; and how many there are.
    async fn page_clients(
        &self,
        offset: u64,
        limit: u64,
    ) -> Result<Paged<ClientSummary>, StoreError>;
}
