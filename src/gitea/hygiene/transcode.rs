//! The result path without a tree: Gitea's JSON is read once by
//! serde_json's streaming deserializer and written straight back out,
//! compact, each string value and object key passing through the text
//! passes (exact redaction, then masking, then hidden characters made
//! visible) on its way, a top-level list cut to the item bound as it is
//! read, and, in the compact view, each object projected as it is read
//! (`catalog::projection`: fields dropped, nested objects written as the
//! field that names them, empty values left out, long texts in list items
//! cut). A string without escapes is borrowed from Gitea's bytes; no
//! `Value` is built, so a big list costs one parse and one write instead of
//! a tree of allocations walked four times and serialized twice
//! (docs/benchmarks.md, "Issue 17").
//!
//! The text written is byte for byte what serializing the tree path's
//! result gives: the same string escaping (serde_json's own escaper), the
//! same number formatting (serde_json's formatter on the same `u64`, `i64`
//! or `f64` the tree would hold), Gitea's key order. The tree path itself
//! ends here too, with [`TextPasses::cleaned`]: it serializes the document
//! it cleaned and this pass projects it and makes hidden characters
//! visible, so both views have one implementation. `transcode_tests`
//! compares the two paths. A document that needs what only the tree can do
//! is declined on the first pass, and the caller takes the tree path:
//! - a base64 file field (`content_base64`, or `"encoding": "base64"`,
//!   which may come after the `content` it describes);
//! - an object key the passes would change (the tree keeps two keys that
//!   became equal apart);
//! - the webhook `authorization_header` field;
//! - a credential in block mode (the tree path names its families);
//! - a top-level value that is neither a list nor an object, and
//!   anything serde_json refuses (the tree path returns it as text);
//! - nesting deeper than [`MAX_JSON_DEPTH`] anywhere, in values left out
//!   too (the tree path returns it as text). The depth is counted in this
//!   pass, so the body is not scanned for it first.
//!
//! Only two things differ. Duplicate keys: serde_json's `Map` keeps the
//! last value of a repeated key, this pass writes each as Gitea sent it
//! (Gitea's encoder never repeats a key). And a lone surrogate escape
//! (`"\ud800"`) inside a value this pass leaves out: serde_json refuses
//! it only when it reads the string, so the tree path returns such a body
//! as text, while this pass leaves the value out unread.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::ser::{CompactFormatter, Formatter};
use serde_json::value::RawValue;

use keys::{KeyCheck, PassedKeys};

#[path = "transcode_keys.rs"]
mod keys;
#[path = "transcode_writer.rs"]
mod writer;
pub use super::text_passes::{LIST_TEXT_CHARS, Masking, TextPasses};
use crate::catalog::{ListPlace, Node, Shapes};
use writer::{Context, Place, Writer, declined, write_escaped};

/// Go's zero time as Gitea writes it for a date that was never set (a
/// user who never signed in, a repository never archived): empty, as far
/// as the compact view is concerned.
const ZERO_DATES: [&str; 2] = ["0001-01-01T00:00:00Z", "1970-01-01T00:00:00Z"];

/// The compact view of one operation's answer: the shapes of its
/// catalog, and where the answer starts in them.
#[derive(Debug, Clone, Copy)]
pub struct Projection<'a> {
    pub shapes: &'a Shapes,
    pub root: &'a Node,
}

/// A JSON list or object, rewritten.
#[derive(Debug, PartialEq, Eq)]
pub struct Transcoded {
    /// The compact JSON text.
    pub json: String,
    /// Items of a top-level list left out by the item bound.
    pub omitted_items: usize,
    /// Format characters made visible (`[U+XXXX]`).
    pub hidden_chars: usize,
}

/// Why the transcoder hands a document to the tree path. Not an error:
/// the tree path answers every document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the document needs the tree path")]
pub struct Declined;

/// Rewrites Gitea's JSON `body` (a list or an object), keeping at most
/// `max_items` items of a top-level list, in the compact view when
/// `projection` is given.
pub fn transcode(
    body: &[u8],
    passes: &TextPasses<'_>,
    projection: Option<&Projection<'_>>,
    max_items: usize,
) -> Result<Transcoded, Declined> {
    let mut out = Vec::with_capacity(body.len());
    let context = Context {
        passes,
        shapes: projection.map(|p| p.shapes),
        hidden: Cell::new(0),
        passed_keys: PassedKeys::default(),
        depth: Cell::new(0),
    };
    let root = projection.map(|p| p.root);
    let mut de = serde_json::Deserializer::from_slice(body);
    let omitted_items = de
        .deserialize_any(TopLevel {
            writer: Writer {
                out: &mut out,
                context: &context,
            },
            root,
            max_items,
        })
        .map_err(|_| Declined)?;
    de.end().map_err(|_| Declined)?;
    // Only `str`s and JSON punctuation were written.
    let json = String::from_utf8(out).map_err(|_| Declined)?;
    Ok(Transcoded {
        json,
        omitted_items,
        hidden_chars: context.hidden.get(),
    })
}

