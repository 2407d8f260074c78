//! The chain, as pure functions.
//!
//! `chain(n) = hex(HMAC-SHA256(key, chain(n-1) || "\n" || canonical(n)))`
//! with `AUDIT_HMAC_KEY`, or `hex(SHA-256(chain(n-1) || "\n" || canonical(n)))`
//! without a key. `chain(0)` is [`GENESIS`]. `canonical(n)` is the line
//! without its `chain` member (see `entry.rs`).
//!
//! Verification of a sequence of lines (files concatenated, oldest first):
//!
//! * the first entry is `seq` 1 chained from [`GENESIS`], or an *anchor*:
//!   an entry whose `detail.prev_chain` names the chain value it continues
//!   from (the first entry of a rotated or recreated file), when older
//!   files are not given;
//! * every further entry has `seq` one more than the previous and a chain
//!   value computed from the previous one;
//! * **torn-line rule**: a line that is not a complete entry (a write cut by
//!   a crash) is explained only when the very next line is a
//!   `log_recovered` entry in the same file, which chains from the last
//!   complete entry before the torn line. Any other incomplete line, and an
//!   incomplete last line, is an error.

use hmac::{KeyInit, Mac};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::entry::split_line;

/// The value the first entry chains from.
pub const GENESIS: &str = "aegis-gitea-mcp/audit/v1/genesis";

/// The chain key: HMAC-SHA256 with `AUDIT_HMAC_KEY`, or plain SHA-256.
/// The keyed MAC is kept ready (the key's inner and outer pads already
/// hashed) and cloned for each entry, instead of re-derived from the key:
/// two SHA-256 blocks fewer per entry (issue 30).
#[derive(Clone)]
pub struct ChainKey(Option<hmac::Hmac<Sha256>>);

impl std::fmt::Debug for ChainKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_keyed() {
            "ChainKey(keyed)"
        } else {
            "ChainKey(unkeyed)"
        })
    }
}

impl ChainKey {
    pub fn new(key: Option<&[u8]>) -> Self {
        Self(key.map(|key| {
            hmac::Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length")
        }))
    }

    pub fn is_keyed(&self) -> bool {
        self.0.is_some()
    }

    /// `keyed` or `unkeyed`.
    pub fn label(&self) -> &'static str {
        if self.is_keyed() { "keyed" } else { "unkeyed" }
    }

    /// The chain value of `canonical` after `prev`.
    pub fn next(&self, prev: &str, canonical: &str) -> String {
        hex_digits(&self.next_hex(prev.as_bytes(), canonical.as_bytes())).to_owned()
    }

    /// [`ChainKey::next`] as its 64 hex digits on the stack: the writer's
    /// form, which allocates nothing per entry (issue 30).
    pub fn next_hex(&self, prev: &[u8], canonical: &[u8]) -> ChainHex {
        let digest: [u8; 32] = match &self.0 {
            Some(keyed) => {
                let mut mac = keyed.clone();
                mac.update(prev);
                mac.update(b"\n");
                mac.update(canonical);
                mac.finalize().into_bytes().into()
            }
            None => {
                let mut hash = Sha256::new();
                hash.update(prev);
                hash.update(b"\n");
                hash.update(canonical);
                hash.finalize().into()
            }
        };
        let mut digits = [0; 64];
        hex::encode_to_slice(digest, &mut digits).expect("32 bytes are 64 hex digits");
        digits
    }
}

/// A chain value: SHA-256 or HMAC-SHA256 in lower-case hex.
pub type ChainHex = [u8; 64];

/// The chain value as text.
pub fn hex_digits(value: &ChainHex) -> &str {
    std::str::from_utf8(value).expect("hex digits are ASCII")
}

/// A complete line, parsed.
#[derive(Debug, Clone)]
pub struct ParsedLine {
    pub seq: u64,
    pub event: String,
    pub chain: String,
    pub canonical: String,
    /// `detail.prev_chain`, on anchors.
    pub prev_chain: Option<String>,
}

/// Parses one line (without newline); the reason when it is not a complete entry.
pub fn parse_line(line: &str) -> Result<ParsedLine, &'static str> {
    let (canonical, chain) = split_line(line).ok_or("not a complete entry (no chain value)")?;
    let body: Value =
        serde_json::from_str(&canonical).map_err(|_| "not a complete entry (invalid JSON)")?;
    let seq = body["seq"]
        .as_u64()
        .ok_or("not an entry (no sequence number)")?;
    let event = body["event"]
        .as_str()
        .ok_or("not an entry (no event)")?
        .to_owned();
    let prev_chain = body["detail"]["prev_chain"].as_str().map(str::to_owned);
    Ok(ParsedLine {
        seq,
        event,
        chain: chain.to_owned(),
        canonical,
        prev_chain,
    })
}

