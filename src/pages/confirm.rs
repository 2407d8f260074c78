//! `/confirm/{id}`: a call that waits for its person
//! (`crate::mcp::confirmation`). Only the grant's own Gitea user, signed in
//! through the page sign-in, sees it and decides; anyone else gets the
//! "already gone" page and changes nothing. The decision is a same-origin
//! form post with the page's CSRF token, decided once in the store.

use std::sync::Arc;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use secrecy::ExposeSecret;
use serde::Deserialize;

use super::account::SignInPage;
use super::connections::format_time;
use super::session::{CheckedForm, SignedIn, signed_in};
use crate::audit::{Event, EventKind};
use crate::mcp::confirmation::APPROVAL_WINDOW;
use crate::oauth::OAuthServer;
use crate::page_kit::{PageError, render_page, visible_text, with_page_headers};
use crate::store::{Confirmation, ConfirmationState};

#[derive(Template)]
#[template(path = "confirmation.html")]
struct ConfirmationPage {
    notice: Option<&'static str>,
    heading: &'static str,
    client_name: String,
    summary: String,
    method: String,
    route: String,
    tool: String,
    created: String,
    deadline_label: &'static str,
    expires: String,
    decided_by: Option<String>,
    arguments: String,
    pending: bool,
    id: String,
    csrf_token: String,
}

#[derive(Debug, Deserialize)]
pub struct ConfirmQuery {
    done: Option<String>,
}

/// The confirmation `id` when it is `person`'s; anyone else's is answered
/// exactly like a missing one.
async fn theirs(
    server: &OAuthServer,
    id: &str,
    person: &SignedIn,
) -> Result<Confirmation, PageError> {
    server
        .store()
        .get_confirmation(id)
        .await?
        .filter(|c| c.login.eq_ignore_ascii_case(person.login()))
        .ok_or(PageError::Gone)
}

/// `GET /confirm/{id}`.
pub async fn show(
    State(server): State<Arc<OAuthServer>>,
    Path(id): Path<String>,
    Query(query): Query<ConfirmQuery>,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let Some(person) = signed_in(&server, &headers).await else {
        return Ok(render_page(
            StatusCode::OK,
            &SignInPage {
                heading: "A call waits for your approval",
                explanation: "Sign in with your Gitea account. Your account page then lists every call that waits for you; open this link again, or follow it from there.",
                next: "account",
            },
        ));
    };
    let c = theirs(&server, &id, &person).await?;
    let now = server.now();
    let client_name = server
        .store()
        .get_client(&c.client_id)
        .await?
        .and_then(|client| client.client_name)
        .map_or_else(|| "An unnamed application".into(), |n| visible_text(&n));
    let expired = c.expires_at <= now;
    let (heading, deadline_label) = match (c.state, expired) {
        (ConfirmationState::Pending, false) => ("Approve this call?", "Decide by"),
        (ConfirmationState::Approved, false) => ("Approved", "Retry by"),
        (ConfirmationState::Approved | ConfirmationState::Pending, true) => ("Expired", "Expired"),
        (ConfirmationState::Denied, _) => ("Denied", "Was open until"),
        (ConfirmationState::Used, _) => ("Approved and run", "Was open until"),
    };
    let page = ConfirmationPage {
        notice: match query.done.as_deref() {
            Some("approved") => Some(
                "Approved. Tell the application to retry the same call within 10 minutes; it runs once.",
            ),
            Some("denied") => Some("Denied. The call will not run."),
            _ => None,
        },
        heading,
        client_name,
        summary: visible_text(&c.summary),
        method: c.method.clone(),
        route: c.route.clone(),
        tool: c.tool.clone(),
        created: format_time(c.created_at),
        deadline_label,
        expires: format_time(c.expires_at),
        decided_by: c.decided_by.clone(),
        // Line by line: the line breaks of the pretty JSON stay breaks.
        arguments: c
            .arguments
            .expose_secret()
            .lines()
            .map(visible_text)
            .collect::<Vec<_>>()
            .join("\n"),
        pending: c.state == ConfirmationState::Pending && !expired,
        id: c.id.clone(),
        csrf_token: person.csrf_token.clone(),
    };
    Ok(render_page(StatusCode::OK, &page))
}

/// `POST /confirm/{id}`: approve or deny, once.
pub async fn decide(
    State(server): State<Arc<OAuthServer>>,
    Path(id): Path<String>,
    CheckedForm { person, params }: CheckedForm,
) -> Result<Response, PageError> {
    let approve = match params.get("decision") {
        Some("approve") => true,
        Some("deny") => false,
        _ => {
            return Err(PageError::invalid(
                "Invalid form",
                "The decision is not understood.",
            ));
        }
    };
    let c = theirs(&server, &id, &person).await?;
    let now = server.now();
    if !server
        .store()
        .decide_confirmation(&id, person.login(), approve, now + APPROVAL_WINDOW, now)
        .await?
    {
        return Err(PageError::ConfirmationClosed);
    }
    let kind = if approve {
        EventKind::ConfirmationApproved
    } else {
        EventKind::ConfirmationDenied
    };
    server
        .audit()
        .record_best_effort(
            Event::new(kind)
                .oauth_login(&c.login)
                .tool(&c.tool)
                .detail("confirmation", &c.id)
                .detail("client_id", &c.client_id)
                .detail("by", person.login()),
        )
        .await;
    tracing::info!(login = %person.login(), approve, "confirmation decided");
    let done = if approve { "approved" } else { "denied" };
    Ok(with_page_headers(
        Redirect::to(&format!("/confirm/{id}?done={done}")).into_response(),
    ))
}