/// The top-level value: a list (item-bounded) or an object.
struct TopLevel<'w, 'p, 'n> {
    writer: Writer<'w, 'p>,
    /// The projection's root (`None` in the full view).
    root: Option<&'n Node>,
    max_items: usize,
}

impl<'de> Visitor<'de> for TopLevel<'_, '_, '_> {
    /// Items left out.
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON list or object")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<usize, A::Error> {
        self.writer.context.enter()?;
        // A top-level list holds results, whatever its schema says.
        let place = match self.root {
            Some(Node::Results(item) | Node::List(item)) => Place {
                node: Some(item),
                list: ListPlace::Item,
            },
            Some(_) => Place {
                node: Some(&Node::Any),
                list: ListPlace::Item,
            },
            None => Place::FULL,
        };
        self.writer.byte(b'[');
        let mut kept = 0;
        while kept < self.max_items {
            let item = Element {
                writer: self.writer.reborrow(),
                first: kept == 0,
                place,
            };
            if seq.next_element_seed(item)?.is_none() {
                self.writer.byte(b']');
                self.writer.context.leave();
                return Ok(0);
            }
            kept += 1;
        }
        self.writer.byte(b']');
        // Block mode withholds a result over everything Gitea sent, so the
        // items the bound leaves out are still checked (and then dropped).
        let mut omitted = 0;
        if self.writer.context.passes.masking == Masking::Decline {
            let mut scratch = Vec::new();
            let mut sink = Writer {
                out: &mut scratch,
                context: self.writer.context,
            };
            while seq
                .next_element_seed(ValueSeed::new(sink.reborrow(), Place::FULL))?
                .is_some()
            {
                sink.out.clear();
                omitted += 1;
            }
        } else {
            while let Some(raw) = seq.next_element::<&RawValue>()? {
                self.writer.context.skip(raw)?;
                omitted += 1;
            }
        }
        self.writer.context.leave();
        Ok(omitted)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<usize, A::Error> {
        // The root object is the result: never written by name.
        let node = match self.root {
            Some(Node::Named(_)) => Some(&Node::Any),
            other => other,
        };
        AnyValue {
            writer: self.writer,
            place: Place {
                node,
                list: ListPlace::Alone,
            },
            of_encoding: false,
        }
        .visit_map(map)?;
        Ok(0)
    }
}

/// One item of a list, with the comma before it.
struct Element<'w, 'p, 'n> {
    writer: Writer<'w, 'p>,
    first: bool,
    place: Place<'n>,
}

impl<'de> DeserializeSeed<'de> for Element<'_, '_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(mut self, de: D) -> Result<(), D::Error> {
        if !self.first {
            self.writer.byte(b',');
        }
        let written = ValueSeed::new(self.writer.reborrow(), self.place).deserialize(de)?;
        // A list keeps its positions: a named object without its name is
        // `null`, never nothing.
        if written == Written::Nothing {
            self.writer.out.extend_from_slice(b"null");
        }
        Ok(())
    }
}

/// What writing a value left in the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    /// Nothing at all (a named object without its naming field).
    Nothing,
    /// An empty value: `null`, `""`, `0`, `false`, `[]` or `{}`.
    Empty,
    /// Content.
    Content,
}

impl Written {
    fn of(empty: bool) -> Self {
        if empty { Self::Empty } else { Self::Content }
    }
}

/// Any value, written as it is read.
struct ValueSeed<'w, 'p, 'n> {
    writer: Writer<'w, 'p>,
    place: Place<'n>,
    /// The value of an `encoding` key: `"base64"` makes a sibling
    /// `content` a file field, which the tree path decodes.
    of_encoding: bool,
}

impl<'w, 'p, 'n> ValueSeed<'w, 'p, 'n> {
    fn new(writer: Writer<'w, 'p>, place: Place<'n>) -> Self {
        Self {
            writer,
            place,
            of_encoding: false,
        }
    }
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_, '_, '_> {
    type Value = Written;

    fn deserialize<D: de::Deserializer<'de>>(self, de: D) -> Result<Written, D::Error> {
        de.deserialize_any(AnyValue {
            writer: self.writer,
            place: self.place,
            of_encoding: self.of_encoding,
        })
    }
}

struct AnyValue<'w, 'p, 'n> {
    writer: Writer<'w, 'p>,
    place: Place<'n>,
    of_encoding: bool,
}

