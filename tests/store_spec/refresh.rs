//! The refresh-token rotation state machine of `RefreshOutcome`.

use super::fixture::*;

pub async fn an_active_refresh_token_rotates(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    let outcome = store
        .rotate_refresh_token(&refresh("t1"), "c1", &pair("t2"), NOW + 1)
        .await
        .unwrap();
    let RefreshOutcome::Rotated { grant } = outcome else {
        panic!("expected a rotation, got {outcome:?}");
    };
    assert_eq!(grant.id, "g1");
    assert_eq!(grant.last_used_at, Some(NOW + 1));
    assert!(
        store
            .resolve_access_token(&access("t2"), NOW + 1)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        f.refresh_states("g1").await,
        states(&[("t1", "previous"), ("t2", "active")])
    );
}

pub async fn a_previous_token_is_honoured_until_its_successor_is_used(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    rotated(&store, "t1", "t2", NOW + 1).await;
    // The client lost the response to that rotation and retries with t1.
    rotated(&store, "t1", "t3", NOW + 2).await;
    assert_eq!(
        f.refresh_states("g1").await,
        states(&[("t1", "previous"), ("t2", "retired"), ("t3", "active")])
    );
    assert!(
        store
            .get_grant("g1")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none()
    );
}

pub async fn using_the_successor_retires_the_previous_token(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    rotated(&store, "t1", "t2", NOW + 1).await;
    rotated(&store, "t2", "t3", NOW + 2).await;
    assert_eq!(
        f.refresh_states("g1").await,
        states(&[("t1", "retired"), ("t2", "previous"), ("t3", "active")])
    );
}

pub async fn reuse_of_a_retired_token_revokes_the_grant(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    rotated(&store, "t1", "t2", NOW + 1).await;
    rotated(&store, "t2", "t3", NOW + 2).await;
    let outcome = store
        .rotate_refresh_token(&refresh("t1"), "c1", &pair("t4"), NOW + 3)
        .await
        .unwrap();
    assert!(
        matches!(outcome, RefreshOutcome::ReuseDetected { ref grant_id } if grant_id == "g1"),
        "{outcome:?}"
    );
    assert_eq!(
        store.get_grant("g1").await.unwrap().unwrap().revoked_at,
        Some(NOW + 3)
    );
    assert!(
        store
            .resolve_access_token(&access("t3"), NOW + 3)
            .await
            .unwrap()
            .is_none()
    );
    assert!(f.refresh_states("g1").await.is_empty());
    let outcome = store
        .rotate_refresh_token(&refresh("t3"), "c1", &pair("t5"), NOW + 4)
        .await
        .unwrap();
    assert!(matches!(outcome, RefreshOutcome::Invalid), "{outcome:?}");
}

pub async fn a_refresh_token_of_another_client_changes_nothing(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    let outcome = store
        .rotate_refresh_token(&refresh("t1"), "mallory", &pair("t2"), NOW + 1)
        .await
        .unwrap();
    assert!(
        matches!(outcome, RefreshOutcome::WrongClient),
        "{outcome:?}"
    );
    assert_eq!(f.refresh_states("g1").await, states(&[("t1", "active")]));
    assert!(
        store
            .resolve_access_token(&access("t2"), NOW + 1)
            .await
            .unwrap()
            .is_none()
    );
    rotated(&store, "t1", "t3", NOW + 2).await;
}

pub async fn concurrent_rotations_leave_exactly_one_active_refresh_token(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t0").await;
    let outcomes = race(16, |i| {
        let store = store.clone();
        async move {
            store
                .rotate_refresh_token(&refresh("t0"), "c1", &pair(&format!("r{i}")), NOW + 1)
                .await
                .unwrap()
        }
    })
    .await;
    for outcome in &outcomes {
        assert!(
            matches!(outcome, RefreshOutcome::Rotated { .. }),
            "{outcome:?}"
        );
    }
    assert!(
        store
            .get_grant("g1")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none()
    );
    let active: Vec<_> = f
        .refresh_states("g1")
        .await
        .into_iter()
        .filter(|(_, state)| state == "active")
        .collect();
    assert_eq!(active.len(), 1, "{active:?}");
    let winner = (0..16)
        .map(|i| refresh(&format!("r{i}")))
        .find(|hash| hash.as_str() == active[0].0)
        .expect("the active token is one of the rotations");
    let outcome = store
        .rotate_refresh_token(&winner, "c1", &pair("after"), NOW + 2)
        .await
        .unwrap();
    assert!(
        matches!(outcome, RefreshOutcome::Rotated { .. }),
        "{outcome:?}"
    );
}

pub async fn expired_or_unknown_refresh_tokens_are_invalid(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    let outcome = store
        .rotate_refresh_token(&refresh("t1"), "c1", &pair("t2"), NOW + REFRESH_TTL)
        .await
        .unwrap();
    assert!(matches!(outcome, RefreshOutcome::Invalid), "{outcome:?}");
    let outcome = store
        .rotate_refresh_token(&refresh("nope"), "c1", &pair("t3"), NOW)
        .await
        .unwrap();
    assert!(matches!(outcome, RefreshOutcome::Invalid), "{outcome:?}");
    // An access token is not a refresh token.
    let outcome = store
        .rotate_refresh_token(&access("t1"), "c1", &pair("t4"), NOW)
        .await
        .unwrap();
    assert!(matches!(outcome, RefreshOutcome::Invalid), "{outcome:?}");
}
