//! `/token`: the authorization-code grant (client authentication, PKCE,
//! redirect URI and resource bound to the code, single use with replay
//! revoking the first redemption's grant) and the refresh-token grant
//! (rotation with reuse detection, scope never widened).

use super::grant_end::GrantEnding;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::OAuthServer;
use super::client_auth::PresentedCredentials;
use super::error::{ErrorCode, OAuthError, no_store_json};
use super::events::OAuthEvent;
use super::params::OAuthParams;
use super::pkce::verifier_matches;
use super::scopes::{asked_access, granted_access, scope_of};
use super::tokens::{ACCESS_TOKEN_TTL, REFRESH_TOKEN_TTL, new_token};
use crate::store::{
    ClientRecord, CodeRedemption, NewToken, RefreshOutcome, TokenKind, hash_secret,
};

/// `POST /token`.
pub async fn token(
    State(server): State<Arc<OAuthServer>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match exchange(&server, &headers, &body).await {
        Ok(body) => no_store_json(StatusCode::OK, body),
        Err(err) => err.into_response(),
    }
}

/// Checks the form content type shared by `/token` and `/revoke`.
pub fn require_form(headers: &HeaderMap) -> Result<(), OAuthError> {
    let ok = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';').next().is_some_and(|t| {
                t.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        });
    if ok {
        Ok(())
    } else {
        Err(OAuthError::invalid_request(
            "the body must be application/x-www-form-urlencoded",
        ))
    }
}

/// What a `/token` request asks for (RFC 6749 §4.1.3, §6), with the
/// parameters of its grant, read once from the form.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TokenGrant {
    AuthorizationCode {
        code: String,
        redirect_uri: Option<String>,
        code_verifier: Option<String>,
    },
    RefreshToken {
        refresh_token: String,
        scope: Option<String>,
    },
}

/// A `/token` request: its grant and the resource it names (RFC 8707).
#[derive(Debug, Clone, PartialEq, Eq)]
struct TokenRequest {
    grant: TokenGrant,
    resource: Option<String>,
}

impl TokenRequest {
    fn parse(params: &OAuthParams) -> Result<Self, OAuthError> {
        let text = |name: &str| params.get(name).map(str::to_owned);
        let required = |name: &'static str| {
            text(name).ok_or_else(|| OAuthError::invalid_request(format!("{name} is required")))
        };
        let grant = match params.get("grant_type") {
            Some("authorization_code") => TokenGrant::AuthorizationCode {
                code: required("code")?,
                redirect_uri: text("redirect_uri"),
                code_verifier: text("code_verifier"),
            },
            Some("refresh_token") => TokenGrant::RefreshToken {
                refresh_token: required("refresh_token")?,
                scope: text("scope"),
            },
            Some(_) => {
                return Err(OAuthError::new(
                    ErrorCode::UnsupportedGrantType,
                    "grant_type must be authorization_code or refresh_token",
                ));
            }
            None => return Err(OAuthError::invalid_request("grant_type is required")),
        };
        Ok(Self {
            grant,
            resource: text("resource"),
        })
    }
}

async fn exchange(
    server: &OAuthServer,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<serde_json::Value, OAuthError> {
    require_form(headers)?;
    let params =
        OAuthParams::parse(body).map_err(|e| OAuthError::invalid_request(e.to_string()))?;
    let client = PresentedCredentials::read(headers, &params)?
        .authenticate(server)
        .await?;
    let request = TokenRequest::parse(&params)?;
    if let Some(resource) = &request.resource
        && server.config.canonical_resource(Some(resource)).is_none()
    {
        return Err(OAuthError::new(
            ErrorCode::InvalidTarget,
            "resource must be this server's MCP endpoint",
        ));
    }
    match &request.grant {
        TokenGrant::AuthorizationCode {
            code,
            redirect_uri,
            code_verifier,
        } => {
            let presented = PresentedCode {
                code,
                redirect_uri: redirect_uri.as_deref(),
                code_verifier: code_verifier.as_deref(),
                resource: request.resource.as_deref(),
            };
            authorization_code(server, &client, &presented).await
        }
        TokenGrant::RefreshToken { .. } if !client.may_refresh() => Err(OAuthError::new(
            ErrorCode::UnauthorizedClient,
            "this client did not register the refresh_token grant",
        )),
        TokenGrant::RefreshToken {
            refresh_token: presented,
            scope,
        } => refresh_token(server, &client, presented, scope.as_deref()).await,
    }
}

/// The authorization-code grant's parameters.
struct PresentedCode<'a> {
    code: &'a str,
    redirect_uri: Option<&'a str>,
    code_verifier: Option<&'a str>,
    resource: Option<&'a str>,
}

