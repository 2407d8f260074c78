//! How grants and clients look on the pages: one row per grant with its
//! client's name, redirect host and registration kind, the MCP URL it
//! works at, whether it may write there (the URL and the scope the person
//! granted), which Gitea session it holds, and dates in UTC. Pure
//! functions of store records.

use std::collections::HashMap;

use crate::oauth::scopes::granted_access;
use crate::page_kit::{host_of, visible_text};
use crate::policy::view::PolicyView;
use crate::store::{ClientRecord, ClientSummary, GiteaApp, GrantSummary, Registration, UnixTime};

/// Longest client name shown (registration already bounds it; this keeps
/// a page readable whatever the store holds).
const MAX_SHOWN_NAME: usize = 200;

/// One connected client of one person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRow {
    pub id: String,
    pub login: String,
    pub client_id: String,
    pub client_name: String,
    pub redirect_host: String,
    pub registration: &'static str,
    /// The MCP URL's path the grant's tokens work at (`/mcp`,
    /// `/mcp/x/issue/readonly`): two connections of one client differ here.
    pub tools_at: String,
    /// What the connection may do at that URL: `read only` or `read and
    /// write` (a read-only URL, or a grant of `gitea:read` alone, reads).
    pub may: &'static str,
    /// The Gitea session it holds: `read scopes` (the read application)
    /// or `read and write scopes`.
    pub gitea_session: &'static str,
    /// What the operator's policy does to it, in words, with its rule ids.
    pub policy: String,
    pub created: String,
    pub last_used: String,
}

/// What a connection may do at its MCP URL, in the pages' words.
pub fn may_do(read_only: bool) -> &'static str {
    if read_only {
        "read only"
    } else {
        "read and write"
    }
}

/// The path of a grant's resource (one of our MCP URLs), and whether that
/// URL only reads (`/readonly`, or the server's `READ_ONLY`).
pub fn connection_at(resource: &str, server_read_only: bool) -> (String, bool) {
    let path = url::Url::parse(resource)
        .map(|url| url.path().to_owned())
        .unwrap_or_else(|_| resource.to_owned());
    let read_only =
        server_read_only || path.ends_with(&format!("/{}", crate::surface::READONLY_SUFFIX));
    (path, read_only)
}

/// A call that waits for its person, as the pages list it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingRow {
    pub id: String,
    pub login: String,
    pub summary: String,
    pub tool: String,
    pub created: String,
    pub expires: String,
}

/// Rows for `confirmations`.
pub fn waiting_rows(confirmations: &[crate::store::Confirmation]) -> Vec<WaitingRow> {
    confirmations
        .iter()
        .map(|c| WaitingRow {
            id: c.id.clone(),
            login: c.login.clone(),
            summary: visible_text(&c.summary),
            tool: c.tool.clone(),
            created: format_time(c.created_at),
            expires: format_time(c.expires_at),
        })
        .collect()
}

/// One registered client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientRow {
    pub client_id: String,
    pub client_name: String,
    pub redirect_hosts: String,
    pub registration: &'static str,
    pub created: String,
    pub grants: crate::store::ListLength,
}

/// A unix time as `2026-11-29 22:38 UTC`.
pub fn format_time(time: UnixTime) -> String {
    chrono::DateTime::from_timestamp(time, 0)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn shown_name(client: Option<&ClientRecord>) -> String {
    let name = client
        .and_then(|c| c.client_name.clone())
        .unwrap_or_else(|| "(unnamed client)".into());
    let name: String = name.chars().take(MAX_SHOWN_NAME).collect();
    visible_text(&name)
}

fn registration(client: Option<&ClientRecord>) -> &'static str {
    match client.map(|c| c.registration) {
        Some(Registration::Dynamic) => "dynamic registration",
        Some(Registration::MetadataDocument) => "metadata document",
        None => "deleted client",
    }
}

