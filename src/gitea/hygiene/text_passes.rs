//! The passes every string of a result goes through on the streamed path:
//! exact redaction, then pattern masking (or, in block mode, a refusal
//! left to the tree path), and, in the compact view, the cut of a long
//! text inside a list item.

use std::borrow::Cow;

use super::redaction::Redactor;
use crate::masking::masker;

/// A string inside a list item longer than this many characters is cut in
/// the compact view (`docs/tools.md`, "Views").
pub const LIST_TEXT_CHARS: usize = 300;

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
    /// `None`: the tree path has already redacted and masked the
    /// document; nothing is rewritten but hidden characters, and nothing
    /// declines.
    pub redactor: Option<&'a Redactor>,
    pub masking: Masking,
}

impl<'a> TextPasses<'a> {
    /// Redaction, then `masking`: the first pass over Gitea's bytes.
    pub fn new(redactor: &'a Redactor, masking: Masking) -> Self {
        Self {
            redactor: Some(redactor),
            masking,
        }
    }

    /// For a document the tree path has cleaned.
    pub fn cleaned() -> Self {
        Self {
            redactor: None,
            masking: Masking::None,
        }
    }

    /// The first pass checks what only the tree path can do.
    pub(super) fn checks(&self) -> bool {
        self.redactor.is_some()
    }

    /// `text` after redaction and masking (borrowed when nothing changed),
    /// or `None` when block mode found a credential.
    pub(super) fn rewrite<'s>(&self, text: &'s str) -> Option<Cow<'s, str>> {
        let Some(redactor) = self.redactor else {
            return Some(Cow::Borrowed(text));
        };
        let redacted = redactor.redact_str(text);
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

/// `text` cut to [`LIST_TEXT_CHARS`] characters, and the marker that
/// says how to read the rest when it was cut.
pub(super) fn cut_long_text(text: &str) -> (&str, Option<String>) {
    // A character is at least one byte: shorter texts need no count.
    if text.len() <= LIST_TEXT_CHARS {
        return (text, None);
    }
    let Some((at, _)) = text.char_indices().nth(LIST_TEXT_CHARS) else {
        return (text, None);
    };
    let rest = text[at..].chars().count();
    (
        &text[..at],
        Some(format!(
            "… [{rest} more characters: read this item alone, or pass view: full]"
        )),
    )
}
