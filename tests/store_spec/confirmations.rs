//! Confirmations: decided once, by their person, spent once, expiring,
//! bounded per grant, and arguments encrypted at rest.

use super::fixture::*;

fn confirmation(id: &str, grant: &str, digest: &str, now: i64) -> Confirmation {
    Confirmation {
        id: id.to_owned(),
        grant_id: grant.to_owned(),
        login: "alice".to_owned(),
        client_id: "c1".to_owned(),
        tool: "gitea_repo_delete_branch".to_owned(),
        digest: digest.to_owned(),
        summary: "Delete a branch (branch: x)".to_owned(),
        method: "DELETE".to_owned(),
        route: "/repos/{owner}/{repo}/branches/{branch}".to_owned(),
        arguments: SecretString::from(r#"{"branch": "secret-branch-name"}"#.to_owned()),
        state: ConfirmationState::Pending,
        created_at: now,
        expires_at: now + 600,
        decided_at: None,
        decided_by: None,
    }
}

pub async fn only_its_person_decides_a_confirmation_and_only_once(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_confirmation(&confirmation("k1", "g1", "d1", NOW), NOW)
        .await
        .unwrap();
    let decide = |login: &'static str, approve| {
        let store = store.clone();
        async move {
            store
                .decide_confirmation("k1", login, approve, NOW + 900, NOW + 1)
                .await
                .unwrap()
        }
    };
    assert!(!decide("bob", true).await, "another person");
    assert!(
        decide("ALICE", true).await,
        "logins compare case-insensitively"
    );
    assert!(!decide("alice", false).await, "decided once");
    let got = store.get_confirmation("k1").await.unwrap().unwrap();
    assert_eq!(got.state, ConfirmationState::Approved);
    assert_eq!(got.decided_by.as_deref(), Some("ALICE"));
    assert_eq!(got.expires_at, NOW + 900, "the approval's own window");
    assert_eq!(
        got.arguments.expose_secret(),
        r#"{"branch": "secret-branch-name"}"#
    );
}

pub async fn an_approval_is_spent_exactly_once_under_concurrency(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_confirmation(&confirmation("k1", "g1", "d1", NOW), NOW)
        .await
        .unwrap();
    assert!(
        !store.use_approval("k1", NOW).await.unwrap(),
        "not approved yet"
    );
    store
        .decide_confirmation("k1", "alice", true, NOW + 600, NOW)
        .await
        .unwrap();
    let wins = race(16, |_| {
        let store = store.clone();
        async move { store.use_approval("k1", NOW + 1).await.unwrap() }
    })
    .await;
    assert_eq!(wins.into_iter().filter(|won| *won).count(), 1);
    assert_eq!(
        store.get_confirmation("k1").await.unwrap().unwrap().state,
        ConfirmationState::Used
    );
    // A used one is not open any more.
    assert!(store.open_confirmation("g1", "d1").await.unwrap().is_none());
}

pub async fn an_expired_confirmation_can_be_neither_decided_nor_spent(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_confirmation(&confirmation("k1", "g1", "d1", NOW), NOW)
        .await
        .unwrap();
    assert!(
        !store
            .decide_confirmation("k1", "alice", true, NOW + 2000, NOW + 600)
            .await
            .unwrap()
    );
    store
        .insert_confirmation(&confirmation("k2", "g1", "d2", NOW), NOW)
        .await
        .unwrap();
    store
        .decide_confirmation("k2", "alice", true, NOW + 60, NOW)
        .await
        .unwrap();
    assert!(!store.use_approval("k2", NOW + 60).await.unwrap());
}

pub async fn a_retry_finds_the_newest_open_request_of_its_grant_and_call(f: &Fixture) {
    let store = f.open().await;
    for (id, grant, digest, at) in [
        ("k1", "g1", "d1", NOW),
        ("k2", "g1", "d1", NOW + 5),
        ("k3", "g2", "d1", NOW + 9),
        ("k4", "g1", "d2", NOW + 9),
    ] {
        store
            .insert_confirmation(&confirmation(id, grant, digest, at), at)
            .await
            .unwrap();
    }
    let open = store.open_confirmation("g1", "d1").await.unwrap().unwrap();
    assert_eq!(open.id, "k2");
    assert!(store.delete_confirmation("k2").await.unwrap());
    assert_eq!(
        store
            .open_confirmation("g1", "d1")
            .await
            .unwrap()
            .unwrap()
            .id,
        "k1"
    );
    let alices = store
        .list_pending_confirmations(Some("Alice"), NOW + 10, 50)
        .await
        .unwrap();
    assert_eq!(alices.len(), 3);
    assert_eq!(alices[0].created_at, NOW + 9, "newest first");
}

pub async fn pending_confirmations_are_bounded_per_grant(f: &Fixture) {
    let limits = StoreLimits {
        max_pending_confirmations_per_grant: 3,
        ..StoreLimits::default()
    };
    let store = f.open_limited(limits).await;
    for n in 0..3 {
        store
            .insert_confirmation(
                &confirmation(&format!("k{n}"), "g1", &format!("d{n}"), NOW),
                NOW,
            )
            .await
            .unwrap();
    }
    let full = store
        .insert_confirmation(&confirmation("k9", "g1", "d9", NOW), NOW)
        .await;
    assert!(matches!(full, Err(StoreError::Full { .. })), "{full:?}");
    // Another grant has its own room; expired ones count for nothing.
    store
        .insert_confirmation(&confirmation("k10", "g2", "d1", NOW), NOW)
        .await
        .unwrap();
    store
        .insert_confirmation(&confirmation("k11", "g1", "d9", NOW + 600), NOW + 600)
        .await
        .unwrap();
}

/// `store rekey` left confirmations under the old key: once the old key
/// was removed, a waiting call's page and `/account` failed to decrypt.
pub async fn rekey_covers_confirmations(f: &Fixture) {
    let store = f.open_with_keys(&[KEY_A]).await;
    store
        .insert_confirmation(&confirmation("k1", "g1", "d1", NOW), NOW)
        .await
        .unwrap();
    drop(store);

    let store = f.open_with_keys(&[KEY_B, KEY_A]).await;
    assert_eq!(store.verify_decryptable().await.unwrap(), 2);
    assert_eq!(store.rekey().await.unwrap(), 2);
    assert_eq!(store.rekey().await.unwrap(), 0);
    drop(store);

    let store = f.open_with_keys(&[KEY_B]).await;
    let got = store.get_confirmation("k1").await.unwrap().unwrap();
    assert_eq!(got.summary, "Delete a branch (branch: x)");
    assert_eq!(
        got.arguments.expose_secret(),
        r#"{"branch": "secret-branch-name"}"#
    );
}

/// The summary names path values (the branch): encrypted at rest, as the
/// arguments are.
pub async fn a_confirmations_summary_and_arguments_are_not_stored_in_plaintext(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_confirmation(&confirmation("k1", "g1", "d1", NOW), NOW)
        .await
        .unwrap();
    let at_rest = f
        .raw_texts(
            "SELECT summary FROM confirmations UNION ALL \
             SELECT summary_enc FROM confirmations UNION ALL \
             SELECT arguments_enc FROM confirmations",
        )
        .await;
    assert_eq!(at_rest.len(), 3);
    for value in &at_rest {
        for plain in ["branch: x", "secret-branch-name"] {
            assert!(!value.contains(plain), "{plain} stored in plaintext");
        }
    }
}
