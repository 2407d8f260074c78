//! The fixture of `tests/store.rs`: a store location per test (a SQLite
//! file in a temporary directory, or a fresh PostgreSQL database), raw
//! reads that bypass the store, and builders for the records.

use std::future::Future;

// What every behaviour file uses, through `use super::fixture::*`.
pub use std::collections::HashSet;
pub use std::sync::Arc;

pub use aegis_gitea_mcp::outcome::CallOutcome;
pub use aegis_gitea_mcp::store::cipher::TokenCipher;
pub use aegis_gitea_mcp::store::{
    ActivityNote, AuthCodeRecord, ClientAuthorization, ClientRecord, CodeRedemption, Confirmation,
    ConfirmationState, GiteaApp, GiteaTokens, GrantRecord, NewToken, PageSession,
    PendingAuthorization, PendingSignIn, PendingTake, PruneCounts, RefreshOutcome, Registration,
    SecretHash, Store, StoreError, StoreLimits, StoreLocation, TokenEndpointAuthMethod, TokenKind,
    UNUSED_REGISTRATION_TTL, UNUSED_REGISTRATIONS_PER_NETWORK, UpstreamKey, UpstreamLeg,
    hash_secret, open_store,
};
pub use secrecy::{ExposeSecret, SecretString};

use crate::postgres_cluster as postgres;
use sqlx::Connection;

pub const NOW: i64 = 1_700_000_000;
pub const DAY: i64 = 24 * 60 * 60;
pub const ACCESS_TTL: i64 = 3600;
pub const REFRESH_TTL: i64 = 30 * DAY;

pub const KEY_A: &str = "test-key-material-A-0123456789abcdefghijklmnop";
pub const KEY_B: &str = "test-key-material-B-0123456789abcdefghijklmnop";
pub const KEY_C: &str = "test-key-material-C-0123456789abcdefghijklmnop";

/// Where one test's store lives.
pub struct Fixture {
    location: StoreLocation,
    /// Keeps the SQLite directory alive for the test.
    _dir: Option<tempfile::TempDir>,
    /// PostgreSQL: the server URL and this test's database URL, to drop it.
    postgres: Option<(String, String)>,
}

