//! Reading a query: its content words with their forge synonyms, the
//! values it names, and what its verb, its owner words and its plurals
//! say ([`read_query`]).

use super::known::{known_stem, resolve_hyphens};
use super::words::{self, Intent, Scope};
use super::{synonyms, tokens};

/// A synonym counts this much of the word itself.
pub(super) const SYNONYM_WEIGHT: f32 = 0.8;
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
    /// The query names a repository (`acme/web`): its resources, not its
    /// owner's.
    pub(super) names_repository: bool,
    /// How many refs (shas, versions, branches) the query names.
    pub(super) refs: usize,
    /// The kinds of item the query names by number, as route segments
    /// ("PR 12" → `pulls`: [`super::items`]).
    pub(super) named_items: Vec<&'static str>,
    /// The generic verb that says the intent ("create", "add"), as its
    /// key: an operation named with the same verb is the likelier one.
    pub(super) verb: Option<String>,
}

/// Reads a query: content words with their synonyms, the values it
/// names, and what its verb, its owner words and its plurals say.
/// `known` says whether the catalog has a word: a query word it does not
/// have is tried without `-d`, `-ed` and `-ing` ("resolved" → "resolve").
pub(super) fn read_query(text: &str, known: impl Fn(&str) -> bool) -> Query {
    let tokens = resolve_hyphens(tokens::tokens(text), &known);
    let mut reading = Reading {
        query: Query::default(),
        tokens: &tokens,
        known: &known,
        in_context: false,
        words_seen: 0,
        made: false,
        handed_over: false,
    };
    for (position, token) in tokens.iter().enumerate() {
        match token {
            tokens::Token::Value(tokens::Value::Number) if reading.counts(position) => {
                reading.query.plural = true;
            }
            tokens::Token::Value(value) => {
                read_value(&mut reading.query, *value);
                if *value == tokens::Value::Number {
                    reading.name_item(position);
                }
            }
            tokens::Token::Word(word) => reading.word(position, word),
            tokens::Token::Hyphenated(_) => {}
        }
    }
    reading.finish()
}

/// A query as it is read, word by word.
struct Reading<'t, K> {
    query: Query,
    tokens: &'t [tokens::Token],
    known: &'t K,
    /// Past a preposition: the words name the context.
    in_context: bool,
    words_seen: usize,
    /// "make the org private": a change, not a creation ([`MADE_INTO`]).
    made: bool,
    /// "hand … over": to a person (assign), or a repository to a new
    /// owner (transfer), as `finish` tells.
    handed_over: bool,
}

impl<'t, K: Fn(&str) -> bool> Reading<'t, K> {
    /// A word before the request that only leads into it ("also assign
    /// …", "can you delete …", "I want to connect …"): the request's verb
    /// is still the first.
    fn lead_in(&self, position: usize, lower: &str) -> bool {
        if self.words_seen > 0 {
            return false;
        }
        let next = self.word_at(position + 1);
        match lower {
            "also" | "just" | "please" | "pls" | "kindly" | "now" | "then" | "so" | "ok"
            | "okay" | "go" | "can" | "could" | "would" | "will" | "you" | "lets" | "want"
            | "need" | "like" | "to" | "d" => true,
            "i" | "we" => next.is_some_and(|n| matches!(n, "want" | "need" | "would" | "d")),
            "let" => next.is_some_and(|n| matches!(n, "s" | "us")),
            "us" => position > 0 && self.word_at(position - 1) == Some("let"),
            _ => false,
        }
    }

    /// The number at `position` counts rather than names ("last 10
    /// commits", "top 5 repos"): a list's length, not an item.
    fn counts(&self, position: usize) -> bool {
        let number = matches!(
            self.tokens.get(position),
            Some(tokens::Token::Value(tokens::Value::Number))
        );
        number
            && position > 0
            && self.word_at(position - 1).is_some_and(|w| {
                matches!(
                    w,
                    "last" | "latest" | "first" | "top" | "recent" | "newest" | "oldest" | "past"
                )
            })
    }

    /// The query opens as a question does ("who", "is", "did", "how
    /// many"), not as a request ("can you", "how do I").
    fn asks_a_question(&self) -> bool {
        match (self.word_at(0), self.word_at(1)) {
            (Some("how"), Some(next)) => matches!(next, "many" | "much" | "big" | "old" | "long"),
            (Some(first), _) => matches!(
                first,
                "who"
                    | "whom"
                    | "whose"
                    | "what"
                    | "which"
                    | "when"
                    | "where"
                    | "is"
                    | "are"
                    | "was"
                    | "were"
                    | "does"
                    | "did"
                    | "has"
                    | "have"
                    | "anything"
                    | "any"
            ),
            (None, _) => false,
        }
    }

