//! `/admin`: every client and every grant, for Gitea site administrators
//! (`is_admin` at sign-in, checked again with Gitea before every action)
//! and the logins of `ADMIN_LOGINS`. Actions (revoke a grant, revoke every
//! grant of a user, delete a client, remove every client and grant of a
//! login or of a network at once) go through a confirmation page and a
//! CSRF-checked post, and are recorded through [`record_admin_action`].

use crate::oauth::grant_end::GrantEnding;
use std::sync::Arc;

use askama::Template;
use axum::extract::{Extension, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

use super::account::{ActivityItem, SignInPage, clients_by_id, may_administer};
use super::connections::{ClientRow, GrantRow, WaitingRow, client_rows, grant_rows, waiting_rows};
use super::everyone::EveryonesCharts;
use super::policy_view::policy_by_grant;
use super::session::{CheckedForm, ReturnTo, SignedIn, signed_in};
use crate::oauth::OAuthServer;
use crate::oauth::upstream::UpstreamAuthError;
use crate::page_kit::{PageError, render_page, visible_text, with_page_headers};
use crate::policy::view::PagePolicy;
use crate::store::{GrantFilter, GrantSummary, ListLength, Paged, ToolCount};

/// Grants (and clients) per admin page.
const PAGE_SIZE: usize = 50;

/// The first row of page `page` (1-based).
fn offset(page: usize) -> u64 {
    (page.saturating_sub(1) as u64).saturating_mul(PAGE_SIZE as u64)
}
/// Longest filter value considered.
const MAX_FILTER: usize = 256;

/// An administrator's action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminAction {
    RevokeGrant {
        grant_id: String,
    },
    RevokeUser {
        login: String,
    },
    DeleteClient {
        client_id: String,
    },
    /// Every grant of a login, and every client it used that no one else
    /// holds a live grant for (the red team's F1, issue 53).
    RemoveLogin {
        login: String,
    },
    /// Every client registered from a network (`203.0.113.0/24`), and
    /// their grants.
    RemoveNetwork {
        network: String,
    },
}

impl AdminAction {
    fn parse(action: &str, target: &str) -> Option<Self> {
        if target.is_empty() || target.len() > MAX_FILTER {
            return None;
        }
        let target = target.to_owned();
        match action {
            "revoke-grant" => Some(Self::RevokeGrant { grant_id: target }),
            "revoke-user" => Some(Self::RevokeUser { login: target }),
            "delete-client" => Some(Self::DeleteClient { client_id: target }),
            "remove-login" => Some(Self::RemoveLogin { login: target }),
            // The network the store counts the address in (its /24 or
            // /48), written as the store writes it.
            "remove-network" => {
                target
                    .parse::<ipnet::IpNet>()
                    .ok()
                    .map(|net| Self::RemoveNetwork {
                        network: crate::client_address::ClientAddress(net.addr()).network(),
                    })
            }
            _ => None,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Self::RevokeGrant { .. } => "revoke-grant",
            Self::RevokeUser { .. } => "revoke-user",
            Self::DeleteClient { .. } => "delete-client",
            Self::RemoveLogin { .. } => "remove-login",
            Self::RemoveNetwork { .. } => "remove-network",
        }
    }

    fn target(&self) -> &str {
        match self {
            Self::RevokeGrant { grant_id } => grant_id,
            Self::RevokeUser { login } => login,
            Self::DeleteClient { client_id } => client_id,
            Self::RemoveLogin { login } => login,
            Self::RemoveNetwork { network } => network,
        }
    }
}

/// The record of an admin action: an `admin_action` entry in the audit log
/// (best effort), and a structured log line on the `audit` target.
pub async fn record_admin_action(
    audit: &crate::audit::AuditLog,
    admin: &str,
    action: &AdminAction,
    changed: u64,
) {
    audit
        .record_best_effort(
            crate::audit::Event::new(crate::audit::EventKind::AdminAction)
                .oauth_login(admin)
                .detail("action", action.name())
                .detail("target_id", action.target())
                .detail("changed", changed),
        )
        .await;
    tracing::info!(
        target: "audit",
        event = "admin_action",
        admin,
        action = action.name(),
        target_id = action.target(),
        changed,
        "admin action"
    );
}

