//! The discovery documents: RFC 9728 protected-resource metadata (what the
//! MCP endpoint is and who issues its tokens) and RFC 8414
//! authorization-server metadata. Pure functions of the configuration.

use serde_json::{Value, json};

use super::OAuthConfig;
use super::scopes::{MINIMAL_SCOPE, SCOPES};

/// The well-known prefix of the protected-resource documents (RFC 9728
/// §3.1: the resource's path is appended to it).
pub const PROTECTED_RESOURCE_PATH: &str = "/.well-known/oauth-protected-resource";

/// `/.well-known/oauth-protected-resource{path}` for the MCP URL `resource`.
pub fn protected_resource_metadata(config: &OAuthConfig, resource: &str) -> Value {
    json!({
        "resource": resource,
        "authorization_servers": [config.issuer],
        // The minimum (MCP 2026-07-28): writing comes by step-up.
        "scopes_supported": [MINIMAL_SCOPE],
        "bearer_methods_supported": ["header"],
        "resource_name": "Aegis Gitea MCP",
    })
}

/// `/.well-known/oauth-authorization-server[/mcp]`.
pub fn authorization_server_metadata(config: &OAuthConfig) -> Value {
    let issuer = &config.issuer;
    json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "revocation_endpoint": format!("{issuer}/revoke"),
        "scopes_supported": SCOPES,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
    })
}

/// The absolute URL of the protected-resource document of the MCP URL
/// `path` (as the client asked for it), as the 401 challenge names it.
pub fn resource_metadata_url(config: &OAuthConfig, path: &str) -> String {
    format!("{}{PROTECTED_RESOURCE_PATH}{path}", config.issuer)
}
