//! Pruning.

use super::fixture::*;

pub async fn prune_removes_what_expired_and_counts_it(f: &Fixture) {
    let store = f.open().await;
    let later = NOW + 31 * DAY;
    // Expired by `later`: a pending request, and the live grant's code
    // and first token pair.
    store
        .insert_pending(&pending("p-old", NOW, 600), NOW)
        .await
        .unwrap();
    issued_grant(&store, "live", "alice", "c1", "t1").await;
    // A grant that never got past its (expired) code, and one revoked long
    // ago (its tokens and code went with the revocation).
    store
        .insert_grant(&grant("abandoned", "alice", "c2"), NOW)
        .await
        .unwrap();
    store
        .insert_code(&code("k-abandoned", "abandoned", NOW, 60), NOW)
        .await
        .unwrap();
    issued_grant(&store, "revoked", "bob", "c1", "t2").await;
    store.revoke_grant("revoked", NOW).await.unwrap();
    // Still live at `later`.
    store
        .insert_pending(&pending("p-new", later, 600), later)
        .await
        .unwrap();
    store
        .insert_tokens("live", &pair_expiring("t3", later + 60), later)
        .await
        .unwrap();
    // A page session expired by `later`, and one still live.
    store
        .insert_page_session(&page_session("s-old", "alice", NOW, DAY), NOW)
        .await
        .unwrap();
    store
        .insert_page_session(&page_session("s-new", "bob", later, DAY), later)
        .await
        .unwrap();

    let counts = store.prune(later).await.unwrap();

    assert_eq!(
        counts,
        PruneCounts {
            clients: 0,
            pending: 1,
            codes: 2,
            tokens: 2,
            grants: 2,
            page_sessions: 1,
            confirmations: 0,
            activity: 0,
        }
    );
    assert!(store.get_grant("abandoned").await.unwrap().is_none());
    assert!(store.get_grant("revoked").await.unwrap().is_none());
    assert!(store.get_grant("live").await.unwrap().is_some());
    assert!(
        store
            .resolve_access_token(&access("t3"), later)
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .get_page_session(&hash_secret("s-new"), later)
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(store.prune(later).await.unwrap(), PruneCounts::default());
}