async fn authorization_code(
    server: &OAuthServer,
    client: &ClientRecord,
    presented: &PresentedCode<'_>,
) -> Result<serde_json::Value, OAuthError> {
    let code = presented.code;
    let now = server.now();
    let record = match server.store.redeem_code(&hash_secret(code), now).await? {
        CodeRedemption::Redeemed(record) => record,
        CodeRedemption::AlreadyRedeemed(record) => {
            // RFC 6749 §4.1.2: a replayed code revokes what it issued.
            server
                .end_grant(&record.grant_id, GrantEnding::CodeMisused)
                .await?;
            tracing::warn!(client_id = %record.client_id, "authorization code replayed; its grant is revoked");
            server
                .record(OAuthEvent::CodeReplayed {
                    client_id: &record.client_id,
                })
                .await;
            return Err(OAuthError::invalid_grant(
                "the code was already used; the tokens it issued are revoked",
            ));
        }
        CodeRedemption::Unknown => {
            return Err(OAuthError::invalid_grant("the code is unknown"));
        }
    };
    // From here the code is spent: any failure also ends its grant, so a
    // stolen code presented wrongly cannot be retried by anyone.
    let problem = if record.expires_at <= now {
        Some("the code has expired")
    } else if record.client_id != client.client_id {
        Some("the code was issued to another client")
    } else if !redirect_uri_matches(presented.redirect_uri, &record.redirect_uri, client) {
        Some("redirect_uri does not match the authorization request")
    } else if presented
        .code_verifier
        .is_none_or(|v| !verifier_matches(v, &record.code_challenge))
    {
        Some("code_verifier is missing or does not match the code challenge")
    } else {
        None
    };
    if let Some(description) = problem {
        server
            .end_grant(&record.grant_id, GrantEnding::CodeMisused)
            .await?;
        return Err(OAuthError::invalid_grant(description));
    }
    if let Some(resource) = presented.resource
        && server.config.canonical_resource(Some(resource)).as_deref() != Some(&record.resource)
    {
        server
            .end_grant(&record.grant_id, GrantEnding::CodeMisused)
            .await?;
        return Err(OAuthError::new(
            ErrorCode::InvalidTarget,
            "resource does not match the authorization request",
        ));
    }
    let issued = issue(server, client, &record.grant_id, &record.scope, now).await?;
    server.end_grants_widened_by(&record.grant_id).await?;
    Ok(issued)
}

/// `redirect_uri` at `/token` must equal the authorize request's; it may be
/// omitted only when the client has a single registered redirect URI that
/// the authorize request therefore used.
fn redirect_uri_matches(presented: Option<&str>, authorized: &str, client: &ClientRecord) -> bool {
    match presented {
        Some(uri) => uri == authorized,
        None => client.redirect_uris.len() == 1 && client.redirect_uris[0] == authorized,
    }
}

