//! Client authentication at `/token` and `/revoke` (RFC 6749 §2.3): HTTP
//! Basic or `client_id`/`client_secret` in the form, never both. A client
//! registered with a secret must present it (either way: both prove the
//! same secret); a public client presents only its id.

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::percent_decode_str;
use subtle::ConstantTimeEq;

use super::OAuthServer;
use super::error::OAuthError;
use super::params::OAuthParams;
use crate::store::{ClientRecord, hash_secret};

/// Credentials as presented, before checking.
#[derive(Debug, Default)]
pub struct PresentedCredentials {
    pub client_id: Option<String>,
    secret: Option<String>,
}

impl PresentedCredentials {
    /// Reads Basic or form credentials; both at once is `invalid_request`.
    pub fn read(headers: &HeaderMap, params: &OAuthParams) -> Result<Self, OAuthError> {
        let basic = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("basic").then(|| rest.trim())
            });
        let form_secret = params.get("client_secret");
        match basic {
            Some(encoded) => {
                if form_secret.is_some() {
                    return Err(OAuthError::invalid_request(
                        "use one client authentication method, not two",
                    ));
                }
                let decoded = STANDARD
                    .decode(encoded)
                    .ok()
                    .and_then(|b| String::from_utf8(b).ok())
                    .ok_or_else(OAuthError::invalid_client)?;
                let (id, secret) = decoded
                    .split_once(':')
                    .ok_or_else(OAuthError::invalid_client)?;
                // RFC 6749 §2.3.1: both parts are form-urlencoded first.
                let decode = |s: &str| {
                    percent_decode_str(&s.replace('+', " "))
                        .decode_utf8()
                        .map(|c| c.into_owned())
                        .map_err(|_| OAuthError::invalid_client())
                };
                let id = decode(id)?;
                if params.get("client_id").is_some_and(|form_id| form_id != id) {
                    return Err(OAuthError::invalid_client());
                }
                Ok(Self {
                    client_id: Some(id),
                    secret: Some(decode(secret)?),
                })
            }
            None => Ok(Self {
                client_id: params.get("client_id").map(str::to_owned),
                secret: form_secret.map(str::to_owned),
            }),
        }
    }

    /// True when the request carried any client identification.
    pub fn is_present(&self) -> bool {
        self.client_id.is_some()
    }

    /// Authenticates against the store: the client, or `invalid_client`.
    pub async fn authenticate(&self, server: &OAuthServer) -> Result<ClientRecord, OAuthError> {
        let client_id = self
            .client_id
            .as_deref()
            .ok_or_else(OAuthError::invalid_client)?;
        let client = server
            .store
            .get_client(client_id)
            .await?
            .ok_or_else(OAuthError::invalid_client)?;
        match (&client.secret_hash, &self.secret) {
            (Some(expected), Some(presented)) => {
                let ok: bool = hash_secret(presented)
                    .as_str()
                    .as_bytes()
                    .ct_eq(expected.as_str().as_bytes())
                    .into();
                if ok {
                    Ok(client)
                } else {
                    Err(OAuthError::invalid_client())
                }
            }
            (None, None) => Ok(client),
            // A confidential client without its secret, or a public client
            // presenting one it was never given.
            _ => Err(OAuthError::invalid_client()),
        }
    }
}
