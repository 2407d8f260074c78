//! Finding an operation by a few words, the way a model asks ("last commits
//! on a branch", "create a webhook", "my ssh keys"): a weighted lexical
//! ranking, built once per catalog, deterministic and explainable. No
//! network and no model: every signal is a table ([`words`], [`synonyms`])
//! or a fact of the operation.
//!
//! An operation's score is the sum, over the query's words, of the best
//! match of the word or one of its forge synonyms in the operation's
//! fields (name, route, summary, purpose, the requests people make for it,
//! parameters, the answer's fields, description, each with its weight:
//! [`document`]), weighted by how rare the word is in the catalog (BM25's
//! inverse document frequency); then adjusted by three readings of the
//! query as a whole:
//!
//! - **the verb** (list/get → GET; create/add → POST; edit/close → PATCH or
//!   PUT; delete/remove → DELETE): a match is rewarded, a contradiction
//!   penalised, and without a verb the read is preferred; the operation
//!   named with the query's own verb comes first among its kind;
//! - **whose resource** ("my" → `/user/…`, "a user's" → `/users/…`, "org"
//!   → `/orgs/…`, "admin"/"instance" → `/admin/…`; otherwise a repository's);
//! - **the shape**: a plural asks for a list, and the common read of a
//!   resource comes before its sub-resources (fewer path parameters).
//!
//! Recall is a test ([`eval_tests`]) and a figure in `docs/benchmarks.md`.

mod document;
mod items;
mod known;
mod nearest;
mod purposes;
mod query;
mod synonyms;
mod tokens;
mod words;

pub use purposes::purpose;

#[cfg(test)]
mod eval_tests;

use std::collections::{HashMap, HashSet};

use document::{Document, RouteOwner, document};
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
const PURPOSE_WEIGHT: f32 = 0.7;
const ASKED_WEIGHT: f32 = 0.4;
const PARAM_WEIGHT: f32 = 0.4;
const FIELD_WEIGHT: f32 = 0.3;
const DESCRIPTION_WEIGHT: f32 = 0.2;
const ALSO_FOUND: f32 = 0.05;
/// What a topic word of the name that the query does not name costs.
const UNMATCHED_TOPIC_COST: f32 = 0.6;
/// The query's verb is the one in the operation's name ("create a team":
/// `org_create_team` before `repo_add_team`).
const SAME_VERB_BONUS: f32 = 0.6;

/// The index of one catalog's operations, in the catalog's order.
#[derive(Debug)]
pub struct SearchIndex {
    documents: Vec<Document>,
    /// How many documents hold each word in a name, route, summary,
    /// purpose or request.
    frequency: HashMap<String, usize>,
    /// The words of the names, routes, summaries and purposes: what a
    /// query's words are read against (a hyphenated name, a longer form).
    /// The requests are not: their everyday words would make names words.
    vocabulary: HashSet<String>,
    /// Every word of every field, once: where a query's near forms are
    /// looked up, once per query rather than once per operation.
    all_words: Vec<String>,
}

/// One term of a query as every operation is matched against it, worked
/// out once per query: its forms, its rarity, and the index's words near
/// each form ([`near_forms`]).
struct TermMatch<'q> {
    forms: &'q [(String, f32)],
    rarity: f32,
    near: Vec<Vec<&'q str>>,
}

impl SearchIndex {
    pub fn new(operations: &[Operation]) -> Self {
        let documents: Vec<Document> = operations.iter().map(document).collect();
        let mut frequency: HashMap<String, usize> = HashMap::new();
        let mut vocabulary: HashSet<String> = HashSet::new();
        for doc in &documents {
            let written: HashSet<&String> = doc
                .name
                .iter()
                .chain(&doc.route)
                .chain(&doc.summary)
                .chain(&doc.purpose)
                .collect();
            vocabulary.extend(written.iter().map(|word| (*word).clone()));
            for word in written
                .into_iter()
                .chain(&doc.asked)
                .collect::<HashSet<_>>()
            {
                *frequency.entry(word.clone()).or_default() += 1;
            }
        }
        let mut all_words: Vec<String> = documents
            .iter()
            .flat_map(|doc| {
                weighted_fields(doc)
                    .into_iter()
                    .flat_map(|(field, _)| field)
            })
            .cloned()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        all_words.sort_unstable();
        Self {
            documents,
            frequency,
            vocabulary,
            all_words,
        }
    }