    fn word_at(&self, i: usize) -> Option<&'t str> {
        match self.tokens.get(i) {
            Some(tokens::Token::Word(w)) => Some(w.as_str()),
            _ => None,
        }
    }

    /// Whether `word` comes somewhere after `position`.
    fn later(&self, position: usize, word: &str) -> bool {
        (position + 1..self.tokens.len()).any(|i| self.word_at(i) == Some(word))
    }

    /// The kind of item the number at `position` names, if a word before
    /// it says ("issue 7").
    fn name_item(&mut self, position: usize) {
        let words: Vec<Option<&str>> = (0..position).map(|i| self.word_at(i)).collect();
        if let Some(kind) = super::items::kind_before(&words, position)
            && !self.query.named_items.contains(&kind)
        {
            self.query.named_items.push(kind);
        }
    }

    /// One word, at `position`: a phrase, an owner word, a function word,
    /// a verb, or a content word with its synonyms.
    fn word(&mut self, position: usize, lower: &str) {
        if self.lead_in(position, lower) || self.counts(position + 1) {
            return;
        }
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
        self.handed_over |= lower == "hand" && self.later(position, "over");
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
            // "who am I": the signed-in user, not people.
            ("who", Some("am")) => push_once(query, "whoami", SYNONYM_WEIGHT),
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
            ("spin" | "stand" | "set", Some("up")) => {
                query.intent.get_or_insert(Intent::Create);
            }
            // "when did alice sign up": her account's creation.
            ("sign", Some("up")) => {
                push_once(query, "created", SYNONYM_WEIGHT);
                push_once(query, "user", SYNONYM_WEIGHT);
            }
            // "sign off on a PR": approve it in a review.
            ("sign", Some("off")) => {
                query.intent.get_or_insert(Intent::Create);
                push_once(query, "review", SYNONYM_WEIGHT);
                push_once(query, "approve", SYNONYM_WEIGHT);
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
        // "my own copy": "own" only repeats whose.
        if lower == "own"
            && position > 0
            && self
                .word_at(position - 1)
                .is_some_and(|p| matches!(p, "my" | "our" | "your" | "their"))
        {
            return true;
        }
        let Some(scope) = words::scope(lower) else {
            return false;
        };
        // "show me" is not "mine" ("show my" is).
        let after_asking = lower == "me"
            && position > 0
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
            // "every label", "all labels": the whole collection.
            if matches!(lower, "every" | "all") {
                self.query.plural = true;
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
        // "commits that make up PR 12": a relative clause describes the
        // thing asked for; its verb is not the request's.
        let relative = position > 0
            && self
                .word_at(position - 1)
                .is_some_and(|p| matches!(p, "that" | "which" | "who"));
        let query = &mut self.query;
        if relative && words::verb(stemmed).is_some() {
            return true;
        }
        // "history of changes", "pending updates": a verb's plural past
        // the first word is a noun, matched as a word.
        if !first && lower.len() > stemmed.len() && lower.ends_with('s') {
            return false;
        }
        if let Some(intent) = words::verb(stemmed).filter(|_| !participle) {
            if query.intent.is_none() {
                query.intent = Some(intent);
                query.verb = Some(words::key(stemmed));
            }
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
        let asks = self.asks_a_question();
        let query = &mut self.query;
        // "who is on issue 12", "is develop protected": a question
        // with no verb of its own reads.
        if asks {
            query.intent.get_or_insert(Intent::Read);
        }
        // "my comment 4512", "my +1 on issue 5": a repository's item I
        // wrote, not a resource of my account.
        if query.item_number && query.scope == Some(Scope::Own) {
            query.scope = None;
            query.terms.retain(|forms| forms[0].0 != "current");
        }
        // Two refs named ("v1.2 and v1.3", "main and develop") ask for
        // what lies between them, unless the query makes something of
        // them ("create branch feature/x from main").
        // Of a pull request, two refs are its base and head branches
        // ("a PR from dev into main").
        if query.refs > 1 && matches!(query.intent, None | Some(Intent::Read)) {
            if query.terms.iter().any(|forms| forms[0].0 == "pull") {
                push_once(query, "base", SYNONYM_WEIGHT);
                push_once(query, "head", SYNONYM_WEIGHT);
            } else {
                push_once(query, "compare", SYNONYM_WEIGHT);
            }
        }
        // "hand acme/web over to the platform org": a repository to a new
        // owner; an issue handed over is assigned.
        let repository = query.names_repository || query.terms.iter().any(|f| f[0].0 == "repo");
        if self.handed_over && repository && query.named_items.is_empty() {
            query.intent = Some(Intent::Create);
            push_once(query, "transfer", 1.0);
        }
        // "make a new private repo" creates; "make the repo private"
        // changes one.
        let new = query.terms.iter().any(|forms| forms[0].0 == "new");
        if self.made
            && !new
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

/// Adds `form` as a term of its own, unless a term has it already.
fn push_once(query: &mut Query, form: &str, weight: f32) {
    if !query.terms.iter().any(|forms| forms[0].0 == form) {
        query.terms.push(vec![(form.to_owned(), weight)]);
    }
}

/// What a value in a query says: its kind, as a word of the context
/// ("release notes for *v1.4.2*" → a tag), and that one item is meant.
fn read_value(query: &mut Query, value: tokens::Value) {
    let forms: &[&str] = match value {
        tokens::Value::Path => &["path", "file"],
        tokens::Value::Workflow => &["workflow", "file"],
        tokens::Value::Version => &["tag", "release"],
        tokens::Value::Sha => &["commit", "sha"],
        tokens::Value::Branch => &["branch"],
        tokens::Value::Email => &["email"],
        tokens::Value::Url => &["url"],
        tokens::Value::Number | tokens::Value::Name | tokens::Value::Repository => &[],
    };
    // Counted: two refs named ask for what lies between them (`finish`).
    if matches!(
        value,
        tokens::Value::Sha | tokens::Value::Version | tokens::Value::Branch
    ) {
        query.refs += 1;
    }
    if matches!(
        value,
        tokens::Value::Number | tokens::Value::Sha | tokens::Value::Version
    ) {
        query.numbered = true;
    }
    if value == tokens::Value::Number {
        query.item_number = true;
    }
    if value == tokens::Value::Repository {
        query.names_repository = true;
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

#[cfg(test)]
#[path = "query_tests.rs"]
mod tests;
