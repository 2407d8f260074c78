//! Filling a gateway's store to a size through the store's own API, as
//! finished sign-ins and calls leave it (issue 55's cost curve): clients,
//! people with grants on them, the tokens the measured calls use, page
//! sessions, and a week of activity.

use std::sync::Arc;

use aegis_gitea_mcp::app::App;
use aegis_gitea_mcp::outcome::CallOutcome;
use aegis_gitea_mcp::store::{
    ActivityNote, ClientRecord, GiteaApp, GiteaTokens, GrantRecord, NewToken, PageSession, Store,
    TokenKind, hash_secret,
};
use anyhow::{Context, anyhow};
use secrecy::SecretString;

pub const REDIRECT_URI: &str = "http://127.0.0.1:53682/callback";
/// Grants per person (and clients per person's share).
const GRANTS_PER_PERSON: usize = 5;

/// What a filled store gives the measurements.
pub struct Filled {
    /// The `aegis_session` cookie of a site administrator and of a person.
    pub admin_cookie: String,
    pub person_cookie: String,
    /// A client with grants, for `/admin?client=`.
    pub client_id: String,
    /// The person's connection: an access token, and refresh tokens for
    /// one refresh each.
    pub access_token: String,
    pub refresh_tokens: Vec<String>,
    /// Access tokens of other grants, one revocation each.
    pub to_revoke: Vec<String>,
}

fn client(id: &str, now: i64) -> ClientRecord {
    super::bench_kit::registered_client(id, &format!("cost bench {id}"), REDIRECT_URI, now)
}

fn grant(id: &str, login: &str, client_id: &str, resource: &str, now: i64) -> GrantRecord {
    GrantRecord {
        id: id.to_owned(),
        login: login.to_owned(),
        client_id: client_id.to_owned(),
        scope: "gitea:read gitea:write".into(),
        resource: resource.to_owned(),
        gitea: GiteaTokens {
            access_token: SecretString::from(format!("gitea-{id}")),
            refresh_token: Some(SecretString::from(format!("gitea-refresh-{id}"))),
            expires_at: Some(now + 86_400),
            issued_at: Some(now),
        },
        gitea_subject: None,
        gitea_app: GiteaApp::ReadWrite,
        gitea_tokens_version: 0,
        redirect_uri: Some(REDIRECT_URI.to_owned()),
        created_at: now,
        activated_at: Some(now),
        last_used_at: None,
        revoked_at: None,
    }
}

async fn token(
    store: &Arc<dyn Store>,
    grant_id: &str,
    kind: TokenKind,
    now: i64,
) -> anyhow::Result<String> {
    let value = format!(
        "agm_cost_{}_{}_{:x}",
        grant_id,
        if kind == TokenKind::Access { "a" } else { "r" },
        rand_suffix()
    );
    store
        .insert_tokens(
            grant_id,
            &[NewToken {
                token_hash: hash_secret(&value),
                kind,
                scope: "gitea:read gitea:write".into(),
                expires_at: now + 86_400,
            }],
            now,
        )
        .await
        .map_err(|e| anyhow!("insert_tokens: {e}"))?;
    Ok(value)
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0x5eed);
    NEXT.fetch_add(0x9e37_79b9, Ordering::Relaxed)
}

async fn page_session(
    store: &Arc<dyn Store>,
    login: &str,
    is_admin: bool,
    now: i64,
) -> anyhow::Result<String> {
    let cookie = format!("cost-bench-session-{login}-{:x}", rand_suffix());
    store
        .insert_page_session(
            &PageSession {
                id_hash: hash_secret(&cookie),
                login: login.to_owned(),
                is_admin,
                gitea_access_token: SecretString::from("gitea-page".to_owned()),
                created_at: now,
                expires_at: now + 8 * 3600,
            },
            now,
        )
        .await
        .map_err(|e| anyhow!("insert_page_session: {e}"))?;
    Ok(cookie)
}

/// Fills `app`'s store with `grants` live grants of `grants / 5` people on
/// `grants / 5` clients, and what the measurements need.
pub async fn fill(app: &App, grants: usize, ops: usize) -> anyhow::Result<Filled> {
    let server = app.oauth().context("the gateway has no OAuth")?;
    let store = server.store().clone();
    let now = server.now();
    let resource = server
        .config()
        .canonical_resource(None)
        .context("no resource")?;
    // At least two pages of clients (the admin's pages hold 50), so that
    // every size shows the same pages: what grows is only the tables.
    let clients = (grants / GRANTS_PER_PERSON).max(100);
    for c in 0..clients {
        store
            .insert_client(&client(&format!("client-{c}"), now), None, now)
            .await
            .map_err(|e| anyhow!("insert_client: {e}"))?;
    }
    for g in 0..grants {
        let person = format!("user{}", g / GRANTS_PER_PERSON);
        let client_id = format!("client-{}", g % clients);
        store
            .insert_grant(
                &grant(&format!("g{g}"), &person, &client_id, &resource, now),
                now,
            )
            .await
            .map_err(|e| anyhow!("insert_grant: {e}"))?;
    }
    // The measured person's own connection, beside the filled ones.
    let person = "measured".to_owned();
    store
        .insert_grant(
            &grant("g-measured", &person, "client-0", &resource, now),
            now,
        )
        .await
        .map_err(|e| anyhow!("insert_grant: {e}"))?;
    let access_token = token(&store, "g-measured", TokenKind::Access, now).await?;
    let mut refresh_tokens = Vec::with_capacity(ops);
    for _ in 0..ops {
        refresh_tokens.push(token(&store, "g-measured", TokenKind::Refresh, now).await?);
    }
    let mut to_revoke = Vec::with_capacity(ops);
    for r in 0..ops {
        let id = format!("g-revoked-{r}");
        store
            .insert_grant(
                &grant(&id, &format!("leaver{r}"), "client-0", &resource, now),
                now,
            )
            .await
            .map_err(|e| anyhow!("insert_grant: {e}"))?;
        to_revoke.push(token(&store, &id, TokenKind::Access, now).await?);
    }
    Ok(Filled {
        admin_cookie: page_session(&store, "root", true, now).await?,
        person_cookie: page_session(&store, &person, false, now).await?,
        client_id: "client-0".into(),
        access_token,
        refresh_tokens,
        to_revoke,
    })
}

/// A week and a day of activity of `people` people, one connection each,
/// busy `hours_a_day` hours a day: the rows `/admin`'s charts read.
pub async fn fill_activity(app: &App, people: usize, hours_a_day: i64) -> anyhow::Result<()> {
    let server = app.oauth().context("the gateway has no OAuth")?;
    let store = server.store();
    let now = server.now();
    let mut notes = Vec::with_capacity(4096);
    for p in 0..people {
        for day in 0..8 {
            for hour in 0..hours_a_day {
                notes.push(ActivityNote {
                    grant_id: format!("g{}", p * GRANTS_PER_PERSON),
                    login: format!("user{p}"),
                    client_id: format!("client-{p}"),
                    tool: [
                        "gitea_issue_list_issues",
                        "gitea_repo_get",
                        "gitea_user_get_current",
                    ][(p + hour as usize) % 3]
                        .to_owned(),
                    outcome: CallOutcome::Ok,
                    at: now - day * 86_400 - hour * 3600,
                });
            }
        }
        if notes.len() >= 4000 {
            store
                .record_activity(&notes)
                .await
                .map_err(|e| anyhow!("record_activity: {e}"))?;
            notes.clear();
        }
    }
    store
        .record_activity(&notes)
        .await
        .map_err(|e| anyhow!("record_activity: {e}"))?;
    Ok(())
}
