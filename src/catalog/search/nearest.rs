//! When no operation matches a query's words: the catalog's words nearest
//! to them in spelling, so that a search that found nothing can still
//! point at the areas worth a second search ("administrater" →
//! `admin`, "wokflow" → `workflow`). Character trigrams, compared by the
//! Dice coefficient: deterministic and cheap over a vocabulary of a thousand
//! words.

use std::collections::HashSet;

/// How alike two words must be in their trigrams to count as near.
const NEAR: f32 = 0.3;
/// Near words kept per query word, nearest first.
const PER_WORD: usize = 3;

/// The vocabulary's words nearest to `word`, nearest first (equal ones in
/// the vocabulary's sorted order), at most [`PER_WORD`].
pub fn near_words<'v>(word: &str, vocabulary: &[&'v str]) -> Vec<&'v str> {
    let grams = trigrams(word);
    if grams.is_empty() {
        return Vec::new();
    }
    let mut near: Vec<(f32, &str)> = vocabulary
        .iter()
        .filter(|candidate| **candidate != word)
        .filter_map(|candidate| {
            let theirs = trigrams(candidate);
            let shared = grams.intersection(&theirs).count() as f32;
            let similarity = shared / (grams.len() + theirs.len()) as f32 * 2.0;
            (similarity >= NEAR).then_some((similarity, *candidate))
        })
        .collect();
    near.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    near.into_iter().take(PER_WORD).map(|(_, w)| w).collect()
}

/// The word's character trigrams, padded so that its start counts.
fn trigrams(word: &str) -> HashSet<[char; 3]> {
    let chars: Vec<char> = std::iter::once(' ')
        .chain(word.chars())
        .chain(std::iter::once(' '))
        .collect();
    chars.windows(3).map(|w| [w[0], w[1], w[2]]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_word_finds_the_catalogs_word() {
        let vocabulary = ["admin", "workflow", "issue", "work"];
        assert_eq!(near_words("wokflow", &vocabulary)[0], "workflow");
        assert!(near_words("administrat", &vocabulary).contains(&"admin"));
    }

    #[test]
    fn an_unrelated_word_finds_nothing() {
        assert!(near_words("zebra", &["admin", "workflow", "issue"]).is_empty());
    }
}
