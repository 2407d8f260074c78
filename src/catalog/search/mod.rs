//! Finding an operation by a few words, the way a model asks ("last commits
//! on a branch", "create a webhook", "my ssh keys"): a weighted lexical
//! ranking, built once per catalog, deterministic and explainable. No
//! network and no model: every signal is a table ([`words`], [`synonyms`])
//! or a fact of the operation.
//!
//! An operation's score is the sum, over the query's words, of the best
//! match of the word or one of its forge synonyms in the operation's
//! fields (name, route, summary, parameters, description, each with its
//! weight), weighted by how rare the word is in the catalog (BM25's
//! inverse document frequency); then adjusted by three readings of the
//! query as a whole:
//!
//! - **the verb** (list/get → GET; create/add → POST; edit/close → PATCH or
//!   PUT; delete/remove → DELETE): a match is rewarded, a contradiction
//!   penalised, and without a verb the read is preferred;
//! - **whose resource** ("my" → `/user/…`, "a user's" → `/users/…`, "org"
//!   → `/orgs/…`, "admin"/"instance" → `/admin/…`; otherwise a repository's);
//! - **the shape**: a plural asks for a list, and the common read of a
//!   resource comes before its sub-resources (fewer path parameters).
//!
//! Recall is a test ([`eval_tests`]) and a figure in `docs/benchmarks.md`.

mod items;
mod nearest;
mod purposes;
mod query;
mod synonyms;
mod words;

pub use purposes::purpose;

#[cfg(test)]
mod eval_tests;

use std::collections::{HashMap, HashSet};

use query::{Query, read_query};
use words::{Intent, Scope};

use super::Operation;

/// How much a word counts by where in the operation it is found: the best
/// field counts whole, each other field that has it a little
/// ([`ALSO_FOUND`]), so an operation that repeats a word in its name,
/// route and summary does not outrank one that names it once.
const NAME_WEIGHT: f32 = 1.0;
const ROUTE_WEIGHT: f32 = 0.9;
const SUMMARY_WEIGHT: f32 = 0.8;
const PURPOSE_WEIGHT: f32 = 0.8;
const PARAM_WEIGHT: f32 = 0.4;
const FIELD_WEIGHT: f32 = 0.3;
const DESCRIPTION_WEIGHT: f32 = 0.2;
const ALSO_FOUND: f32 = 0.05;
/// What a topic word of the name that the query does not name costs.
const UNMATCHED_TOPIC_COST: f32 = 0.6;
/// Words of a name that say whose the resource is, or how it is reached:
/// not its topic.
const NOT_TOPIC: &[&str] = &[
    "repo", "user", "current", "org", "admin", "all", "by", "gitea", "download",
];

/// The words of one operation, by field, and what its route and method say.
#[derive(Debug)]
struct Document {
    name: HashSet<String>,
    /// The name's words that say what the operation is about (not its
    /// verb, nor whose it is): each one the query leaves unmatched costs
    /// ([`UNMATCHED_TOPIC_COST`]), so the common read of a resource comes
    /// before its sub-resources ("list branches" before "list branch
    /// protections").
    topic: HashSet<String>,
    route: HashSet<String>,
    summary: HashSet<String>,
    /// What the operation is for, in a person's words, where Gitea's
    /// summary says how it works ([`purposes`]).
    purpose: HashSet<String>,
    params: HashSet<String>,
    /// The fields of its answer, or of the body it takes
    /// ([`Operation::fields`]): "size" and "default branch" are fields of
    /// the repository, "active" a field of a user's edit.
    fields: HashSet<String>,
    /// The pairs of words of one field's name (`hide_email`,
    /// `default_branch`): a query naming both names the field
    /// ([`FIELD_PAIR_BONUS`]).
    field_pairs: Vec<(String, String)>,
    description: HashSet<String>,
    intent: Intent,
    owner: RouteOwner,
    /// Path parameters in the route: the deeper, the more specific.
    path_params: usize,
    /// Fixed segments of the route: the longer, the further from the
    /// resource itself.
    fixed_segments: usize,
    /// A GET whose route ends in a fixed segment: a list (or a singleton).
    collection: bool,
    /// The route ends in a fixed segment: it acts on a whole collection
    /// ("remove all labels"), not one item of it.
    whole: bool,
    /// The kinds of item its route takes by a parameter ([`items`]).
    items: HashSet<String>,
    deprecated: bool,
}

