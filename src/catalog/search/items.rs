//! An item named by its number ("issue 7", "PR 12", "release 4",
//! "team (id 7)"): the query means an operation on that one item, so an
//! operation whose route takes that kind of item by a parameter
//! (`/issues/{index}/pin`, `/pulls/{index}/files`, `/releases/{id}`) is
//! preferred to the list beside it and to an operation on another kind of
//! item (`/commits/{sha}/pull` for "the commits of PR 12").

use std::collections::HashSet;

/// Preferred: the route takes the named kind of item.
const NAMED_ITEM_BONUS: f32 = 0.8;
/// Half as much: a pull request named, an issue route (a pull request is
/// an issue in Gitea: its comments, labels and assignees are the issue's).
const PULL_AS_ISSUE_BONUS: f32 = 0.4;
/// The route takes items of other kinds only.
const OTHER_ITEM_COST: f32 = 0.2;
/// A person named, and the route takes a person.
const PERSON_NAMED_BONUS: f32 = 0.3;

/// Words between a kind and its number: "team (id 7)", "issue no. 5".
const BETWEEN: &[&str] = &["id", "no", "nr", "number", "num"];

/// The route segment of the kind of item `word` names, if it names one
/// (`previous`: the word before it, for "pull request" and "merge
/// request").
pub(super) fn kind_named(word: &str, previous: Option<&str>) -> Option<&'static str> {
    let singular = word
        .strip_suffix('s')
        .filter(|w| w.len() > 2)
        .unwrap_or(word);
    Some(match singular {
        "issue" | "bug" | "ticket" => "issues",
        "pr" | "prs" | "pull" | "mr" => "pulls",
        "request" if matches!(previous, Some("pull" | "merge")) => "pulls",
        "release" => "releases",
        "label" => "labels",
        "milestone" => "milestones",
        "hook" | "webhook" => "hooks",
        "team" => "teams",
        "comment" => "comments",
        "run" | "pipeline" | "build" => "runs",
        "job" => "jobs",
        "key" => "keys",
        "thread" | "notification" => "threads",
        "review" => "reviews",
        "attachment" | "asset" => "assets",
        "runner" => "runners",
        _ => return None,
    })
}

/// The kind of item a number at `position` of `words` names: the nearest
/// kind word before it, past the words that may stand between.
pub(super) fn kind_before(words: &[Option<&str>], position: usize) -> Option<&'static str> {
    let mut at = position;
    while at > 0 {
        at -= 1;
        let word = words[at]?;
        if BETWEEN.contains(&word) {
            continue;
        }
        let previous = at.checked_sub(1).and_then(|p| words[p]);
        return kind_named(word, previous);
    }
    None
}

/// The kinds of item a route takes by a parameter: each fixed segment
/// followed by one (`/repos/{owner}/{repo}/pulls/{index}/files` →
/// `pulls`); the owner's segments are not items. A person taken as an item
/// (`/teams/{id}/members/{username}`, `/collaborators/{collaborator}`) is
/// the kind [`PEOPLE`].
pub(super) fn kinds_taken(route: &str) -> HashSet<String> {
    let segments: Vec<&str> = route.split('/').filter(|s| !s.is_empty()).collect();
    segments
        .windows(2)
        .filter(|pair| !pair[0].starts_with('{') && pair[1].starts_with('{'))
        .filter_map(|pair| match pair[1] {
            "{owner}" | "{repo}" | "{org}" => None,
            "{username}" | "{user}" | "{collaborator}" | "{assignee}" | "{target}" => {
                (!matches!(pair[0], "users" | "user")).then(|| PEOPLE.to_owned())
            }
            _ => Some(pair[0].to_owned()),
        })
        .collect()
}

/// The kind of a person taken as an item of a route.
const PEOPLE: &str = "people";

/// A query naming someone ("add erin to the backend team", "let bob push"):
/// an operation that takes a person as its item (a team's member, a
/// collaborator) is preferred, as a number prefers its kind of item.
pub(super) fn named_person_bonus(names_someone: bool, taken: &HashSet<String>) -> f32 {
    if names_someone && taken.contains(PEOPLE) {
        PERSON_NAMED_BONUS
    } else {
        0.0
    }
}

/// What the items a query names by number say of an operation whose route
/// takes the items `taken`.
pub(super) fn named_item_bonus(named: &[&'static str], taken: &HashSet<String>) -> f32 {
    named
        .iter()
        .map(|kind| {
            if taken.contains(*kind) {
                NAMED_ITEM_BONUS
            } else if *kind == "pulls" && taken.contains("issues") {
                PULL_AS_ISSUE_BONUS
            } else if taken.iter().any(|kind| kind != PEOPLE) {
                -OTHER_ITEM_COST
            } else {
                0.0
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_number_names_the_kind_of_the_word_before_it() {
        let words = |text: &str| -> Vec<Option<String>> {
            text.split(' ')
                .map(|w| (!w.chars().all(|c| c.is_ascii_digit())).then(|| w.to_owned()))
                .collect()
        };
        let kind = |text: &str, at: usize| {
            let owned = words(text);
            let refs: Vec<Option<&str>> = owned.iter().map(Option::as_deref).collect();
            kind_before(&refs, at)
        };
        assert_eq!(kind("pin issue 7", 2), Some("issues"));
        assert_eq!(kind("files of pull request 19", 4), Some("pulls"));
        assert_eq!(kind("backend team id 7", 3), Some("teams"));
        assert_eq!(kind("prs 4", 1), Some("pulls"));
        assert_eq!(kind("top 10", 1), None);
    }

    #[test]
    fn a_route_takes_the_items_its_parameters_follow_not_its_owner() {
        let taken = kinds_taken("/repos/{owner}/{repo}/pulls/{index}/files");
        assert_eq!(taken, HashSet::from(["pulls".to_owned()]));
        assert!(kinds_taken("/repos/{owner}/{repo}/issues/pinned").is_empty());
        assert!(kinds_taken("/users/{username}/followers").is_empty());
        assert_eq!(
            kinds_taken("/teams/{id}/members/{username}"),
            HashSet::from(["teams".to_owned(), PEOPLE.to_owned()])
        );
        assert_eq!(
            kinds_taken("/repos/{owner}/{repo}/commits/{sha}/pull"),
            HashSet::from(["commits".to_owned()])
        );
    }

    #[test]
    fn the_named_kind_is_preferred_and_another_kind_costs() {
        let pulls = kinds_taken("/repos/{owner}/{repo}/pulls/{index}/commits");
        let commit = kinds_taken("/repos/{owner}/{repo}/commits/{sha}/pull");
        let list = kinds_taken("/repos/{owner}/{repo}/pulls");
        let issue = kinds_taken("/repos/{owner}/{repo}/issues/{index}/comments");
        assert!(named_item_bonus(&["pulls"], &pulls) > 0.0);
        assert!(named_item_bonus(&["pulls"], &commit) < 0.0);
        assert_eq!(named_item_bonus(&["pulls"], &list), 0.0);
        assert!(named_item_bonus(&["pulls"], &issue) > 0.0);
        assert!(named_item_bonus(&["pulls"], &issue) < named_item_bonus(&["pulls"], &pulls));
    }

    #[test]
    fn a_person_named_prefers_the_operations_taking_a_person() {
        let member = kinds_taken("/teams/{id}/members/{username}");
        let team = kinds_taken("/teams/{id}");
        assert!(named_person_bonus(true, &member) > 0.0);
        assert_eq!(named_person_bonus(false, &member), 0.0);
        assert_eq!(named_person_bonus(true, &team), 0.0);
    }
}
