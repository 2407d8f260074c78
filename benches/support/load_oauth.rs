//! A person's connection for the load harness: a client, a grant holding a
//! Gitea session, and one of our `agm_` access tokens, written straight
//! into the gateway's store, as a finished sign-in leaves them (the
//! sign-in itself is not what is measured; `tests/oauth/` and the e2e
//! suites run it). The token resolves through the same resolver, policy,
//! confirmation and activity steps as any OAuth call.

use aegis_gitea_mcp::app::App;
use aegis_gitea_mcp::store::{
    GiteaApp, GiteaTokens, GrantRecord, NewToken, TokenKind, hash_secret,
};
use anyhow::{Context, anyhow};
use secrecy::SecretString;

/// The OAuth settings a measured gateway gets beside its bearer.
pub fn oauth_settings(public_base_url: &str) -> Vec<(String, String)> {
    [
        ("GITEA_OAUTH_CLIENT_ID", "bench-gitea-app"),
        (
            "GITEA_OAUTH_CLIENT_SECRET",
            "bench-gitea-app-secret-0123456789",
        ),
        (
            "TOKEN_ENCRYPTION_KEY",
            "bench-token-encryption-key-0123456789abcdef",
        ),
        ("PUBLIC_BASE_URL", public_base_url),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Writes a signed-in connection of `login` for `/mcp` and returns its
/// access token. Its Gitea session is `gitea_token`, valid for a day.
pub async fn connect(app: &App, login: &str, gitea_token: &str) -> anyhow::Result<String> {
    let server = app.oauth().context("the gateway has no OAuth")?;
    let store = server.store();
    let now = server.now();
    let client_id = format!("bench-client-{login}");
    let redirect_uri = "http://127.0.0.1:53682/callback".to_owned();
    store
        .insert_client(
            &super::bench_kit::registered_client(&client_id, "load bench", &redirect_uri, now),
            None,
            now,
        )
        .await
        .map_err(|e| anyhow!("insert_client: {e}"))?;
    let grant_id = format!("bench-grant-{login}");
    store
        .insert_grant(
            &GrantRecord {
                id: grant_id.clone(),
                login: login.to_owned(),
                client_id,
                scope: "gitea:read gitea:write".into(),
                resource: server
                    .config()
                    .canonical_resource(None)
                    .context("no resource")?,
                gitea: GiteaTokens {
                    access_token: SecretString::from(gitea_token.to_owned()),
                    refresh_token: Some(SecretString::from(format!("{gitea_token}-refresh"))),
                    expires_at: Some(now + 86_400),
                    issued_at: Some(now),
                },
                gitea_subject: None,
                gitea_app: GiteaApp::ReadWrite,
                gitea_tokens_version: 0,
                redirect_uri: Some(redirect_uri),
                created_at: now,
                activated_at: Some(now),
                last_used_at: None,
                revoked_at: None,
            },
            now,
        )
        .await
        .map_err(|e| anyhow!("insert_grant: {e}"))?;
    let token = format!("agm_bench_{login}_0123456789abcdef0123456789abcdef");
    store
        .insert_tokens(
            &grant_id,
            &[NewToken {
                token_hash: hash_secret(&token),
                kind: TokenKind::Access,
                scope: "gitea:read gitea:write".into(),
                expires_at: now + 86_400,
            }],
            now,
        )
        .await
        .map_err(|e| anyhow!("insert_tokens: {e}"))?;
    Ok(token)
}
