//! Dynamic client registration (RFC 7591) at `/register`. Clients that ask
//! for `client_secret_post` or `client_secret_basic` (the RFC's default)
//! get a secret, stored as a hash; `none` gets none. Only known metadata is
//! stored and echoed; unknown fields are accepted and dropped.

use std::sync::Arc;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::OAuthServer;
use super::error::{ErrorCode, OAuthError, no_store_json};
use super::events::OAuthEvent;
use super::redirect_uri::check_registrable;
use super::scopes::asked_access;
use crate::client_address::ClientAddress;
use crate::hidden_text::is_format_char;
use crate::random::random_value;
use crate::store::{
    ClientRecord, GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN, Registration,
    TokenEndpointAuthMethod, hash_secret,
};

/// Redirect URIs one client may register.
const MAX_REDIRECT_URIS: usize = 10;
/// Longest client name, in characters (it is shown on the consent page).
pub const MAX_CLIENT_NAME_CHARS: usize = 200;
/// Longest free-text metadata value we echo.
const MAX_TEXT_CHARS: usize = 500;

#[derive(Debug, Deserialize)]
struct RegistrationRequest {
    redirect_uris: Option<Value>,
    token_endpoint_auth_method: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
    client_name: Option<String>,
    scope: Option<String>,
    client_uri: Option<String>,
    application_type: Option<String>,
    software_id: Option<String>,
    software_version: Option<String>,
}

fn metadata_error(description: impl Into<String>) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidClientMetadata, description)
}

/// `POST /register`.
pub async fn register(
    State(server): State<Arc<OAuthServer>>,
    address: Option<Extension<ClientAddress>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let network = address.and_then(|Extension(address)| quota_network(address));
    match register_client(&server, network.as_deref(), &headers, &body).await {
        Ok(body) => no_store_json(StatusCode::CREATED, body),
        Err(err) => err.into_response(),
    }
}

/// The network a registration counts against, or `None` for a loopback
/// address: that is the operator's own machine, or a reverse proxy not
/// named in `FORWARDED_ALLOW_IPS`, behind which every client would share
/// one quota. (The global cap and the pruning of unused registrations
/// still hold.)
fn quota_network(address: ClientAddress) -> Option<String> {
    (!address.0.to_canonical().is_loopback()).then(|| address.network())
}

async fn register_client(
    server: &OAuthServer,
    network: Option<&str>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Value, OAuthError> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if !is_json {
        return Err(OAuthError::invalid_request(
            "registration requests must be application/json",
        ));
    }
    let request: RegistrationRequest = serde_json::from_slice(body)
        .map_err(|_| metadata_error("the body is not a valid registration request"))?;
    let mut record = validate(request, &server.config.redirect_allowlist)?;
    let now = server.now();
    record.created_at = now;
    let secret = record
        .token_endpoint_auth_method
        .is_confidential()
        .then(random_value);
    record.secret_hash = secret.as_deref().map(hash_secret);
    server.store.insert_client(&record, network, now).await?;
    tracing::info!(
        client_id = %record.client_id,
        auth_method = record.token_endpoint_auth_method.as_str(),
        "client registered"
    );
    server
        .record(OAuthEvent::ClientRegistered {
            client_id: &record.client_id,
            auth_method: record.token_endpoint_auth_method.as_str(),
        })
        .await;

    let mut response = record.metadata.as_object().cloned().unwrap_or_default();
    response.insert("client_id".into(), json!(record.client_id));
    response.insert("client_id_issued_at".into(), json!(now));
    if let Some(secret) = secret {
        response.insert("client_secret".into(), json!(secret));
        response.insert("client_secret_expires_at".into(), json!(0));
    }
    Ok(Value::Object(response))
}

/// Validates a registration request into a record (without secret or time).
fn validate(
    request: RegistrationRequest,
    allowlist: &[String],
) -> Result<ClientRecord, OAuthError> {
    let redirect_uris = redirect_uris(request.redirect_uris, allowlist)?;
    let auth_method = match request.token_endpoint_auth_method.as_deref() {
        None => TokenEndpointAuthMethod::ClientSecretBasic,
        Some(method) => TokenEndpointAuthMethod::parse(method).ok_or_else(|| {
            metadata_error(
                "token_endpoint_auth_method must be none, client_secret_post or client_secret_basic",
            )
        })?,
    };
    let grant_types = grant_types(request.grant_types)?;
    let response_types = one_of(
        request.response_types,
        "code",
        &["code"],
        "response_types may contain only code",
    )?;
    if let Err(unknown) = asked_access(request.scope.as_deref()) {
        return Err(metadata_error(unknown.to_string()));
    }
    let client_name = request
        .client_name
        .map(|n| check_text("client_name", n, MAX_CLIENT_NAME_CHARS))
        .transpose()?;

    let mut metadata = Map::new();
    metadata.insert("redirect_uris".into(), json!(redirect_uris));
    metadata.insert(
        "token_endpoint_auth_method".into(),
        json!(auth_method.as_str()),
    );
    metadata.insert("grant_types".into(), json!(grant_types));
    metadata.insert("response_types".into(), json!(response_types));
    if let Some(name) = &client_name {
        metadata.insert("client_name".into(), json!(name));
    }
    if let Some(scope) = &request.scope {
        metadata.insert("scope".into(), json!(scope));
    }
    for (field, value) in [
        ("client_uri", request.client_uri),
        ("application_type", request.application_type),
        ("software_id", request.software_id),
        ("software_version", request.software_version),
    ] {
        if let Some(value) = value {
            metadata.insert(
                field.into(),
                json!(check_text(field, value, MAX_TEXT_CHARS)?),
            );
        }
    }

    Ok(ClientRecord {
        client_id: random_value(),
        client_name,
        redirect_uris,
        token_endpoint_auth_method: auth_method,
        grant_types,
        response_types,
        scope: request.scope,
        registration: Registration::Dynamic,
        secret_hash: None,
        metadata: Value::Object(metadata),
        created_at: 0,
        expires_at: None,
    })
}