    /// The terms of `query`, each with what matching it needs.
    fn term_matches<'q>(&'q self, query: &'q Query) -> Vec<TermMatch<'q>> {
        query
            .terms
            .iter()
            .map(|forms| TermMatch {
                forms,
                rarity: self.term_rarity(forms),
                near: forms
                    .iter()
                    .map(|(form, _)| {
                        self.all_words
                            .iter()
                            .map(String::as_str)
                            .filter(|word| near_forms(word, form))
                            .collect()
                    })
                    .collect(),
            })
            .collect()
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
        let query = read_query(query, |word| self.vocabulary.contains(&words::key(word)));
        if query.terms.is_empty() {
            return (0..self.documents.len())
                .filter(|&i| keep(i))
                .take(limit)
                .collect();
        }
        let terms = self.term_matches(&query);
        let mut scored: Vec<(f32, usize)> = self
            .documents
            .iter()
            .enumerate()
            .filter(|(i, _)| keep(*i))
            .filter_map(|(i, doc)| self.score(&query, &terms, doc).map(|score| (score, i)))
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
        let mut vocabulary: Vec<&str> = self.vocabulary.iter().map(String::as_str).collect();
        vocabulary.sort_unstable();
        let mut near = Vec::new();
        for token in tokens::tokens(query) {
            let tokens::Token::Word(word) = token else {
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
    fn score(&self, query: &Query, terms: &[TermMatch], doc: &Document) -> Option<f32> {
        let mut matched = 0;
        let mut score = 0.0;
        for term in terms {
            let (_, best) = best_form(term, doc);
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
        if query
            .verb
            .as_ref()
            .is_some_and(|verb| doc.name.contains(verb))
        {
            score += SAME_VERB_BONUS;
        }
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
        let read = read_query(query, |word| self.vocabulary.contains(&words::key(word)));
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
        let terms = self.term_matches(&read);
        for i in self.search(query, |_| true, n) {
            let doc = &self.documents[i];
            let matches: Vec<String> = terms
                .iter()
                .map(|term| {
                    let (form, value) = best_form(term, doc);
                    format!("{form}={value:.2}")
                })
                .collect();
            lines.push(format!(
                "  {:.2} {} [{}] intent {:?} {:+.1} owner {:?} {:+.1} shape {:+.2} topics {:?}",
                self.score(&read, &terms, doc).unwrap_or(0.0),
                ops[i].tool_name,
                matches.join(" "),
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

/// The form of `term` that matches `doc` best, and its score: the form's
/// weight, the term's rarity and how well the form matches the fields.
fn best_form<'q>(term: &TermMatch<'q>, doc: &Document) -> (&'q str, f32) {
    term.forms
        .iter()
        .zip(&term.near)
        .map(|((form, weight), near)| {
            (
                form.as_str(),
                weight * term.rarity * field_score(doc, form, near),
            )
        })
        .fold((term.forms[0].0.as_str(), 0.0_f32), |best, next| {
            if next.1 > best.1 { next } else { best }
        })
}

/// An operation's searched fields, each with its weight.
fn weighted_fields(doc: &Document) -> [(&HashSet<String>, f32); 8] {
    [
        (&doc.name, NAME_WEIGHT),
        (&doc.route, ROUTE_WEIGHT),
        (&doc.summary, SUMMARY_WEIGHT),
        (&doc.purpose, PURPOSE_WEIGHT),
        (&doc.asked, ASKED_WEIGHT),
        (&doc.params, PARAM_WEIGHT),
        (&doc.fields, FIELD_WEIGHT),
        (&doc.description, DESCRIPTION_WEIGHT),
    ]
}

/// How well `form` matches `doc`'s fields, before its rarity (`near`: the
/// index's words near `form`).
fn field_score(doc: &Document, form: &str, near: &[&str]) -> f32 {
    let (mut best, mut sum) = (0.0_f32, 0.0_f32);
    for (field, weight) in weighted_fields(doc) {
        let matched = if field.contains(form) {
            weight
        } else if near.iter().any(|word| field.contains(*word)) {
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
        // "my own copy of acme/web": the call acts on the repository
        // named; "my" says whose the result is.
        (Some(Scope::Own), RouteOwner::Own) if query.names_repository => 0.5,
        (Some(Scope::Own), RouteOwner::Own) => 1.5,
        (Some(Scope::Own), RouteOwner::AnotherUser | RouteOwner::Site) => -1.0,
        (Some(Scope::AnotherUser), RouteOwner::AnotherUser) => 1.5,
        (Some(Scope::AnotherUser), RouteOwner::Own) => -0.5,
        (Some(Scope::Organization), RouteOwner::Organization) => 1.5,
        (Some(Scope::Organization), RouteOwner::Repository) => -0.3,
        (Some(Scope::Site), RouteOwner::Site) => 2.0,
        (Some(Scope::Site), RouteOwner::Instance) => 1.0,
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
    bonus += items::named_person_bonus(query.names_someone, &doc.items);
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
