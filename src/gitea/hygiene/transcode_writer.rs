//! What the transcoder writes with: the output (`Writer`), what every
//! value of one document shares (`Context`: the text passes, the compact
//! view's shapes, the count of characters made visible, the keys known to
//! pass, the depth of lists and objects open), and where one value sits in
//! the projection (`Place`).

use std::borrow::Cow;
use std::cell::Cell;

use serde::de;
use serde_json::value::RawValue;

use super::keys::PassedKeys;
use super::{Declined, TextPasses};
use crate::catalog::{ListPlace, Node, Shapes};
use crate::gitea::envelope::{MAX_JSON_DEPTH, json_depth};
use crate::gitea::hygiene::text_passes::cut_long_text;
use crate::hidden_text::reveal_cow;

/// What every value of one document is written with.
pub(super) struct Context<'p> {
    pub(super) passes: &'p TextPasses<'p>,
    /// `Some` in the compact view.
    pub(super) shapes: Option<&'p Shapes>,
    pub(super) hidden: Cell<usize>,
    /// Keys found to pass `passes` unchanged, not checked again.
    pub(super) passed_keys: PassedKeys,
    /// Lists and objects open around the value being read.
    pub(super) depth: Cell<usize>,
}

impl Context<'_> {
    pub(super) fn compact(&self) -> bool {
        self.shapes.is_some()
    }

    /// Into a list or object; declined past [`MAX_JSON_DEPTH`].
    pub(super) fn enter<E: de::Error>(&self) -> Result<(), E> {
        self.within(1)?;
        self.depth.set(self.depth.get() + 1);
        Ok(())
    }

    /// Out of the list or object [`Context::enter`] went into. On an
    /// error the whole pass ends, so only the success path leaves.
    pub(super) fn leave(&self) {
        self.depth.set(self.depth.get() - 1);
    }

    /// Declined if a value `levels` deep, here, passes [`MAX_JSON_DEPTH`].
    fn within<E: de::Error>(&self, levels: usize) -> Result<(), E> {
        if self.depth.get() + levels > MAX_JSON_DEPTH {
            return Err(declined());
        }
        Ok(())
    }

    /// Reads a value that is left out, unparsed (serde_json only finds
    /// its end), and counts its nesting.
    pub(super) fn skip<E: de::Error>(&self, raw: &RawValue) -> Result<(), E> {
        self.within(json_depth(raw.get().as_bytes()))
    }

    /// `text` with its format characters shown, counted.
    pub(super) fn reveal<'s>(&self, text: Cow<'s, str>) -> Cow<'s, str> {
        let (shown, count) = reveal_cow(text);
        self.hidden.set(self.hidden.get() + count);
        shown
    }
}

/// How one value is written: its node of the projection (`None` in the
/// full view) and where it sits relative to a result list's items.
#[derive(Debug, Clone, Copy)]
pub(super) struct Place<'n> {
    pub(super) node: Option<&'n Node>,
    pub(super) list: ListPlace,
}

impl<'n> Place<'n> {
    pub(super) const FULL: Place<'static> = Place {
        node: None,
        list: ListPlace::Alone,
    };

    /// The place of a field's value of an object at this place.
    pub(super) fn field(self, node: Option<&'n Node>) -> Place<'n> {
        Place {
            node,
            list: self.list.nested(),
        }
    }

    /// The place of the items of a list at this place.
    pub(super) fn items(self) -> Place<'n> {
        match self.node {
            Some(Node::List(item)) => Place {
                node: Some(item),
                list: self.list.nested(),
            },
            Some(Node::Results(item)) => Place {
                node: Some(item),
                list: ListPlace::Item,
            },
            Some(_) => Place {
                node: Some(&Node::Any),
                list: self.list.nested(),
            },
            None => Place::FULL,
        }
    }
}

/// The output and the passes, handed down the document.
pub(super) struct Writer<'w, 'p> {
    pub(super) out: &'w mut Vec<u8>,
    pub(super) context: &'p Context<'p>,
}

impl Writer<'_, '_> {
    pub(super) fn reborrow(&mut self) -> Writer<'_, '_> {
        Writer {
            out: self.out,
            context: self.context,
        }
    }

    pub(super) fn byte(&mut self, byte: u8) {
        self.out.push(byte);
    }

    /// A string after the passes, escaped as serde_json escapes it, cut
    /// when it is a long text in a compact list item.
    pub(super) fn string<E: de::Error>(&mut self, text: &str, in_item: bool) -> Result<(), E> {
        let text = self
            .context
            .passes
            .rewrite(text)
            .ok_or_else(declined::<E>)?;
        // Cut before the invisible characters are shown, so a cut never
        // splits a `[U+XXXX]` and the count is of what the model sees.
        if in_item && self.context.compact() {
            let (kept, cut) = cut_long_text(&text);
            let shown = self.context.reveal(Cow::Borrowed(kept));
            match cut {
                Some(marker) => write_escaped(self.out, &format!("{shown}{marker}")),
                None => write_escaped(self.out, &shown),
            }
        } else {
            write_escaped(self.out, &self.context.reveal(text));
        }
        Ok(())
    }
}

/// `text` as a JSON string, escaped by serde_json's own serializer.
pub(super) fn write_escaped(out: &mut Vec<u8>, text: &str) {
    use serde::Serializer as _;
    // Writing to a `Vec` cannot fail.
    let _ = serde_json::Serializer::new(out).serialize_str(text);
}

pub(super) fn declined<E: de::Error>() -> E {
    E::custom(Declined)
}
