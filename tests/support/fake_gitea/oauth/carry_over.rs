//! The provider's sessions carried from one fake to another, as a Gitea
//! keeps its database across the gateway's upgrade: a store fixture written
//! by an earlier version of the gateway (tests/fixtures/stores/) records the
//! grants and tokens its fake issued, and the fake that replays it adopts
//! them, so the Gitea sessions in the old store still work.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::super::{FakeGitea, user};
use super::{AccessToken, FakeApp, Grant, REFRESH_TOKEN_LIFETIME, RefreshToken};

fn app_name(app: FakeApp) -> &'static str {
    match app {
        FakeApp::ReadWrite => "read-write",
        FakeApp::Read => "read",
    }
}

fn app_of(name: &str) -> FakeApp {
    match name {
        "read" => FakeApp::Read,
        _ => FakeApp::ReadWrite,
    }
}

impl FakeGitea {
    /// Every grant and live token the provider issued, as JSON.
    pub fn issued_sessions(&self) -> Value {
        let provider = self.state.oauth.lock().unwrap();
        let grants: Vec<Value> = provider
            .grants
            .iter()
            .map(|((app, login), g)| {
                json!({"app": app_name(*app), "login": login, "id": g.id,
                       "counter": g.counter, "scope": g.scope})
            })
            .collect();
        let access: Vec<Value> = provider
            .access
            .iter()
            .filter(|(_, t)| !t.expired)
            .map(|(token, t)| {
                json!({"token": token, "app": app_name(t.app), "login": t.login,
                       "grant": t.grant_id, "serial": t.serial})
            })
            .collect();
        let refresh: Vec<Value> = provider
            .refresh
            .iter()
            .filter(|(_, t)| !t.revoked)
            .map(|(token, t)| {
                json!({"token": token, "app": app_name(t.app), "login": t.login,
                       "grant": t.grant_id, "counter": t.counter})
            })
            .collect();
        json!({"grants": grants, "access": access, "refresh": refresh})
    }

    /// Takes over sessions another fake issued ([`Self::issued_sessions`]),
    /// each access token with a fresh lifetime.
    pub fn adopt_sessions(&self, sessions: &Value) {
        let mut provider = self.state.oauth.lock().unwrap();
        let login_of = |v: &Value| user(v["login"].as_str().unwrap()).unwrap().login;
        let lifetime = Duration::from_secs(provider.access_lifetime);
        for g in sessions["grants"].as_array().unwrap() {
            let id = g["id"].as_u64().unwrap();
            provider.next_grant_id = provider.next_grant_id.max(id + 1);
            provider.grants.insert(
                (app_of(g["app"].as_str().unwrap()), login_of(g)),
                Grant {
                    id,
                    counter: g["counter"].as_u64().unwrap(),
                    scope: g["scope"].as_str().unwrap().to_owned(),
                    nonce: None,
                },
            );
        }
        for t in sessions["access"].as_array().unwrap() {
            let serial = t["serial"].as_u64().unwrap();
            provider.minted = provider.minted.max(serial + 1);
            provider.access.insert(
                t["token"].as_str().unwrap().to_owned(),
                AccessToken {
                    app: app_of(t["app"].as_str().unwrap()),
                    login: login_of(t),
                    serial,
                    grant_id: t["grant"].as_u64().unwrap(),
                    expires_at: Instant::now() + lifetime,
                    expired: false,
                },
            );
        }
        for t in sessions["refresh"].as_array().unwrap() {
            provider.refresh.insert(
                t["token"].as_str().unwrap().to_owned(),
                RefreshToken {
                    app: app_of(t["app"].as_str().unwrap()),
                    login: login_of(t),
                    grant_id: t["grant"].as_u64().unwrap(),
                    counter: t["counter"].as_u64().unwrap(),
                    expires_at: Instant::now() + REFRESH_TOKEN_LIFETIME,
                    revoked: false,
                },
            );
        }
    }
}
