//! Test controls of the fake's OAuth2 provider: who is signed in at Gitea,
//! the registered redirect URI, token expiry and revocation, injected
//! failures, and what the provider was asked.

use std::collections::BTreeMap;
use std::sync::MutexGuard;

use super::super::{FakeGitea, user};
use super::Provider;

/// Test controls of the OAuth2 provider.
impl FakeGitea {
    fn provider(&self) -> MutexGuard<'_, Provider> {
        self.state.oauth.lock().unwrap()
    }

    /// Registers `uri` as the application's only redirect URI.
    pub fn set_oauth_redirect_uri(&self, uri: &str) {
        self.provider().redirect_uris = vec![uri.to_owned()];
    }

    /// Registers one more redirect URI (Gitea allows several).
    pub fn add_oauth_redirect_uri(&self, uri: &str) {
        self.provider().redirect_uris.push(uri.to_owned());
    }

    /// The browser now holds a Gitea session for `login`, who has already
    /// granted the application. Panics on an account the fake lacks.
    pub fn sign_in_as(&self, login: &str) {
        let account = user(login).unwrap_or_else(|| panic!("the fake has no user {login:?}"));
        self.provider().signed_in = Some(account);
    }

    /// The browser's Gitea session ends.
    pub fn sign_out(&self) {
        self.provider().signed_in = None;
    }

    /// The next authorization that would succeed is denied by the user
    /// instead: redirect with `error=access_denied`.
    pub fn deny_next_authorization(&self) {
        self.provider().deny_next = true;
    }

    /// The query of the latest `GET /login/oauth/authorize`, decoded (the
    /// first value of a repeated parameter, as Gitea reads it).
    pub fn last_authorize_query(&self) -> Option<BTreeMap<String, String>> {
        self.provider().authorize_queries.last().cloned()
    }

    /// The queries of every `GET /login/oauth/authorize`, oldest first.
    pub fn authorize_queries(&self) -> Vec<BTreeMap<String, String>> {
        self.provider().authorize_queries.clone()
    }

    /// How many token requests named this `grant_type`, whatever the answer.
    pub fn token_requests(&self, grant_type: &str) -> usize {
        self.provider()
            .token_requests
            .get(grant_type)
            .copied()
            .unwrap_or(0)
    }

    /// Every access token minted so far stops working: the API answers 401.
    pub fn expire_access_tokens(&self) {
        for token in self.provider().access.values_mut() {
            token.expired = true;
        }
    }

    /// Every refresh token minted so far stops working: a refresh with one
    /// answers 400 `invalid_grant` ("grant does not exist"). Tokens minted
    /// later work.
    pub fn revoke_refresh_tokens(&self) {
        for token in self.provider().refresh.values_mut() {
            token.revoked = true;
        }
    }

    /// The user revoked the applications in their Gitea settings: their
    /// access tokens answer 401 and their refresh tokens `invalid_grant`
    /// from now on. Signing in again grants anew.
    pub fn revoke_grant(&self, login: &str) {
        let account = user(login).unwrap_or_else(|| panic!("the fake has no user {login:?}"));
        self.provider()
            .grants
            .retain(|(_, holder), _| *holder != account.login);
    }

    /// The scopes of `login`'s grant to `app`, as Gitea stored them on
    /// the first authorize request.
    pub fn grant_scope(&self, app: super::FakeApp, login: &str) -> Option<String> {
        let account = user(login)?;
        self.provider()
            .grants
            .get(&(app, account.login))
            .map(|grant| grant.scope.clone())
    }

    /// The next `refresh_token` grant from an authenticated client answers
    /// 400 with this `error` code.
    pub fn fail_next_refresh_with(&self, error: &str) {
        self.provider().fail_next_refresh = Some(error.to_owned());
    }

    /// `expires_in` (and the real lifetime) of access tokens minted from now
    /// on; 0 mints tokens that are already expired.
    pub fn set_access_token_lifetime(&self, secs: u64) {
        self.provider().access_lifetime = secs;
    }

    /// Gitea's `[oauth2] INVALIDATE_REFRESH_TOKENS`: when on, only the
    /// latest refresh token of a user's grant works; an older one answers
    /// 400 `unauthorized_client` ("token was already used").
    pub fn set_invalidate_refresh_tokens(&self, on: bool) {
        self.provider().invalidate_refresh_tokens = on;
    }

    /// The most recently minted access token of `login`, if any.
    pub fn latest_access_token(&self, login: &str) -> Option<String> {
        let provider = self.provider();
        let account = user(login)?;
        provider
            .access
            .iter()
            .filter(|(_, t)| t.login == account.login)
            .max_by_key(|(_, t)| t.serial)
            .map(|(token, _)| token.clone())
    }

    /// The unrevoked refresh tokens of `login`.
    pub fn refresh_tokens(&self, login: &str) -> Vec<String> {
        let provider = self.provider();
        provider
            .refresh
            .iter()
            .filter(|(_, t)| t.login == login && !t.revoked)
            .map(|(token, _)| token.clone())
            .collect()
    }

    /// The next ID token the provider issues is forged as `forgery` says.
    pub fn forge_next_id_token(&self, forgery: super::Forgery) {
        self.provider().forge_next = Some(forgery);
    }
}
