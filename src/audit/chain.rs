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
        self.next_hex_of(prev, &[canonical])
    }

    /// [`ChainKey::next_hex`] of a canonical form given in `parts`.
    pub fn next_hex_of(&self, prev: &[u8], parts: &[&[u8]]) -> ChainHex {
        let digest: [u8; 32] = match &self.0 {
            Some(keyed) => {
                let mut mac = keyed.clone();
                mac.update(prev);
                mac.update(b"\n");
                for part in parts {
                    mac.update(part);
                }
                mac.finalize().into_bytes().into()
            }
            None => {
                let mut hash = Sha256::new();
                hash.update(prev);
                hash.update(b"\n");
                for part in parts {
                    hash.update(part);
                }
                hash.finalize().into()
            }
        };
        let mut digits = [0; 64];
        hex::encode_to_slice(digest, &mut digits).expect("32 bytes are 64 hex digits");
        digits
    }
}

/// An entry's place in the chain: its `seq` and its chain value.
pub type ChainLink = (u64, Vec<u8>);

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

/// What verification needs of one line, read without building it: the
/// canonical form's bytes before its closing brace, and the chain value.
struct Line<'a> {
    seq: u64,
    recovered: bool,
    anchor: Option<&'a str>,
    head: &'a [u8],
    chain: &'a [u8],
}

/// The fields of an entry verification reads; every other is skipped
/// without being built (issue 55: a whole `Value` per line made `audit
/// verify` a fraction of hashing speed).
#[derive(serde::Deserialize)]
struct Head<'a> {
    seq: u64,
    #[serde(borrow)]
    event: std::borrow::Cow<'a, str>,
    #[serde(default, borrow)]
    detail: Option<DetailHead<'a>>,
}

#[derive(serde::Deserialize)]
struct DetailHead<'a> {
    #[serde(default, borrow)]
    prev_chain: Option<std::borrow::Cow<'a, str>>,
}

/// The head of a line as the writer writes an entry that is not the log's
/// own (`{"v":1,"seq":N,"ts":"…",["replica":"…",]"event":"…",` in that
/// order, entry.rs),
/// read from its first bytes; `None` for anything else, which JSON then
/// reads. Only the `log_*` entries carry `detail.prev_chain`, so they
/// always take the JSON path. Why by hand: skipping the rest of the line
/// with serde cost about as much as the HMAC over it (issue 55); and the
/// chain over the line's bytes still covers every byte not read here.
fn written_head(text: &str) -> Option<Head<'_>> {
    let rest = text.strip_prefix(r#"{"v":1,"seq":"#)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 19 || rest.starts_with('0') {
        return None;
    }
    let seq = rest[..digits].parse().ok()?;
    // A string member's value, when it holds no escape: what follows it.
    let plain_string = |rest: &'_ str| -> Option<usize> {
        let end = rest.find('"')?;
        (!rest[..end].contains('\\')).then_some(end)
    };
    let rest = rest[digits..].strip_prefix(r#","ts":""#)?;
    let mut rest = &rest[plain_string(rest)?..];
    if let Some(replica) = rest.strip_prefix(r#"","replica":""#) {
        rest = &replica[plain_string(replica)?..];
    }
    let rest = rest.strip_prefix(r#"","event":""#)?;
    let name_end = rest.find('"')?;
    let event = &rest[..name_end];
    if event.is_empty()
        || event.starts_with("log_")
        || !event.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
    {
        return None;
    }
    Some(Head {
        seq,
        event: std::borrow::Cow::Borrowed(event),
        detail: None,
    })
}

/// Whether every byte is an ASCII hex digit: a table and no branch per
/// byte, which the compiler vectorizes (the per-byte `is_ascii_hexdigit`
/// was a third of reading a line).
fn all_hex_digits(bytes: &[u8]) -> bool {
    const HEX: [bool; 256] = {
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            table[b] = (b as u8).is_ascii_hexdigit();
            b += 1;
        }
        table
    };
    bytes.iter().fold(true, |all, b| all & HEX[*b as usize])
}

/// `line` read for verification, or why it is not a complete entry.
fn read_line(line: &[u8]) -> Result<(Line<'_>, Head<'_>), &'static str> {
    const TORN: &str = "not a complete entry (no chain value)";
    let text = std::str::from_utf8(line).map_err(|_| "not a complete entry (invalid UTF-8)")?;
    let body = text.strip_suffix("\"}").ok_or(TORN)?;
    // The chain value is the last member, 64 hex digits: at a fixed place
    // from the end (no search of the line for it).
    let member = super::entry::CHAIN_MEMBER;
    let at = body.len().checked_sub(64 + member.len()).ok_or(TORN)?;
    if body.as_bytes()[at..at + member.len()] != *member.as_bytes() {
        return Err(TORN);
    }
    let chain = &body[at + member.len()..];
    if !all_hex_digits(chain.as_bytes()) {
        return Err(TORN);
    }
    let head: Head<'_> = match written_head(text) {
        Some(head) => head,
        None => serde_json::from_str(text).map_err(|_| "not a complete entry (invalid JSON)")?,
    };
    Ok((
        Line {
            seq: head.seq,
            recovered: head.event == "log_recovered",
            anchor: None,
            head: &line[..at],
            chain: chain.as_bytes(),
        },
        head,
    ))
}

