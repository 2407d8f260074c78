//! What one account, or one network, can hold of the client table (the red
//! team's F1, issue 53): a login connects a bounded number of new clients
//! an hour; a used registration whose grants have all ended is removed a
//! day later, and at once when the per-login grant cap ends its last
//! grant; the last tenth of the table is kept for networks that hold
//! little of it; and every client and grant of a login, or of a network,
//! goes at once.

use super::fixture::*;

const HOUR: i64 = 60 * 60;

/// A sign-in of `login` with `client` at `now`: the grant and its code in
/// one transaction, as the callback stores them, and the code redeemed.
async fn sign_in(
    store: &Arc<dyn Store>,
    id: &str,
    login: &str,
    client: &str,
    now: i64,
) -> Result<Vec<String>, StoreError> {
    let mut g = grant(id, login, client);
    g.created_at = now;
    let mut k = code(&format!("code-{id}"), id, now, 60);
    k.client_id = client.to_owned();
    let evicted = store.store_authorization(&g, &k, now).await?;
    store.redeem_code(&k.code_hash, now).await?;
    Ok(evicted)
}

async fn register(
    store: &Arc<dyn Store>,
    id: &str,
    network: &str,
    now: i64,
) -> Result<(), StoreError> {
    store
        .insert_client(&client(id, now), Some(network), now)
        .await
}

pub async fn one_login_connects_a_bounded_number_of_new_clients_an_hour(f: &Fixture) {
    let store = f.open().await;
    let most = StoreLimits::default().max_new_clients_per_login;
    for i in 0..=most {
        register(&store, &format!("c{i}"), "198.51.100.0/24", NOW)
            .await
            .unwrap();
    }
    for i in 0..most {
        sign_in(&store, &format!("g{i}"), "mallory", &format!("c{i}"), NOW)
            .await
            .unwrap();
    }
    let last = format!("c{most}");
    let refused = sign_in(&store, "over", "mallory", &last, NOW).await;
    assert!(
        matches!(refused, Err(StoreError::QuotaSpent { .. })),
        "{refused:?}"
    );
    // Another login, the same login reconnecting a client it has, and the
    // same login an hour later: each fine.
    sign_in(&store, "other", "alice", &last, NOW).await.unwrap();
    sign_in(&store, "again", "mallory", "c0", NOW + 60)
        .await
        .unwrap();
    sign_in(&store, "later", "mallory", &last, NOW + HOUR + 1)
        .await
        .unwrap();
}

pub async fn a_used_registration_whose_grants_all_ended_is_removed_a_day_later(f: &Fixture) {
    let store = f.open().await;
    for id in ["ended", "live"] {
        register(&store, id, "198.51.100.0/24", NOW).await.unwrap();
    }
    sign_in(&store, "g-ended", "alice", "ended", NOW)
        .await
        .unwrap();
    sign_in(&store, "g-live", "alice", "live", NOW)
        .await
        .unwrap();
    store.revoke_grant("g-ended", NOW + 10).await.unwrap();
    store.prune(NOW + 10 + DAY - 1).await.unwrap();
    assert!(
        store.get_client("ended").await.unwrap().is_some(),
        "kept a day"
    );
    store.prune(NOW + 10 + DAY + 1).await.unwrap();
    assert!(store.get_client("ended").await.unwrap().is_none());
    assert!(store.get_client("live").await.unwrap().is_some());
}

pub async fn the_per_login_grant_cap_removes_the_clients_it_orphans(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_grants_per_login: 2,
            ..StoreLimits::default()
        })
        .await;
    for id in ["c1", "c2", "c3"] {
        register(&store, id, "198.51.100.0/24", NOW).await.unwrap();
    }
    sign_in(&store, "g1", "mallory", "c1", NOW).await.unwrap();
    sign_in(&store, "g2", "mallory", "c2", NOW + 1)
        .await
        .unwrap();
    let evicted = sign_in(&store, "g3", "mallory", "c3", NOW + 2)
        .await
        .unwrap();
    assert_eq!(evicted, ["g1"]);
    assert!(
        store.get_client("c1").await.unwrap().is_none(),
        "orphaned, removed"
    );
    assert!(store.get_client("c2").await.unwrap().is_some());
}

pub async fn the_last_tenth_of_the_table_is_kept_for_networks_that_hold_little(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_clients: 400,
            ..StoreLimits::default()
        })
        .await;
    // One network, its registrations all used (so its allowance grows),
    // fills nine tenths of the table and no more.
    let mut held = 0;
    for i in 0..400 {
        let id = format!("m{i}");
        if register(&store, &id, "203.0.113.0/24", NOW).await.is_err() {
            break;
        }
        sign_in(&store, &format!("g{i}"), &format!("user{i}"), &id, NOW)
            .await
            .unwrap();
        held += 1;
    }
    assert_eq!(held, 360);
    // A network that holds nothing still registers.
    register(&store, "claude", "160.79.104.0/24", NOW)
        .await
        .unwrap();
}

pub async fn every_client_and_grant_of_a_login_goes_at_once(f: &Fixture) {
    let store = f.open().await;
    for id in ["own1", "own2", "shared"] {
        register(&store, id, "198.51.100.0/24", NOW).await.unwrap();
    }
    sign_in(&store, "m1", "mallory", "own1", NOW).await.unwrap();
    sign_in(&store, "m2", "mallory", "own2", NOW).await.unwrap();
    sign_in(&store, "m3", "mallory", "shared", NOW)
        .await
        .unwrap();
    sign_in(&store, "a1", "alice", "shared", NOW).await.unwrap();
    let removed = store
        .remove_everything_of_login("mallory", NOW + 5)
        .await
        .unwrap();
    assert_eq!((removed.clients, removed.ended.len()), (2, 3));
    assert!(store.get_client("own1").await.unwrap().is_none());
    assert!(
        store.get_client("shared").await.unwrap().is_some(),
        "alice still uses it"
    );
    assert!(
        store
            .get_grant("a1")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none()
    );
    assert!(
        store
            .get_grant("m3")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_some()
    );
}

pub async fn every_client_and_grant_of_a_network_goes_at_once(f: &Fixture) {
    let store = f.open().await;
    register(&store, "flood1", "203.0.113.0/24", NOW)
        .await
        .unwrap();
    register(&store, "flood2", "203.0.113.0/24", NOW)
        .await
        .unwrap();
    register(&store, "claude", "160.79.104.0/24", NOW)
        .await
        .unwrap();
    sign_in(&store, "f1", "mallory", "flood1", NOW)
        .await
        .unwrap();
    sign_in(&store, "c1", "alice", "claude", NOW).await.unwrap();
    let removed = store
        .remove_everything_of_network("203.0.113.0/24", NOW + 5)
        .await
        .unwrap();
    assert_eq!((removed.clients, removed.ended.len()), (2, 1));
    assert!(store.get_client("claude").await.unwrap().is_some());
    assert!(
        store
            .get_grant("c1")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_none()
    );
}
