//! Pending authorizations: the cap, approval once, single-use callback state.

use super::fixture::*;

pub async fn pending_round_trips_until_it_expires(f: &Fixture) {
    let store = f.open().await;
    let p = pending("p1", NOW, 600);
    store.insert_pending(&p, NOW).await.unwrap();
    let got = store
        .get_pending(&p.id_hash, NOW + 599)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.flow, p.flow);
    let PendingSignIn::Client(request) = &got.flow else {
        panic!("a client authorization comes back as one");
    };
    assert_eq!(request.state.as_deref(), Some("client-state"));
    assert!(got.upstream.is_none());
    assert!(
        store
            .get_pending(&p.id_hash, NOW + 600)
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn pending_cap_counts_only_unexpired_requests(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_pending: 2,
            ..StoreLimits::default()
        })
        .await;
    store
        .insert_pending(&pending("p1", NOW, 10), NOW)
        .await
        .unwrap();
    store
        .insert_pending(&pending("p2", NOW, 10), NOW)
        .await
        .unwrap();
    let err = store
        .insert_pending(&pending("p3", NOW, 10), NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Full { .. }), "{err}");
    store
        .insert_pending(&pending("p3", NOW + 10, 10), NOW + 10)
        .await
        .unwrap();
}

pub async fn concurrent_capped_inserts_never_exceed_the_cap(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_pending: 4,
            ..StoreLimits::default()
        })
        .await;
    let outcomes = race(16, |i| {
        let store = store.clone();
        async move {
            store
                .insert_pending(&pending(&format!("p{i}"), NOW, 60), NOW)
                .await
        }
    })
    .await;
    let stored = outcomes.iter().filter(|o| o.is_ok()).count();
    let full = outcomes
        .iter()
        .filter(|o| matches!(o, Err(StoreError::Full { .. })))
        .count();
    assert_eq!((stored, full), (4, 12));
}

pub async fn approve_pending_succeeds_only_once(f: &Fixture) {
    let store = f.open().await;
    let p = pending("p1", NOW, 600);
    store.insert_pending(&p, NOW).await.unwrap();
    assert!(
        store
            .approve_pending(&p.id_hash, &leg("s1"), "gitea:read gitea:write", NOW)
            .await
            .unwrap()
    );
    assert!(
        !store
            .approve_pending(&p.id_hash, &leg("s2"), "gitea:read", NOW)
            .await
            .unwrap()
    );
    assert!(
        !store
            .approve_pending(&hash_secret("nope"), &leg("s3"), "gitea:read", NOW)
            .await
            .unwrap()
    );
    let got = store.get_pending(&p.id_hash, NOW).await.unwrap().unwrap();
    // The scope the person granted replaces the one the client asked for.
    match &got.flow {
        PendingSignIn::Client(request) => assert_eq!(request.scope, "gitea:read gitea:write"),
        PendingSignIn::Page(_) => panic!("a client's authorization"),
    }
    let upstream = got.upstream.unwrap();
    assert_eq!(upstream.state_hash, hash_secret("s1"));
    assert_eq!(upstream.pkce_verifier.expose_secret(), "verifier-s1");

    let late = pending("p2", NOW, 60);
    store.insert_pending(&late, NOW).await.unwrap();
    assert!(
        !store
            .approve_pending(&late.id_hash, &leg("s4"), "gitea:read", NOW + 60)
            .await
            .unwrap()
    );
}

pub async fn concurrent_approvals_have_one_winner(f: &Fixture) {
    let store = f.open().await;
    let p = pending("p1", NOW, 600);
    store.insert_pending(&p, NOW).await.unwrap();
    let wins = race(16, |i| {
        let store = store.clone();
        let id = p.id_hash.clone();
        async move {
            store
                .approve_pending(&id, &leg(&format!("s{i}")), "gitea:read", NOW)
                .await
                .unwrap()
        }
    })
    .await;
    assert_eq!(wins.into_iter().filter(|won| *won).count(), 1);
}

pub async fn take_pending_by_upstream_state_is_single_use(f: &Fixture) {
    let store = f.open().await;
    let p = pending("p1", NOW, 60);
    store.insert_pending(&p, NOW).await.unwrap();
    let key = upstream_key("s1", "binding-s1");
    let take = || store.take_pending_by_upstream_state(&key);
    assert!(matches!(take().await.unwrap(), PendingTake::Unknown));
    store
        .approve_pending(&p.id_hash, &leg("s1"), "gitea:read", NOW)
        .await
        .unwrap();
    // Another browser's take leaves it in place.
    let elsewhere = store
        .take_pending_by_upstream_state(&upstream_key("s1", ""))
        .await
        .unwrap();
    assert!(matches!(elsewhere, PendingTake::OtherBrowser));
    // Taken even after expiry: the caller tells an expired callback apart.
    let PendingTake::Taken(taken) = take().await.unwrap() else {
        panic!("the approving browser takes it");
    };
    assert_eq!(taken.id_hash, p.id_hash);
    assert_eq!(
        taken.upstream.unwrap().pkce_verifier.expose_secret(),
        "verifier-s1"
    );
    assert!(matches!(take().await.unwrap(), PendingTake::Unknown));
    assert!(store.get_pending(&p.id_hash, NOW).await.unwrap().is_none());
}

pub async fn delete_pending_reports_whether_it_existed(f: &Fixture) {
    let store = f.open().await;
    let p = pending("p1", NOW, 60);
    store.insert_pending(&p, NOW).await.unwrap();
    assert!(store.delete_pending(&p.id_hash).await.unwrap());
    assert!(!store.delete_pending(&p.id_hash).await.unwrap());
}