/// Running verification over lines of one or more sources, in order.
#[derive(Debug)]
pub struct Verifier {
    key: ChainKey,
    /// The last verified entry's `seq`, and its chain value (or, before
    /// the first, the value the first must chain from when it is known).
    prev_seq: Option<u64>,
    prev_chain: Vec<u8>,
    torn: Option<BadLine>,
    pub entries: u64,
    /// The `seq` the verification was anchored at, when it did not start at 1.
    pub anchored_at: Option<u64>,
}

impl Verifier {
    pub fn new(key: ChainKey) -> Self {
        Self {
            key,
            prev_seq: None,
            prev_chain: Vec::new(),
            torn: None,
            entries: 0,
            anchored_at: None,
        }
    }

    /// A verifier that goes on after the entry `seq` with chain value
    /// `chain` (the last entry of the files before the ones it is given).
    pub fn after(key: ChainKey, seq: u64, chain: &[u8]) -> Self {
        let mut verifier = Self::new(key);
        verifier.prev_seq = Some(seq);
        verifier.prev_chain.extend_from_slice(chain);
        verifier
    }

    /// The last verified entry's `seq` and chain value.
    pub fn last(&self) -> Option<(u64, &[u8])> {
        self.prev_seq.map(|seq| (seq, self.prev_chain.as_slice()))
    }

    /// Feeds one line (without its newline).
    pub fn line(&mut self, source: usize, line_no: usize, line: &[u8]) -> Result<(), BadLine> {
        let bad = |why: String| BadLine {
            source,
            line: line_no,
            why,
        };
        let (mut parsed, head) = match read_line(line) {
            Ok(read) => read,
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
        parsed.anchor = head.detail.as_ref().and_then(|d| d.prev_chain.as_deref());
        if let Some(torn) = self.torn.take()
            && (!parsed.recovered || torn.source != source)
        {
            return Err(torn);
        }
        match self.prev_seq {
            None if parsed.seq == 1 => {
                self.prev_chain.clear();
                self.prev_chain.extend_from_slice(GENESIS.as_bytes());
            }
            None => match parsed.anchor {
                Some(anchor) => {
                    self.anchored_at = Some(parsed.seq);
                    self.prev_chain.clear();
                    self.prev_chain.extend_from_slice(anchor.as_bytes());
                }
                None => {
                    return Err(bad(format!(
                        "the first entry has sequence number {} and is not an anchor: earlier entries are missing",
                        parsed.seq
                    )));
                }
            },
            Some(seq) => {
                if parsed.seq != seq + 1 {
                    return Err(bad(format!(
                        "sequence number {}, expected {}: a line was deleted, reordered or inserted",
                        parsed.seq,
                        seq + 1
                    )));
                }
                if parsed
                    .anchor
                    .is_some_and(|anchor| anchor.as_bytes() != self.prev_chain.as_slice())
                {
                    return Err(bad(
                        "the chain restarts here (the file was recreated): earlier entries are missing"
                            .to_owned(),
                    ));
                }
            }
        }
        let computed = self.key.next_hex_of(&self.prev_chain, &[parsed.head, b"}"]);
        if computed.as_slice() != parsed.chain {
            return Err(bad(format!(
                "chain mismatch: the entry was edited, lines were reordered, or the {} key is wrong",
                self.key.label()
            )));
        }
        self.prev_seq = Some(parsed.seq);
        self.prev_chain.clear();
        self.prev_chain.extend_from_slice(parsed.chain);
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

/// The `seq` and chain value of the last complete entry among `lines`
/// (a file's tail), when there is one.
pub fn last_entry_of(tail: &[u8]) -> Option<ChainLink> {
    tail.split(|b| *b == b'\n')
        .rev()
        .filter(|l| !l.is_empty())
        .find_map(|l| read_line(l).ok())
        .map(|(line, _)| (line.seq, line.chain.to_vec()))
}

/// Verifies the lines of one text (a whole file): `Ok(entries)` or the first bad line.
pub fn verify_text(key: &ChainKey, text: &str) -> Result<u64, BadLine> {
    let mut verifier = Verifier::new(key.clone());
    for (i, line) in lines(text).enumerate() {
        verifier.line(0, i + 1, line.as_bytes())?;
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
#[path = "chain_tests.rs"]
mod tests;
