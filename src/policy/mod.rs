//! The operator's policy (`POLICY_FILE`): who may use what. Rules match
//! facts about a connection (the person's Gitea login, organisations,
//! teams and site-admin status; the client's id, name and redirect hosts;
//! the MCP URL) and narrow what it may call: allowed toolsets, read only,
//! denied toolsets and tools, tools that need a person's confirmation.
//!
//! A policy only narrows. Every rule that applies adds its narrowing, and
//! deny wins: a tool one rule denies stays denied whatever another allows.
//! It is read once at startup (`file`), a file with any problem stops the
//! start naming the line, and it is evaluated once per call ([`Policy::narrowing_for`],
//! pure) from facts cached for a bounded time (`facts`). See `docs/policy.md`.

pub mod facts;
pub mod file;
pub mod view;

use std::collections::BTreeSet;
use std::path::Path;

use secrecy::SecretString;

use crate::catalog::Catalog;
use crate::catalog::toolsets::RAW_TOOLSET;
use crate::identity::{Connection, Identity};
use crate::surface::{Narrowing, Surface, catalog_toolsets};

pub use facts::{FactSource, FactsError};
pub use file::{PolicyError, load_policy, parse_policy};

/// Reads and checks the policy file at `path` against `catalog`'s
/// toolsets and tools, and `fixed_tools` (the tools that are no operation:
/// the MCP layer's `FIXED_TOOL_NAMES`).
pub fn load_for(
    path: &Path,
    catalog: &Catalog,
    fixed_tools: &[&str],
) -> Result<Policy, PolicyError> {
    let toolset = |name: &str| name == RAW_TOOLSET || catalog.has_toolset(name);
    let tool = |name: &str| catalog.get(name).is_some() || fixed_tools.contains(&name);
    let url = |path: &str| {
        Surface::parse(path, catalog_toolsets(catalog))
            .ok()
            .map(|surface| surface.path())
    };
    load_policy(
        path,
        &file::Known {
            toolset: &toolset,
            tool: &tool,
            url: &url,
        },
    )
}

/// The policy in force, with the facts it asks about.
#[derive(Debug)]
pub struct ActivePolicy {
    policy: Policy,
    facts: FactSource,
}

impl ActivePolicy {
    pub fn new(policy: Policy, facts: FactSource) -> Self {
        Self { policy, facts }
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// What the policy leaves, for `identity` on `connection`, of the MCP
    /// URL whose canonical path is `url`; `None` when no rule applies.
    pub async fn narrowing(
        &self,
        identity: &Identity,
        connection: &Connection,
        url: &str,
    ) -> Result<Option<Narrowing>, FactsError> {
        let login = identity.login.clone().unwrap_or_default();
        let client = ClientUse {
            client_id: &connection.client_id,
            redirect_uri: connection.redirect_uri.as_deref(),
        };
        self.narrowing_of(&login, &identity.token, client, url)
            .await
    }

    /// The same for a person `login` (asked with `token`, one of their
    /// Gitea sessions), a client and a URL: what a page shows of a grant.
    pub async fn narrowing_of(
        &self,
        login: &str,
        token: &SecretString,
        client: ClientUse<'_>,
        url: &str,
    ) -> Result<Option<Narrowing>, FactsError> {
        let person = self.facts.person(login, token).await?;
        let client = self.client_facts(client).await?;
        let facts = Facts {
            login: login.to_owned(),
            person,
            client,
            url: url.to_owned(),
        };
        Ok(self.policy.narrowing_for(&facts))
    }

    /// What an administrator's page can say of another person's grant
    /// without asking Gitea as them: the whole narrowing when their facts
    /// are cached from a recent call, else the rules about the client and
    /// URL alone and whether more may apply.
    pub async fn known_narrowing(
        &self,
        login: &str,
        client: ClientUse<'_>,
        url: &str,
    ) -> Result<(Option<Narrowing>, bool), FactsError> {
        let client = self.client_facts(client).await?;
        Ok(match self.facts.cached_person(login) {
            Some(person) => {
                let facts = Facts {
                    login: login.to_owned(),
                    person,
                    client,
                    url: url.to_owned(),
                };
                (self.policy.narrowing_for(&facts), false)
            }
            None => self.policy.before_sign_in(&client, url),
        })
    }

    /// Before the person signs in (the consent page): what the rules that
    /// ask nothing about the person leave of `url` for `client_id`, and
    /// whether rules about the person may narrow it further.
    pub async fn before_sign_in(
        &self,
        client: ClientUse<'_>,
        url: &str,
    ) -> Result<(Option<Narrowing>, bool), FactsError> {
        let client = self.client_facts(client).await?;
        Ok(self.policy.before_sign_in(&client, url))
    }

    async fn client_facts(&self, client: ClientUse<'_>) -> Result<ClientFacts, FactsError> {
        Ok(self
            .facts
            .client(client.client_id)
            .await?
            .using(client.redirect_uri))
    }
}

/// A client as a grant or a sign-in uses it: which one, and the redirect
/// URI it uses (`None`: not known, a grant from before it was kept).
#[derive(Debug, Clone, Copy)]
pub struct ClientUse<'a> {
    pub client_id: &'a str,
    pub redirect_uri: Option<&'a str>,
}