/// Where verification stopped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// Index of the source (file) in the order given.
    pub source: usize,
    /// 1-based line number within that source.
    pub line: usize,
    pub why: String,
}

/// Running verification over lines of one or more sources, in order.
#[derive(Debug)]
pub struct Verifier {
    key: ChainKey,
    prev: Option<(u64, String)>,
    torn: Option<BadLine>,
    pub entries: u64,
    /// The `seq` the verification was anchored at, when it did not start at 1.
    pub anchored_at: Option<u64>,
}

impl Verifier {
    pub fn new(key: ChainKey) -> Self {
        Self {
            key,
            prev: None,
            torn: None,
            entries: 0,
            anchored_at: None,
        }
    }

    /// The last verified (seq, chain).
    pub fn last(&self) -> Option<&(u64, String)> {
        self.prev.as_ref()
    }

    /// Feeds one line (without its newline).
    pub fn line(&mut self, source: usize, line_no: usize, line: &str) -> Result<(), BadLine> {
        let bad = |why: String| BadLine {
            source,
            line: line_no,
            why,
        };
        let parsed = match parse_line(line) {
            Ok(p) => p,
            Err(why) => {
                if let Some(torn) = self.torn.take() {
                    return Err(torn);
                }
                self.torn = Some(bad(format!(
                    "{why}: a torn write not followed by a log_recovered entry"
                )));
                return Ok(());
            }
        };
        if let Some(torn) = self.torn.take()
            && (parsed.event != "log_recovered" || torn.source != source)
        {
            return Err(torn);
        }
        let prev_chain = match &self.prev {
            None if parsed.seq == 1 => GENESIS.to_owned(),
            None => match &parsed.prev_chain {
                Some(anchor) => {
                    self.anchored_at = Some(parsed.seq);
                    anchor.clone()
                }
                None => {
                    return Err(bad(format!(
                        "the first entry has sequence number {} and is not an anchor: earlier entries are missing",
                        parsed.seq
                    )));
                }
            },
            Some((seq, chain)) => {
                if parsed.seq != seq + 1 {
                    return Err(bad(format!(
                        "sequence number {}, expected {}: a line was deleted, reordered or inserted",
                        parsed.seq,
                        seq + 1
                    )));
                }
                if let Some(anchor) = &parsed.prev_chain
                    && anchor != chain
                {
                    return Err(bad(
                        "the chain restarts here (the file was recreated): earlier entries are missing"
                            .to_owned(),
                    ));
                }
                chain.clone()
            }
        };
        if self.key.next(&prev_chain, &parsed.canonical) != parsed.chain {
            return Err(bad(format!(
                "chain mismatch: the entry was edited, lines were reordered, or the {} key is wrong",
                self.key.label()
            )));
        }
        self.prev = Some((parsed.seq, parsed.chain));
        self.entries += 1;
        Ok(())
    }

    /// At the end of a source: a torn line must be explained within its file.
    pub fn end_of_source(&mut self) -> Result<(), BadLine> {
        match self.torn.take() {
            Some(torn) => Err(torn),
            None => Ok(()),
        }
    }
}

/// Verifies the lines of one text (a whole file): `Ok(entries)` or the first bad line.
pub fn verify_text(key: &ChainKey, text: &str) -> Result<u64, BadLine> {
    let mut verifier = Verifier::new(key.clone());
    for (i, line) in lines(text).enumerate() {
        verifier.line(0, i + 1, line)?;
    }
    verifier.end_of_source()?;
    Ok(verifier.entries)
}

/// The lines of a text: split on `\n`; a last segment without newline is
/// a line too (an incomplete one, unless it happens to be whole).
pub fn lines(text: &str) -> impl Iterator<Item = &str> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.split('\n').filter(move |_| !text.is_empty())
}

/// A valid log of `n` `tool_call_started` entries chained with `key`: the
/// unit tests' and the `audit_line` fuzz target's starting point.
#[cfg(any(test, fuzzing))]
pub fn sample_log(key: &ChainKey, n: u64) -> String {
    use super::entry::{EntryBody, Event, EventKind, line};
    let mut prev = GENESIS.to_owned();
    let mut out = String::new();
    for seq in 1..=n {
        let event = Event::new(EventKind::ToolCallStarted).tool(&format!("tool_{seq}"));
        let canonical = EntryBody {
            v: 1,
            seq,
            ts: "2026-01-01T00:00:00.000Z",
            replica: None,
            event: &event,
        }
        .canonical();
        let chain = key.next(&prev, &canonical);
        out.push_str(&line(&canonical, &chain));
        prev = chain;
    }
    out
}

#[cfg(test)]
mod tests {
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
}
