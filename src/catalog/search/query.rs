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
/// What "who" adds: the word `people` (purposes say who an answer lists).
const WHO_WEIGHT: f32 = 0.5;
/// Words after which "make" changes a thing rather than creating one.
const MADE_INTO: &[&str] = &[
    "private", "public", "admin", "default", "visible", "internal", "archived", "owner",
];
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
    /// The query names an item by its number ("issue 5", "#12"): an item
    /// of a repository, whatever "my" says of it.
    pub(super) item_number: bool,
    /// The query holds a word the catalog does not have: a name.
    pub(super) names_someone: bool,
    /// How many refs (shas, versions, branches) the query names.
    pub(super) refs: usize,
}

/// Reads a query: content words with their synonyms, the values it
/// names, and what its verb, its owner words and its plurals say.
/// `known` says whether the catalog has a word: a query word it does not
/// have is tried without `-d`, `-ed` and `-ing` ("resolved" → "resolve").
pub(super) fn read_query(text: &str, known: impl Fn(&str) -> bool) -> Query {
    let tokens = resolve_hyphens(words::tokens(text), &known);
    let mut reading = Reading {
        query: Query::default(),
        tokens: &tokens,
        known: &known,
        in_context: false,
        words_seen: 0,
        made: false,
    };
    for (position, token) in tokens.iter().enumerate() {
        match token {
            words::Token::Value(value) => read_value(&mut reading.query, *value),
            words::Token::Word(word) => reading.word(position, word),
            words::Token::Hyphenated(_) => {}
        }
    }
    reading.finish()
}

/// A query as it is read, word by word.
struct Reading<'t, K> {
    query: Query,
    tokens: &'t [words::Token],
    known: &'t K,
    /// Past a preposition: the words name the context.
    in_context: bool,
    words_seen: usize,
    /// "make the org private": a change, not a creation ([`MADE_INTO`]).
    made: bool,
}

