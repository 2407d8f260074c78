//! Registered clients and the client cap.

use super::fixture::*;

pub async fn client_round_trips(f: &Fixture) {
    let store = f.open().await;
    let mut c = client("c1", NOW);
    c.secret_hash = Some(hash_secret("client-secret"));
    c.scope = Some("gitea".into());
    store.insert_client(&c, None, NOW).await.unwrap();
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
        .insert_client(&client("stale", two_days_ago), None, two_days_ago)
        .await
        .unwrap();
    store
        .insert_client(&client("used", two_days_ago), None, two_days_ago)
        .await
        .unwrap();
    store
        .insert_grant(&grant("g1", "alice", "used"), two_days_ago)
        .await
        .unwrap();
    let mut document = client("https://app.example/cimd", two_days_ago);
    document.registration = Registration::MetadataDocument;
    store.upsert_metadata_client(&document).await.unwrap();

    store
        .insert_client(&client("new", NOW), None, NOW)
        .await
        .unwrap();

    let ids: HashSet<_> = store
        .list_clients()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.client_id)
        .collect();
    // A cached metadata document no sign-in used makes room too (issue 53,
    // F1); it is fetched again when it is used.
    let expected: HashSet<_> = ["used", "new"].map(String::from).into();
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
        .insert_client(&client("fresh", NOW - 60), None, NOW - 60)
        .await
        .unwrap();
    let err = store
        .insert_client(&client("c2", NOW), None, NOW)
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
    store
        .insert_client(&client("c1", NOW), None, NOW)
        .await
        .unwrap();
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

/// F4, issue 43: one network (an IPv4 /24 or IPv6 /48) holds at most
/// [`UNUSED_REGISTRATIONS_PER_NETWORK`] unused registrations more than it
/// has put to use; other networks are not affected, a registration a
/// sign-in uses stops counting and earns the network one more, and an hour
/// later the network may register again.
pub async fn a_network_holds_at_most_its_allowance_of_unused_registrations(f: &Fixture) {
    let store = f.open().await;
    let network = Some("203.0.113.0/24");
    let slack = UNUSED_REGISTRATIONS_PER_NETWORK;
    for i in 0..slack {
        store
            .insert_client(&client(&format!("c{i}"), NOW), network, NOW)
            .await
            .unwrap();
    }
    let err = store
        .insert_client(&client("over", NOW), network, NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::QuotaSpent { .. }), "{err}");
    store
        .insert_client(&client("other", NOW), Some("198.51.100.0/24"), NOW)
        .await
        .unwrap();
    // A sign-in uses c0: it stops counting, and earns one more.
    store
        .insert_grant(&grant("g0", "alice", "c0"), NOW)
        .await
        .unwrap();
    for name in ["more1", "more2"] {
        store
            .insert_client(&client(name, NOW), network, NOW)
            .await
            .unwrap();
    }
    let err = store
        .insert_client(&client("over", NOW), network, NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::QuotaSpent { .. }), "{err}");
    let later = NOW + UNUSED_REGISTRATION_TTL + 1;
    store
        .insert_client(&client("after-an-hour", later), network, later)
        .await
        .unwrap();
}

/// Issue 43: a team on a hosted connector, whose vendor registers from one
/// network, twice per connect, using only the second registration (as
/// claude.ai does): 200 connects within an hour all register.
pub async fn two_hundred_connects_in_an_hour_from_one_network_all_register(f: &Fixture) {
    let store = f.open().await;
    let network = Some("160.79.104.0/24");
    for i in 0..200 {
        let now = NOW + i * 18;
        for copy in ["first", "second"] {
            store
                .insert_client(&client(&format!("{copy}{i}"), now), network, now)
                .await
                .unwrap_or_else(|err| panic!("connect {i}, {copy} registration: {err}"));
        }
        store
            .insert_grant(
                &grant(
                    &format!("g{i}"),
                    &format!("person{i}"),
                    &format!("second{i}"),
                ),
                now,
            )
            .await
            .unwrap();
    }
}

/// Issue 43: a flood of registrations that nobody signs in with stops at
/// the allowance, however long it goes on within the hour: the table holds
/// no more of it than that.
pub async fn a_flood_of_unused_registrations_stops_at_the_allowance(f: &Fixture) {
    let store = f.open().await;
    let network = Some("192.0.2.0/24");
    let mut created = 0;
    for i in 0..10_000 {
        match store
            .insert_client(&client(&format!("flood{i}"), NOW), network, NOW)
            .await
        {
            Ok(()) => created += 1,
            Err(StoreError::QuotaSpent { .. }) => {}
            Err(err) => panic!("{err}"),
        }
    }
    assert_eq!(created, UNUSED_REGISTRATIONS_PER_NETWORK);
    assert_eq!(
        store.list_clients().await.unwrap().len() as u64,
        UNUSED_REGISTRATIONS_PER_NETWORK
    );
}

/// F4: registrations no sign-in used are pruned an hour after they were
/// made, and so are cached metadata documents no sign-in used (issue 53,
/// F1: fetched again when they are used); used ones stay.
pub async fn unused_registrations_are_pruned_after_an_hour(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_client(&client("unused", NOW), Some("203.0.113.0/24"), NOW)
        .await
        .unwrap();
    store
        .insert_client(&client("used", NOW), None, NOW)
        .await
        .unwrap();
    store
        .insert_grant(&grant("g1", "alice", "used"), NOW)
        .await
        .unwrap();
    let mut document = client("https://app.example/cimd", NOW);
    document.registration = Registration::MetadataDocument;
    store.upsert_metadata_client(&document).await.unwrap();

    assert_eq!(store.prune(NOW + 60).await.unwrap().clients, 0);
    let counts = store
        .prune(NOW + UNUSED_REGISTRATION_TTL + 1)
        .await
        .unwrap();
    assert_eq!(counts.clients, 2);
    assert!(store.get_client("unused").await.unwrap().is_none());
    assert!(store.get_client("used").await.unwrap().is_some());
    assert!(
        store
            .get_client("https://app.example/cimd")
            .await
            .unwrap()
            .is_none()
    );
}

/// F4: 26 networks that fill the table lock a new client out for at most
/// an hour: then their unused registrations make room.
pub async fn a_table_filled_by_unused_registrations_frees_up_within_an_hour(f: &Fixture) {
    let store = f
        .open_limited(StoreLimits {
            max_clients: 26,
            ..StoreLimits::default()
        })
        .await;
    for i in 0..26 {
        let network = format!("203.0.{i}.0/24");
        store
            .insert_client(&client(&format!("flood{i}"), NOW), Some(&network), NOW)
            .await
            .unwrap();
    }
    let err = store
        .insert_client(
            &client("legit", NOW + 60),
            Some("198.51.100.0/24"),
            NOW + 60,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Full { .. }), "{err}");
    let later = NOW + UNUSED_REGISTRATION_TTL + 1;
    store
        .insert_client(&client("legit", later), Some("198.51.100.0/24"), later)
        .await
        .unwrap();
}
