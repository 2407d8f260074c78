//! Characters that display as nothing, or reorder what follows, made
//! visible: Unicode format characters (general category `Cf`) such as bidi
//! embeddings, overrides and isolates, zero-width spaces and joiners, the
//! byte-order mark, and the tag characters U+E0000–U+E007F, which can spell
//! out whole ASCII instructions a person never sees but a model reads.
//! Each becomes `[U+XXXX]`. The pages use it for names someone else chose;
//! the result path for everything Gitea returns. A leaf.
//!
//! The table is hand-written (a few ranges) because no well-kept crate
//! offers the Unicode `Cf` category without pulling whole property tables;
//! it follows Unicode 16.

use std::borrow::Cow;
use std::fmt::Write as _;

/// True for a format character (Unicode general category `Cf`).
pub fn is_format_char(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0600}'..='\u{0605}'
            | '\u{061C}'
            | '\u{06DD}'
            | '\u{070F}'
            | '\u{0890}'..='\u{0891}'
            | '\u{08E2}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{110BD}'
            | '\u{110CD}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0001}'
            | '\u{E0020}'..='\u{E007F}'
    )
}

/// `c` as the page and the result show it: `[U+XXXX]`.
pub fn push_code_point(out: &mut String, c: char) {
    let _ = write!(out, "[U+{:04X}]", u32::from(c));
}

/// `text` with every format character shown as `[U+XXXX]`, and how many
/// there were. Borrowed when there are none (every ASCII text).
pub fn reveal(text: &str) -> (Cow<'_, str>, usize) {
    // Every format character is outside ASCII: most texts end here.
    if text.is_ascii() || !text.chars().any(is_format_char) {
        return (Cow::Borrowed(text), 0);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    let mut count = 0;
    for c in text.chars() {
        if is_format_char(c) {
            push_code_point(&mut shown, c);
            count += 1;
        } else {
            shown.push(c);
        }
    }
    (Cow::Owned(shown), count)
}

/// [`reveal`] for a text the caller may give away: itself when nothing
/// is hidden, so a borrowed text stays borrowed.
pub fn reveal_cow(text: Cow<'_, str>) -> (Cow<'_, str>, usize) {
    let (shown, count) = reveal(&text);
    if count == 0 {
        return (text, 0);
    }
    let shown = shown.into_owned();
    (Cow::Owned(shown), count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_controls_zero_width_and_tags_are_format_characters() {
        for c in [
            '\u{202E}',
            '\u{2066}',
            '\u{200B}',
            '\u{200D}',
            '\u{FEFF}',
            '\u{E0041}',
        ] {
            assert!(is_format_char(c), "{c:?}");
        }
        for c in ['a', ' ', 'é', '中', '\u{00A0}', '\n'] {
            assert!(!is_format_char(c), "{c:?}");
        }
    }

    #[test]
    fn ordinary_text_is_borrowed_untouched() {
        for text in ["plain", "Café Ünïcode 中文\nline two", ""] {
            let (shown, count) = reveal(text);
            assert!(matches!(shown, Cow::Borrowed(_)));
            assert_eq!((shown.as_ref(), count), (text, 0));
        }
    }

    #[test]
    fn smuggled_tag_characters_are_spelled_out() {
        // "hi" in tag characters, after visible text.
        let (shown, count) = reveal("Fix typo\u{E0068}\u{E0069}");
        assert_eq!(shown, "Fix typo[U+E0068][U+E0069]");
        assert_eq!(count, 2);
    }

    #[test]
    fn bidi_overrides_and_zero_width_spaces_are_shown() {
        let (shown, count) = reveal("a\u{202E}b\u{200B}c");
        assert_eq!(shown, "a[U+202E]b[U+200B]c");
        assert_eq!(count, 2);
    }
}