impl Fixture {
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        Self {
            // A directory that does not exist yet: opening creates it.
            location: StoreLocation::Sqlite(dir.path().join("data")),
            _dir: Some(dir),
            postgres: None,
        }
    }

    /// A fresh database on the test server (`AEGIS_TEST_POSTGRES_URL`'s,
    /// or a cluster of this process: `support/postgres.rs`).
    pub async fn postgres() -> Self {
        let server = postgres::server_url();
        let url = postgres::fresh_database(&server).await;
        Self {
            location: StoreLocation::Postgres(SecretString::from(url.clone())),
            _dir: None,
            postgres: Some((server, url)),
        }
    }

    /// Drops this test's PostgreSQL database.
    pub async fn drop_database(&self) {
        if let Some((server, url)) = &self.postgres {
            postgres::drop_database(server, url).await;
        }
    }

    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    pub fn backend(&self) -> &'static str {
        self.location.backend()
    }

    pub async fn open(&self) -> Arc<dyn Store> {
        self.open_as(&[KEY_A], StoreLimits::default()).await
    }

    pub async fn open_limited(&self, limits: StoreLimits) -> Arc<dyn Store> {
        self.open_as(&[KEY_A], limits).await
    }

    pub async fn open_with_keys(&self, keys: &[&str]) -> Arc<dyn Store> {
        self.open_as(keys, StoreLimits::default()).await
    }

    async fn open_as(&self, keys: &[&str], limits: StoreLimits) -> Arc<dyn Store> {
        let keys: Vec<SecretString> = keys.iter().map(|k| SecretString::from(*k)).collect();
        let cipher = TokenCipher::new(&keys).expect("cipher");
        open_store(&self.location, cipher, limits)
            .await
            .expect("open the store")
    }

    /// Text values of a query run directly on the database, bypassing the
    /// store (NULLs skipped).
    pub async fn raw_texts(&self, sql: &str) -> Vec<String> {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        match &self.location {
            StoreLocation::Sqlite(_) => {
                let file = self.location.sqlite_file().expect("sqlite file");
                let mut conn =
                    sqlx::SqliteConnection::connect(&format!("sqlite://{}", file.display()))
                        .await
                        .expect("open the SQLite file");
                let rows: Vec<Option<String>> = sqlx::query_scalar(sql)
                    .fetch_all(&mut conn)
                    .await
                    .expect("raw query");
                rows.into_iter().flatten().collect()
            }
            StoreLocation::Postgres(url) => {
                let url = url.expose_secret().to_owned();
                let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
                let rows: Vec<Option<String>> = sqlx::query_scalar(sql)
                    .fetch_all(&mut conn)
                    .await
                    .expect("raw query");
                rows.into_iter().flatten().collect()
            }
        }
    }

    /// Runs statements directly on the database, bypassing the store (one
    /// connection, in order; `;`-separated SQL as a migration file holds).
    pub async fn raw_execute(&self, sql: &str) {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        match &self.location {
            StoreLocation::Sqlite(_) => {
                let file = self.location.sqlite_file().expect("sqlite file");
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(&file)
                    .create_if_missing(true);
                let mut conn = sqlx::SqliteConnection::connect_with(&options)
                    .await
                    .expect("open the SQLite file");
                sqlx::raw_sql(sql)
                    .execute(&mut conn)
                    .await
                    .expect("raw SQL");
            }
            StoreLocation::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url.expose_secret())
                    .await
                    .expect("connect");
                sqlx::raw_sql(sql)
                    .execute(&mut conn)
                    .await
                    .expect("raw SQL");
            }
        }
    }

    /// Applies this backend's migration files up to `level`, as the binary
    /// of that level did (sqlx's table included), without the store.
    pub async fn apply_migrations_up_to(&self, level: i64) {
        let folder = match self.location {
            StoreLocation::Sqlite(_) => "migrations/sqlite",
            StoreLocation::Postgres(_) => "migrations/postgres",
        };
        let mut files: Vec<_> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let migrations: Vec<sqlx::migrate::Migration> = files
            .iter()
            .take(level as usize)
            .enumerate()
            .map(|(i, path)| {
                sqlx::migrate::Migration::new(
                    i as i64 + 1,
                    std::borrow::Cow::Owned(format!("file {}", i + 1)),
                    sqlx::migrate::MigrationType::Simple,
                    sqlx::SqlSafeStr::into_sql_str(sqlx::AssertSqlSafe(
                        std::fs::read_to_string(path).unwrap(),
                    )),
                    false,
                )
            })
            .collect();
        let migrator = sqlx::migrate::Migrator::with_migrations(migrations);
        match &self.location {
            StoreLocation::Sqlite(_) => {
                let file = self.location.sqlite_file().expect("sqlite file");
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(&file)
                    .create_if_missing(true);
                let mut conn = sqlx::SqliteConnection::connect_with(&options)
                    .await
                    .expect("open the SQLite file");
                migrator.run(&mut conn).await.expect("migrate");
            }
            StoreLocation::Postgres(url) => {
                let mut conn = sqlx::PgConnection::connect(url.expose_secret())
                    .await
                    .expect("connect");
                migrator.run(&mut conn).await.expect("migrate");
            }
        }
    }

    /// Makes the store look as a newer binary left it: migration `level`
    /// applied (it changes nothing here) and recorded in the history with
    /// its oldest reader, its applier and the backup taken before it.
    pub async fn pretend_newer_migration(&self, level: i64, oldest_reader: i64, backup: &str) {
        let checksum = match self.location {
            StoreLocation::Sqlite(_) => "X'00'",
            StoreLocation::Postgres(_) => "'\\x00'::bytea",
        };
        self.raw_execute(&format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ({level}, 'from the future', TRUE, {checksum}, 0); \
             INSERT INTO aegis_schema_history \
             (version, description, oldest_reader, applied_by, backup, recorded_at) \
             VALUES ({level}, 'future step {level}', {oldest_reader}, '9.9.9 (future)', '{backup}', {NOW})"
        ))
        .await;
    }

    /// `(token hash, state)` of every refresh token of a grant, sorted.
    pub async fn refresh_states(&self, grant_id: &str) -> Vec<(String, String)> {
        let sql = format!(
            "SELECT token_hash || ' ' || state FROM tokens \
             WHERE grant_id = '{grant_id}' AND kind = 'refresh'"
        );
        let mut rows: Vec<(String, String)> = self
            .raw_texts(&sql)
            .await
            .into_iter()
            .filter_map(|row| {
                row.split_once(' ')
                    .map(|(h, s)| (h.to_owned(), s.to_owned()))
            })
            .collect();
        rows.sort();
        rows
    }
}