impl<'t, K: Fn(&str) -> bool> Reading<'t, K> {
    fn word_at(&self, i: usize) -> Option<&'t str> {
        match self.tokens.get(i) {
            Some(words::Token::Word(w)) => Some(w.as_str()),
            _ => None,
        }
    }

    /// One word, at `position`: a phrase, an owner word, a function word,
    /// a verb, or a content word with its synonyms.
    fn word(&mut self, position: usize, lower: &str) {
        let first = self.words_seen == 0;
        self.words_seen += 1;
        if self.phrase(position, lower, first) || self.owner_word(position, lower) {
            return;
        }
        let (stemmed, form_weight) = known_stem(lower, self.known);
        // A word the catalog does not have, of a name's shape: most often
        // someone's login ("followers of alice", "add erin to the team").
        if !(self.known)(&stemmed) && lower.chars().all(char::is_alphanumeric) && lower.len() >= 3 {
            self.query.names_someone = true;
        }
        if self.function_word(lower, &stemmed) {
            return;
        }
        // A past participle ("what changed", "merged branches") says what
        // happened, not what to do: a word, not the call's verb.
        let participle = lower.len() > 4
            && lower.ends_with("ed")
            && !matches!(lower, "need" | "feed" | "seed" | "speed" | "embed");
        if self.verb(position, lower, &stemmed, first, participle) {
            return;
        }
        if stemmed != lower && lower.ends_with('s') && !lower.ends_with("'s") {
            self.query.plural = true;
        }
        // A participle qualifies ("merged branches") more than it names.
        let qualifies = self.in_context || participle;
        let weight = form_weight * if qualifies { CONTEXT_WEIGHT } else { 1.0 };
        let mut forms = vec![(stemmed.clone(), weight)];
        for synonym in synonyms::synonyms(&stemmed)
            .iter()
            .chain(synonyms::synonyms(lower))
        {
            if !forms.iter().any(|(f, _)| f == synonym) {
                forms.push(((*synonym).to_owned(), weight * SYNONYM_WEIGHT));
            }
        }
        self.query.terms.push(forms);
    }

    /// Words read together, or as the context; true when the word is read.
    fn phrase(&mut self, position: usize, lower: &str, first: bool) -> bool {
        let next = self.word_at(position + 1);
        let query = &mut self.query;
        // "across all repositories": every repository, which a search reads.
        if lower == "across" {
            push_once(query, "search", SYNONYM_WEIGHT);
        }
        if words::is_preposition(lower) {
            self.in_context = true;
            return true;
        }
        let followed_by_article = next.is_some_and(|n| matches!(n, "a" | "an" | "new"));
        match (lower, next) {
            // "kick off a workflow" starts it.
            ("kick", Some("off")) => {
                query.intent.get_or_insert(Intent::Create);
                push_once(query, "dispatch", SYNONYM_WEIGHT);
                push_once(query, "run", SYNONYM_WEIGHT);
            }
            // "look at a pull request" reviews it.
            ("look", Some("at")) => push_once(query, "review", SYNONYM_WEIGHT),
            // "who can review", "who starred": people.
            ("who", _) => push_once(query, "people", WHO_WEIGHT),
            // "get rid of": remove.
            ("get", Some("rid")) | ("rid", _) => {
                query.intent.get_or_insert(Intent::Remove);
            }
            // "lock down main": protect it.
            ("lock", Some("down")) => {
                query.intent.get_or_insert(Intent::Create);
                push_once(query, "protection", SYNONYM_WEIGHT);
            }
            // "spin up", "set up", "stand up" a thing: create it.
            ("spin" | "stand", Some("up")) => {
                query.intent.get_or_insert(Intent::Create);
            }
            // "when did alice sign up": her account's creation.
            ("sign", Some("up")) => {
                push_once(query, "created", SYNONYM_WEIGHT);
                push_once(query, "user", SYNONYM_WEIGHT);
            }
            // "part of the org": a member of it.
            ("part", Some("of")) => push_once(query, "member", SYNONYM_WEIGHT),
            // "logged in as", "signed in": the signed-in user.
            ("logged" | "signed", Some("in")) => {
                push_once(query, "current", OWN_WORD_WEIGHT);
                push_once(query, "user", SYNONYM_WEIGHT);
                query.scope.get_or_insert(Scope::Own);
            }
            // "open a …", "file an issue" create; "open pull requests" are
            // those in the open state.
            ("open", _) | ("file", _) if lower == "open" || first && followed_by_article => {
                if followed_by_article {
                    query.intent.get_or_insert(Intent::Create);
                }
            }
            // "merge request": a pull request.
            ("merge", Some(n)) if n.starts_with("request") => {
                query.terms.push(vec![("pull".to_owned(), 1.0)]);
            }
            // "pull request", "merge request": one word.
            (l, _)
                if l.starts_with("request")
                    && position > 0
                    && self
                        .word_at(position - 1)
                        .is_some_and(|p| matches!(p, "pull" | "merge")) => {}
            _ => return false,
        }
        true
    }

    /// "my", "org", "admin": whose resource; true when the word is read.
    fn owner_word(&mut self, position: usize, lower: &str) -> bool {
        let Some(scope) = words::scope(lower) else {
            return false;
        };
        // "show me" is not "mine".
        let after_asking = position > 0
            && self
                .word_at(position - 1)
                .is_some_and(|p| matches!(p, "show" | "tell" | "give" | "get"));
        let query = &mut self.query;
        if matches!(scope, Scope::Own) && after_asking {
            return true;
        }
        // "my" and "I" win over "org" in "my organizations".
        if query.scope != Some(Scope::Own) {
            query.scope = Some(scope);
        }
        if matches!(scope, Scope::Own) {
            push_once(query, "current", OWN_WORD_WEIGHT);
            return true;
        }
        words::is_stopword(lower)
    }

    /// A word that says nothing of the operation (an article says one item
    /// is meant), or "find"/"look", which name the searches; true when read.
    fn function_word(&mut self, lower: &str, stemmed: &str) -> bool {
        if words::is_stopword(stemmed) {
            if matches!(
                lower,
                "a" | "an" | "one" | "the" | "single" | "specific" | "detail" | "details" | "info"
            ) {
                self.query.singular = true;
            }
            return true;
        }
        if matches!(stemmed, "find" | "look") {
            self.query.intent.get_or_insert(Intent::Read);
            push_once(&mut self.query, "search", SYNONYM_WEIGHT);
            return true;
        }
        false
    }

    /// What a verb says the call does; true when the word is only a verb.
    fn verb(
        &mut self,
        position: usize,
        lower: &str,
        stemmed: &str,
        first: bool,
        participle: bool,
    ) -> bool {
        if first && lower == "make" {
            self.made = true;
        }
        let next = self.word_at(position + 1);
        let query = &mut self.query;
        if let Some(intent) = words::verb(stemmed).filter(|_| !participle) {
            query.intent.get_or_insert(intent);
            return true;
        }
        // "start following", "stop watching": the -ing word is the
        // action; the first says only whether it begins or ends.
        let gerund_next = next.is_some_and(|n| n.len() > 5 && n.ends_with("ing"));
        if first && gerund_next && matches!(lower, "start" | "begin" | "stop" | "quit") {
            let ends = matches!(lower, "stop" | "quit");
            query
                .intent
                .get_or_insert(if ends { Intent::Remove } else { Intent::Create });
            return true;
        }
        if let Some(intent) = words::action(stemmed)
            && first
            && stemmed == lower
        {
            query.intent.get_or_insert(intent);
        }
        // "new" after a verb that creates only repeats it.
        if stemmed == "new" && (first || query.intent == Some(Intent::Create)) {
            query.intent.get_or_insert(Intent::Create);
            return true;
        }
        false
    }

    /// The query, its "make … private" a change, "my" with a numbered
    /// item the item's author, its forms as match keys.
    fn finish(mut self) -> Query {
        let query = &mut self.query;
        // "my comment 4512", "my +1 on issue 5": a repository's item I
        // wrote, not a resource of my account.
        if query.item_number && query.scope == Some(Scope::Own) {
            query.scope = None;
            query.terms.retain(|forms| forms[0].0 != "current");
        }
        if self.made
            && query.intent == Some(Intent::Create)
            && query
                .terms
                .iter()
                .any(|forms| MADE_INTO.contains(&forms[0].0.as_str()))
        {
            query.intent = Some(Intent::Change);
        }
        for forms in &mut query.terms {
            let mut keyed: Vec<(String, f32)> = Vec::with_capacity(forms.len());
            for (form, weight) in forms.drain(..) {
                let key = words::key(&form);
                if !keyed.iter().any(|(k, _)| *k == key) {
                    keyed.push((key, weight));
                }
            }
            *forms = keyed;
        }
        self.query
    }
}

