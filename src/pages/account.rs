//! `/account`: a person's own connected clients (every grant in their
//! name, with Revoke and Revoke all) and how to connect a new one.

use crate::oauth::grant_end::GrantEnding;
use crate::oauth::scope_text::describe_gitea_scope;
use std::collections::HashMap;
use std::sync::Arc;

use askama::Template;
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::activity::{Chart, RecentRow, chart_start, hourly_chart, recent_rows};
use super::connections::{GrantRow, WaitingRow, grant_rows, waiting_rows};
use super::policy_view::policy_by_grant;
use super::session::{CheckedForm, ReturnTo, SignedIn, signed_in};
use crate::connector_snippets::{ConnectorSnippet, connector_snippets};
use crate::oauth::OAuthServer;
use crate::page_kit::{PageError, render_page, with_page_headers};
use crate::policy::view::PagePolicy;
use crate::store::{ClientRecord, GiteaApp, StoreError};

#[derive(Template)]
#[template(path = "sign_in.html")]
pub struct SignInPage {
    pub heading: &'static str,
    pub explanation: &'static str,
    pub next: &'static str,
}

impl SignInPage {
    pub fn for_page(next: ReturnTo) -> Self {
        match next {
            ReturnTo::Account => Self {
                heading: "Your connected clients",
                explanation: "Sign in with your Gitea account to see every application connected in your name and revoke any of them.",
                next: "account",
            },
            ReturnTo::Admin => Self {
                heading: "Administration",
                explanation: "Sign in with a Gitea site administrator account to see and revoke every connected client.",
                next: "admin",
            },
        }
    }
}

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    login: String,
    is_admin: bool,
    csrf_token: String,
    notice: Option<&'static str>,
    grants: Vec<GrantRow>,
    /// Calls that wait for this person's confirmation.
    waiting: Vec<WaitingRow>,
    /// What a reading and a writing connection's Gitea session may do, in
    /// plain words.
    gitea_read_access: Vec<String>,
    gitea_write_access: Vec<String>,
    mcp_url: String,
    snippets: Vec<ConnectorSnippet>,
    /// Each connection's last 7 days.
    activity: Vec<ActivityItem>,
}

/// A connection's (or, on the admin page, a user's or a client's) chart,
/// and its last calls.
#[derive(Debug, Clone)]
pub struct ActivityItem {
    pub name: String,
    pub tools_at: String,
    pub chart: Chart,
    pub recent: Vec<RecentRow>,
}

#[derive(Debug, Deserialize)]
pub struct AccountQuery {
    done: Option<String>,
}

/// The clients of `ids`, by id (for naming grants).
pub async fn clients_by_id(
    server: &OAuthServer,
    ids: impl Iterator<Item = &str>,
) -> Result<HashMap<String, ClientRecord>, StoreError> {
    let mut wanted: Vec<&str> = ids.collect();
    wanted.sort_unstable();
    wanted.dedup();
    Ok(server
        .store()
        .clients_by_ids(&wanted)
        .await?
        .into_iter()
        .map(|client| (client.client_id.clone(), client))
        .collect())
}

/// True when the person may use the admin page (as of sign-in).
pub fn may_administer(server: &OAuthServer, person: &SignedIn) -> bool {
    person.session.is_admin
        || server
            .config()
            .admin_logins
            .iter()
            .any(|l| l.eq_ignore_ascii_case(person.login()))
}

/// `GET /account`.
pub async fn account(
    State(server): State<Arc<OAuthServer>>,
    Extension(policy): Extension<PagePolicy>,
    Query(query): Query<AccountQuery>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let Some(person) = signed_in(&server, &headers).await else {
        return Ok(render_page(
            StatusCode::OK,
            &SignInPage::for_page(ReturnTo::Account),
        ));
    };
    let grants = server.store().grant_summaries_of(person.login()).await?;
    let clients = clients_by_id(&server, grants.iter().map(|g| g.client_id.as_str())).await?;
    let policies = policy_by_grant(
        policy.0.as_deref(),
        &grants,
        Some(&person.session.gitea_access_token),
    )
    .await;
    let mcp_url = server.config().resource.clone();
    let rows = grant_rows(
        &grants,
        &clients,
        server.config().server_read_only,
        &policies,
    );
    let now = server.now();
    let hours = server
        .store()
        .hourly_activity(Some(person.login()), chart_start(now))
        .await?;
    let recent = server.store().recent_calls(person.login()).await?;
    let activity = rows
        .iter()
        .map(|row| ActivityItem {
            name: row.client_name.clone(),
            tools_at: row.tools_at.clone(),
            chart: hourly_chart(hours.iter().filter(|h| h.grant_id == row.id), now),
            recent: recent_rows(&recent, &row.id),
        })
        .filter(|item| item.chart.calls > 0 || !item.recent.is_empty())
        .collect();
    let page = AccountPage {
        login: person.login().to_owned(),
        is_admin: may_administer(&server, &person),
        csrf_token: person.csrf_token.clone(),
        notice: match query.done.as_deref() {
            Some("revoked") => Some("The client was revoked. Its tokens no longer work."),
            Some("revoked-all") => Some("Every client was revoked."),
            _ => None,
        },
        grants: rows,
        activity,
        waiting: waiting_rows(
            &server
                .store()
                .list_pending_confirmations(Some(person.login()), now, 50)
                .await?,
        ),
        gitea_read_access: described_session(&server, GiteaApp::Read),
        gitea_write_access: described_session(&server, GiteaApp::ReadWrite),
        snippets: connector_snippets(&mcp_url),
        mcp_url,
    };
    Ok(render_page(StatusCode::OK, &page))
}

/// What a Gitea session at `app` may do, one line per scope.
fn described_session(server: &OAuthServer, app: GiteaApp) -> Vec<String> {
    server
        .upstream()
        .scopes(app)
        .iter()
        .map(|scope| describe_gitea_scope(scope))
        .collect()
}

/// `POST /account/grants/revoke`: one of the person's own grants.
pub async fn revoke_grant(
    State(server): State<Arc<OAuthServer>>,
    CheckedForm { person, params }: CheckedForm,
) -> Result<Response, PageError> {
    let grant_id = params.get("grant_id").unwrap_or_default();
    // Someone else's grant is answered exactly like a missing one.
    let owned = server
        .store()
        .get_grant(grant_id)
        .await?
        .is_some_and(|g| g.login == person.login() && g.revoked_at.is_none());
    if !owned {
        return Err(PageError::Gone);
    }
    server
        .end_grant(grant_id, GrantEnding::PersonRevoked)
        .await?;
    tracing::info!(login = %person.login(), "grant revoked on the account page");
    Ok(with_page_headers(
        Redirect::to("/account?done=revoked").into_response(),
    ))
}

/// `POST /account/grants/revoke-all`.
pub async fn revoke_all(
    State(server): State<Arc<OAuthServer>>,
    CheckedForm { person, .. }: CheckedForm,
) -> Result<Response, PageError> {
    let count = server
        .end_grants_of(person.login(), GrantEnding::PersonRevoked)
        .await?;
    tracing::info!(login = %person.login(), count, "all grants revoked on the account page");
    Ok(with_page_headers(
        Redirect::to("/account?done=revoked-all").into_response(),
    ))
}
