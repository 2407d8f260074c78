//! A query's word read in the catalog's words: its stem, a shorter or
//! longer form the catalog has, the word a prefix negates, and words joined
//! by hyphens as one word, its parts, or a name.

use super::query::SYNONYM_WEIGHT;
use super::{synonyms, tokens, words};

/// Words joined by hyphens, read: one word when the catalog has them
/// joined (`pre-release`), the words when it has each (`force-push`),
/// else a name (`old-site`, `release-1.4`: a repository's or a branch's).
pub(super) fn resolve_hyphens(
    tokens: Vec<tokens::Token>,
    known: &impl Fn(&str) -> bool,
) -> Vec<tokens::Token> {
    let mut resolved = Vec::with_capacity(tokens.len());
    for token in tokens {
        let tokens::Token::Hyphenated(parts) = token else {
            resolved.push(token);
            continue;
        };
        let joined = parts.concat();
        let is_known =
            |w: &str| known(&words::stem(w)) || words::is_stopword(w) || words::verb(w).is_some();
        if known(&words::stem(&joined)) || !synonyms::synonyms(&joined).is_empty() {
            resolved.push(tokens::Token::Word(joined));
        } else if parts.iter().all(|p| is_known(p)) {
            resolved.extend(parts.into_iter().map(tokens::Token::Word));
        } else {
            resolved.push(tokens::Token::Value(tokens::Value::Name));
        }
    }
    resolved
}

/// `word`'s stem, or, when the catalog does not have it, the first of its
/// shorter forms it has (`resolved` → `resolve`, `merging` → `merge`),
/// else the longest word of the catalog it starts with, of four letters or
/// more, at a synonym's weight (`administrator` → `admin`,
/// `teammates` → `team`); with the weight the form counts.
pub(super) fn known_stem(word: &str, known: &impl Fn(&str) -> bool) -> (String, f32) {
    let stemmed = words::stem(word);
    if known(&stemmed) {
        return (stemmed, 1.0);
    }
    let candidates = [
        word.strip_suffix('d')
            .filter(|_| word.ends_with("ed"))
            .map(str::to_owned),
        word.strip_suffix("ed").map(str::to_owned),
        word.strip_suffix("ing").map(|w| format!("{w}e")),
        word.strip_suffix("ing").map(str::to_owned),
    ];
    if let Some(shorter) = candidates
        .into_iter()
        .flatten()
        .filter(|c| c.len() > 2)
        .map(|c| words::stem(&c))
        .find(|c| known(c))
    {
        return (shorter, 1.0);
    }
    // "inactive", "unarchive", "deactivate": the word they negate, whose
    // operation (or field) sets both.
    if let Some(negated) = ["un", "in", "de", "dis"]
        .iter()
        .filter_map(|prefix| word.strip_prefix(prefix))
        .filter(|rest| rest.len() > 3)
        .map(words::stem)
        .find(|rest| known(rest))
    {
        return (negated, SYNONYM_WEIGHT);
    }
    let chars: Vec<(usize, char)> = word.char_indices().collect();
    (MIN_PREFIX..chars.len())
        .rev()
        .map(|n| &word[..chars[n].0])
        .find(|prefix| {
            known(prefix) && words::verb(prefix).is_none() && !words::is_stopword(prefix)
        })
        .map_or((stemmed, 1.0), |prefix| (prefix.to_owned(), SYNONYM_WEIGHT))
}

/// The shortest word of the catalog a longer query word is read as.
const MIN_PREFIX: usize = 4;
