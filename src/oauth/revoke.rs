//! `/revoke` (RFC 7009): an access or refresh token ends its whole grant.
//! Unknown tokens answer 200 like known ones, so the endpoint reveals
//! nothing. Client credentials are optional (possession of a token is
//! enough to end it), but when presented they must be right, and a client
//! cannot revoke another client's grant.

use super::grant_end::GrantEnding;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use super::OAuthServer;
use super::client_auth::PresentedCredentials;
use super::error::{OAuthError, no_store_json};
use super::events::OAuthEvent;
use super::params::OAuthParams;
use super::token::require_form;
use crate::store::hash_secret;

/// `POST /revoke`.
pub async fn revoke(
    State(server): State<Arc<OAuthServer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match revoke_token(&server, &headers, &body).await {
        Ok(()) => no_store_json(StatusCode::OK, serde_json::json!({})),
        Err(err) => err.into_response(),
    }
}

async fn revoke_token(
    server: &OAuthServer,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), OAuthError> {
    require_form(headers)?;
    let params =
        OAuthParams::parse(body).map_err(|e| OAuthError::invalid_request(e.to_string()))?;
    let token = params
        .get("token")
        .ok_or_else(|| OAuthError::invalid_request("token is required"))?;
    let credentials = PresentedCredentials::read(headers, &params)?;
    let client = if credentials.is_present() {
        Some(credentials.authenticate(server).await?)
    } else {
        None
    };
    let Some(grant) = server.store.grant_of_token(&hash_secret(token)).await? else {
        return Ok(());
    };
    if client.is_some_and(|c| c.client_id != grant.client_id) {
        return Ok(());
    }
    if server
        .end_grant(&grant.id, GrantEnding::ClientRevoked)
        .await?
    {
        tracing::info!(login = %grant.login, client_id = %grant.client_id, "grant revoked at /revoke");
        server
            .record(OAuthEvent::TokenRevoked {
                login: &grant.login,
                client_id: &grant.client_id,
            })
            .await;
    }
    Ok(())
}