/// `redirect_uris`: 1 to [`MAX_REDIRECT_URIS`] strings, each registrable.
fn redirect_uris(value: Option<Value>, allowlist: &[String]) -> Result<Vec<String>, OAuthError> {
    let uris: Vec<String> = match value {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_REDIRECT_URIS => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                _ => Err(metadata_error("redirect_uris must be strings")),
            })
            .collect::<Result<_, _>>()?,
        _ => {
            return Err(OAuthError::new(
                ErrorCode::InvalidRedirectUri,
                format!("redirect_uris must be a list of 1 to {MAX_REDIRECT_URIS} URIs"),
            ));
        }
    };
    for uri in &uris {
        check_registrable(uri, allowlist).map_err(|problem| {
            OAuthError::new(ErrorCode::InvalidRedirectUri, problem.to_string())
        })?;
    }
    Ok(uris)
}

/// A non-empty list whose every entry is in `allowed`; `default` alone
/// when absent.
/// The grants a client may use at `/token`. Left out, both: MCP clients
/// refresh, and some register without naming `grant_types`; RFC 7591
/// §3.2.1 lets the server answer with the value it registered (its own
/// default would be `authorization_code` alone). Named, exactly those, and
/// `authorization_code` among them: a grant only starts at `/authorize`.
fn grant_types(value: Option<Vec<String>>) -> Result<Vec<String>, OAuthError> {
    let Some(list) = value else {
        return Ok(vec![
            GRANT_AUTHORIZATION_CODE.to_owned(),
            GRANT_REFRESH_TOKEN.to_owned(),
        ]);
    };
    let list = one_of(
        Some(list),
        GRANT_AUTHORIZATION_CODE,
        &[GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN],
        "grant_types may contain only authorization_code and refresh_token",
    )?;
    if !list.iter().any(|g| g == GRANT_AUTHORIZATION_CODE) {
        return Err(metadata_error(
            "grant_types must contain authorization_code (every grant starts at /authorize)",
        ));
    }
    Ok(list)
}

fn one_of(
    value: Option<Vec<String>>,
    default: &str,
    allowed: &[&str],
    problem: &'static str,
) -> Result<Vec<String>, OAuthError> {
    let list = value.unwrap_or_else(|| vec![default.to_owned()]);
    if list.is_empty() || list.iter().any(|v| !allowed.contains(&v.as_str())) {
        return Err(metadata_error(problem));
    }
    Ok(list)
}

/// A free-text field shown to people: bounded, no control characters, and
/// no format characters (bidi controls, zero-width characters), which
/// would make a page show another text than the one registered.
pub fn check_text(field: &str, value: String, max_chars: usize) -> Result<String, OAuthError> {
    if value.chars().count() > max_chars || value.chars().any(char::is_control) {
        return Err(metadata_error(format!(
            "{field} must be at most {max_chars} characters without control characters"
        )));
    }
    if let Some(c) = value.chars().find(|&c| is_format_char(c)) {
        return Err(metadata_error(format!(
            "{field} must not contain bidi controls or invisible characters (found U+{:04X})",
            u32::from(c)
        )));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: Value) -> RegistrationRequest {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn the_default_auth_method_is_client_secret_basic() {
        let record = validate(
            request(json!({"redirect_uris": ["https://a.example/cb"]})),
            &[],
        )
        .unwrap();
        assert_eq!(
            record.token_endpoint_auth_method,
            TokenEndpointAuthMethod::ClientSecretBasic
        );
        assert_eq!(
            record.grant_types,
            vec!["authorization_code", "refresh_token"]
        );
    }

    #[test]
    fn unknown_fields_are_accepted_and_not_echoed() {
        let record = validate(
            request(json!({"redirect_uris": ["https://a.example/cb"], "x_custom": 1, "application_type": "web"})),
            &[],
        )
        .unwrap();
        assert!(record.metadata.get("x_custom").is_none());
        assert_eq!(record.metadata["application_type"], "web");
    }

    #[test]
    fn a_long_client_name_is_refused() {
        let err = validate(
            request(json!({"redirect_uris": ["https://a.example/cb"], "client_name": "x".repeat(10_000)})),
            &[],
        )
        .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidClientMetadata);
    }

    #[test]
    fn missing_or_bad_redirect_uris_are_invalid_redirect_uri() {
        for body in [
            json!({}),
            json!({"redirect_uris": []}),
            json!({"redirect_uris": ["http://example.com/cb"]}),
        ] {
            assert_eq!(
                validate(request(body), &[]).unwrap_err().code,
                ErrorCode::InvalidRedirectUri
            );
        }
    }

    #[test]
    fn unsupported_grant_types_and_methods_are_refused() {
        for body in [
            json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["client_credentials"]}),
            json!({"redirect_uris": ["https://a.example/cb"], "token_endpoint_auth_method": "private_key_jwt"}),
            json!({"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]}),
            json!({"redirect_uris": ["https://a.example/cb"], "scope": "admin"}),
        ] {
            assert_eq!(
                validate(request(body), &[]).unwrap_err().code,
                ErrorCode::InvalidClientMetadata
            );
        }
    }
}
