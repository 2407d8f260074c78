//! What an operation is for, in a person's words, where Gitea's summary
//! says how it works ("Merge PR's baseBranch into headBranch") or says
//! little ("Get a hook"). A purpose is searched like a summary and shown as
//! the search result's `does`, so the model reads what it found in the
//! words it asked with. Beside it, how people ask for the operation
//! ("revoke my old api token"): requests searched as a weaker field and
//! never shown (document expansion). Both are data (`purposes.tsv`,
//! `asked.tsv`, one line per operation), written from the operations'
//! documented behaviour, never from an evaluation query.

use std::collections::HashMap;
use std::sync::LazyLock;

const PURPOSES_TABLE: &str = include_str!("purposes.tsv");
const ASKED_TABLE: &str = include_str!("asked.tsv");

static PURPOSES: LazyLock<HashMap<&'static str, &'static str>> =
    LazyLock::new(|| table_lines(PURPOSES_TABLE).collect());
static ASKED: LazyLock<HashMap<&'static str, &'static str>> =
    LazyLock::new(|| table_lines(ASKED_TABLE).collect());

/// A table's lines as (tool name, text), comments and blank lines skipped.
/// A line without a tab is skipped here and refused by a test.
fn table_lines(table: &'static str) -> impl Iterator<Item = (&'static str, &'static str)> {
    table
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once('\t'))
}

/// What `tool_name` is for, in a person's words.
pub fn purpose(tool_name: &str) -> Option<&'static str> {
    PURPOSES.get(tool_name).copied()
}

/// How people ask for `tool_name`: requests separated by `|`.
pub fn asked(tool_name: &str) -> Option<&'static str> {
    ASKED.get(tool_name).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    /// The longest purpose, in bytes: a purpose is one line of a search
    /// answer.
    const MAX_PURPOSE_BYTES: usize = 150;

    /// Each line of `table` that is not a comment, as (name, text),
    /// refusing a line without exactly one tab or with empty text.
    fn checked_lines(table: &'static str) -> Vec<(&'static str, &'static str)> {
        let mut lines = Vec::new();
        for line in table.lines() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let (name, text) = line.split_once('\t').expect("a tab");
            assert!(!text.contains('\t'), "{name}: two tabs");
            assert!(!text.trim().is_empty(), "{name}: no text");
            lines.push((name, text));
        }
        lines
    }

    fn assert_each_names_an_operation_once(lines: &[(&str, &str)]) {
        let catalog = Catalog::bundled();
        let mut names: Vec<&str> = lines.iter().map(|(name, _)| *name).collect();
        for name in &names {
            assert!(catalog.get(name).is_some(), "{name} is not an operation");
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), lines.len(), "an operation is named twice");
    }

    #[test]
    fn every_purpose_is_one_short_line_naming_an_operation_once() {
        let lines = checked_lines(PURPOSES_TABLE);
        for (name, purpose) in &lines {
            assert!(purpose.len() <= MAX_PURPOSE_BYTES, "{name}: too long");
        }
        assert_each_names_an_operation_once(&lines);
    }

    #[test]
    fn every_request_is_a_few_plain_words_naming_an_operation_once() {
        let lines = checked_lines(ASKED_TABLE);
        for (name, requests) in &lines {
            for request in requests.split('|') {
                let words = request.split_whitespace().count();
                assert!((2..=10).contains(&words), "{name}: {request:?}");
                assert!(
                    !request.chars().any(|c| c.is_ascii_digit()),
                    "{name}: a number"
                );
            }
        }
        assert_each_names_an_operation_once(&lines);
    }
}
