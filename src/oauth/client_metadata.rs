//! Client ID Metadata Documents: a `client_id` that is an https URL names a
//! JSON document describing the client, fetched on first use and cached.
//! The fetch is an SSRF surface, so it is narrow: https only, the resolved
//! addresses must all be public (private, loopback, link-local and other
//! special ranges are refused unless the explicit test setting allows
//! them), the connection goes to exactly the addresses that were checked
//! (no second DNS lookup to rebind), no redirects, a short timeout, and at
//! most 5 KB read.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use axum::http::header;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use url::Url;

use super::public_address::is_public_address;
use super::redirect_uri::check_registrable;
use super::register::{MAX_CLIENT_NAME_CHARS, check_text};
use super::{OAuthConfig, OAuthServer};
use crate::store::{
    ClientRecord, GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN, Registration, StoreError,
    TokenEndpointAuthMethod, UnixTime,
};

/// Largest document read.
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// Longest the fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Cache lifetime without cache headers, and the ceiling with them.
const DEFAULT_CACHE_SECS: i64 = 300;
const MAX_CACHE_SECS: i64 = 24 * 3600;

/// Why a metadata document was not accepted. Shown on the error page, so
/// it names the rule only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MetadataDocumentError {
    #[error("the client_id URL is not a valid https URL with a path")]
    BadUrl,
    #[error("the client_id URL resolves to a private or special-purpose address")]
    PrivateAddress,
    #[error("the client's metadata document could not be fetched")]
    Unreachable,
    #[error("the server holds as many clients as it can; try again later")]
    AtCapacity,
    #[error("the client could not be stored; try again later")]
    NotStored,
    #[error("the client's metadata document is larger than 5 KB")]
    TooLarge,
    #[error("the client's metadata document is not valid")]
    Invalid,
    #[error("the metadata document's client_id does not equal its URL")]
    ClientIdMismatch,
    #[error("the metadata document lists a redirect URI that is not allowed")]
    BadRedirectUri,
}

/// Fetches and caches metadata documents.
#[derive(Debug, Default)]
pub struct MetadataDocuments;

