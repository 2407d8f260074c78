//! How a name someone else chose (a client's `client_name`) is shown to a
//! person: characters that hide or reorder text are named by code point,
//! so the page shows what the bytes say. The format characters are
//! `crate::hidden_text`'s; this adds the other easily missed ones.

use crate::hidden_text::{is_format_char, push_code_point};

/// True for a character that is easy to miss or to take for another: any
/// format or control character, any space but U+0020, the blank-looking
/// letters (Hangul fillers, the braille blank), variation selectors and the
/// combining grapheme joiner.
fn is_unusual(c: char) -> bool {
    is_format_char(c)
        || c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{034F}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{2800}'
                | '\u{3164}'
                | '\u{FFA0}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{E0100}'..='\u{E01EF}'
        )
}

/// `text` with every unusual character replaced by `[U+XXXX]`.
pub fn visible_text(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        if is_unusual(c) {
            push_code_point(&mut shown, c);
        } else {
            shown.push(c);
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_names_are_shown_as_they_are() {
        for name in [
            "Claude Desktop",
            "Le Chat",
            "Café Ünïcode 中文",
            "VS Code (Insiders)",
        ] {
            assert_eq!(visible_text(name), name);
        }
    }

    #[test]
    fn unusual_characters_are_shown_as_code_points() {
        assert_eq!(visible_text("a\u{00A0}b"), "a[U+00A0]b");
        assert_eq!(visible_text("x\u{3164}"), "x[U+3164]");
        assert_eq!(visible_text("r\u{202E}l"), "r[U+202E]l");
        assert_eq!(visible_text("t\u{E0041}"), "t[U+E0041]");
        assert_eq!(visible_text("\u{FE0F}"), "[U+FE0F]");
    }
}