async fn refresh_token(
    server: &OAuthServer,
    client: &ClientRecord,
    presented: &str,
    asked_scope: Option<&str>,
) -> Result<serde_json::Value, OAuthError> {
    let token_hash = hash_secret(presented);
    let now = server.now();
    let grant = server
        .store
        .grant_of_token(&token_hash)
        .await?
        .ok_or_else(|| OAuthError::invalid_grant("the refresh token is not valid"))?;
    // RFC 6749 §6: a refresh may narrow the scope, never widen it.
    let scope = match asked_scope {
        None => grant.scope.clone(),
        Some(asked) => match asked_access(Some(asked)) {
            Ok(access) if access <= granted_access(&grant.scope) => scope_of(access).to_owned(),
            _ => {
                return Err(OAuthError::new(
                    ErrorCode::InvalidScope,
                    "the scope asked exceeds the scope granted",
                ));
            }
        },
    };
    let access = new_token();
    let refresh = new_token();
    let new_tokens = token_pair(&access, Some(&refresh), &scope, now);
    match server
        .store
        .rotate_refresh_token(&token_hash, &client.client_id, &new_tokens, now)
        .await?
    {
        RefreshOutcome::Rotated { grant } => {
            tracing::info!(login = %grant.login, client_id = %client.client_id, "refresh token rotated");
            server
                .record(OAuthEvent::TokenRefreshed {
                    login: &grant.login,
                    client_id: &client.client_id,
                })
                .await;
            Ok(token_response(&access, Some(&refresh), &scope))
        }
        RefreshOutcome::ReuseDetected { grant_id } => {
            tracing::warn!(client_id = %client.client_id, "refresh token reuse detected; grant revoked");
            // The store ended the grant in the step that found the reuse.
            if let Some(grant) = server.store.get_grant(&grant_id).await? {
                server
                    .grant_ended(&grant, GrantEnding::RefreshTokenReused)
                    .await;
            }
            server
                .record(OAuthEvent::RefreshReuseDetected {
                    client_id: &client.client_id,
                })
                .await;
            Err(OAuthError::invalid_grant(
                "the refresh token was already rotated; the grant is revoked",
            ))
        }
        RefreshOutcome::Invalid | RefreshOutcome::WrongClient => {
            Err(OAuthError::invalid_grant("the refresh token is not valid"))
        }
    }
}

/// The new access token, and the refresh token when there is one.
fn token_pair(access: &str, refresh: Option<&str>, scope: &str, now: i64) -> Vec<NewToken> {
    let access = NewToken {
        token_hash: hash_secret(access),
        kind: TokenKind::Access,
        scope: scope.to_owned(),
        expires_at: now + ACCESS_TOKEN_TTL,
    };
    let refresh = refresh.map(|refresh| NewToken {
        token_hash: hash_secret(refresh),
        kind: TokenKind::Refresh,
        scope: scope.to_owned(),
        expires_at: now + REFRESH_TOKEN_TTL,
    });
    std::iter::once(access).chain(refresh).collect()
}

async fn issue(
    server: &OAuthServer,
    client: &ClientRecord,
    grant_id: &str,
    scope: &str,
    now: i64,
) -> Result<serde_json::Value, OAuthError> {
    let access = new_token();
    let refresh = client.may_refresh().then(new_token);
    server
        .store
        .insert_tokens(
            grant_id,
            &token_pair(&access, refresh.as_deref(), scope, now),
            now,
        )
        .await?;
    tracing::info!(grant = %grant_id, "tokens issued");
    server.record(OAuthEvent::TokenIssued { grant_id }).await;
    Ok(token_response(&access, refresh.as_deref(), scope))
}

fn token_response(access: &str, refresh: Option<&str>, scope: &str) -> serde_json::Value {
    let mut response = serde_json::Map::new();
    response.insert("access_token".into(), json!(access));
    response.insert("token_type".into(), json!("Bearer"));
    response.insert("expires_in".into(), json!(ACCESS_TOKEN_TTL));
    if let Some(refresh) = refresh {
        response.insert("refresh_token".into(), json!(refresh));
    }
    response.insert("scope".into(), json!(scope));
    serde_json::Value::Object(response)
}

#[cfg(test)]
mod typed_request_tests {
    use super::*;

    fn parse(form: &str) -> Result<TokenRequest, OAuthError> {
        TokenRequest::parse(&OAuthParams::parse(form.as_bytes()).unwrap())
    }

    #[test]
    fn a_code_request_is_read_with_its_parameters() {
        let request =
            parse("grant_type=authorization_code&code=c&code_verifier=v&resource=r").unwrap();
        assert_eq!(
            request.grant,
            TokenGrant::AuthorizationCode {
                code: "c".into(),
                redirect_uri: None,
                code_verifier: Some("v".into()),
            }
        );
        assert_eq!(request.resource.as_deref(), Some("r"));
    }

    #[test]
    fn a_grant_without_its_token_or_of_another_type_is_refused() {
        assert!(parse("grant_type=refresh_token").is_err());
        assert!(parse("grant_type=authorization_code").is_err());
        assert!(parse("grant_type=password&username=a").is_err());
        assert!(parse("code=c").is_err());
    }
}
