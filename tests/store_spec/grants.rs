//! Access tokens, grants, revocation and the per-login grant cap.

use super::fixture::*;

pub async fn access_tokens_resolve_until_expiry_or_revocation(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    let resolved = store
        .resolve_access_token(&access("t1"), NOW)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(resolved.grant.login, "alice");
    assert_eq!(resolved.scope, "gitea");
    assert_eq!(resolved.expires_at, NOW + ACCESS_TTL);
    assert_eq!(
        resolved.grant.gitea.access_token.expose_secret(),
        "gitea-access-g1"
    );
    assert!(
        store
            .resolve_access_token(&access("t1"), NOW + ACCESS_TTL)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .resolve_access_token(&refresh("t1"), NOW)
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.revoke_grant("g1", NOW + 1).await.unwrap());
    assert!(
        store
            .resolve_access_token(&access("t1"), NOW + 1)
            .await
            .unwrap()
            .is_none()
    );
}

/// The staleness bound of the `TokenStore` contract: a revocation through
/// another store on the same database (another replica) is seen from the
/// next second of the caller's clock; one through the same store at once.
pub async fn a_revocation_elsewhere_is_seen_within_the_stale_bound(f: &Fixture) {
    use aegis_gitea_mcp::store::RESOLVED_STALE_FOR;
    let here = f.open().await;
    let elsewhere = f.open().await;
    issued_grant(&here, "g1", "alice", "c1", "t1").await;
    issued_grant(&here, "g2", "bob", "c1", "t2").await;
    for token in ["t1", "t2"] {
        let resolved = here
            .resolve_access_token(&access(token), NOW)
            .await
            .unwrap();
        assert!(resolved.is_some(), "{token} resolves");
    }
    assert!(elsewhere.revoke_grant("g1", NOW).await.unwrap());
    let later = NOW + RESOLVED_STALE_FOR;
    assert!(
        here.resolve_access_token(&access("t1"), later)
            .await
            .unwrap()
            .is_none(),
        "seen within the bound"
    );
    assert!(here.revoke_grant("g2", NOW).await.unwrap());
    assert!(
        here.resolve_access_token(&access("t2"), NOW)
            .await
            .unwrap()
            .is_none(),
        "seen at once through the same store"
    );
}

pub async fn revoke_grant_deletes_its_tokens_and_codes(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    store
        .insert_code(&code("k2", "g1", NOW, 60), NOW)
        .await
        .unwrap();
    assert_eq!(
        store
            .grant_of_token(&refresh("t1"))
            .await
            .unwrap()
            .unwrap()
            .id,
        "g1"
    );
    assert!(store.revoke_grant("g1", NOW + 5).await.unwrap());
    assert!(!store.revoke_grant("g1", NOW + 6).await.unwrap());
    assert!(
        store
            .grant_of_token(&refresh("t1"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.grant_of_token(&access("t1")).await.unwrap().is_none());
    assert_eq!(
        store
            .redeem_code(&hash_secret("k2"), NOW + 7)
            .await
            .unwrap(),
        CodeRedemption::Unknown
    );
    assert_eq!(
        store.get_grant("g1").await.unwrap().unwrap().revoked_at,
        Some(NOW + 5)
    );
}

pub async fn tokens_for_a_revoked_grant_are_not_stored(f: &Fixture) {
    let store = with_grant_g1(f).await;
    store.revoke_grant("g1", NOW).await.unwrap();
    store.insert_tokens("g1", &pair("t1"), NOW).await.unwrap();
    assert!(store.grant_of_token(&access("t1")).await.unwrap().is_none());
}

pub async fn grants_per_login_cap_revokes_the_least_recently_used(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_grants_per_login: 2,
            ..StoreLimits::default()
        })
        .await;
    issued_grant(&store, "old-but-busy", "alice", "c1", "t1").await;
    issued_grant(&store, "idle", "alice", "c2", "t2").await;
    store
        .insert_grant(&grant("bob's", "bob", "c1"), NOW)
        .await
        .unwrap();
    store.touch_grant("old-but-busy", NOW + 50).await.unwrap();
    store.touch_grant("idle", NOW + 10).await.unwrap();

    let evicted = store
        .insert_grant(&grant("newest", "alice", "c3"), NOW + 60)
        .await
        .unwrap();

    assert_eq!(evicted, vec!["idle".to_owned()]);
    assert_eq!(
        store.get_grant("idle").await.unwrap().unwrap().revoked_at,
        Some(NOW + 60)
    );
    assert!(
        store
            .resolve_access_token(&access("t2"), NOW + 60)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get_grant("old-but-busy")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none()
    );
    assert!(
        store
            .get_grant("bob's")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none()
    );
}

pub async fn lists_show_activated_unrevoked_grants_newest_first(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    let mut later = grant("g2", "alice", "c2");
    later.created_at = NOW + 10;
    later.activated_at = Some(NOW + 10);
    store.insert_grant(&later, NOW + 10).await.unwrap();
    store
        .insert_grant(&grant("never-activated", "alice", "c3"), NOW)
        .await
        .unwrap();
    issued_grant(&store, "revoked", "alice", "c4", "t4").await;
    store.revoke_grant("revoked", NOW).await.unwrap();
    issued_grant(&store, "bobs", "bob", "c1", "t5").await;

    let ids =
        |grants: Vec<GrantRecord>| -> Vec<String> { grants.into_iter().map(|g| g.id).collect() };
    assert_eq!(
        ids(store.list_grants_for_login("alice").await.unwrap()),
        ["g2", "g1"]
    );
    let all = ids(store.list_grants().await.unwrap());
    assert_eq!(all[0], "g2");
    assert_eq!(all.len(), 3);
    assert_eq!(store.count_active_grants().await.unwrap(), 3);
}