#[derive(Template)]
#[template(path = "admin.html")]
struct AdminPage {
    login: String,
    csrf_token: String,
    notice: Option<&'static str>,
    filter_user: String,
    filter_client: String,
    total_grants: ListLength,
    grants: Vec<GrantRow>,
    prev_page: Option<usize>,
    next_page: Option<usize>,
    total_clients: ListLength,
    /// The client list fills more than one page.
    clients_paged: bool,
    clients: Vec<ClientRow>,
    prev_clients: Option<usize>,
    next_clients: Option<usize>,
    /// Everyone's calls that wait for their person.
    waiting: Vec<WaitingRow>,
    /// The last 7 days per user and per client, busiest first.
    user_activity: Vec<ActivityItem>,
    client_activity: Vec<ActivityItem>,
    top_tools: Vec<ToolCount>,
}

#[derive(Template)]
#[template(path = "confirm.html")]
struct ConfirmPage {
    title: &'static str,
    description: String,
    button: &'static str,
    action: &'static str,
    target: String,
    csrf_token: String,
}

#[derive(Debug, Deserialize, Default)]
pub struct AdminQuery {
    #[serde(default)]
    user: String,
    #[serde(default)]
    client: String,
    #[serde(default)]
    page: Option<usize>,
    /// The page of the client list.
    #[serde(default)]
    clients: Option<usize>,
    #[serde(default)]
    done: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct ConfirmQuery {
    #[serde(default)]
    action: String,
    #[serde(default)]
    target: String,
}

/// The signed-in administrator; `None` when nobody is signed in (the
/// sign-in page is shown).
async fn administrator(
    server: &OAuthServer,
    headers: &HeaderMap,
) -> Result<Option<SignedIn>, PageError> {
    let Some(person) = signed_in(server, headers).await else {
        return Ok(None);
    };
    if may_administer(server, &person) {
        Ok(Some(person))
    } else {
        Err(PageError::AdminsOnly)
    }
}

fn sign_in_page() -> Response {
    render_page(StatusCode::OK, &SignInPage::for_page(ReturnTo::Admin))
}

/// `GET /admin`.
pub async fn admin(
    State(server): State<Arc<OAuthServer>>,
    Extension(policy): Extension<PagePolicy>,
    Extension(charts): Extension<Arc<EveryonesCharts>>,
    Query(query): Query<AdminQuery>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let Some(person) = administrator(&server, &headers).await? else {
        return Ok(sign_in_page());
    };
    let user: String = query.user.trim().chars().take(MAX_FILTER).collect();
    let client: String = query.client.trim().chars().take(MAX_FILTER).collect();
    let filter = GrantFilter {
        login: (!user.is_empty()).then(|| user.clone()),
        client_id: (!client.is_empty()).then(|| client.clone()),
    };
    // One page of each list, filtered and counted in the store: the cost of
    // a view is its rows', whatever the tables hold (issue 55).
    let (page, listed) = grants_page(&server, &filter, query.page.unwrap_or(1).max(1)).await?;
    let clients_page = query.clients.unwrap_or(1).max(1);
    let clients = server
        .store()
        .page_clients(offset(clients_page), PAGE_SIZE as u64)
        .await?;
    let by_id = clients_by_id(&server, listed.items.iter().map(|g| g.client_id.as_str())).await?;
    let policies = policy_by_grant(policy.0.as_deref(), &listed.items, None).await;
    let now = server.now();
    let everyone = charts.get(&server, now).await?;
    let view = AdminPage {
        user_activity: everyone.users.clone(),
        client_activity: everyone.clients.clone(),
        top_tools: everyone.top_tools.clone(),
        login: person.login().to_owned(),
        csrf_token: person.csrf_token.clone(),
        notice: notice_after(query.done.as_deref()),
        total_grants: listed.total,
        grants: grant_rows(
            &listed.items,
            &by_id,
            server.config().server_read_only,
            &policies,
        ),
        prev_page: (page > 1).then(|| page - 1),
        next_page: listed
            .total
            .goes_past(offset(page) + PAGE_SIZE as u64)
            .then(|| page + 1),
        total_clients: clients.total,
        clients_paged: clients.total.goes_past(PAGE_SIZE as u64),
        clients: client_rows(&clients.items),
        prev_clients: (clients_page > 1).then(|| clients_page - 1),
        next_clients: clients
            .total
            .goes_past(offset(clients_page) + PAGE_SIZE as u64)
            .then(|| clients_page + 1),
        waiting: waiting_rows(
            &server
                .store()
                .list_pending_confirmations(None, server.now(), 50)
                .await?,
        ),
        filter_user: user,
        filter_client: client,
    };
    Ok(render_page(StatusCode::OK, &view))
}

/// The page of grants `asked` for (1-based), or the last page when the
/// list, counted whole, ends before it: its number and its rows.
async fn grants_page(
    server: &OAuthServer,
    filter: &GrantFilter,
    asked: usize,
) -> Result<(usize, Paged<GrantSummary>), PageError> {
    let mut listed = server
        .store()
        .page_grants(filter, offset(asked), PAGE_SIZE as u64)
        .await?;
    // Past the end of a list counted whole: its last page.
    let page = match listed.total.pages(PAGE_SIZE as u64) {
        Some(pages) => asked.min(pages as usize),
        None => asked,
    };
    if offset(page) != offset(asked) {
        listed = server
            .store()
            .page_grants(filter, offset(page), PAGE_SIZE as u64)
            .await?;
    }
    Ok((page, listed))
}

/// The notice after the action `done` (its name), if any.
fn notice_after(done: Option<&str>) -> Option<&'static str> {
    match done {
        Some("revoke-grant") => Some("The grant was revoked."),
        Some("revoke-user") => Some("Every grant of that user was revoked."),
        Some("delete-client") => Some("The client and its grants were deleted."),
        Some("remove-login") => Some("Every client and grant of that user was removed."),
        Some("remove-network") => Some("Every client registered from that network was removed."),
        _ => None,
    }
}

