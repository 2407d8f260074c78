//! Page sessions (sign-in to the gateway's own pages): round trip with the
//! Gitea token encrypted, expiry, sign-out, the per-login cap, pruning,
//! rekeying; and revoking every grant of a login.

use super::fixture::*;

/// How many page sessions of `login` are stored, expired or not.
async fn stored_sessions(f: &Fixture, login: &str) -> usize {
    f.raw_texts(&format!(
        "SELECT id_hash FROM page_sessions WHERE login = '{login}'"
    ))
    .await
    .len()
}

pub async fn page_session_round_trips_with_its_token_encrypted_at_rest(f: &Fixture) {
    let store = f.open().await;
    let mut admin = page_session("cookie-admin", "alice", NOW, 3600);
    admin.is_admin = true;
    store.insert_page_session(&admin, NOW).await.unwrap();
    let plain = page_session("cookie-plain", "bob", NOW, 3600);
    store.insert_page_session(&plain, NOW).await.unwrap();

    let got = store
        .get_page_session(&hash_secret("cookie-admin"), NOW + 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.id_hash, hash_secret("cookie-admin"));
    assert_eq!(got.login, "alice");
    assert!(got.is_admin);
    assert_eq!(
        got.gitea_access_token.expose_secret(),
        "gitea-page-cookie-admin"
    );
    assert_eq!((got.created_at, got.expires_at), (NOW, NOW + 3600));
    let got = store
        .get_page_session(&plain.id_hash, NOW + 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.login, "bob");
    assert!(!got.is_admin);
    assert_eq!(
        got.gitea_access_token.expose_secret(),
        "gitea-page-cookie-plain"
    );

    let at_rest = f
        .raw_texts("SELECT gitea_access_token_enc FROM page_sessions")
        .await;
    assert_eq!(at_rest.len(), 2);
    for value in &at_rest {
        assert!(!value.contains("gitea-page"), "token stored in plaintext");
    }
    let ids = f.raw_texts("SELECT id_hash FROM page_sessions").await;
    assert!(ids.iter().all(|id| !id.contains("cookie")));
    // Looking a session up by the cookie value itself does not compile:
    // `get_page_session` takes a `SecretHash`.
}

pub async fn a_page_session_ends_when_it_expires(f: &Fixture) {
    let store = f.open().await;
    let s = page_session("cookie", "alice", NOW, 600);
    store.insert_page_session(&s, NOW).await.unwrap();
    assert!(
        store
            .get_page_session(&s.id_hash, NOW + 599)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .get_page_session(&s.id_hash, NOW + 600)
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn sign_out_deletes_a_page_session_once(f: &Fixture) {
    let store = f.open().await;
    let s = page_session("cookie", "alice", NOW, 600);
    let other = page_session("other", "alice", NOW, 600);
    store.insert_page_session(&s, NOW).await.unwrap();
    store.insert_page_session(&other, NOW).await.unwrap();
    assert!(store.delete_page_session(&s.id_hash).await.unwrap());
    assert!(!store.delete_page_session(&s.id_hash).await.unwrap());
    assert!(
        store
            .get_page_session(&s.id_hash, NOW)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .get_page_session(&other.id_hash, NOW)
            .await
            .unwrap()
            .is_some()
    );
}

pub async fn page_sessions_per_login_cap_deletes_the_oldest(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_page_sessions_per_login: 2,
            ..StoreLimits::default()
        })
        .await;
    let live = |cookie: &str, now: i64| page_session(cookie, "alice", now, DAY);
    // An expired session does not count against the cap.
    store
        .insert_page_session(&page_session("short", "alice", NOW, 10), NOW)
        .await
        .unwrap();
    store
        .insert_page_session(&live("a1", NOW + 1), NOW + 1)
        .await
        .unwrap();
    store
        .insert_page_session(&page_session("bobs", "bob", NOW, DAY), NOW)
        .await
        .unwrap();
    store
        .insert_page_session(&live("a2", NOW + 20), NOW + 20)
        .await
        .unwrap();
    let present = async |cookie: &str, now: i64| {
        store
            .get_page_session(&hash_secret(cookie), now)
            .await
            .unwrap()
            .is_some()
    };
    assert!(present("a1", NOW + 20).await);
    assert!(present("a2", NOW + 20).await);

    store
        .insert_page_session(&live("a3", NOW + 30), NOW + 30)
        .await
        .unwrap();

    assert!(!present("a1", NOW + 30).await, "the oldest goes first");
    assert!(present("a2", NOW + 30).await);
    assert!(present("a3", NOW + 30).await);
    assert!(
        present("bobs", NOW + 30).await,
        "other logins are untouched"
    );
    assert_eq!(stored_sessions(f, "alice").await, 2);
}