/// Whose resource a route is, by its first segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RouteOwner {
    Repository,
    Own,
    AnotherUser,
    Organization,
    Site,
    Other,
}

/// The index of one catalog's operations, in the catalog's order.
#[derive(Debug)]
pub struct SearchIndex {
    documents: Vec<Document>,
    /// How many documents hold each word in a name, route or summary.
    frequency: HashMap<String, usize>,
}

impl SearchIndex {
    pub fn new(operations: &[Operation]) -> Self {
        let documents: Vec<Document> = operations.iter().map(document).collect();
        let mut frequency: HashMap<String, usize> = HashMap::new();
        for doc in &documents {
            let seen: HashSet<&String> = doc
                .name
                .iter()
                .chain(&doc.route)
                .chain(&doc.summary)
                .chain(&doc.purpose)
                .collect();
            for word in seen {
                *frequency.entry(word.clone()).or_default() += 1;
            }
        }
        Self {
            documents,
            frequency,
        }
    }

    /// BM25's inverse document frequency of `word` in this catalog.
    fn rarity(&self, word: &str) -> f32 {
        let n = self.documents.len() as f32;
        let df = self.frequency.get(word).copied().unwrap_or(0) as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// How much a query word tells: the rarity of the most common of its
    /// forms the catalog has. A word with forge synonyms means what they
    /// mean, so a rare literal use of it ("into *account*" in a summary)
    /// does not outweigh the sense it was asked in ("account" → user).
    fn term_rarity(&self, forms: &[(String, f32)]) -> f32 {
        forms
            .iter()
            .filter(|(form, _)| self.frequency.contains_key(form))
            .map(|(form, _)| self.rarity(form))
            .fold(None, |least: Option<f32>, r| {
                Some(least.map_or(r, |l| l.min(r)))
            })
            .unwrap_or_else(|| self.rarity(&forms[0].0))
    }

    /// The positions of the operations (in the order the index was built
    /// from) that `keep` keeps, best match first, at most `limit`. Equal
    /// scores keep the catalog's order.
    pub fn search(&self, query: &str, keep: impl Fn(usize) -> bool, limit: usize) -> Vec<usize> {
        let query = read_query(query, |word| self.frequency.contains_key(&words::key(word)));
        if query.terms.is_empty() {
            return (0..self.documents.len())
                .filter(|&i| keep(i))
                .take(limit)
                .collect();
        }
        let mut scored: Vec<(f32, usize)> = self
            .documents
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .filter_map(|(i, doc)| self.score(&query, doc).map(|score| (score, i)))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().take(limit).map(|(_, i)| i).collect()
    }

    /// For a query no operation matches ([`Self::search`] found nothing):
    /// the operations that match the catalog's words nearest to its words
    /// in spelling, best first, at most `limit`; empty when no word is near.
    pub fn search_near(
        &self,
        query: &str,
        keep: impl Fn(usize) -> bool,
        limit: usize,
    ) -> Vec<usize> {
        let mut vocabulary: Vec<&str> = self.frequency.keys().map(String::as_str).collect();
        vocabulary.sort_unstable();
        let mut near = Vec::new();
        for token in words::tokens(query) {
            let words::Token::Word(word) = token else {
                continue;
            };
            let stemmed = words::stem(&word);
            if words::is_stopword(&stemmed) || words::verb(&stemmed).is_some() {
                continue;
            }
            near.extend(nearest::near_words(&words::key(&stemmed), &vocabulary));
        }
        if near.is_empty() {
            return Vec::new();
        }
        self.search(&format!("{query} {}", near.join(" ")), keep, limit)
    }

    /// The score of `doc` for `query`, or `None` when no word matches.
    fn score(&self, query: &Query, doc: &Document) -> Option<f32> {
        let mut matched = 0;
        let mut score = 0.0;
        for forms in &query.terms {
            let rarity = self.term_rarity(forms);
            let best = forms
                .iter()
                .map(|(form, weight)| weight * rarity * field_score(doc, form))
                .fold(0.0_f32, f32::max);
            if best > 0.0 {
                matched += 1;
                score += best;
            }
        }
        if matched == 0 {
            return None;
        }
        let unmatched_topics = doc
            .topic
            .iter()
            .filter(|word| {
                !query.terms.iter().any(|forms| {
                    forms
                        .iter()
                        .any(|(form, _)| form == *word || near_forms(form, word))
                })
            })
            .count();
        score -= UNMATCHED_TOPIC_COST * unmatched_topics as f32;
        score += FIELD_PAIR_BONUS * named_fields(query, doc).min(MAX_FIELD_PAIRS) as f32;
        score += intent_bonus(query.intent, doc.intent);
        score += scope_bonus(query, doc.owner);
        score += shape_bonus(query, doc);
        Some(score)
    }
}

#[cfg(test)]
impl SearchIndex {
    /// Why the top `n` results of `query` ranked as they did, one line
    /// each: score, term matches, bonuses.
    pub(crate) fn explain(&self, ops: &[Operation], query: &str, n: usize) -> Vec<String> {
        let read = read_query(query, |word| self.frequency.contains_key(&words::key(word)));
        let mut lines = vec![format!(
            "{query:?}: terms {:?} intent {:?} scope {:?} plural {} singular {}",
            read.terms
                .iter()
                .map(|f| f[0].0.clone())
                .collect::<Vec<_>>(),
            read.intent,
            read.scope,
            read.plural,
            read.singular
        )];
        for i in self.search(query, |_| true, n) {
            let doc = &self.documents[i];
            let terms: Vec<String> = read
                .terms
                .iter()
                .map(|forms| {
                    let rarity = self.term_rarity(forms);
                    let (form, value) = forms
                        .iter()
                        .map(|(form, weight)| (form, weight * rarity * field_score(doc, form)))
                        .fold((&forms[0].0, 0.0_f32), |best, next| {
                            if next.1 > best.1 { next } else { best }
                        });
                    format!("{form}={value:.2}")
                })
                .collect();
            lines.push(format!(
                "  {:.2} {} [{}] intent {:?} {:+.1} owner {:?} {:+.1} shape {:+.2} topics {:?}",
                self.score(&read, doc).unwrap_or(0.0),
                ops[i].tool_name,
                terms.join(" "),
                doc.intent,
                intent_bonus(read.intent, doc.intent),
                doc.owner,
                scope_bonus(&read, doc.owner),
                shape_bonus(&read, doc),
                doc.topic,
            ));
        }
        lines
    }
}

/// How well `form` matches `doc`'s fields, before its rarity.
fn field_score(doc: &Document, form: &str) -> f32 {
    let (mut best, mut sum) = (0.0_f32, 0.0_f32);
    for (field, weight) in [
        (&doc.name, NAME_WEIGHT),
        (&doc.route, ROUTE_WEIGHT),
        (&doc.summary, SUMMARY_WEIGHT),
        (&doc.purpose, PURPOSE_WEIGHT),
        (&doc.params, PARAM_WEIGHT),
        (&doc.fields, FIELD_WEIGHT),
        (&doc.description, DESCRIPTION_WEIGHT),
    ] {
        let matched = if field.contains(form) {
            weight
        } else if field.iter().any(|word| near_forms(word, form)) {
            weight * NEAR_FORM
        } else {
            continue;
        };
        best = best.max(matched);
        sum += matched;
    }
    best + ALSO_FOUND * (sum - best)
}

/// What naming both words of one of an operation's field names adds
/// ("hide my email": `hide_email` of the user settings), at most
/// [`MAX_FIELD_PAIRS`] times.
const FIELD_PAIR_BONUS: f32 = 0.8;
const MAX_FIELD_PAIRS: usize = 2;

/// How many of `doc`'s field pairs two different terms of `query` name.
fn named_fields(query: &Query, doc: &Document) -> usize {
    let term_with = |key: &str| {
        query
            .terms
            .iter()
            .position(|forms| forms.iter().any(|(form, _)| form == key))
    };
    doc.field_pairs
        .iter()
        .filter(
            |(first, second)| match (term_with(first), term_with(second)) {
                (Some(a), Some(b)) => a != b,
                _ => false,
            },
        )
        .count()
}

/// What a match of a near form counts ([`near_forms`]).
const NEAR_FORM: f32 = 0.8;

/// Two keys of one word the stemmer leaves apart ("register" and
/// "registration", "assign" and "assignee"): one starts with the other,
/// and both have five letters or more.
fn near_forms(a: &str, b: &str) -> bool {
    a.len() >= 5 && b.len() >= 5 && a != b && (a.starts_with(b) || b.starts_with(a))
}

fn intent_bonus(asked: Option<Intent>, does: Intent) -> f32 {
    match asked {
        None if does == Intent::Read => 0.5,
        None => 0.0,
        Some(asked) if asked == does => 1.2,
        // Adding and changing overlap (a PUT that sets topics, a POST that
        // edits): a small reward, not a penalty.
        Some(Intent::Create | Intent::Change)
            if matches!(does, Intent::Create | Intent::Change) =>
        {
            0.4
        }
        Some(_) => -1.5,
    }
}

fn scope_bonus(query: &Query, owner: RouteOwner) -> f32 {
    let names_someone = query.names_someone;
    // A repository named (`acme/web`) with no owner word: its own
    // resources, not its organization's.
    if query.scope.is_none() && query.names_repository && owner == RouteOwner::Organization {
        return -0.4;
    }
    match (query.scope, owner) {
        // A name in a query with no owner word is most often someone
        // else's login: their resource, not mine.
        (None, RouteOwner::AnotherUser) if names_someone => 0.3,
        (None, RouteOwner::Own) if names_someone => -0.3,
        (Some(Scope::Own), RouteOwner::Own) => 1.5,
        (Some(Scope::Own), RouteOwner::AnotherUser | RouteOwner::Site) => -1.0,
        (Some(Scope::AnotherUser), RouteOwner::AnotherUser) => 1.5,
        (Some(Scope::AnotherUser), RouteOwner::Own) => -0.5,
        (Some(Scope::Organization), RouteOwner::Organization) => 1.5,
        (Some(Scope::Organization), RouteOwner::Repository) => -0.3,
        (Some(Scope::Site), RouteOwner::Site) => 2.0,
        (Some(Scope::Site), _) => -0.5,
        (Some(_), _) => 0.0,
        (None, RouteOwner::Repository) => 0.4,
        (None, RouteOwner::Site) => -0.3,
        (None, RouteOwner::AnotherUser) => -0.1,
        (None, _) => 0.0,
    }
}

fn shape_bonus(query: &Query, doc: &Document) -> f32 {
    let mut bonus =
        -0.1 * doc.path_params.saturating_sub(2) as f32 - 0.05 * doc.fixed_segments as f32;
    if doc.deprecated {
        bonus -= 1.5;
    }
    if query.numbered && doc.path_params >= 3 {
        bonus += 0.3;
    }
    bonus += items::named_item_bonus(&query.named_items, &doc.items);
    if doc.intent == Intent::Remove && query.plural && doc.whole {
        bonus += 0.3;
    }
    if doc.intent == Intent::Read {
        if query.plural && doc.collection {
            bonus += 0.4;
        } else if query.singular && !doc.collection {
            bonus += 0.3;
        }
    }
    bonus
}

/// The index entry of one operation.
fn document(op: &Operation) -> Document {
    let stems = |words: &mut dyn Iterator<Item = &str>| -> HashSet<String> {
        words
            .map(words::stem)
            .filter(|w| !words::is_stopword(w))
            .collect()
    };
    let name_words = words::identifier_words(
        op.tool_name
            .strip_prefix(crate::catalog::naming::TOOL_NAME_PREFIX)
            .unwrap_or(&op.tool_name),
    );
    let fixed_segments: Vec<&str> = op
        .route
        .split('/')
        .filter(|s| !s.is_empty() && !s.starts_with('{'))
        .collect();
    let route_words: Vec<String> = fixed_segments
        .iter()
        .flat_map(|s| words::identifier_words(s))
        .collect();
    let path_params = op.route.matches('{').count();
    let last_fixed = op
        .route
        .rsplit('/')
        .next()
        .is_some_and(|s| !s.starts_with('{'));
    let name = stems(&mut name_words.iter().map(String::as_str));
    let topic = keyed(
        name.iter()
            .filter(|w| !NOT_TOPIC.contains(&w.as_str()) && words::verb(w).is_none())
            .cloned()
            .collect(),
    );
    Document {
        name: keyed(name),
        topic,
        route: keyed(stems(&mut route_words.iter().map(String::as_str))),
        summary: keyed(stems(&mut words::split(&op.summary))),
        purpose: keyed(stems(&mut words::split(
            purposes::purpose(&op.tool_name).unwrap_or_default(),
        ))),
        params: keyed(
            op.params
                .iter()
                .flat_map(|p| words::identifier_words(&p.name))
                .map(|w| words::stem(&w))
                .collect(),
        ),
        fields: keyed(stems(
            &mut op
                .fields
                .iter()
                .flat_map(|f| words::identifier_words(f))
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )),
        field_pairs: field_pairs(&op.fields),
        description: keyed(stems(&mut words::split(&op.description))),
        intent: intent_of(op, &name_words),
        owner: owner_of(fixed_segments.first().copied().unwrap_or("")),
        path_params,
        fixed_segments: fixed_segments.len(),
        collection: op.is_read_only() && last_fixed,
        whole: last_fixed,
        items: items::kinds_taken(&op.route),
        deprecated: op.deprecated,
    }
}

/// The pairs of keys within each field name of `fields`, each once.
fn field_pairs(fields: &[String]) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for field in fields {
        let keys: Vec<String> = words::identifier_words(field)
            .iter()
            .map(|w| words::stem(w))
            .filter(|w| !words::is_stopword(w))
            .map(|w| words::key(&w))
            .collect();
        for (i, first) in keys.iter().enumerate() {
            for second in &keys[i + 1..] {
                let pair = (first.clone(), second.clone());
                if first != second && !pairs.contains(&pair) {
                    pairs.push(pair);
                }
            }
        }
    }
    pairs
}

