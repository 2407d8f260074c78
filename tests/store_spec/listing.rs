//! The pages' lists (`ListingStore`): live grants a page at a time,
//! filtered and counted in the database, clients with their live grants
//! counted, and a page's clients in one lookup.

use aegis_gitea_mcp::store::{CLIENTS_PER_LOOKUP, COUNTED_AHEAD, GrantFilter, ListLength};

use super::fixture::*;

/// A live grant (redeemed) of `login` with `client`, created at `at`.
fn live(id: &str, login: &str, client: &str, at: i64) -> GrantRecord {
    GrantRecord {
        created_at: at,
        activated_at: Some(at),
        ..grant(id, login, client)
    }
}

fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|i| id(i).to_owned()).collect()
}

async fn filled(f: &Fixture) -> Arc<dyn Store> {
    let store = f.open().await;
    for c in ["c1", "c2"] {
        store
            .insert_client(&client(c, NOW), None, NOW)
            .await
            .unwrap();
    }
    for (n, (login, client)) in [
        ("alice", "c1"),
        ("alice", "c2"),
        ("bob", "c1"),
        ("carol", "c2"),
    ]
    .into_iter()
    .enumerate()
    {
        let at = NOW + n as i64;
        store
            .insert_grant(&live(&format!("g{n}"), login, client, at), at)
            .await
            .unwrap();
    }
    // Neither redeemed nor live: never listed.
    store
        .insert_grant(&grant("pending", "alice", "c1"), NOW)
        .await
        .unwrap();
    store
        .insert_grant(&live("ended", "alice", "c1", NOW + 9), NOW + 9)
        .await
        .unwrap();
    assert!(store.revoke_grant("ended", NOW + 10).await.unwrap());
    store
}

pub async fn a_page_of_live_grants_is_newest_first_filtered_and_counted(f: &Fixture) {
    let store = filled(f).await;
    let filter = |login: Option<&str>, client: Option<&str>| GrantFilter {
        login: login.map(str::to_owned),
        client_id: client.map(str::to_owned),
    };
    for (filter, expected) in [
        (filter(None, None), vec!["g3", "g2", "g1", "g0"]),
        (filter(Some("alice"), None), vec!["g1", "g0"]),
        (filter(None, Some("c1")), vec!["g2", "g0"]),
        (filter(Some("alice"), Some("c2")), vec!["g1"]),
        (filter(Some("nobody"), None), vec![]),
    ] {
        let page = store.page_grants(&filter, 0, 10).await.unwrap();
        assert_eq!(ids(&page.items, |g| &g.id), expected, "{filter:?}");
        assert_eq!(page.total, ListLength::Exactly(expected.len() as u64));
    }
    let second = store
        .page_grants(&GrantFilter::default(), 2, 2)
        .await
        .unwrap();
    assert_eq!(ids(&second.items, |g| &g.id), ["g1", "g0"]);
    assert_eq!(second.total, ListLength::Exactly(4));
}

pub async fn a_login_filter_finds_the_login_without_regard_to_case(f: &Fixture) {
    let store = filled(f).await;
    let filter = GrantFilter {
        login: Some("ALICE".into()),
        client_id: None,
    };
    let page = store.page_grants(&filter, 0, 10).await.unwrap();
    assert_eq!(ids(&page.items, |g| &g.id), ["g1", "g0"]);
}

pub async fn a_long_list_is_counted_only_so_far_past_the_page(f: &Fixture) {
    let store = f.open().await;
    store
        .insert_client(&client("c1", NOW), None, NOW)
        .await
        .unwrap();
    let n = COUNTED_AHEAD + 2;
    for i in 0..n {
        // Ten grants a person: under the per-login cap.
        let login = format!("person{}", i / 10);
        store
            .insert_grant(&live(&format!("g{i:05}"), &login, "c1", NOW), NOW)
            .await
            .unwrap();
    }
    let all = GrantFilter::default();
    let first = store.page_grants(&all, 0, 25).await.unwrap();
    assert_eq!(first.items.len(), 25);
    assert_eq!(first.total, ListLength::MoreThan(COUNTED_AHEAD));
    assert_eq!(
        first.total.to_string(),
        format!("more than {COUNTED_AHEAD}")
    );
    // Near the end the count reaches it: the last page is known.
    let last = store.page_grants(&all, n - 2, 25).await.unwrap();
    assert_eq!(last.total, ListLength::Exactly(n));
    assert_eq!(ids(&last.items, |g| &g.id), ["g00001", "g00000"]);
    let clients = store.page_clients(0, 10).await.unwrap();
    assert_eq!(clients.items[0].grants, ListLength::MoreThan(COUNTED_AHEAD));
}

pub async fn a_page_of_clients_counts_each_ones_live_grants(f: &Fixture) {
    let store = filled(f).await;
    store
        .insert_client(&client("c3", NOW + 1), None, NOW + 1)
        .await
        .unwrap();
    let page = store.page_clients(0, 10).await.unwrap();
    let counted: Vec<(String, ListLength)> = page
        .items
        .iter()
        .map(|c| (c.client.client_id.clone(), c.grants))
        .collect();
    assert_eq!(
        counted,
        [
            ("c1".to_owned(), ListLength::Exactly(2)),
            ("c2".to_owned(), ListLength::Exactly(2)),
            ("c3".to_owned(), ListLength::Exactly(0)),
        ]
    );
    assert_eq!(page.total, ListLength::Exactly(3));
    let second = store.page_clients(2, 2).await.unwrap();
    assert_eq!(ids(&second.items, |c| &c.client.client_id), ["c3"]);
}

pub async fn a_pages_clients_are_looked_up_together_and_unknown_ones_left_out(f: &Fixture) {
    let store = f.open().await;
    let n = CLIENTS_PER_LOOKUP + 3;
    let mut wanted = Vec::new();
    for i in 0..n {
        let id = format!("client-{i:03}");
        store
            .insert_client(&client(&id, NOW), None, NOW)
            .await
            .unwrap();
        wanted.push(id);
    }
    wanted.push("unknown".into());
    wanted.push(String::new());
    let asked: Vec<&str> = wanted.iter().map(String::as_str).collect();
    let mut found = ids(&store.clients_by_ids(&asked).await.unwrap(), |c| {
        &c.client_id
    });
    found.sort();
    assert_eq!(found, wanted[..n].to_vec());
    assert!(store.clients_by_ids(&[]).await.unwrap().is_empty());
}