/// Runs `n` copies of a task at once (on the multi-threaded runtime) and
/// collects their results.
pub async fn race<T, F, Fut>(n: usize, task: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
{
    let barrier = Arc::new(tokio::sync::Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let barrier = barrier.clone();
            let fut = task(i);
            tokio::spawn(async move {
                barrier.wait().await;
                fut.await
            })
        })
        .collect();
    let mut results = Vec::with_capacity(n);
    for handle in handles {
        results.push(handle.await.expect("task panicked"));
    }
    results
}

// -- record builders -------------------------------------------------------------

pub fn client(id: &str, created_at: i64) -> ClientRecord {
    ClientRecord {
        client_id: id.to_owned(),
        client_name: Some(format!("Client {id}")),
        redirect_uris: vec!["http://127.0.0.1:9999/callback".to_owned()],
        token_endpoint_auth_method: TokenEndpointAuthMethod::None,
        grant_types: vec!["authorization_code".to_owned(), "refresh_token".to_owned()],
        response_types: vec!["code".to_owned()],
        scope: None,
        registration: Registration::Dynamic,
        secret_hash: None,
        metadata: serde_json::json!({ "client_name": format!("Client {id}") }),
        created_at,
        expires_at: None,
    }
}

/// A pending authorization whose id is `hash_secret(id)`.
pub fn pending(id: &str, now: i64, ttl: i64) -> PendingAuthorization {
    PendingAuthorization {
        id_hash: hash_secret(id),
        flow: PendingSignIn::Client(ClientAuthorization {
            client_id: "c1".to_owned(),
            redirect_uri: "http://127.0.0.1:9999/callback".to_owned(),
            state: Some("client-state".to_owned()),
            code_challenge: "challenge".to_owned(),
            resource: "https://gw.example/mcp".to_owned(),
            scope: "gitea".to_owned(),
            csrf_hash: hash_secret(&format!("csrf-{id}")),
        }),
        created_at: now,
        expires_at: now + ttl,
        upstream: None,
    }
}

/// The key a callback presents: `hash_secret(state)` and
/// `hash_secret(binding)`.
pub fn upstream_key(state: &str, binding: &str) -> UpstreamKey {
    UpstreamKey {
        state_hash: hash_secret(state),
        binding_hash: hash_secret(binding),
    }
}

/// An upstream leg for state `state`, whose verifier is `verifier-STATE`.
pub fn leg(state: &str) -> UpstreamLeg {
    UpstreamLeg {
        state_hash: hash_secret(state),
        pkce_verifier: SecretString::from(format!("verifier-{state}")),
        binding_hash: hash_secret(&format!("binding-{state}")),
        nonce_hash: hash_secret(&format!("nonce-{state}")),
    }
}

pub fn gitea_tokens(access: &str, refresh: Option<&str>, expires_at: Option<i64>) -> GiteaTokens {
    GiteaTokens {
        issued_at: expires_at.map(|_| NOW),
        access_token: SecretString::from(access),
        refresh_token: refresh.map(SecretString::from),
        expires_at,
    }
}

/// A fresh (unactivated) grant holding Gitea tokens `gitea-access-ID` and
/// `gitea-refresh-ID`.
pub fn grant(id: &str, login: &str, client_id: &str) -> GrantRecord {
    GrantRecord {
        id: id.to_owned(),
        login: login.to_owned(),
        client_id: client_id.to_owned(),
        scope: "gitea".to_owned(),
        resource: "https://gw.example/mcp".to_owned(),
        gitea: gitea_tokens(
            &format!("gitea-access-{id}"),
            Some(&format!("gitea-refresh-{id}")),
            Some(NOW + 7200),
        ),
        gitea_subject: Some(format!("sub-{login}")),
        gitea_app: GiteaApp::ReadWrite,
        gitea_tokens_version: 0,
        redirect_uri: Some("https://app.example/cb".to_owned()),
        created_at: NOW,
        activated_at: None,
        last_used_at: None,
        revoked_at: None,
    }
}

