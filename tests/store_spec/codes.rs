//! Authorization codes: exactly-once redemption and the code cap.

use super::fixture::*;

pub async fn code_redemption_is_exactly_once_under_concurrency(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_grant(&grant("g1", "alice", "c1"), NOW)
        .await
        .unwrap();
    store
        .insert_code(&code("k1", "g1", NOW, 60), NOW)
        .await
        .unwrap();
    let outcomes = race(16, |_| {
        let store = store.clone();
        async move {
            store
                .redeem_code(&hash_secret("k1"), NOW + 1)
                .await
                .unwrap()
        }
    })
    .await;
    let redeemed = outcomes
        .iter()
        .filter(|o| matches!(o, CodeRedemption::Redeemed(_)))
        .count();
    let replays = outcomes
        .iter()
        .filter(|o| matches!(o, CodeRedemption::AlreadyRedeemed(_)))
        .count();
    assert_eq!((redeemed, replays), (1, 15));
    let g = store.get_grant("g1").await.unwrap().unwrap();
    assert_eq!(g.activated_at, Some(NOW + 1));
}

pub async fn a_spent_code_replays_as_already_redeemed(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_grant(&grant("g1", "alice", "c1"), NOW)
        .await
        .unwrap();
    let k = code("k1", "g1", NOW, 60);
    store.insert_code(&k, NOW).await.unwrap();
    let CodeRedemption::Redeemed(first) = store.redeem_code(&k.code_hash, NOW).await.unwrap()
    else {
        panic!("first presentation must redeem");
    };
    assert_eq!(first.redeemed_at, Some(NOW));
    assert_eq!(first.redirect_uri, k.redirect_uri);
    let again = store.redeem_code(&k.code_hash, NOW + 120).await.unwrap();
    assert!(matches!(again, CodeRedemption::AlreadyRedeemed(ref c) if c.redeemed_at == Some(NOW)));
    let unknown = store.redeem_code(&hash_secret("other"), NOW).await.unwrap();
    assert_eq!(unknown, CodeRedemption::Unknown);
}

pub async fn an_expired_unspent_code_is_unknown(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_grant(&grant("g1", "alice", "c1"), NOW)
        .await
        .unwrap();
    store
        .insert_code(&code("k1", "g1", NOW, 60), NOW)
        .await
        .unwrap();
    let outcome = store
        .redeem_code(&hash_secret("k1"), NOW + 60)
        .await
        .unwrap();
    assert_eq!(outcome, CodeRedemption::Unknown);
    assert_eq!(
        store.get_grant("g1").await.unwrap().unwrap().activated_at,
        None
    );
}

pub async fn code_cap_counts_only_unexpired_codes(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_codes: 1,
            ..StoreLimits::default()
        })
        .await;
    store
        .insert_grant(&grant("g1", "alice", "c1"), NOW)
        .await
        .unwrap();
    store
        .insert_code(&code("k1", "g1", NOW, 60), NOW)
        .await
        .unwrap();
    let err = store
        .insert_code(&code("k2", "g1", NOW, 60), NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Full { what: "codes" }), "{err}");
    store
        .insert_code(&code("k2", "g1", NOW + 60, 60), NOW + 60)
        .await
        .unwrap();
}

/// A completed sign-in is stored whole or not at all: when its code does
/// not fit, neither its grant nor its consent is written.
pub async fn a_sign_in_is_stored_whole_or_not_at_all(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_codes: 1,
            ..StoreLimits::default()
        })
        .await;
    store
        .store_authorization(&grant("g1", "alice", "c1"), &code("k1", "g1", NOW, 60), NOW)
        .await
        .unwrap();
    assert!(store.get_grant("g1").await.unwrap().is_some());
    let err = store
        .store_authorization(&grant("g2", "bob", "c2"), &code("k2", "g2", NOW, 60), NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Full { what: "codes" }), "{err}");
    assert!(store.get_grant("g2").await.unwrap().is_none(), "no grant");
    let consents = f
        .raw_texts("SELECT login FROM consents WHERE login = 'bob'")
        .await;
    assert!(consents.is_empty(), "no consent: {consents:?}");
}
