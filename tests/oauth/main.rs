//! The authorization server and the people's pages, end to end over loopback HTTP: a gateway with
//! OAuth configured in front of the fake Gitea (which plays Gitea's OAuth
//! provider), a test client that speaks only the wire, and a clock the
//! tests move. Every test runs on SQLite and on PostgreSQL; the PostgreSQL
//! variants are ignored by a plain `cargo test` and run with `cargo test
//! --test oauth -- --ignored`, on `AEGIS_TEST_POSTGRES_URL`'s cluster
//! (`.ci/run` starts one) or a throwaway one of their own.
//!
//! The checklist numbers of the issue are noted on the tests (`#n`).

#[path = "../support/mod.rs"]
mod support;

mod activity;
mod audit_events;
mod authorize;
mod client_metadata;
mod confirmation;
mod confirmation_in_call;
mod consent;
mod discovery;
mod mcp_urls;
mod oidc;
mod page_snapshots;
mod pages;
mod policy;
mod register;
mod replicas;
mod resolver;
mod revoke;
mod rotation;
mod step_up;
mod store_fixtures;
mod store_keys;
mod token;

use std::future::Future;

pub use support::oauth_client::*;

/// Runs `test` against a fresh gateway on `backend` with `extra` settings.
pub async fn run<F, Fut>(backend: Backend, extra: &[(&str, &str)], test: F)
where
    F: FnOnce(OAuthGateway) -> Fut,
    Fut: Future<Output = ()>,
{
    test(OAuthGateway::start(backend, extra).await).await;
}

/// Declares `on_sqlite` and `on_postgres` tests for an `async fn(OAuthGateway)`
/// (a module of the same name holds them), optionally with extra settings.
#[macro_export]
macro_rules! on_both_backends {
    ($test:ident $(, $extra:expr)* $(,)?) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn on_sqlite() {
                let extra: &[(&str, &str)] = &[$($extra),*];
                $crate::run($crate::Backend::Sqlite, extra, super::$test).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            #[ignore = "PostgreSQL: run with `cargo test -- --ignored` (a throwaway cluster of its own, or AEGIS_TEST_POSTGRES_URL)"]
            async fn on_postgres() {
                let extra: &[(&str, &str)] = &[$($extra),*];
                $crate::run($crate::Backend::Postgres, extra, super::$test).await;
            }
        }
    };
}

/// The JSON with the gateway's random base URL replaced, for snapshots.
pub fn normalised(gateway: &OAuthGateway, value: &serde_json::Value) -> serde_json::Value {
    let text = serde_json::to_string(value)
        .unwrap()
        .replace(&gateway.url, "http://gateway.test")
        .replace(&gateway.fake.url, "http://gitea.test");
    serde_json::from_str(&text).unwrap()
}

/// The text with the gateway's base URL replaced, for snapshots.
pub fn normalised_text(gateway: &OAuthGateway, text: &str) -> String {
    text.replace(&gateway.url, "http://gateway.test")
}
