//! The result path without a tree: Gitea's JSON is read once by
//! serde_json's streaming deserializer and written straight back out,
//! compact, each string value and object key passing through the text
//! passes (exact redaction, then masking) on its way, and a top-level list
//! cut to the item bound as it is read. A string without escapes is
//! borrowed from Gitea's bytes; no `Value` is built, so a big list costs
//! one parse and one write instead of a tree of allocations walked four
//! times and serialized twice (docs/benchmarks.md, "Issue 17").
//!
//! The text written is byte for byte what serializing the tree path's
//! result gives: the same string escaping (serde_json's own escaper), the
//! same number formatting (serde_json's formatter on the same `u64`, `i64`
//! or `f64` the tree would hold), Gitea's key order. `transcode_tests`
//! compares the two. A document that needs what only the tree can do is
//! declined, and the caller takes the tree path:
//! - a base64 file field (`content_base64`, or `"encoding": "base64"`,
//!   which may come after the `content` it describes);
//! - an object key the passes would change (the tree keeps two keys that
//!   became equal apart);
//! - the webhook `authorization_header` field;
//! - a credential in block mode (the tree path names its families);
//! - a top-level value that is neither a list nor an object, and
//!   anything serde_json refuses (the tree path returns it as text).
//!
//! Only duplicate keys differ: serde_json's `Map` keeps the last value of
//! a repeated key, this pass writes each as Gitea sent it. Gitea's
//! encoder never repeats a key.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::ser::{CompactFormatter, Formatter};

use super::redaction::{AUTHORIZATION_HEADER_FIELD, Redactor};
use crate::masking::masker;

/// What pattern masking does to a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Masking {
    /// Off, or skipped (the success of a credential-issuing operation).
    None,
    /// Replace what looks like a credential.
    Mask,
    /// Block mode: a credential withholds the result, which the tree path
    /// words; the transcoder declines.
    Decline,
}

/// The passes every string of a result goes through, in order.
#[derive(Debug, Clone, Copy)]
pub struct TextPasses<'a> {
    pub redactor: &'a Redactor,
    pub masking: Masking,
}

impl TextPasses<'_> {
    /// `text` after the passes (borrowed when nothing changed), or `None`
    /// when block mode found a credential.
    fn rewrite<'s>(&self, text: &'s str) -> Option<Cow<'s, str>> {
        let redacted = self.redactor.redact_str(text);
        match self.masking {
            Masking::None => Some(redacted),
            Masking::Mask => Some(match masker().mask_if_found(&redacted) {
                Some(masked) => Cow::Owned(masked),
                None => redacted,
            }),
            Masking::Decline => masker().findings(&redacted).is_empty().then_some(redacted),
        }
    }
}

/// A JSON list or object, rewritten.
#[derive(Debug, PartialEq, Eq)]
pub struct Transcoded {
    /// The compact JSON text.
    pub json: String,
    /// Items of a top-level list left out by the item bound.
    pub omitted_items: usize,
}

/// Why the transcoder hands a document to the tree path. Not an error:
/// the tree path answers every document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the document needs the tree path")]
pub struct Declined;

/// Rewrites Gitea's JSON `body` (a list or an object), keeping at most
/// `max_items` items of a top-level list.
pub fn transcode(
    body: &[u8],
    passes: &TextPasses<'_>,
    max_items: usize,
) -> Result<Transcoded, Declined> {
    let mut out = Vec::with_capacity(body.len());
    let mut de = serde_json::Deserializer::from_slice(body);
    let omitted_items = de
        .deserialize_any(TopLevel {
            writer: Writer {
                out: &mut out,
                passes,
            },
            max_items,
        })
        .map_err(|_| Declined)?;
    de.end().map_err(|_| Declined)?;
    // Only `str`s and JSON punctuation were written.
    let json = String::from_utf8(out).map_err(|_| Declined)?;
    Ok(Transcoded {
        json,
        omitted_items,
    })
}

/// The output and the passes, handed down the document.
struct Writer<'w, 'p> {
    out: &'w mut Vec<u8>,
    passes: &'p TextPasses<'p>,
}

impl Writer<'_, '_> {
    fn reborrow(&mut self) -> Writer<'_, '_> {
        Writer {
            out: self.out,
            passes: self.passes,
        }
    }

    fn byte(&mut self, byte: u8) {
        self.out.push(byte);
    }

    /// A string after the passes, escaped as serde_json escapes it.
    fn string<E: de::Error>(&mut self, text: &str) -> Result<(), E> {
        let text = self.passes.rewrite(text).ok_or_else(declined)?;
        write_escaped(self.out, &text);
        Ok(())
    }
}

/// `text` as a JSON string, escaped by serde_json's own serializer.
fn write_escaped(out: &mut Vec<u8>, text: &str) {
    use serde::Serializer as _;
    // Writing to a `Vec` cannot fail.
    let _ = serde_json::Serializer::new(out).serialize_str(text);
}

fn declined<E: de::Error>() -> E {
    E::custom(Declined)
}

/// The top-level value: a list (item-bounded) or an object.
struct TopLevel<'w, 'p> {
    writer: Writer<'w, 'p>,
    max_items: usize,
}