pub async fn concurrent_page_session_inserts_never_exceed_the_cap(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_page_sessions_per_login: 3,
            ..StoreLimits::default()
        })
        .await;
    let outcomes = race(12, |i| {
        let store = store.clone();
        async move {
            let s = page_session(&format!("c{i}"), "alice", NOW, DAY);
            store.insert_page_session(&s, NOW).await
        }
    })
    .await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(stored_sessions(f, "alice").await, 3);
}

pub async fn prune_removes_expired_page_sessions_and_counts_them(f: &Fixture) {
    let store = f.open().await;
    for (cookie, login, ttl) in [
        ("old-1", "alice", 60),
        ("old-2", "bob", 60),
        ("live", "alice", DAY),
    ] {
        store
            .insert_page_session(&page_session(cookie, login, NOW, ttl), NOW)
            .await
            .unwrap();
    }

    let counts = store.prune(NOW + 60).await.unwrap();

    assert_eq!(
        counts,
        PruneCounts {
            page_sessions: 2,
            ..PruneCounts::default()
        }
    );
    assert_eq!(stored_sessions(f, "alice").await, 1);
    assert_eq!(stored_sessions(f, "bob").await, 0);
    assert!(
        store
            .get_page_session(&hash_secret("live"), NOW + 60)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(store.prune(NOW + 60).await.unwrap(), PruneCounts::default());
}

pub async fn rekey_covers_page_sessions(f: &Fixture) {
    let store = f.open_with_keys(&[KEY_A]).await;
    let s = page_session("cookie", "alice", NOW, DAY);
    store.insert_page_session(&s, NOW).await.unwrap();
    drop(store);

    let store = f.open_with_keys(&[KEY_B, KEY_A]).await;
    assert_eq!(store.verify_decryptable().await.unwrap(), 1);
    assert_eq!(store.rekey().await.unwrap(), 1);
    assert_eq!(store.rekey().await.unwrap(), 0);
    drop(store);

    let store = f.open_with_keys(&[KEY_B]).await;
    assert_eq!(store.verify_decryptable().await.unwrap(), 1);
    let got = store
        .get_page_session(&s.id_hash, NOW)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.gitea_access_token.expose_secret(), "gitea-page-cookie");
}

pub async fn a_page_session_under_a_wrong_key_is_undecryptable(f: &Fixture) {
    let store = f.open_with_keys(&[KEY_A]).await;
    let s = page_session("cookie", "alice", NOW, DAY);
    store.insert_page_session(&s, NOW).await.unwrap();
    drop(store);

    let store = f.open_with_keys(&[KEY_C]).await;
    for err in [
        store.verify_decryptable().await.unwrap_err(),
        store.get_page_session(&s.id_hash, NOW).await.unwrap_err(),
    ] {
        match &err {
            StoreError::Undecryptable { table, row } => {
                assert_eq!(
                    (*table, row.as_str()),
                    ("page_sessions", s.id_hash.as_str())
                );
            }
            other => panic!("expected Undecryptable, got {other}"),
        }
        assert!(!err.to_string().contains("gitea-page"));
    }
}

pub async fn revoke_grants_for_login_revokes_only_that_login(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "a1", "alice", "c1", "t1").await;
    issued_grant(&store, "a2", "alice", "c2", "t2").await;
    store
        .insert_code(&code("k-a2", "a2", NOW, 60), NOW)
        .await
        .unwrap();
    issued_grant(&store, "a-old", "alice", "c3", "t3").await;
    store.revoke_grant("a-old", NOW).await.unwrap();
    issued_grant(&store, "b1", "bob", "c1", "t4").await;

    assert_eq!(
        store
            .revoke_grants_for_login("alice", NOW + 5)
            .await
            .unwrap(),
        2
    );

    for t in ["t1", "t2"] {
        assert!(
            store
                .resolve_access_token(&access(t), NOW + 5)
                .await
                .unwrap()
                .is_none(),
            "{t} still resolves"
        );
        assert!(store.grant_of_token(&refresh(t)).await.unwrap().is_none());
    }
    assert_eq!(
        store
            .redeem_code(&hash_secret("k-a2"), NOW + 5)
            .await
            .unwrap(),
        CodeRedemption::Unknown
    );
    for id in ["a1", "a2"] {
        assert_eq!(
            store.get_grant(id).await.unwrap().unwrap().revoked_at,
            Some(NOW + 5)
        );
    }
    // Revoked earlier: its revocation time stands.
    assert_eq!(
        store.get_grant("a-old").await.unwrap().unwrap().revoked_at,
        Some(NOW)
    );
    let bobs = store
        .resolve_access_token(&access("t4"), NOW + 5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(bobs.grant.id, "b1");
    assert!(
        store
            .list_grants_for_login("alice")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .revoke_grants_for_login("alice", NOW + 6)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .revoke_grants_for_login("nobody", NOW + 6)
            .await
            .unwrap(),
        0
    );
}