/// A store holding alice's grant `g1` of client `c1`.
async fn with_grant_g1(f: &Fixture) -> Arc<dyn Store> {
    let store = f.open().await;
    store
        .insert_grant(&grant("g1", "alice", "c1"), NOW)
        .await
        .unwrap();
    store
}

/// A read grant's session renews only at the read application, so the
/// grant remembers which application holds it.
pub async fn a_grant_keeps_the_gitea_application_of_its_session(f: &Fixture) {
    let store = f.open().await;
    let mut read = grant("g1", "alice", "c1");
    read.scope = "gitea:read".into();
    read.gitea_app = GiteaApp::Read;
    store.insert_grant(&read, NOW).await.unwrap();
    store
        .insert_grant(&grant("g2", "alice", "c1"), NOW)
        .await
        .unwrap();
    let g1 = store.get_grant("g1").await.unwrap().unwrap();
    let g2 = store.get_grant("g2").await.unwrap().unwrap();
    assert_eq!(
        (g1.gitea_app, g1.scope.as_str()),
        (GiteaApp::Read, "gitea:read")
    );
    assert_eq!(g2.gitea_app, GiteaApp::ReadWrite);
}

pub async fn gitea_tokens_can_be_replaced(f: &Fixture) {
    let store = with_grant_g1(f).await;
    assert!(
        store
            .update_gitea_tokens("g1", 0, &gitea_tokens("renewed", None, None))
            .await
            .unwrap()
    );
    let g = store.get_grant("g1").await.unwrap().unwrap();
    assert_eq!(g.gitea.access_token.expose_secret(), "renewed");
    assert!(g.gitea.refresh_token.is_none());
    assert_eq!(g.gitea.expires_at, None);
    assert_eq!(g.gitea_tokens_version, 1);
}

/// Compare-and-swap: of two refreshes that read version 0, the second
/// replaces nothing, so an older pair never overwrites a newer one.
pub async fn an_older_token_pair_never_overwrites_a_newer_one(f: &Fixture) {
    let store = with_grant_g1(f).await;
    let first = gitea_tokens("first", Some("refresh-1"), Some(NOW + 3600));
    let late = gitea_tokens("late", Some("refresh-late"), Some(NOW + 60));
    assert!(store.update_gitea_tokens("g1", 0, &first).await.unwrap());
    assert!(!store.update_gitea_tokens("g1", 0, &late).await.unwrap());
    let g = store.get_grant("g1").await.unwrap().unwrap();
    assert_eq!(g.gitea.access_token.expose_secret(), "first");
    assert_eq!(g.gitea_tokens_version, 1);
}

pub async fn a_revoked_grant_gets_no_new_gitea_tokens(f: &Fixture) {
    let store = with_grant_g1(f).await;
    store.revoke_grant("g1", NOW).await.unwrap();
    let renewed = gitea_tokens("renewed", None, None);
    assert!(!store.update_gitea_tokens("g1", 0, &renewed).await.unwrap());
}

/// A refresh refused for tokens someone has since replaced ends nothing;
/// refused for the current ones, it revokes the grant.
pub async fn revocation_at_a_replaced_version_ends_nothing(f: &Fixture) {
    let store = with_grant_g1(f).await;
    let renewed = gitea_tokens("renewed", None, None);
    assert!(store.update_gitea_tokens("g1", 0, &renewed).await.unwrap());
    assert!(!store.revoke_grant_at_version("g1", 0, NOW).await.unwrap());
    assert!(
        store
            .get_grant("g1")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none()
    );
    assert!(store.revoke_grant_at_version("g1", 1, NOW).await.unwrap());
    assert_eq!(
        store.get_grant("g1").await.unwrap().unwrap().revoked_at,
        Some(NOW)
    );
}

/// PostgreSQL: two stores on one database (two replicas) never hold one
/// grant's refresh lock at once; another grant's lock is free meanwhile.
/// SQLite serves one process and holds nothing.
pub async fn the_upstream_refresh_lock_excludes_other_replicas(f: &Fixture) {
    let first = f.open().await;
    let second = f.open().await;
    let held = first.lock_upstream_refresh("g1").await.unwrap();
    let waited = tokio::time::timeout(
        std::time::Duration::from_millis(300),
        second.lock_upstream_refresh("g1"),
    )
    .await;
    if first.backend() == "sqlite" {
        assert!(waited.is_ok(), "SQLite holds no cross-process lock");
        return;
    }
    assert!(waited.is_err(), "the second replica waits for the first");
    let other = second.lock_upstream_refresh("g2").await.unwrap();
    other.release().await.unwrap();
    let waiting = tokio::spawn({
        let second = second.clone();
        async move { second.lock_upstream_refresh("g1").await.map(drop) }
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert!(!waiting.is_finished());
    held.release().await.unwrap();
    tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
        .await
        .expect("the lock passes on release")
        .unwrap()
        .unwrap();
}

pub async fn consent_can_be_recorded_repeatedly(f: &Fixture) {
    let store = f.open().await;
    store
        .record_consent("alice", "c1", "gitea", NOW)
        .await
        .unwrap();
    store
        .record_consent("alice", "c1", "gitea", NOW + 1)
        .await
        .unwrap();
}
