//! The words of one operation, by field (its name, route, summary,
//! purpose, the requests people make for it, its parameters, its answer's
//! fields and its description), and what its route and method say: its
//! intent, whose it is, its shape.

use std::collections::HashSet;

use super::super::Operation;
use super::words::{self, Intent};
use super::{items, purposes};

/// Words of a name that say whose the resource is, or how it is reached:
/// not its topic.
const NOT_TOPIC: &[&str] = &[
    "repo", "user", "current", "org", "admin", "all", "by", "gitea", "download", "new", "avail",
];

/// The words of one operation, by field, and what its route and method say.
#[derive(Debug)]
pub(super) struct Document {
    pub(super) name: HashSet<String>,
    /// The name's words that say what the operation is about (not its
    /// verb, nor whose it is): each one the query leaves unmatched costs
    /// ([`super::UNMATCHED_TOPIC_COST`]), so the common read of a resource comes
    /// before its sub-resources ("list branches" before "list branch
    /// protections").
    pub(super) topic: HashSet<String>,
    pub(super) route: HashSet<String>,
    pub(super) summary: HashSet<String>,
    /// What the operation is for, in a person's words, where Gitea's
    /// summary says how it works ([`purposes`]).
    pub(super) purpose: HashSet<String>,
    /// How people ask for the operation ([`purposes::asked`]).
    pub(super) asked: HashSet<String>,
    pub(super) params: HashSet<String>,
    /// The fields of its answer, or of the body it takes
    /// ([`Operation::fields`]): "size" and "default branch" are fields of
    /// the repository, "active" a field of a user's edit.
    pub(super) fields: HashSet<String>,
    /// The pairs of words of one field's name (`hide_email`,
    /// `default_branch`): a query naming both names the field
    /// ([`super::FIELD_PAIR_BONUS`]).
    pub(super) field_pairs: Vec<(String, String)>,
    pub(super) description: HashSet<String>,
    pub(super) intent: Intent,
    pub(super) owner: RouteOwner,
    /// Path parameters in the route: the deeper, the more specific.
    pub(super) path_params: usize,
    /// Fixed segments of the route: the longer, the further from the
    /// resource itself.
    pub(super) fixed_segments: usize,
    /// A GET whose route ends in a fixed segment: a list (or a singleton).
    pub(super) collection: bool,
    /// The route ends in a fixed segment: it acts on a whole collection
    /// ("remove all labels"), not one item of it.
    pub(super) whole: bool,
    /// The kinds of item its route takes by a parameter ([`items`]).
    pub(super) items: HashSet<String>,
    pub(super) deprecated: bool,
}

/// Whose resource a route is, by its first segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RouteOwner {
    Repository,
    Own,
    AnotherUser,
    Organization,
    Site,
    /// The server's own facts, readable by anyone: its version, settings
    /// and signing key. Site-wide, but not administration.
    Instance,
    Other,
}

/// The index entry of one operation.
pub(super) fn document(op: &Operation) -> Document {
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
        asked: keyed(stems(&mut words::split(
            purposes::asked(&op.tool_name).unwrap_or_default(),
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
        "version" | "settings" | "signing-key.gpg" | "signing-key.pub" => RouteOwner::Instance,
        _ => RouteOwner::Other,
    }
}