/// What a rule's `when` (all of its fields hold) or `unless` (the rule
/// does not apply when all of its fields hold) says. A field left out
/// holds for everyone; a list holds when any entry matches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conditions {
    pub logins: Vec<String>,
    pub orgs: Vec<String>,
    /// `org/team`.
    pub teams: Vec<String>,
    pub site_admin: Option<bool>,
    pub client_ids: Vec<String>,
    pub client_names: Vec<String>,
    pub redirect_hosts: Vec<String>,
    /// MCP URL paths in canonical form (`/mcp`, `/mcp/x/issue,pull`,
    /// `/mcp/readonly`).
    pub urls: Vec<String>,
}

impl Conditions {
    /// No field given.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Whether the conditions ask about the person (login, memberships,
    /// site admin).
    fn asks_person(&self) -> bool {
        !self.logins.is_empty() || self.asks_memberships() || self.asks_site_admin()
    }

    /// The conditions on the client and the URL alone.
    fn without_person(&self) -> Conditions {
        Conditions {
            client_ids: self.client_ids.clone(),
            client_names: self.client_names.clone(),
            redirect_hosts: self.redirect_hosts.clone(),
            urls: self.urls.clone(),
            ..Conditions::default()
        }
    }

    /// Whether the conditions ask about organisations or teams.
    fn asks_memberships(&self) -> bool {
        !self.orgs.is_empty() || !self.teams.is_empty()
    }

    fn asks_site_admin(&self) -> bool {
        self.site_admin.is_some()
    }

    /// Whether every field holds for `facts`, read as a rule's `when`
    /// (`Reading::When`) or `unless`: when the redirect URI a grant used is
    /// not known, a `when` about hosts holds if any registered host is
    /// listed, an `unless` only if every one is (the cautious reading of
    /// each: the rule applies).
    fn hold_for(&self, facts: &Facts, reading: Reading) -> bool {
        let any = |wanted: &[String], have: &[String]| {
            wanted.is_empty()
                || wanted
                    .iter()
                    .any(|w| have.iter().any(|h| h.eq_ignore_ascii_case(w)))
        };
        let one = |wanted: &[String], have: &str| {
            wanted.is_empty() || wanted.iter().any(|w| w.eq_ignore_ascii_case(have))
        };
        one(&self.logins, &facts.login)
            && any(&self.orgs, &facts.person.orgs)
            && any(&self.teams, &facts.person.teams)
            && self
                .site_admin
                .is_none_or(|wanted| wanted == facts.person.site_admin)
            && (self.client_ids.is_empty() || self.client_ids.contains(&facts.client.client_id))
            && facts
                .client
                .client_name
                .as_deref()
                .map_or(self.client_names.is_empty(), |name| {
                    one(&self.client_names, name)
                })
            && self.redirect_hosts_hold(&facts.client, reading)
            && (self.urls.is_empty() || self.urls.contains(&facts.url))
    }

    fn redirect_hosts_hold(&self, client: &ClientFacts, reading: Reading) -> bool {
        if self.redirect_hosts.is_empty() {
            return true;
        }
        let listed = |host: &String| self.redirect_hosts.iter().any(|w| same_host(w, host));
        match (&client.used_redirect_host, reading) {
            (Some(used), _) => listed(used),
            (None, Reading::When) => client.redirect_hosts.iter().any(listed),
            (None, Reading::Unless) => {
                !client.redirect_hosts.is_empty() && client.redirect_hosts.iter().all(listed)
            }
        }
    }
}

/// Which part of a rule conditions are read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    When,
    Unless,
}

/// One rule: where it applies, and what it narrows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub id: String,
    pub when: Conditions,
    pub unless: Conditions,
    pub effect: Effect,
}

impl Rule {
    pub fn applies_to(&self, facts: &Facts) -> bool {
        self.when.hold_for(facts, Reading::When)
            && (self.unless.is_empty() || !self.unless.hold_for(facts, Reading::Unless))
    }
}

/// What a rule narrows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Effect {
    pub read_only: bool,
    pub toolsets: Option<BTreeSet<String>>,
    pub deny_toolsets: BTreeSet<String>,
    pub deny_tools: BTreeSet<String>,
    pub confirm_tools: BTreeSet<String>,
}

impl Effect {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The policy: its rules, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    pub rules: Vec<Rule>,
}

/// What the rules may ask about a person, looked up at Gitea with their
/// own session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PersonFacts {
    pub site_admin: bool,
    pub orgs: Vec<String>,
    /// `org/team`.
    pub teams: Vec<String>,
}

