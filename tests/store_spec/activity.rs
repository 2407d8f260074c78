//! Activity figures: summed per connection and hour across batches (and
//! so across replicas), the last 20 calls of each connection, the top
//! tools, and pruning past the retention.

use super::fixture::*;

const HOUR: i64 = 3600;

fn note(grant: &str, login: &str, tool: &str, outcome: CallOutcome, at: i64) -> ActivityNote {
    ActivityNote {
        grant_id: grant.to_owned(),
        login: login.to_owned(),
        client_id: format!("client-of-{grant}"),
        tool: tool.to_owned(),
        outcome,
        at,
    }
}

/// The start of the hour `NOW` falls in.
fn this_hour() -> i64 {
    NOW - NOW.rem_euclid(HOUR)
}

pub async fn calls_add_up_per_connection_and_hour_across_batches(f: &Fixture) {
    let store = f.open().await;
    let at = this_hour() + 10;
    store
        .record_activity(&[
            note("g1", "alice", "t", CallOutcome::Ok, at),
            note("g1", "alice", "t", CallOutcome::Error, at + 1),
        ])
        .await
        .unwrap();
    // A second batch (another replica) adds to the same hour.
    store
        .record_activity(&[
            note("g1", "alice", "t", CallOutcome::Refused, at + 2),
            note("g1", "alice", "t", CallOutcome::Ok, at + HOUR),
            note("g2", "bob", "t", CallOutcome::Ok, at),
        ])
        .await
        .unwrap();
    let alice = store
        .hourly_activity(Some("alice"), this_hour() - HOUR)
        .await
        .unwrap();
    let figures: Vec<(i64, u64, u64, u64)> = alice
        .iter()
        .map(|h| (h.hour, h.calls, h.errors, h.refusals))
        .collect();
    assert_eq!(
        figures,
        [(this_hour(), 3, 1, 1), (this_hour() + HOUR, 1, 0, 0)]
    );
    assert_eq!(alice[0].client_id, "client-of-g1");
    let everyone = store.hourly_activity(None, 0).await.unwrap();
    assert_eq!(everyone.len(), 3);
    // Before `since`: not listed.
    assert!(
        store
            .hourly_activity(Some("alice"), this_hour() + 2 * HOUR)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn each_connection_keeps_its_last_twenty_calls(f: &Fixture) {
    let store = f.open().await;
    let batch: Vec<ActivityNote> = (0..15)
        .map(|i| {
            note(
                "g1",
                "alice",
                &format!("tool_{i}"),
                CallOutcome::Ok,
                NOW + i,
            )
        })
        .collect();
    store.record_activity(&batch).await.unwrap();
    let more: Vec<ActivityNote> = (15..30)
        .map(|i| {
            note(
                "g1",
                "alice",
                &format!("tool_{i}"),
                CallOutcome::Error,
                NOW + i,
            )
        })
        .chain(std::iter::once(note(
            "g2",
            "alice",
            "other",
            CallOutcome::Ok,
            NOW,
        )))
        .collect();
    store.record_activity(&more).await.unwrap();
    let recent = store.recent_calls("alice").await.unwrap();
    let of_g1: Vec<&str> = recent
        .iter()
        .filter(|c| c.grant_id == "g1")
        .map(|c| c.tool.as_str())
        .collect();
    assert_eq!(of_g1.len(), 20);
    assert_eq!(of_g1[0], "tool_29", "newest first");
    assert_eq!(of_g1[19], "tool_10");
    assert_eq!(recent.iter().filter(|c| c.grant_id == "g2").count(), 1);
    assert!(store.recent_calls("bob").await.unwrap().is_empty());
}

pub async fn top_tools_count_every_call_of_the_period(f: &Fixture) {
    let store = f.open().await;
    let mut batch = Vec::new();
    for (tool, n) in [("read", 5), ("write", 2), ("delete", 1)] {
        for i in 0..n {
            batch.push(note("g1", "alice", tool, CallOutcome::Ok, NOW + i));
        }
    }
    batch.push(note("g2", "bob", "write", CallOutcome::Ok, NOW));
    batch.push(note("g2", "bob", "write", CallOutcome::Ok, NOW));
    store.record_activity(&batch).await.unwrap();
    let top = |login| {
        let store = store.clone();
        async move {
            store
                .top_tools(login, NOW - 86_400, 2)
                .await
                .unwrap()
                .into_iter()
                .map(|t| (t.tool, t.calls))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        top(None).await,
        [("read".to_owned(), 5), ("write".to_owned(), 4)]
    );
    assert_eq!(top(Some("bob")).await, [("write".to_owned(), 2)]);
}

pub async fn figures_past_their_retention_are_pruned(f: &Fixture) {
    let store = f.open().await;
    let old = NOW - 9 * 86_400;
    store
        .record_activity(&[
            note("g1", "alice", "t", CallOutcome::Ok, old),
            note("g1", "alice", "t", CallOutcome::Ok, NOW),
        ])
        .await
        .unwrap();
    let pruned = store.prune(NOW).await.unwrap();
    assert_eq!(pruned.activity, 3, "one hour, one day and one recent call");
    let left = store.hourly_activity(None, 0).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(store.recent_calls("alice").await.unwrap().len(), 1);
}