/// The match keys of a set of stems ([`words::key`]).
fn keyed(stems: HashSet<String>) -> HashSet<String> {
    stems.iter().map(|w| words::key(w)).collect()
}

/// What an operation does, from its method and the verbs of its name.
fn intent_of(op: &Operation, name_words: &[String]) -> Intent {
    let named = |verbs: &[&str]| name_words.iter().any(|w| verbs.contains(&w.as_str()));
    match op.method {
        http::Method::GET | http::Method::HEAD => Intent::Read,
        // A POST that reads (`repoGetFileContentsPost`, searches).
        http::Method::POST if named(&["get", "list", "search", "check"]) => Intent::Read,
        http::Method::DELETE => Intent::Remove,
        http::Method::PATCH => Intent::Change,
        _ if named(&["delete", "remove", "unlink", "revoke"]) => Intent::Remove,
        _ if named(&[
            "edit", "update", "replace", "rename", "change", "set", "reset", "sync", "apply",
            "convert", "transfer",
        ]) =>
        {
            Intent::Change
        }
        _ => Intent::Create,
    }
}

fn owner_of(first_segment: &str) -> RouteOwner {
    match first_segment {
        "repos" => RouteOwner::Repository,
        "user" | "notifications" => RouteOwner::Own,
        "users" => RouteOwner::AnotherUser,
        "orgs" | "teams" => RouteOwner::Organization,
        "admin" => RouteOwner::Site,
        _ => RouteOwner::Other,
    }
}
