//! The facts a policy asks about, looked up once and kept for
//! [`FACTS_TTL`]: about a person, at Gitea with their own session
//! (`/user`, `/user/orgs`, `/user/teams`; only what some rule asks); about
//! a client, from the store. So a policy costs no Gitea round trip
//! per call. A lookup that fails fails the call (the caller hears 503),
//! never the policy: a rule is not skipped because Gitea was slow.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use secrecy::SecretString;
use serde_json::Value;

use super::{ClientFacts, Needs, PersonFacts};
use crate::gitea::GiteaClient;
use crate::store::Store;

/// How long facts are kept: a person removed from a team keeps its
/// narrowing (or lack of it) for at most this long.
pub const FACTS_TTL: Duration = Duration::from_secs(300);
/// Entries kept per kind; past it, expired ones go, then all.
const MAX_ENTRIES: usize = 10_000;
/// The page size asked for (Gitea's default `MAX_RESPONSE_ITEMS`; an
/// instance may give fewer per page, which the paging headers tell).
const PAGE: usize = 50;
/// Organisations or teams read at most, and pages for them: past either,
/// the facts are incomplete and the call fails closed (503), since a rule
/// about a team the lookup did not reach would silently not apply.
const MAX_MEMBERSHIPS: u64 = 1_000;
const MAX_PAGES: u64 = 100;

/// Why facts could not be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FactsError {
    #[error("Gitea did not say who the person is or what they belong to")]
    Gitea,
    #[error(
        "the person belongs to more organisations or teams than the policy reads ({MAX_MEMBERSHIPS}, in at most {MAX_PAGES} pages)"
    )]
    TooManyMemberships,
    #[error("the client could not be read from the store")]
    Store,
}

struct Cached<T> {
    at: Instant,
    value: T,
}

/// One kind of fact, by key, for [`FACTS_TTL`].
struct FactMap<T>(Mutex<HashMap<String, Cached<T>>>);

impl<T: Clone> FactMap<T> {
    fn new() -> Self {
        Self(Mutex::new(HashMap::new()))
    }

    fn get(&self, key: &str) -> Option<T> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key)
            .filter(|c| c.at.elapsed() < FACTS_TTL)
            .map(|c| c.value.clone())
    }

    fn put(&self, key: &str, value: T) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_ENTRIES {
            map.retain(|_, c| c.at.elapsed() < FACTS_TTL);
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
        }
        map.insert(
            key.to_owned(),
            Cached {
                at: Instant::now(),
                value,
            },
        );
    }
}

/// The cached lookups.
pub struct FactSource {
    gitea: GiteaClient,
    store: Arc<dyn Store>,
    needs: Needs,
    people: FactMap<PersonFacts>,
    clients: FactMap<ClientFacts>,
}

impl std::fmt::Debug for FactSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FactSource")
            .field("needs", &self.needs)
            .finish_non_exhaustive()
    }
}

impl FactSource {
    pub fn new(gitea: GiteaClient, store: Arc<dyn Store>, needs: Needs) -> Self {
        Self {
            gitea,
            store,
            needs,
            people: FactMap::new(),
            clients: FactMap::new(),
        }
    }

    /// The person `login`, asked with `token` (one of their own Gitea
    /// sessions) when not known within [`FACTS_TTL`].
    pub async fn person(
        &self,
        login: &str,
        token: &SecretString,
    ) -> Result<PersonFacts, FactsError> {
        if !self.needs.memberships && !self.needs.site_admin {
            return Ok(PersonFacts::default());
        }
        let key = login.to_lowercase();
        if let Some(known) = self.people.get(&key) {
            return Ok(known);
        }
        let mut facts = PersonFacts::default();
        if self.needs.site_admin {
            let me = self.get("/user", token).await?;
            facts.site_admin = me.get("is_admin").and_then(Value::as_bool).unwrap_or(false);
        }
        if self.needs.memberships {
            facts.orgs = self
                .pages("/user/orgs", token, |org| name_of(org).map(str::to_owned))
                .await?;
            facts.teams = self
                .pages("/user/teams", token, |team| {
                    let org = team.get("organization").and_then(name_of)?;
                    let name = team.get("name").and_then(Value::as_str)?;
                    Some(format!("{org}/{name}"))
                })
                .await?;
        }
        self.people.put(&key, facts.clone());
        Ok(facts)
    }

    /// The person `login` as last looked up, if within [`FACTS_TTL`].
    pub fn cached_person(&self, login: &str) -> Option<PersonFacts> {
        if !self.needs.memberships && !self.needs.site_admin {
            return Some(PersonFacts::default());
        }
        self.people.get(&login.to_lowercase())
    }

    /// The client `client_id`, from the store.
    pub async fn client(&self, client_id: &str) -> Result<ClientFacts, FactsError> {
        if let Some(known) = self.clients.get(client_id) {
            return Ok(known);
        }
        let record = self
            .store
            .get_client(client_id)
            .await
            .map_err(|_| FactsError::Store)?;
        let facts = ClientFacts {
            client_id: client_id.to_owned(),
            client_name: record.as_ref().and_then(|c| c.client_name.clone()),
            redirect_hosts: record
                .map(|c| {
                    c.redirect_uris
                        .iter()
                        .filter_map(|u| super::host_of(u))
                        .collect()
                })
                .unwrap_or_default(),
            used_redirect_host: None,
        };
        self.clients.put(client_id, facts.clone());
        Ok(facts)
    }

    async fn get(&self, path: &str, token: &SecretString) -> Result<Value, FactsError> {
        let url = format!("{}{path}", self.gitea.api_base());
        self.gitea
            .get_json(&url, Some(token))
            .await
            .map_err(|_| FactsError::Gitea)
    }

    /// Every item of a paged list, through `pick`: page after page while
    /// `X-Total-Count` says there are more (else while `Link` names a
    /// next page, else until an empty page), whatever page size the
    /// instance gives. Past [`MAX_MEMBERSHIPS`] items or [`MAX_PAGES`]
    /// pages, an error: never a part of the list.
    async fn pages(
        &self,
        path: &str,
        token: &SecretString,
        pick: impl Fn(&Value) -> Option<String>,
    ) -> Result<Vec<String>, FactsError> {
        let mut out = Vec::new();
        let mut read: u64 = 0;
        for page in 1..=MAX_PAGES {
            let url = format!("{}{path}?limit={PAGE}&page={page}", self.gitea.api_base());
            let answer = self
                .gitea
                .get_json_page(&url, Some(token))
                .await
                .map_err(|_| FactsError::Gitea)?;
            if answer
                .total_count
                .is_some_and(|total| total > MAX_MEMBERSHIPS)
            {
                return Err(FactsError::TooManyMemberships);
            }
            let items = answer.body.as_array().ok_or(FactsError::Gitea)?;
            read += items.len() as u64;
            if read > MAX_MEMBERSHIPS {
                return Err(FactsError::TooManyMemberships);
            }
            out.extend(items.iter().filter_map(&pick));
            let more = match answer.total_count {
                Some(total) => read < total,
                None if answer.link.is_some() => answer.links_next(),
                None => !items.is_empty(),
            };
            if !more {
                return Ok(out);
            }
            if items.is_empty() {
                // More announced, none given: the list cannot be read whole.
                return Err(FactsError::Gitea);
            }
        }
        Err(FactsError::TooManyMemberships)
    }
}

/// An organisation's name as Gitea's API gives it.
fn name_of(org: &Value) -> Option<&str> {
    org.get("username")
        .or_else(|| org.get("name"))
        .and_then(Value::as_str)
}