/// Words joined by hyphens, read: one word when the catalog has them
/// joined (`pre-release`), the words when it has each (`force-push`),
/// else a name (`old-site`, `release-1.4`: a repository's or a branch's).
fn resolve_hyphens(tokens: Vec<words::Token>, known: &impl Fn(&str) -> bool) -> Vec<words::Token> {
    let mut resolved = Vec::with_capacity(tokens.len());
    for token in tokens {
        let words::Token::Hyphenated(parts) = token else {
            resolved.push(token);
            continue;
        };
        let joined = parts.concat();
        let is_known =
            |w: &str| known(&words::stem(w)) || words::is_stopword(w) || words::verb(w).is_some();
        if known(&words::stem(&joined)) || !synonyms::synonyms(&joined).is_empty() {
            resolved.push(words::Token::Word(joined));
        } else if parts.iter().all(|p| is_known(p)) {
            resolved.extend(parts.into_iter().map(words::Token::Word));
        } else {
            resolved.push(words::Token::Value(words::Value::Name));
        }
    }
    resolved
}

/// Adds `form` as a term of its own, unless a term has it already.
fn push_once(query: &mut Query, form: &str, weight: f32) {
    if !query.terms.iter().any(|forms| forms[0].0 == form) {
        query.terms.push(vec![(form.to_owned(), weight)]);
    }
}

