//! The hash chain's tests: keys, lines, the verifier and its fast paths.

use super::super::entry::{EntryBody, Event, EventKind, line};
use super::*;

fn log(key: &ChainKey, n: u64) -> String {
    sample_log(key, n)
}

fn keyed() -> ChainKey {
    ChainKey::new(Some(b"0123456789abcdef0123456789abcdef"))
}

#[test]
fn chain_values_are_the_documented_sha256_and_hmac() {
    // Computed apart from this crate (Python's hashlib and hmac), so logs
    // written before and after a change to the writer verify alike.
    let canonical = r#"{"v":1,"seq":1}"#;
    let unkeyed = "672c4c6bc82a9d517332529d593943f623f76bb4a1db7aa5aec0d0b81dd2a389";
    let hmac = "a38a2f0ad7fe6c08a6ebf09a7c0d536a17bb69a0eff007969d390493ec600902";
    for (key, expected) in [(ChainKey::new(None), unkeyed), (keyed(), hmac)] {
        assert_eq!(key.next(GENESIS, canonical), expected);
        let value = key.next_hex(GENESIS.as_bytes(), canonical.as_bytes());
        assert_eq!(hex_digits(&value), expected);
    }
}

#[test]
fn the_written_head_reads_what_json_reads_or_leaves_the_line_to_it() {
    let lines = [
        r#"{"v":1,"seq":42,"ts":"2026-01-01T00:00:00.000Z","event":"tool_call_started","tool":"t","detail":{"x":"\""}}"#,
        r#"{"v":1,"seq":7,"ts":"2026-01-01T00:00:00.000Z","replica":"r-2","event":"token_issued"}"#,
    ];
    for text in lines {
        let fast = written_head(text).expect("the writer's shape");
        let json: Head<'_> = serde_json::from_str(text).unwrap();
        assert_eq!((fast.seq, fast.event), (json.seq, json.event));
        assert!(json.detail.is_none_or(|d| d.prev_chain.is_none()));
    }
    // The log's own entries (they may carry `prev_chain`), and anything
    // not in the writer's shape, are JSON's to read.
    for text in [
        r#"{"v":1,"seq":3,"ts":"2026-01-01T00:00:00.000Z","event":"log_rotated","detail":{"prev_chain":"ab"}}"#,
        r#"{"seq":3,"v":1,"ts":"x","event":"token_issued"}"#,
        r#"{"v":1,"seq":03,"ts":"x","event":"token_issued"}"#,
        r#"{"v":1,"seq":3,"ts":"a\"b","event":"token_issued"}"#,
        r#"{"v":1,"seq":3,"ts":"x","event":"Token"}"#,
        r#"{"v":1,"seq":,"ts":"x","event":"token_issued"}"#,
    ] {
        assert!(written_head(text).is_none(), "{text}");
    }
}

#[test]
fn an_untouched_log_verifies_keyed_and_unkeyed() {
    assert_eq!(verify_text(&keyed(), &log(&keyed(), 5)), Ok(5));
    let plain = ChainKey::new(None);
    assert_eq!(verify_text(&plain, &log(&plain, 5)), Ok(5));
    assert_eq!(verify_text(&plain, ""), Ok(0));
}

#[test]
fn an_edited_field_fails_at_its_line() {
    let text = log(&keyed(), 5).replacen("tool_3", "tool_X", 1);
    assert_eq!(verify_text(&keyed(), &text).unwrap_err().line, 3);
}

#[test]
fn a_deleted_line_fails_at_the_gap() {
    let full = log(&keyed(), 5);
    let text: Vec<&str> = full.lines().collect();
    let text = [text[0], text[1], text[3], text[4]].join("\n") + "\n";
    let bad = verify_text(&keyed(), &text).unwrap_err();
    assert_eq!(bad.line, 3);
    assert!(
        bad.why.contains("sequence number 4, expected 3"),
        "{}",
        bad.why
    );
}

#[test]
fn swapped_lines_fail_at_the_first_of_them() {
    let full = log(&keyed(), 5);
    let text: Vec<&str> = full.lines().collect();
    let text = [text[0], text[2], text[1], text[3], text[4]].join("\n") + "\n";
    assert_eq!(verify_text(&keyed(), &text).unwrap_err().line, 2);
}

#[test]
fn a_line_cut_in_the_middle_fails_without_recovery() {
    let text = log(&keyed(), 4);
    let cut = &text[..text.len() - 30];
    let bad = verify_text(&keyed(), cut).unwrap_err();
    assert_eq!(bad.line, 4);
    assert!(bad.why.contains("torn"), "{}", bad.why);
}

#[test]
fn a_torn_line_followed_by_log_recovered_is_explained() {
    let key = keyed();
    let text = log(&key, 3);
    let mut lines: Vec<&str> = text.lines().collect();
    let (_, chain2) = split_line(lines[1]).unwrap();
    let torn = &lines[2][..40];
    let event = Event::new(EventKind::LogRecovered);
    let canonical = EntryBody {
        v: 1,
        seq: 3,
        ts: "2026-01-01T00:00:01.000Z",
        replica: None,
        event: &event,
    }
    .canonical();
    let recovered = line(&canonical, &key.next(chain2, &canonical));
    lines[2] = torn;
    let text = lines.join("\n") + "\n" + &recovered;
    assert_eq!(verify_text(&key, &text), Ok(3));
    // Not followed by log_recovered: the torn line is named.
    let text = lines.join("\n") + "\n" + lines[0] + "\n";
    assert_eq!(verify_text(&key, &text).unwrap_err().line, 3);
}

#[test]
fn the_wrong_key_fails_at_the_first_line() {
    let bad = verify_text(
        &ChainKey::new(Some(b"another key, 32 bytes long......")),
        &log(&keyed(), 3),
    )
    .unwrap_err();
    assert_eq!(bad.line, 1);
    assert!(bad.why.contains("chain mismatch"));
    assert_eq!(
        verify_text(&ChainKey::new(None), &log(&keyed(), 3))
            .unwrap_err()
            .line,
        1
    );
}

#[test]
fn a_log_missing_its_beginning_fails_unless_anchored() {
    let full = log(&keyed(), 3);
    let text: Vec<&str> = full.lines().collect();
    let text = text[1..].join("\n") + "\n";
    let bad = verify_text(&keyed(), &text).unwrap_err();
    assert_eq!(bad.line, 1);
    assert!(bad.why.contains("earlier entries are missing"));
}

proptest::proptest! {
    /// Any byte of a valid keyed log changed (a line end excepted)
    /// fails verification at the line that holds it.
    #[test]
    fn a_changed_byte_fails_at_its_line(at in 0usize..100_000, replacement in proptest::num::u8::ANY) {
        let mut bytes = log(&keyed(), 5).into_bytes();
        let at = at % bytes.len();
        proptest::prop_assume!(bytes[at] != b'\n' && bytes[at] != replacement && replacement != b'\n');
        let line = bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1;
        bytes[at] = replacement;
        let edited = String::from_utf8_lossy(&bytes);
        let bad = verify_text(&keyed(), &edited).unwrap_err();
        proptest::prop_assert_eq!(bad.line, line);
    }
}