/// Rows for `grants`, looking their clients up in `clients` and the
/// policy on each in `policies` (none when it is not there).
pub fn grant_rows(
    grants: &[GrantSummary],
    clients: &HashMap<String, ClientRecord>,
    server_read_only: bool,
    policies: &HashMap<String, PolicyView>,
) -> Vec<GrantRow> {
    grants
        .iter()
        .map(|grant| {
            let client = clients.get(&grant.client_id);
            let (tools_at, url_read_only) = connection_at(&grant.resource, server_read_only);
            let policy = policies
                .get(&grant.id)
                .cloned()
                .unwrap_or_else(PolicyView::none);
            let read_only =
                url_read_only || !granted_access(&grant.scope).may_write() || policy.read_only;
            GrantRow {
                id: grant.id.clone(),
                login: grant.login.clone(),
                client_id: grant.client_id.clone(),
                client_name: shown_name(client),
                redirect_host: client
                    .and_then(|c| c.redirect_uris.first())
                    .map(|u| host_of(u))
                    .unwrap_or_default(),
                registration: registration(client),
                tools_at,
                may: may_do(read_only),
                gitea_session: match grant.gitea_app {
                    GiteaApp::Read => "read scopes",
                    GiteaApp::ReadWrite => "read and write scopes",
                },
                policy: policy.text,
                created: format_time(grant.created_at),
                last_used: grant
                    .last_used_at
                    .map(format_time)
                    .unwrap_or_else(|| "never".into()),
            }
        })
        .collect()
}

/// Rows for a page of clients, each with its live grants counted.
pub fn client_rows(clients: &[ClientSummary]) -> Vec<ClientRow> {
    clients
        .iter()
        .map(|summary| {
            let client = &summary.client;
            let mut hosts: Vec<String> = client.redirect_uris.iter().map(|u| host_of(u)).collect();
            hosts.dedup();
            ClientRow {
                client_id: client.client_id.clone(),
                client_name: shown_name(Some(client)),
                redirect_hosts: hosts.join(", "),
                registration: registration(Some(client)),
                created: format_time(client.created_at),
                grants: summary.grants,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_shown_in_utc() {
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_time(1_795_000_000), "2026-11-18 11:06 UTC");
    }

    #[test]
    fn hosts_come_from_redirect_uris_or_their_scheme() {
        assert_eq!(
            host_of("https://claude.ai/api/mcp/auth_callback"),
            "claude.ai"
        );
        assert_eq!(host_of("http://127.0.0.1:5000/cb"), "127.0.0.1");
        assert_eq!(
            host_of("cursor://anysphere.cursor-retrieval/cb"),
            "anysphere.cursor-retrieval"
        );
        assert_eq!(host_of("com.example.app:/cb"), "com.example.app:");
    }

    #[test]
    fn a_connection_names_its_url_and_whether_it_may_write() {
        let at = |resource, read_only| connection_at(resource, read_only);
        assert_eq!(
            at("https://gw.example/mcp", false),
            ("/mcp".to_owned(), false)
        );
        assert_eq!(
            at("https://gw.example/mcp/x/issue/readonly", false),
            ("/mcp/x/issue/readonly".to_owned(), true)
        );
        assert_eq!(
            at("https://gw.example/mcp/all", true),
            ("/mcp/all".to_owned(), true),
            "READ_ONLY holds for every URL"
        );
        assert_eq!(may_do(true), "read only");
    }

    #[test]
    fn long_names_are_cut_for_display() {
        let client = ClientRecord {
            client_id: "c".into(),
            client_name: Some("x".repeat(10_000)),
            redirect_uris: vec![],
            token_endpoint_auth_method: crate::store::TokenEndpointAuthMethod::None,
            grant_types: vec![],
            response_types: vec![],
            scope: None,
            registration: Registration::Dynamic,
            secret_hash: None,
            metadata: serde_json::Value::Null,
            created_at: 0,
            expires_at: None,
        };
        assert_eq!(shown_name(Some(&client)).chars().count(), MAX_SHOWN_NAME);
    }
}
