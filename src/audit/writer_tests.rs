//! The writer's fsync bookkeeping: who is answered when, and what a
//! failed fsync leaves behind. (Files, rotation and faults over the real
//! binary: `tests/gateway/audit*.rs`.)

use super::*;
use crate::audit::chain::{ChainKey, verify_text};
use std::path::Path;

fn writer(dir: &Path) -> Writer {
    Writer::start(WriterConfig {
        path: dir.join("audit.log"),
        key: ChainKey::new(None),
        max_bytes: 1 << 30,
        keep: None,
        replica: None,
    })
    .unwrap()
}

fn event() -> Event {
    Event::new(EventKind::RateLimited)
}

#[test]
fn an_appended_entry_is_in_the_file_before_any_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path());
    let (seq, waiting) = w.append(event(), false).unwrap();
    assert!(waiting.is_none());
    let text = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
    assert_eq!(text.lines().count() as u64, seq);
    assert!(text.lines().last().unwrap().contains("\"rate_limited\""));
    assert!(w.unsynced().is_some(), "written, not yet fsynced");
}

#[test]
fn an_fsync_answers_exactly_the_callers_it_covered() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path());
    let (_, mut first) = w.append(event(), true).unwrap();
    let (file, covered) = w.unsynced().unwrap();
    let (_, mut second) = w.append(event(), true).unwrap();
    w.settle(&file, covered, Ok(()));
    assert_eq!(first.as_mut().unwrap().try_recv().unwrap(), Ok(()));
    assert!(
        second.as_mut().unwrap().try_recv().is_err(),
        "not covered yet"
    );
    assert!(w.has_waiters());
    w.sync_now();
    assert_eq!(second.unwrap().try_recv().unwrap(), Ok(()));
    assert!(!w.has_waiters() && w.unsynced().is_none());
}

#[test]
fn a_failed_fsync_fails_its_callers_and_the_next_entry_reopens_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path());
    let (_, waiting) = w.append(event(), true).unwrap();
    let (file, covered) = w.unsynced().unwrap();
    w.settle(&file, covered, Err(io::Error::other("EIO")));
    assert!(matches!(
        waiting.unwrap().try_recv().unwrap(),
        Err(AuditError::Unavailable(_))
    ));
    assert!(w.unsynced().is_none(), "nothing is waited on again");
    w.append(event(), false).unwrap();
    let text = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
    let reopened = text.lines().find(|l| l.contains("log_reopened")).unwrap();
    assert!(reopened.contains("an fsync failed"), "{reopened}");
    verify_text(&ChainKey::new(None), &text).unwrap();
}

#[test]
fn a_log_moved_away_between_two_entries_is_recreated_with_log_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path());
    w.append(event(), false).unwrap();
    let moved = dir.path().join("audit.moved");
    std::fs::rename(dir.path().join("audit.log"), &moved).unwrap();
    w.append(event(), false).unwrap();
    let text = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.contains("log_reopened"), "{first}");
    assert!(first.contains("the file went missing"), "{first}");
    assert_eq!(std::fs::read_to_string(&moved).unwrap().lines().count(), 2);
}

#[test]
fn a_file_renamed_over_the_log_between_two_entries_is_not_written_past() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path());
    w.append(event(), false).unwrap();
    let other = dir.path().join("other");
    std::fs::write(&other, b"").unwrap();
    std::fs::rename(&other, dir.path().join("audit.log")).unwrap();
    w.append(event(), false).unwrap();
    let text = std::fs::read_to_string(dir.path().join("audit.log")).unwrap();
    let first = text.lines().next().unwrap();
    assert!(first.contains("log_reopened"), "{first}");
    assert!(first.contains("the file was replaced"), "{first}");
}
