//! The fake's OpenID Connect side, after Gitea 1.27's: discovery at
//! `/.well-known/openid-configuration` (issuer = the base URL without a
//! trailing slash, RS256 only), the key set at `/login/oauth/keys` (one RSA
//! key, `kid` set), and an RS256 ID token in every token answer of a grant
//! whose authorize request asked for `openid`: `iss`, `sub` (the user id as
//! a string), `aud` (`[client_id]`), `exp` (now + the access-token
//! lifetime), `iat`, the grant's `nonce` when it has one, and with
//! `profile` the `name` and `preferred_username`.
//!
//! Tests can make the next ID token a forgery ([`Forgery`]), to check that
//! the gateway refuses each kind. The keys are test fixtures (2048-bit
//! PKCS#1 PEM files beside this one), never used outside the tests.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use openidconnect::core::{
    CoreHmacKey, CoreJsonWebKeySet, CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey,
};
use openidconnect::{JsonWebKeyId, PrivateSigningKey};
use serde_json::{Value, json};

use super::super::FakeUser;
use super::OAUTH_CLIENT_SECRET;

const SIGNING_KEY_PEM: &str = include_str!("../oidc_test_key.pem");
const OTHER_KEY_PEM: &str = include_str!("../oidc_other_key.pem");
/// The signing key's id in the key set.
pub const SIGNING_KEY_ID: &str = "fake-gitea-key-1";

/// A way for the next ID token to be wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forgery {
    /// Signed with a key that is not in the key set, under the set's `kid`.
    BadSignature,
    /// `aud` names another client.
    WrongAudience,
    /// `iss` names another server.
    WrongIssuer,
    /// `exp` an hour ago.
    Expired,
    /// `iat` an hour from now.
    IssuedInTheFuture,
    /// `nonce` is not the one the authorize request sent.
    WrongNonce,
    /// No `nonce` claim.
    MissingNonce,
    /// `alg: none`, no signature.
    AlgNone,
    /// HS256, with the client secret as the key (the algorithm-confusion
    /// attack on a verifier that takes the client secret for HMAC).
    Hs256WithClientSecret,
    /// The right key material under a `kid` the key set does not have.
    UnknownKeyId,
    /// No `id_token` in the token answer at all.
    Omitted,
}

fn signing_key(pem: &str) -> CoreRsaPrivateSigningKey {
    CoreRsaPrivateSigningKey::from_pem(pem, Some(JsonWebKeyId::new(SIGNING_KEY_ID.into())))
        .expect("the test key parses")
}

/// `/.well-known/openid-configuration`.
pub fn discovery(base: &str) -> Value {
    json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/login/oauth/authorize"),
        "token_endpoint": format!("{base}/login/oauth/access_token"),
        "jwks_uri": format!("{base}/login/oauth/keys"),
        "userinfo_endpoint": format!("{base}/login/oauth/userinfo"),
        "introspection_endpoint": format!("{base}/login/oauth/introspect"),
        "response_types_supported": ["code", "id_token"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "subject_types_supported": ["public"],
        "scopes_supported": ["openid", "profile", "email", "groups"],
        "claims_supported": ["aud", "exp", "iat", "iss", "sub", "name", "preferred_username"],
        "code_challenge_methods_supported": ["plain", "S256"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
    })
}

/// `/login/oauth/keys`.
pub fn key_set() -> Value {
    let keys = CoreJsonWebKeySet::new(vec![signing_key(SIGNING_KEY_PEM).as_verification_key()]);
    serde_json::to_value(&keys).expect("a key set serializes")
}

fn encode(value: &Value) -> String {
    URL_SAFE_NO_PAD.encode(value.to_string())
}

/// The ID token for `user`, as Gitea makes it (or forged as `forgery` says).
pub fn id_token(
    base: &str,
    client_id: &str,
    user: &FakeUser,
    nonce: Option<&str>,
    profile: bool,
    lifetime: u64,
    forgery: Option<Forgery>,
) -> Option<String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut claims = json!({
        "iss": base,
        "sub": user.id.to_string(),
        "aud": [client_id],
        "exp": now + lifetime as i64,
        "iat": now,
    });
    if let Some(nonce) = nonce {
        claims["nonce"] = json!(nonce);
    }
    if profile {
        claims["name"] = json!(user.full_name);
        claims["preferred_username"] = json!(user.login);
    }
    let mut header = json!({"alg": "RS256", "kid": SIGNING_KEY_ID, "typ": "JWT"});
    let mut key_pem = SIGNING_KEY_PEM;
    match forgery {
        None => {}
        Some(Forgery::Omitted) => return None,
        Some(Forgery::BadSignature) => key_pem = OTHER_KEY_PEM,
        Some(Forgery::WrongAudience) => claims["aud"] = json!(["another-client"]),
        Some(Forgery::WrongIssuer) => claims["iss"] = json!("https://evil.example"),
        Some(Forgery::Expired) => {
            claims["exp"] = json!(now - 3600);
            claims["iat"] = json!(now - 7200);
        }
        Some(Forgery::IssuedInTheFuture) => {
            claims["iat"] = json!(now + 3600);
            claims["exp"] = json!(now + 7200);
        }
        Some(Forgery::WrongNonce) => claims["nonce"] = json!("not-the-nonce-that-was-sent"),
        Some(Forgery::MissingNonce) => {
            claims.as_object_mut().unwrap().remove("nonce");
        }
        Some(Forgery::AlgNone) => {
            header = json!({"alg": "none", "typ": "JWT"});
            return Some(format!("{}.{}.", encode(&header), encode(&claims)));
        }
        Some(Forgery::Hs256WithClientSecret) => {
            header = json!({"alg": "HS256", "typ": "JWT"});
            let input = format!("{}.{}", encode(&header), encode(&claims));
            let signature = CoreHmacKey::new(OAUTH_CLIENT_SECRET.as_bytes())
                .sign(&CoreJwsSigningAlgorithm::HmacSha256, input.as_bytes())
                .unwrap();
            return Some(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)));
        }
        Some(Forgery::UnknownKeyId) => header["kid"] = json!("a-key-nobody-published"),
    }
    let input = format!("{}.{}", encode(&header), encode(&claims));
    let signature = signing_key(key_pem)
        .sign(
            &CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256,
            input.as_bytes(),
        )
        .unwrap();
    Some(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}
