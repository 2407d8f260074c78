//! Reading a query: its content words with their forge synonyms, the
//! values it names, and what its verb, its owner words and its plurals
//! say ([`read_query`]).

use super::synonyms;
use super::words::{self, Intent, Scope};

/// A synonym counts this much of the word itself.
const SYNONYM_WEIGHT: f32 = 0.8;
/// A word after a preposition names the context ("commits on a *branch*"),
/// and counts this much of the resource asked for.
const CONTEXT_WEIGHT: f32 = 0.6;
/// What "my" adds: the word `current` (the signed-in user's operations
/// are named `user_current_…`), weighted this much.
const OWN_WORD_WEIGHT: f32 = 0.5;

/// One query, read.
#[derive(Debug, Default)]
pub(super) struct Query {
    /// Each content word with its forms: itself, then its synonyms.
    pub(super) terms: Vec<Vec<(String, f32)>>,
    pub(super) intent: Option<Intent>,
    pub(super) scope: Option<Scope>,
    pub(super) plural: bool,
    pub(super) singular: bool,
    /// The query names one item by a number, sha or version.
    pub(super) numbered: bool,
}

/// Reads a query: content words with their synonyms, the values it
/// names, and what its verb, its owner words and its plurals say.
/// `known` says whether the catalog has a word: a query word it does not
/// have is tried without `-d`, `-ed` and `-ing` ("resolved" → "resolve").
pub(super) fn read_query(text: &str, known: impl Fn(&str) -> bool) -> Query {
    let mut query = Query::default();
    let tokens = words::tokens(text);
    let word_at = |i: usize| match tokens.get(i) {
        Some(words::Token::Word(w)) => Some(w.as_str()),
        _ => None,
    };
    let mut in_context = false;
    let mut words_seen = 0;
    for (position, token) in tokens.iter().enumerate() {
        let lower = match token {
            words::Token::Value(value) => {
                read_value(&mut query, *value);
                continue;
            }
            words::Token::Word(word) => word.clone(),
        };
        let first = words_seen == 0;
        words_seen += 1;
        if words::is_preposition(&lower) {
            in_context = true;
            continue;
        }
        let next = word_at(position + 1);
        let followed_by_article = next.is_some_and(|n| matches!(n, "a" | "an" | "new"));
        // "open a …", "file an issue" create; "open pull requests" are
        // those in the open state.
        if lower == "open" || (lower == "file" && first && followed_by_article) {
            if followed_by_article {
                query.intent.get_or_insert(Intent::Create);
            }
            continue;
        }
        // "pull request", "merge request": one word.
        if lower.starts_with("request")
            && position > 0
            && word_at(position - 1).is_some_and(|p| matches!(p, "pull" | "merge"))
        {
            continue;
        }
        if lower == "merge" && next.is_some_and(|n| n.starts_with("request")) {
            query.terms.push(vec![("pull".to_owned(), 1.0)]);
            continue;
        }
        if let Some(scope) = words::scope(&lower) {
            // "show me" is not "mine".
            let after_asking = position > 0
                && word_at(position - 1)
                    .is_some_and(|p| matches!(p, "show" | "tell" | "give" | "get"));
            if matches!(scope, Scope::Own) && after_asking {
                continue;
            }
            // "my" and "I" win over "org" in "my organizations".
            if query.scope != Some(Scope::Own) {
                query.scope = Some(scope);
            }
            if matches!(scope, Scope::Own) {
                if !query.terms.iter().any(|forms| forms[0].0 == "current") {
                    query
                        .terms
                        .push(vec![("current".to_owned(), OWN_WORD_WEIGHT)]);
                }
                continue;
            }
            if words::is_stopword(&lower) {
                continue;
            }
        }
        let stemmed = known_stem(&lower, &known);
        if words::is_stopword(&stemmed) {
            if matches!(
                lower.as_str(),
                "a" | "an" | "one" | "the" | "single" | "specific" | "detail" | "details" | "info"
            ) {
                query.singular = true;
            }
            continue;
        }
        // "find" and "look up" name the search operations too.
        if matches!(stemmed.as_str(), "find" | "look") {
            query.intent.get_or_insert(Intent::Read);
            query
                .terms
                .push(vec![("search".to_owned(), SYNONYM_WEIGHT)]);
            continue;
        }
        if let Some(intent) = words::verb(&stemmed) {
            query.intent.get_or_insert(intent);
            continue;
        }
        if let Some(intent) = words::action(&stemmed)
            && first
            && stemmed == lower
        {
            query.intent.get_or_insert(intent);
        }
        // "new" after a verb that creates only repeats it.
        if stemmed == "new" && (first || query.intent == Some(Intent::Create)) {
            query.intent.get_or_insert(Intent::Create);
            continue;
        }
        if stemmed != lower && lower.ends_with('s') && !lower.ends_with("'s") {
            query.plural = true;
        }
        let weight = if in_context { CONTEXT_WEIGHT } else { 1.0 };
        let mut forms = vec![(stemmed.clone(), weight)];
        for synonym in synonyms::synonyms(&stemmed)
            .iter()
            .chain(synonyms::synonyms(&lower))
        {
            if !forms.iter().any(|(f, _)| f == synonym) {
                forms.push(((*synonym).to_owned(), weight * SYNONYM_WEIGHT));
            }
        }
        query.terms.push(forms);
    }
    query
}

/// What a value in a query says: its kind, as a word of the context
/// ("release notes for *v1.4.2*" → a tag), and that one item is meant.
fn read_value(query: &mut Query, value: words::Value) {
    let forms: &[&str] = match value {
        words::Value::Path => &["path", "file"],
        words::Value::Version => &["tag", "release"],
        words::Value::Sha => &["commit", "sha"],
        words::Value::Branch => &["branch"],
        words::Value::Number | words::Value::Name => &[],
    };
    if matches!(
        value,
        words::Value::Number | words::Value::Sha | words::Value::Version
    ) {
        query.numbered = true;
    }
    if !forms.is_empty() {
        query.terms.push(
            forms
                .iter()
                .map(|form| ((*form).to_owned(), CONTEXT_WEIGHT))
                .collect(),
        );
    }
}

/// `word`'s stem, or, when the catalog does not have it, the first of its
/// shorter forms it has (`resolved` → `resolve`, `merging` → `merge`).
fn known_stem(word: &str, known: &impl Fn(&str) -> bool) -> String {
    let stemmed = words::stem(word);
    if known(&stemmed) {
        return stemmed;
    }
    let candidates = [
        word.strip_suffix('d')
            .filter(|_| word.ends_with("ed"))
            .map(str::to_owned),
        word.strip_suffix("ed").map(str::to_owned),
        word.strip_suffix("ing").map(|w| format!("{w}e")),
        word.strip_suffix("ing").map(str::to_owned),
    ];
    candidates
        .into_iter()
        .flatten()
        .filter(|c| c.len() > 2)
        .map(|c| words::stem(&c))
        .find(|c| known(c))
        .unwrap_or(stemmed)
}