/// `GET /admin/confirm?action=…&target=…`: what is about to happen.
pub async fn confirm(
    State(server): State<Arc<OAuthServer>>,
    Query(query): Query<ConfirmQuery>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let Some(person) = administrator(&server, &headers).await? else {
        return Ok(sign_in_page());
    };
    let action = AdminAction::parse(&query.action, &query.target).ok_or(PageError::Gone)?;
    let (title, description, button) = match &action {
        AdminAction::RevokeGrant { grant_id } => match server.store().get_grant(grant_id).await? {
            Some(g) if g.revoked_at.is_none() => (
                "Revoke this grant?",
                format!(
                    "The client {} loses its access as {}.",
                    g.client_id, g.login
                ),
                "Revoke",
            ),
            _ => return Err(PageError::Gone),
        },
        AdminAction::RevokeUser { login } => (
            "Revoke every grant of this user?",
            format!("Every client connected as {login} loses its access."),
            "Revoke all",
        ),
        AdminAction::DeleteClient { client_id } => {
            match server.store().get_client(client_id).await? {
                Some(c) => (
                    "Delete this client?",
                    format!(
                        "The client {} ({}) is deleted and every grant it holds is revoked.",
                        c.client_name
                            .as_deref()
                            .map_or_else(|| "unnamed".into(), visible_text),
                        c.client_id
                    ),
                    "Delete",
                ),
                None => return Err(PageError::Gone),
            }
        }
        AdminAction::RemoveLogin { login } => (
            "Remove every client and grant of this user?",
            format!(
                "Every grant of {login} is revoked, and every client {login} used that no one else holds a grant for is deleted."
            ),
            "Remove all",
        ),
        AdminAction::RemoveNetwork { network } => (
            "Remove every client registered from this network?",
            format!(
                "Every client registered from {network} is deleted, and every grant it holds is revoked."
            ),
            "Remove all",
        ),
    };
    Ok(render_page(
        StatusCode::OK,
        &ConfirmPage {
            title,
            description,
            button,
            action: action.name(),
            target: action.target().to_owned(),
            csrf_token: person.csrf_token,
        },
    ))
}

