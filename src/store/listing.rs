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
    pub total: ListLength,
}

/// How many rows past a page's start a list is counted: a page view reads
/// at most this many, whatever the table holds (issue 55).
pub const COUNTED_AHEAD: u64 = 1000;

/// How long a list is: exactly, or more than a number where counting
/// stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListLength {
    Exactly(u64),
    MoreThan(u64),
}

impl ListLength {
    /// The length of a list whose count stopped after `cap + 1` rows:
    /// `counted` of them were found.
    pub fn counted_to(counted: u64, cap: u64) -> Self {
        if counted > cap {
            Self::MoreThan(cap)
        } else {
            Self::Exactly(counted)
        }
    }

    /// Whether the list goes on past its first `end` items.
    pub fn goes_past(self, end: u64) -> bool {
        match self {
            Self::Exactly(n) => n > end,
            Self::MoreThan(n) => n >= end,
        }
    }

    /// How many pages of `size` the list fills, when it was counted whole.
    pub fn pages(self, size: u64) -> Option<u64> {
        match self {
            Self::Exactly(n) => Some(n.div_ceil(size.max(1)).max(1)),
            Self::MoreThan(_) => None,
        }
    }
}

impl std::fmt::Display for ListLength {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exactly(n) => write!(f, "{n}"),
            Self::MoreThan(n) => write!(f, "more than {n}"),
        }
    }
}

/// A client and how many live grants it holds.
#[derive(Debug, Clone)]
pub struct ClientSummary {
    pub client: ClientRecord,
    /// Its live grants, counted up to [`COUNTED_AHEAD`].
    pub grants: ListLength,
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
    /// grants counted (up to [`COUNTED_AHEAD`]); and how many there are
    /// (counted up to [`COUNTED_AHEAD`] past `offset`).
    async fn page_clients(
        &self,
        offset: u64,
        limit: u64,
    ) -> Result<Paged<ClientSummary>, StoreError>;
    /// The clients among `ids` that exist (a page's grants' clients, in
    /// one statement per [`CLIENTS_PER_LOOKUP`] rather than one each).
    async fn clients_by_ids(&self, ids: &[&str]) -> Result<Vec<ClientRecord>, StoreError>;
}

/// Client ids looked up by one statement of [`ListingStore::clients_by_ids`].
pub const CLIENTS_PER_LOOKUP: usize = 25;

#[cfg(test)]
mod tests {
    use super::ListLength;

    #[test]
    fn a_count_that_reached_its_cap_says_more_than_the_cap() {
        assert_eq!(
            ListLength::counted_to(1001, 1000),
            ListLength::MoreThan(1000)
        );
        assert_eq!(
            ListLength::counted_to(1000, 1000),
            ListLength::Exactly(1000)
        );
        assert_eq!(ListLength::MoreThan(1000).to_string(), "more than 1000");
    }

    #[test]
    fn only_a_list_counted_whole_has_a_last_page() {
        assert_eq!(ListLength::Exactly(51).pages(25), Some(3));
        assert_eq!(ListLength::Exactly(0).pages(25), Some(1));
        assert_eq!(ListLength::MoreThan(1000).pages(25), None);
        assert!(ListLength::MoreThan(1000).goes_past(1000));
        assert!(!ListLength::Exactly(50).goes_past(50));
        assert!(ListLength::Exactly(51).goes_past(50));
    }
}