#[derive(Debug, Deserialize)]
struct Document {
    client_id: Option<String>,
    redirect_uris: Option<Vec<String>>,
    client_name: Option<String>,
    client_uri: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

/// True when `client_id` is meant as a metadata document URL.
pub fn is_metadata_document_id(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

impl MetadataDocuments {
    /// The client for a URL `client_id`: from the store while its cache is
    /// fresh, else fetched, validated and stored.
    pub async fn resolve(
        &self,
        server: &OAuthServer,
        client_id: &str,
    ) -> Result<ClientRecord, MetadataDocumentError> {
        let now = server.now();
        if let Ok(Some(cached)) = server.store.get_client(client_id).await
            && cached.registration == Registration::MetadataDocument
            && cached.expires_at.is_some_and(|t| t > now)
        {
            return Ok(cached);
        }
        let record = fetch(&server.config, client_id, now).await?;
        match server.store.upsert_metadata_client(&record).await {
            Ok(()) => {}
            Err(StoreError::Full { .. }) => return Err(MetadataDocumentError::AtCapacity),
            Err(err) => {
                tracing::error!(error = %err, "a metadata-document client could not be stored");
                return Err(MetadataDocumentError::NotStored);
            }
        }
        Ok(record)
    }
}

async fn fetch(
    config: &OAuthConfig,
    client_id: &str,
    now: UnixTime,
) -> Result<ClientRecord, MetadataDocumentError> {
    let allow_private = config.metadata_documents_on_private_addresses;
    let url = document_url(client_id, allow_private)?;
    let host = url.host_str().ok_or(MetadataDocumentError::BadUrl)?;
    let port = url
        .port_or_known_default()
        .ok_or(MetadataDocumentError::BadUrl)?;
    // An IP literal is its own address: `host_str` keeps an IPv6 literal's
    // brackets, which no resolver answers.
    let addrs: Vec<SocketAddr> = match url.host() {
        Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        _ => tokio::net::lookup_host((host, port))
            .await
            .map_err(|_| MetadataDocumentError::Unreachable)?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(MetadataDocumentError::Unreachable);
    }
    if !allow_private && addrs.iter().any(|a| !is_public_address(a.ip())) {
        return Err(MetadataDocumentError::PrivateAddress);
    }
    // Connect to exactly the checked addresses: no second lookup, and no
    // proxy (which would resolve the name again, unchecked).
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(FETCH_TIMEOUT)
        .resolve_to_addrs(host, &addrs)
        .build()
        .map_err(|_| MetadataDocumentError::Unreachable)?;
    let response = client
        .get(url.clone())
        .header(header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|_| MetadataDocumentError::Unreachable)?;
    if response.status() != reqwest::StatusCode::OK {
        return Err(MetadataDocumentError::Unreachable);
    }
    let cache_secs = cache_lifetime(response.headers().get(header::CACHE_CONTROL));
    let body = crate::bounded_body::read_capped(response, MAX_DOCUMENT_BYTES)
        .await
        .map_err(|_| MetadataDocumentError::Unreachable)?;
    if body.truncated {
        return Err(MetadataDocumentError::TooLarge);
    }
    let body = body.bytes;
    let document: Document =
        serde_json::from_slice(&body).map_err(|_| MetadataDocumentError::Invalid)?;
    record_from(document, client_id, config, now, cache_secs)
}

/// The URL of a metadata document: https with a host and a path other than
/// `/`, no credentials or fragment (plain-http loopback only under the
/// test setting).
fn document_url(client_id: &str, allow_private: bool) -> Result<Url, MetadataDocumentError> {
    let url = Url::parse(client_id).map_err(|_| MetadataDocumentError::BadUrl)?;
    let scheme_ok = url.scheme() == "https"
        || (allow_private && url.scheme() == "http" && crate::config::is_loopback_url(&url));
    if !scheme_ok
        || url.host().is_none()
        || url.path() == "/"
        || url.fragment().is_some()
        || !url.username().is_empty()
        || url.password().is_some()
        || url.as_str() != client_id
    {
        return Err(MetadataDocumentError::BadUrl);
    }
    Ok(url)
}

fn record_from(
    document: Document,
    client_id: &str,
    config: &OAuthConfig,
    now: UnixTime,
    cache_secs: i64,
) -> Result<ClientRecord, MetadataDocumentError> {
    if document.client_id.as_deref() != Some(client_id) {
        return Err(MetadataDocumentError::ClientIdMismatch);
    }
    let redirect_uris = document
        .redirect_uris
        .filter(|u| !u.is_empty() && u.len() <= 10)
        .ok_or(MetadataDocumentError::Invalid)?;
    for uri in &redirect_uris {
        check_registrable(uri, &config.redirect_allowlist)
            .map_err(|_| MetadataDocumentError::BadRedirectUri)?;
    }
    // A document is public: there is no secret to hold, so only `none`.
    if document
        .token_endpoint_auth_method
        .as_deref()
        .is_some_and(|m| m != "none")
    {
        return Err(MetadataDocumentError::Invalid);
    }
    let client_name = document
        .client_name
        .map(|n| check_text("client_name", n, MAX_CLIENT_NAME_CHARS))
        .transpose()
        .map_err(|_| MetadataDocumentError::Invalid)?;
    let mut metadata = Map::new();
    metadata.insert("client_id".into(), json!(client_id));
    metadata.insert("redirect_uris".into(), json!(redirect_uris));
    if let Some(name) = &client_name {
        metadata.insert("client_name".into(), json!(name));
    }
    if let Some(uri) = document.client_uri {
        metadata.insert("client_uri".into(), json!(uri));
    }
    Ok(ClientRecord {
        client_id: client_id.to_owned(),
        client_name,
        redirect_uris,
        token_endpoint_auth_method: TokenEndpointAuthMethod::None,
        grant_types: vec![GRANT_AUTHORIZATION_CODE.into(), GRANT_REFRESH_TOKEN.into()],
        response_types: vec!["code".into()],
        scope: None,
        registration: Registration::MetadataDocument,
        secret_hash: None,
        metadata: Value::Object(metadata),
        created_at: now,
        expires_at: Some(now + cache_secs),
    })
}

/// Cache lifetime from `Cache-Control`: `no-store`/`no-cache` → 0,
/// `max-age=N` → N capped at a day, otherwise the default.
fn cache_lifetime(value: Option<&axum::http::HeaderValue>) -> i64 {
    let Some(value) = value.and_then(|v| v.to_str().ok()) else {
        return DEFAULT_CACHE_SECS;
    };
    let mut lifetime = DEFAULT_CACHE_SECS;
    for directive in value.split(',').map(|d| d.trim().to_ascii_lowercase()) {
        if directive == "no-store" || directive == "no-cache" {
            return 0;
        }
        if let Some(n) = directive
            .strip_prefix("max-age=")
            .and_then(|n| n.parse::<i64>().ok())
        {
            lifetime = n.clamp(0, MAX_CACHE_SECS);
        }
    }
    lifetime
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_urls_must_be_https_with_a_path() {
        assert!(document_url("https://app.example/client.json", false).is_ok());
        for bad in [
            "https://app.example/",
            "http://app.example/client.json",
            "https://u:p@app.example/c.json",
            "https://app.example/c.json#x",
            "http://127.0.0.1:8/c.json",
        ] {
            assert_eq!(
                document_url(bad, false).unwrap_err(),
                MetadataDocumentError::BadUrl,
                "{bad}"
            );
        }
        assert!(document_url("http://127.0.0.1:8/c.json", true).is_ok());
    }

    #[test]
    fn cache_lifetime_follows_cache_control_up_to_a_day() {
        use axum::http::HeaderValue;
        assert_eq!(cache_lifetime(None), DEFAULT_CACHE_SECS);
        assert_eq!(
            cache_lifetime(Some(&HeaderValue::from_static("public, max-age=60"))),
            60
        );
        assert_eq!(
            cache_lifetime(Some(&HeaderValue::from_static("max-age=9999999"))),
            MAX_CACHE_SECS
        );
        assert_eq!(
            cache_lifetime(Some(&HeaderValue::from_static("no-store"))),
            0
        );
    }
}