impl<'de> Visitor<'de> for TopLevel<'_, '_> {
    /// Items left out.
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON list or object")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<usize, A::Error> {
        self.writer.byte(b'[');
        let mut kept = 0;
        while kept < self.max_items {
            let item = Element {
                writer: self.writer.reborrow(),
                first: kept == 0,
            };
            if seq.next_element_seed(item)?.is_none() {
                self.writer.byte(b']');
                return Ok(0);
            }
            kept += 1;
        }
        self.writer.byte(b']');
        // Block mode withholds a result over everything Gitea sent, so the
        // items the bound leaves out are still checked (and then dropped).
        let mut omitted = 0;
        if self.writer.passes.masking == Masking::Decline {
            let mut scratch = Vec::new();
            let mut sink = Writer {
                out: &mut scratch,
                passes: self.writer.passes,
            };
            while seq
                .next_element_seed(ValueSeed::new(sink.reborrow()))?
                .is_some()
            {
                sink.out.clear();
                omitted += 1;
            }
        } else {
            while seq.next_element::<IgnoredAny>()?.is_some() {
                omitted += 1;
            }
        }
        Ok(omitted)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<usize, A::Error> {
        AnyValue {
            writer: self.writer,
            of_encoding: false,
        }
        .visit_map(map)?;
        Ok(0)
    }
}

/// One item of a list, with the comma before it.
struct Element<'w, 'p> {
    writer: Writer<'w, 'p>,
    first: bool,
}

impl<'de> DeserializeSeed<'de> for Element<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(mut self, de: D) -> Result<(), D::Error> {
        if !self.first {
            self.writer.byte(b',');
        }
        ValueSeed::new(self.writer).deserialize(de)
    }
}

/// Any value, written as it is read.
struct ValueSeed<'w, 'p> {
    writer: Writer<'w, 'p>,
    /// The value of an `encoding` key: `"base64"` makes a sibling
    /// `content` a file field, which the tree path decodes.
    of_encoding: bool,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(AnyValue {
            writer: self.writer,
            of_encoding: self.of_encoding,
        })
    }
}

impl<'w, 'p> ValueSeed<'w, 'p> {
    fn new(writer: Writer<'w, 'p>) -> Self {
        Self {
            writer,
            of_encoding: false,
        }
    }
}

struct AnyValue<'w, 'p> {
    writer: Writer<'w, 'p>,
    of_encoding: bool,
}

impl<'de> Visitor<'de> for AnyValue<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.writer.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.writer
            .out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    // The formatter calls `serde_json::Value` uses when it serializes the
    // number the parser gave it: the same digits.
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        let _ = CompactFormatter.write_u64(self.writer.out, v);
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        let _ = CompactFormatter.write_i64(self.writer.out, v);
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // The parser refuses numbers out of range, so `v` is finite.
        let _ = CompactFormatter.write_f64(self.writer.out, v);
        Ok(())
    }

    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<(), E> {
        if self.of_encoding && v.eq_ignore_ascii_case("base64") {
            return Err(declined());
        }
        self.writer.string(v)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.writer.byte(b'[');
        let mut first = true;
        while seq
            .next_element_seed(Element {
                writer: self.writer.reborrow(),
                first,
            })?
            .is_some()
        {
            first = false;
        }
        self.writer.byte(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        self.writer.byte(b'{');
        let mut first = true;
        while let Some(key) = map.next_key_seed(Key {
            writer: self.writer.reborrow(),
            first,
        })? {
            first = false;
            map.next_value_seed(ValueSeed {
                writer: self.writer.reborrow(),
                of_encoding: key == KeyKind::Encoding,
            })?;
        }
        self.writer.byte(b'}');
        Ok(())
    }
}

/// What the transcoder must know about a key to judge its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    Plain,
    /// `encoding`: `"base64"` makes a sibling `content` a file field.
    Encoding,
}

/// An object key, with the comma before it and the colon after it.
struct Key<'w, 'p> {
    writer: Writer<'w, 'p>,
    first: bool,
}

impl<'de> DeserializeSeed<'de> for Key<'_, '_> {
    type Value = KeyKind;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<KeyKind, D::Error> {
        de.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_, '_> {
    type Value = KeyKind;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_str<E: de::Error>(mut self, key: &str) -> Result<KeyKind, E> {
        if key == "content_base64" || key.eq_ignore_ascii_case(AUTHORIZATION_HEADER_FIELD) {
            return Err(declined());
        }
        // A key the passes change is renamed by the tree path, which keeps
        // two keys that became equal apart.
        if matches!(self.writer.passes.rewrite(key), Some(Cow::Owned(_)) | None) {
            return Err(declined());
        }
        if !self.first {
            self.writer.byte(b',');
        }
        write_escaped(self.writer.out, key);
        self.writer.byte(b':');
        Ok(if key == "encoding" {
            KeyKind::Encoding
        } else {
            KeyKind::Plain
        })
    }
}

#[cfg(test)]
#[path = "transcode_tests.rs"]
mod tests;