impl<'de> Visitor<'de> for AnyValue<'_, '_, '_> {
    type Value = Written;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Written, E> {
        self.writer.out.extend_from_slice(b"null");
        Ok(Written::Empty)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Written, E> {
        self.writer
            .out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(Written::of(!v))
    }

    // The formatter calls `serde_json::Value` uses when it serializes the
    // number the parser gave it: the same digits.
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Written, E> {
        let _ = CompactFormatter.write_u64(self.writer.out, v);
        Ok(Written::of(v == 0))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Written, E> {
        let _ = CompactFormatter.write_i64(self.writer.out, v);
        Ok(Written::of(v == 0))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Written, E> {
        // The parser refuses numbers out of range, so `v` is finite.
        let _ = CompactFormatter.write_f64(self.writer.out, v);
        Ok(Written::of(v == 0.0))
    }

    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<Written, E> {
        if self.of_encoding
            && self.writer.context.passes.checks()
            && v.eq_ignore_ascii_case("base64")
        {
            return Err(declined());
        }
        self.writer.string(v, self.place.list.in_list())?;
        Ok(Written::of(v.is_empty() || ZERO_DATES.contains(&v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Written, A::Error> {
        self.writer.context.enter()?;
        let place = self.place.items();
        self.writer.byte(b'[');
        let mut first = true;
        while seq
            .next_element_seed(Element {
                writer: self.writer.reborrow(),
                first,
                place,
            })?
            .is_some()
        {
            first = false;
        }
        self.writer.byte(b']');
        self.writer.context.leave();
        Ok(Written::of(first))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Written, A::Error> {
        self.writer.context.enter()?;
        let shapes = self.writer.context.shapes;
        if let (Some(_), Some(Node::Named(field))) = (shapes, self.place.node) {
            let written = self.named(map, field)?;
            self.writer.context.leave();
            return Ok(written);
        }
        self.writer.byte(b'{');
        let mut wrote_any = false;
        while let Some(key) = map.next_key_seed(KeyCheck {
            passes: self.writer.context.passes,
            passed: &self.writer.context.passed_keys,
        })? {
            let list = self.place.list;
            let node = match (shapes, self.place.node) {
                (Some(shapes), Some(Node::Object(id))) => Some(shapes.field(*id, &key, list)),
                (Some(_), Some(Node::Verbatim)) | (_, None) => None,
                (Some(_), Some(_)) => Some(Shapes::generic_field(&key, list)),
                (None, Some(_)) => None,
            };
            if node == Some(&Node::Drop) {
                skip_value(&mut map, self.writer.context)?;
                continue;
            }
            let mark = self.writer.out.len();
            if wrote_any {
                self.writer.byte(b',');
            }
            let shown = self.writer.context.reveal(Cow::Borrowed(&*key));
            write_escaped(self.writer.out, &shown);
            self.writer.byte(b':');
            let written = map.next_value_seed(ValueSeed {
                writer: self.writer.reborrow(),
                place: self.place.field(node),
                of_encoding: &*key == "encoding",
            })?;
            // The compact view leaves empty values out; the full view
            // writes what Gitea sent.
            if node.is_some() && written != Written::Content {
                self.writer.out.truncate(mark);
            } else {
                wrote_any = true;
            }
        }
        self.writer.byte(b'}');
        self.writer.context.leave();
        Ok(Written::of(!wrote_any))
    }
}

impl AnyValue<'_, '_, '_> {
    /// A nested object written as the value of its naming `field`; the
    /// other fields are read and left out. Nothing is written when the
    /// field is missing.
    fn named<'de, A: MapAccess<'de>>(
        &mut self,
        mut map: A,
        field: &str,
    ) -> Result<Written, A::Error> {
        let mut written = Written::Nothing;
        // Keys left out need no checks, but in block mode everything Gitea
        // sent is looked at (`skip_value`).
        let cleaned = TextPasses::cleaned();
        let keys = if self.writer.context.passes.masking == Masking::Decline {
            self.writer.context.passes
        } else {
            &cleaned
        };
        // The same passes as the context's, or none: its known keys hold.
        while let Some(key) = map.next_key_seed(KeyCheck {
            passes: keys,
            passed: &self.writer.context.passed_keys,
        })? {
            if written == Written::Nothing && &*key == field {
                written = map.next_value_seed(ValueSeed::new(
                    self.writer.reborrow(),
                    self.place.field(Some(&Node::Any)),
                ))?;
            } else {
                skip_value(&mut map, self.writer.context)?;
            }
        }
        Ok(written)
    }
}

/// Reads a value the compact view leaves out. Block mode withholds a
/// result over everything Gitea sent (as the tree path does), so there the
/// value still goes through the passes, into a scratch buffer.
fn skip_value<'de, A: MapAccess<'de>>(map: &mut A, context: &Context<'_>) -> Result<(), A::Error> {
    if context.passes.masking != Masking::Decline {
        return context.skip(map.next_value::<&RawValue>()?);
    }
    let mut scratch = Vec::new();
    let sink = Writer {
        out: &mut scratch,
        context,
    };
    map.next_value_seed(ValueSeed::new(sink, Place::FULL))?;
    Ok(())
}

#[cfg(test)]
#[path = "transcode_tests.rs"]
mod tests;