/// A page session whose cookie is `cookie` (stored as `hash_secret(cookie)`),
/// holding Gitea token `gitea-page-COOKIE`, created at `now`, living `ttl`.
pub fn page_session(cookie: &str, login: &str, now: i64, ttl: i64) -> PageSession {
    PageSession {
        id_hash: hash_secret(cookie),
        login: login.to_owned(),
        is_admin: false,
        gitea_access_token: SecretString::from(format!("gitea-page-{cookie}")),
        created_at: now,
        expires_at: now + ttl,
    }
}

/// A code `hash_secret(code)` of a grant (client `c1`).
pub fn code(code: &str, grant_id: &str, now: i64, ttl: i64) -> AuthCodeRecord {
    AuthCodeRecord {
        code_hash: hash_secret(code),
        grant_id: grant_id.to_owned(),
        client_id: "c1".to_owned(),
        redirect_uri: "http://127.0.0.1:9999/callback".to_owned(),
        code_challenge: "challenge".to_owned(),
        resource: "https://gw.example/mcp".to_owned(),
        scope: "gitea".to_owned(),
        created_at: now,
        expires_at: now + ttl,
        redeemed_at: None,
    }
}

/// The stored hash of access token `t`.
pub fn access(t: &str) -> SecretHash {
    hash_secret(&format!("agm_access_{t}"))
}

/// The stored hash of refresh token `t`.
pub fn refresh(t: &str) -> SecretHash {
    hash_secret(&format!("agm_refresh_{t}"))
}

/// A token pair named `t`, issued at [`NOW`].
pub fn pair(t: &str) -> Vec<NewToken> {
    vec![
        NewToken {
            token_hash: access(t),
            kind: TokenKind::Access,
            scope: "gitea".to_owned(),
            expires_at: NOW + ACCESS_TTL,
        },
        NewToken {
            token_hash: refresh(t),
            kind: TokenKind::Refresh,
            scope: "gitea".to_owned(),
            expires_at: NOW + REFRESH_TTL,
        },
    ]
}

/// A token pair named `t` whose tokens both expire at `expires_at`.
pub fn pair_expiring(t: &str, expires_at: i64) -> Vec<NewToken> {
    pair(t)
        .into_iter()
        .map(|token| NewToken {
            expires_at,
            ..token
        })
        .collect()
}

// -- steps shared by the behaviours ----------------------------------------------

/// A grant with a redeemed code and an issued token pair `access(t)` /
/// `refresh(t)`: the state after a completed sign-in. Returns its id.
pub async fn issued_grant(
    store: &Arc<dyn Store>,
    id: &str,
    login: &str,
    client: &str,
    t: &str,
) -> String {
    store
        .insert_grant(&grant(id, login, client), NOW)
        .await
        .unwrap();
    let k = code(&format!("code-{id}"), id, NOW, 60);
    store.insert_code(&k, NOW).await.unwrap();
    assert!(matches!(
        store.redeem_code(&k.code_hash, NOW).await.unwrap(),
        CodeRedemption::Redeemed(_)
    ));
    store.insert_tokens(id, &pair(t), NOW).await.unwrap();
    id.to_owned()
}

/// Rotates `from` into the pair `to`, which must succeed.
pub async fn rotated(store: &Arc<dyn Store>, from: &str, to: &str, now: i64) {
    let outcome = store
        .rotate_refresh_token(&refresh(from), "c1", &pair(to), now)
        .await
        .unwrap();
    assert!(
        matches!(outcome, RefreshOutcome::Rotated { .. }),
        "{from} → {to}: {outcome:?}"
    );
}

/// Expected `(refresh token hash, state)` rows, sorted as
/// [`Fixture::refresh_states`] returns them.
pub fn states(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut rows: Vec<_> = expected
        .iter()
        .map(|(t, s)| (refresh(t).as_str().to_owned(), (*s).to_owned()))
        .collect();
    rows.sort();
    rows
}