/// What a value in a query says: its kind, as a word of the context
/// ("release notes for *v1.4.2*" → a tag), and that one item is meant.
fn read_value(query: &mut Query, value: words::Value) {
    let forms: &[&str] = match value {
        words::Value::Path => &["path", "file"],
        words::Value::Workflow => &["workflow", "file"],
        words::Value::Version => &["tag", "release"],
        words::Value::Sha => &["commit", "sha"],
        words::Value::Branch => &["branch"],
        words::Value::Number | words::Value::Name => &[],
    };
    // Two refs named ("v1.2 and v1.3", "main and develop") ask for what
    // lies between them.
    if matches!(
        value,
        words::Value::Sha | words::Value::Version | words::Value::Branch
    ) {
        if query.refs > 0 {
            push_once(query, "compare", SYNONYM_WEIGHT);
        }
        query.refs += 1;
    }
    if matches!(
        value,
        words::Value::Number | words::Value::Sha | words::Value::Version
    ) {
        query.numbered = true;
    }
    if value == words::Value::Number {
        query.item_number = true;
    }
    let already = forms
        .first()
        .is_some_and(|first| query.terms.iter().any(|t| t[0].0 == *first));
    if !forms.is_empty() && !already {
        query.terms.push(
            forms
                .iter()
                .map(|form| ((*form).to_owned(), CONTEXT_WEIGHT))
                .collect(),
        );
    }
}

/// `word`'s stem, or, when the catalog does not have it, the first of its
/// shorter forms it has (`resolved` → `resolve`, `merging` → `merge`),
/// else the longest word of the catalog it starts with, of four letters or
/// more, at a synonym's weight (`administrator` → `admin`,
/// `teammates` → `team`); with the weight the form counts.
fn known_stem(word: &str, known: &impl Fn(&str) -> bool) -> (String, f32) {
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
#[cfg(test)]
mod tests {
    use super::super::SearchIndex;
    use super::*;
    use crate::catalog::Catalog;

    /// `text` read against the bundled catalog's words.
    fn read(text: &str) -> Query {
        let index = SearchIndex::new(Catalog::bundled().operations());
        read_query(text, |word| index.frequency.contains_key(&words::key(word)))
    }

    fn has_term(query: &Query, key: &str) -> bool {
        query
            .terms
            .iter()
            .any(|forms| forms.iter().any(|(form, _)| form == key))
    }

    #[test]
    fn a_past_participle_is_a_word_not_the_calls_verb() {
        let query = read("what changed in the readme");
        assert_eq!(query.intent, None);
        assert!(has_term(&query, "commit"));
    }

    #[test]
    fn two_refs_ask_for_what_lies_between_them() {
        assert!(has_term(&read("diff v1.2 v1.3"), "compar"));
        assert!(!has_term(&read("release v1.3"), "compar"));
    }

    #[test]
    fn a_hyphenated_name_is_a_name_not_its_words() {
        let query = read("archive the old-site repository");
        assert_eq!(query.scope, None);
        assert!(!has_term(&query, "site"));
        assert!(has_term(
            &read("list pre-release versions"),
            &words::key("prerelease")
        ));
    }

    #[test]
    fn a_negated_word_reads_as_the_word_it_negates() {
        assert!(has_term(
            &read("unarchive a repository"),
            &words::key("archive")
        ));
    }

    #[test]
    fn an_unknown_longer_word_reads_as_the_catalog_word_it_starts_with() {
        assert!(has_term(&read("teammates of backend"), "team"));
    }

    #[test]
    fn start_before_a_gerund_leaves_the_action_to_it() {
        let query = read("start following bob");
        assert_eq!(query.intent, Some(Intent::Create));
        assert!(!has_term(&query, "start"));
        assert_eq!(read("stop watching acme/app").intent, Some(Intent::Remove));
    }

    #[test]
    fn make_into_an_adjective_is_a_change() {
        assert_eq!(read("make the org private").intent, Some(Intent::Change));
        assert_eq!(read("make a new label").intent, Some(Intent::Create));
    }

    #[test]
    fn phrases_read_as_what_they_mean() {
        assert!(has_term(&read("kick off the nightly build"), "dispatch"));
        assert_eq!(read("who am i logged in as").scope, Some(Scope::Own));
        assert!(has_term(&read("who can review"), &words::key("people")));
        assert!(has_term(&read("open issues across all repos"), "search"));
    }
}
