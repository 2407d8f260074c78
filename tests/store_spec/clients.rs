//! Registered clients and the client cap.

use super::fixture::*;

pub async fn client_round_trips(f: &Fixture) {
    let store = f.open().await;
    let mut c = client("c1", NOW);
    c.secret_hash = Some(hash_secret("client-secret"));
    c.scope = Some("gitea".into());
    store.insert_client(&c, NOW).await.unwrap();
    assert_eq!(store.get_client("c1").await.unwrap(), Some(c));
    assert_eq!(store.get_client("nobody").await.unwrap(), None);
}

pub async fn full_client_table_evicts_stale_grantless_registrations(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_clients: 3,
            ..StoreLimits::default()
        })
        .await;
    let two_days_ago = NOW - 2 * DAY;
    store
        .insert_client(&client("stale", two_days_ago), two_days_ago)
        .await
        .unwrap();
    store
        .insert_client(&client("used", two_days_ago), two_days_ago)
        .await
        .unwrap();
    store
        .insert_grant(&grant("g1", "alice", "used"), two_days_ago)
        .await
        .unwrap();
    let mut document = client("https://app.example/cimd", two_days_ago);
    document.registration = Registration::MetadataDocument;
    store.upsert_metadata_client(&document).await.unwrap();

    store.insert_client(&client("new", NOW), NOW).await.unwrap();

    let ids: HashSet<_> = store
        .list_clients()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.client_id)
        .collect();
    let expected: HashSet<_> = ["used", "https://app.example/cimd", "new"]
        .map(String::from)
        .into();
    assert_eq!(ids, expected);
}

pub async fn full_client_table_refuses_when_nothing_is_stale(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_clients: 1,
            ..StoreLimits::default()
        })
        .await;
    store
        .insert_client(&client("fresh", NOW - 60), NOW - 60)
        .await
        .unwrap();
    let err = store
        .insert_client(&client("c2", NOW), NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Full { what: "clients" }), "{err}");
    let mut document = client("https://app.example/cimd", NOW);
    document.registration = Registration::MetadataDocument;
    let err = store.upsert_metadata_client(&document).await.unwrap_err();
    assert!(matches!(err, StoreError::Full { .. }), "{err}");
    assert!(store.get_client("c2").await.unwrap().is_none());
}

pub async fn metadata_client_upsert_replaces_the_cached_document(f: &Fixture) {
    let store = f.open().await;
    let mut document = client("https://app.example/cimd", NOW);
    document.registration = Registration::MetadataDocument;
    document.expires_at = Some(NOW + 3600);
    store.upsert_metadata_client(&document).await.unwrap();
    document.client_name = Some("Renamed".into());
    document.redirect_uris = vec!["https://app.example/cb2".into()];
    document.expires_at = Some(NOW + 7200);
    store.upsert_metadata_client(&document).await.unwrap();
    let stored = store.get_client(&document.client_id).await.unwrap();
    assert_eq!(stored, Some(document));
    assert_eq!(store.list_clients().await.unwrap().len(), 1);
}

pub async fn delete_client_revokes_its_grants(f: &Fixture) {
    let store = f.open().await;
    store.insert_client(&client("c1", NOW), NOW).await.unwrap();
    let g = issued_grant(&store, "g1", "alice", "c1", "t1").await;
    assert!(store.delete_client("c1", NOW + 1).await.unwrap());
    assert!(!store.delete_client("c1", NOW + 1).await.unwrap());
    assert!(store.get_client("c1").await.unwrap().is_none());
    let revoked = store.get_grant(&g).await.unwrap().unwrap();
    assert_eq!(revoked.revoked_at, Some(NOW + 1));
    assert!(
        store
            .resolve_access_token(&access("t1"), NOW + 2)
            .await
            .unwrap()
            .is_none()
    );
}