/// `POST /admin/actions`: performs a confirmed action after asking Gitea
/// again whether the person is still a site administrator.
pub async fn perform(
    State(server): State<Arc<OAuthServer>>,
    CheckedForm { person, params }: CheckedForm,
) -> Result<Response, PageError> {
    recheck_administrator(&server, &person).await?;
    let action = AdminAction::parse(
        params.get("action").unwrap_or_default(),
        params.get("target").unwrap_or_default(),
    )
    .ok_or(PageError::Gone)?;
    let ending = GrantEnding::AdminRevoked {
        admin: person.login(),
    };
    let outcome = match &action {
        AdminAction::RevokeGrant { grant_id } => {
            server.end_grant(grant_id, ending).await.map(u64::from)
        }
        AdminAction::RevokeUser { login } => server.end_grants_of(login, ending).await,
        AdminAction::DeleteClient { client_id } => {
            server.delete_client(client_id, ending).await.map(u64::from)
        }
        AdminAction::RemoveLogin { login } => server
            .remove_everything_of_login(login, ending)
            .await
            .map(|removed| removed.clients + removed.ended.len() as u64),
        AdminAction::RemoveNetwork { network } => server
            .remove_everything_of_network(network, ending)
            .await
            .map(|removed| removed.clients + removed.ended.len() as u64),
    };
    let bulk = matches!(
        action,
        AdminAction::RevokeUser { .. }
            | AdminAction::RemoveLogin { .. }
            | AdminAction::RemoveNetwork { .. }
    );
    match outcome? {
        0 if !bulk => Err(PageError::Gone),
        changed => {
            record_admin_action(server.audit(), person.login(), &action, changed).await;
            Ok(with_page_headers(
                Redirect::to(&format!("/admin?done={}", action.name())).into_response(),
            ))
        }
    }
}

/// `ADMIN_LOGINS` pass; anyone else must still be a Gitea site admin, asked
/// with the token from their sign-in.
async fn recheck_administrator(server: &OAuthServer, person: &SignedIn) -> Result<(), PageError> {
    let listed = server
        .config()
        .admin_logins
        .iter()
        .any(|l| l.eq_ignore_ascii_case(person.login()));
    if listed {
        return Ok(());
    }
    match server
        .upstream()
        .is_admin(&person.session.gitea_access_token, person.login())
        .await
    {
        Ok(true) => Ok(()),
        Ok(false) => {
            tracing::warn!(login = %person.login(), "admin action refused: no longer a Gitea site admin");
            Err(PageError::AdminsOnly)
        }
        Err(UpstreamAuthError::InvalidGrant) => Err(PageError::SignInAgain),
        Err(_) => Err(PageError::UpstreamFailed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_is_kept_as_the_cidr_the_store_names_it_by() {
        assert_eq!(
            AdminAction::parse("remove-network", "203.0.113.77/24"),
            Some(AdminAction::RemoveNetwork {
                network: "203.0.113.0/24".into()
            })
        );
        assert_eq!(
            AdminAction::parse("remove-network", "2001:db8::/48"),
            Some(AdminAction::RemoveNetwork {
                network: "2001:db8:0::/48".into()
            })
        );
        assert_eq!(AdminAction::parse("remove-network", "203.0.113.77"), None);
    }

    #[test]
    fn only_known_actions_with_a_target_parse() {
        assert_eq!(
            AdminAction::parse("revoke-user", "alice"),
            Some(AdminAction::RevokeUser {
                login: "alice".into()
            })
        );
        assert_eq!(AdminAction::parse("drop-tables", "x"), None);
        assert_eq!(AdminAction::parse("revoke-grant", ""), None);
        assert_eq!(AdminAction::parse("revoke-grant", &"x".repeat(300)), None);
    }
}