/// What the rules may ask about a client: its registration, from the
/// store, and the redirect URI's host this grant or request uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientFacts {
    pub client_id: String,
    pub client_name: Option<String>,
    /// Every registered redirect URI's host.
    pub redirect_hosts: Vec<String>,
    /// The host of the redirect URI the grant (or the request, before
    /// sign-in) uses; `None` for grants from before it was kept.
    pub used_redirect_host: Option<String>,
}

impl ClientFacts {
    /// These facts for a grant or request that uses `redirect_uri`.
    pub fn using(mut self, redirect_uri: Option<&str>) -> Self {
        self.used_redirect_host = redirect_uri.and_then(host_of);
        self
    }
}

/// A URI's host, lower case.
pub(crate) fn host_of(uri: &str) -> Option<String> {
    url::Url::parse(uri)
        .ok()?
        .host_str()
        .map(str::to_ascii_lowercase)
}

/// Whether two host names name the same host: equal ignoring case, or
/// both the loopback interface (`localhost`, `127.0.0.0/8`, `::1`), which
/// RFC 8252 lets a native client spell any way.
fn same_host(a: &str, b: &str) -> bool {
    let loopback = |host: &str| {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    a.eq_ignore_ascii_case(b) || (loopback(a) && loopback(b))
}

/// Everything a rule can match, for one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub login: String,
    pub person: PersonFacts,
    pub client: ClientFacts,
    /// The MCP URL's canonical path.
    pub url: String,
}

/// Which person facts evaluating needs, so none is looked up in vain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Needs {
    pub memberships: bool,
    pub site_admin: bool,
}

impl Policy {
    /// The person facts some rule asks about.
    pub fn needs(&self) -> Needs {
        let conditions = self.rules.iter().flat_map(|r| [&r.when, &r.unless]);
        let mut needs = Needs::default();
        for c in conditions {
            needs.memberships |= c.asks_memberships();
            needs.site_admin |= c.asks_site_admin();
        }
        needs
    }

    /// What the rules that apply to `facts` leave of a surface; `None`
    /// when none applies.
    pub fn narrowing_for(&self, facts: &Facts) -> Option<Narrowing> {
        combine(self.rules.iter().filter(|r| r.applies_to(facts)))
    }

    /// Before sign-in only the client and the URL are known: the narrowing
    /// of the rules that ask nothing else and apply, and whether a rule
    /// that asks about the person could still apply.
    pub fn before_sign_in(&self, client: &ClientFacts, url: &str) -> (Option<Narrowing>, bool) {
        let facts = Facts {
            client: client.clone(),
            url: url.to_owned(),
            ..Facts::default()
        };
        let about_person = |r: &Rule| r.when.asks_person() || r.unless.asks_person();
        let certain = combine(
            self.rules
                .iter()
                .filter(|r| !about_person(r) && r.applies_to(&facts)),
        );
        let more = self
            .rules
            .iter()
            .any(|r| about_person(r) && r.when.without_person().hold_for(&facts, Reading::When));
        (certain, more)
    }
}

/// The narrowing of `rules` together: read only if any says so, the
/// intersection of allowed toolsets, the union of the denials.
fn combine<'a>(rules: impl Iterator<Item = &'a Rule>) -> Option<Narrowing> {
    let mut narrowing = Narrowing::default();
    for rule in rules {
        let effect = &rule.effect;
        narrowing.read_only |= effect.read_only;
        if let Some(allowed) = &effect.toolsets {
            narrowing.toolsets = Some(match narrowing.toolsets.take() {
                None => allowed.clone(),
                Some(before) => before.intersection(allowed).cloned().collect(),
            });
        }
        narrowing
            .deny_toolsets
            .extend(effect.deny_toolsets.iter().cloned());
        narrowing
            .deny_tools
            .extend(effect.deny_tools.iter().cloned());
        narrowing
            .confirm_tools
            .extend(effect.confirm_tools.iter().cloned());
        narrowing.rules.push(rule.id.clone());
    }
    (!narrowing.rules.is_empty()).then_some(narrowing)
}

/// A narrowing in the pages' words: `read only; only the issue toolset;
/// not the admin toolset; not gitea_repo_delete` (rule ids apart).
pub fn describe(narrowing: &Narrowing) -> String {
    let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if narrowing.read_only {
        parts.push("read only".to_owned());
    }
    if let Some(toolsets) = &narrowing.toolsets {
        parts.push(format!("only the toolsets {}", list(toolsets)));
    }
    if !narrowing.deny_toolsets.is_empty() {
        parts.push(format!(
            "not the toolsets {}",
            list(&narrowing.deny_toolsets)
        ));
    }
    if !narrowing.deny_tools.is_empty() {
        parts.push(format!("not {}", list(&narrowing.deny_tools)));
    }
    if !narrowing.confirm_tools.is_empty() {
        parts.push(format!(
            "asks you before {}",
            list(&narrowing.confirm_tools)
        ));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests;
