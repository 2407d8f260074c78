//! A fresh PostgreSQL database per test, on the throwaway cluster that
//! `tests/postgres.sh start` runs (`.ci/run` starts it and sets
//! `AEGIS_TEST_POSTGRES_URL`). Without the variable, PostgreSQL variants of
//! the suites skip with a note.

use sqlx::Connection;

/// The server URL from the environment, if a cluster is available.
pub fn server_url() -> Option<String> {
    std::env::var("AEGIS_TEST_POSTGRES_URL")
        .ok()
        .filter(|v| !v.is_empty())
}

/// Creates an empty database with a random name and returns its URL.
/// (The cluster is throwaway; [`drop_database`] only keeps it small.)
pub async fn fresh_database(server_url: &str) -> String {
    let name = format!("aegis_test_{}", random_suffix());
    let mut conn = sqlx::PgConnection::connect(server_url)
        .await
        .expect("the PostgreSQL test cluster accepts connections");
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut conn)
        .await
        .expect("CREATE DATABASE");
    let _ = conn.close().await;
    let mut url = url::Url::parse(server_url).expect("AEGIS_TEST_POSTGRES_URL is a URL");
    url.set_path(&format!("/{name}"));
    url.to_string()
}

/// Drops the database `database_url` names (made by [`fresh_database`]).
pub async fn drop_database(server_url: &str, database_url: &str) {
    let Some(name) = url::Url::parse(database_url)
        .ok()
        .map(|u| u.path().trim_start_matches('/').to_owned())
        .filter(|n| n.starts_with("aegis_test_"))
    else {
        return;
    };
    if let Ok(mut admin) = sqlx::PgConnection::connect(server_url).await {
        let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
        let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut admin)
            .await;
        let _ = admin.close().await;
    }
}

fn random_suffix() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000,
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
