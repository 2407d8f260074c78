//! Encryption at rest: no plaintext Gitea tokens, rekeying, a wrong key.

use super::fixture::*;

pub async fn secrets_are_not_stored_in_plaintext(f: &Fixture) {
    let store = f.open().await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    let p = pending("p1", NOW, 60);
    store.insert_pending(&p, NOW).await.unwrap();
    store
        .approve_pending(&p.id_hash, &leg("s1"), "gitea:read", NOW)
        .await
        .unwrap();

    let at_rest = f
        .raw_texts(
            "SELECT gitea_access_token_enc FROM grants UNION ALL \
             SELECT gitea_refresh_token_enc FROM grants UNION ALL \
             SELECT upstream_pkce_verifier_enc FROM pending_authorizations",
        )
        .await;
    assert_eq!(at_rest.len(), 3);
    for value in &at_rest {
        for plain in ["gitea-access-g1", "gitea-refresh-g1", "verifier-s1"] {
            assert!(!value.contains(plain), "{plain} stored in plaintext");
        }
    }
    let hashes = f.raw_texts("SELECT token_hash FROM tokens").await;
    assert!(hashes.iter().all(|h| !h.contains("t1")));
}

pub async fn rekey_moves_every_value_to_the_newest_key(f: &Fixture) {
    let store = f.open_with_keys(&[KEY_A]).await;
    issued_grant(&store, "g1", "alice", "c1", "t1").await;
    let p = pending("p1", NOW, 600);
    store.insert_pending(&p, NOW).await.unwrap();
    store
        .approve_pending(&p.id_hash, &leg("s1"), "gitea:read", NOW)
        .await
        .unwrap();
    drop(store);

    let store = f.open_with_keys(&[KEY_B, KEY_A]).await;
    assert_eq!(store.verify_decryptable().await.unwrap(), 3);
    assert_eq!(store.rekey().await.unwrap(), 3);
    assert_eq!(store.rekey().await.unwrap(), 0);
    drop(store);

    let store = f.open_with_keys(&[KEY_B]).await;
    assert_eq!(store.verify_decryptable().await.unwrap(), 3);
    let g = store.get_grant("g1").await.unwrap().unwrap();
    assert_eq!(g.gitea.access_token.expose_secret(), "gitea-access-g1");
    let PendingTake::Taken(taken) = store
        .take_pending_by_upstream_state(&upstream_key("s1", "binding-s1"))
        .await
        .unwrap()
    else {
        panic!("the pending sign-in is there");
    };
    assert_eq!(
        taken.upstream.unwrap().pkce_verifier.expose_secret(),
        "verifier-s1"
    );
}

pub async fn a_store_under_a_wrong_key_fails_verification_naming_the_table(f: &Fixture) {
    let store = f.open_with_keys(&[KEY_A]).await;
    store
        .insert_grant(&grant("g1", "alice", "c1"), NOW)
        .await
        .unwrap();
    drop(store);
    let store = f.open_with_keys(&[KEY_C]).await;
    let err = store.verify_decryptable().await.unwrap_err();
    match &err {
        StoreError::Undecryptable { table, row } => {
            assert_eq!((*table, row.as_str()), ("grants", "g1"));
        }
        other => panic!("expected Undecryptable, got {other}"),
    }
    assert!(!err.to_string().contains("gitea-access"));
    assert!(matches!(
        store.rekey().await,
        Err(StoreError::Undecryptable { .. })
    ));
    // Nothing was wiped: the right key still reads it.
    drop(store);
    let store = f.open_with_keys(&[KEY_A]).await;
    assert_eq!(store.verify_decryptable().await.unwrap(), 2);
}
