//! How a name someone else chose (a client's `client_name`) is shown to a
//! person: characters that hide or reorder text are named by code point,
//! so the page shows what the bytes say. The table is hand-written (a few
//! ranges) because no well-kept crate offers the Unicode `Cf` category
//! without pulling whole property tables; it follows Unicode 16.

/// True for a format character (Unicode general category `Cf`): bidi
/// embeddings, overrides and isolates, zero-width space and joiners, the
/// byte-order mark, tag characters. They display as nothing, or reorder
/// what follows (`Claude\u{202E}edualC`), so a registered name may not hold
/// them.
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
            shown.push_str(&format!("[U+{:04X}]", u32::from(c)));
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
        for c in ['a', ' ', 'é', '中', '\u{00A0}'] {
            assert!(!is_format_char(c), "{c:?}");
        }
    }

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
