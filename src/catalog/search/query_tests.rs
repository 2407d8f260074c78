//! How a query is read: its terms, intent, scope and values.

use super::super::SearchIndex;
use super::*;
use crate::catalog::Catalog;

/// `text` read against the bundled catalog's words.
fn read(text: &str) -> Query {
    let index = SearchIndex::new(Catalog::bundled().operations());
    read_query(text, |word| index.vocabulary.contains(&words::key(word)))
}

fn has_term(query: &Query, key: &str) -> bool {
    query
        .terms
        .iter()
        .any(|forms| forms.iter().any(|(form, _)| form == key))
}

#[test]
fn a_past_participle_is_a_word_not_the_calls_verb() {
    let query = read("changed in the readme");
    assert_eq!(query.intent, None);
    assert!(has_term(&query, "commit"));
}

#[test]
fn a_question_with_no_verb_of_its_own_reads() {
    assert_eq!(read("who is on issue 12 now").intent, Some(Intent::Read));
    assert_eq!(read("is develop protected").intent, Some(Intent::Read));
    assert_eq!(read("how many open issues").intent, Some(Intent::Read));
    assert_eq!(read("how do I add a label").intent, Some(Intent::Create));
    assert_eq!(read("can you delete branch x").intent, Some(Intent::Remove));
}

#[test]
fn two_refs_ask_for_what_lies_between_them() {
    assert!(has_term(&read("diff v1.2 v1.3"), "compar"));
    assert!(!has_term(&read("release v1.3"), "compar"));
}

#[test]
fn two_refs_of_a_pull_request_are_its_base_and_head() {
    let query = read("is there a PR from dev into main");
    assert!(has_term(&query, "base") && has_term(&query, "head"));
    assert!(!has_term(&query, "compar"));
}

#[test]
fn a_ref_made_from_another_is_not_a_comparison() {
    assert!(!has_term(
        &read("create branch feature/login from main"),
        "compar"
    ));
}

#[test]
fn a_number_names_the_kind_of_item_before_it() {
    assert_eq!(read("pin issue #5 on top").named_items, ["issues"]);
    assert_eq!(read("files of pull request 19").named_items, ["pulls"]);
    assert!(read("last 10 commits").named_items.is_empty());
}

#[test]
fn a_repository_named_and_an_email_are_read_as_such() {
    assert!(read("new label in acme/web").names_repository);
    assert!(!read("branch feature/login").names_repository);
    assert!(has_term(&read("who owns ops@acme.io"), "email"));
}

#[test]
fn the_verb_of_a_relative_clause_is_not_the_request() {
    assert_eq!(read("commits that make up PR 12").intent, None);
}

#[test]
fn show_my_is_mine_and_show_me_is_not() {
    assert_eq!(read("show my notifications").scope, Some(Scope::Own));
    assert_eq!(read("show me the notifications").scope, None);
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

#[test]
fn handing_a_thing_over_transfers_it_and_signing_off_approves() {
    assert!(has_term(
        &read("hand acme/web over to the platform org"),
        "transfer"
    ));
    assert!(!has_term(&read("hand issue 40 over to bob"), "transfer"));
    assert!(has_term(&read("sign off on #23"), &words::key("approve")));
}

#[test]
fn my_own_is_whose_and_every_is_all_of_them() {
    let own = read("make my own copy of acme/web");
    assert_eq!(own.scope, Some(Scope::Own));
    assert!(!has_term(&own, "own"));
    assert!(read("strip every label off issue 12").plural);
}

#[test]
fn setting_up_and_cutting_create() {
    assert_eq!(
        read("set up a milestone due friday").intent,
        Some(Intent::Create)
    );
    assert_eq!(
        read("cut hotfix/1.2.1 from v1.2.0").intent,
        Some(Intent::Create)
    );
    assert_eq!(read("recolor label 5 to red").intent, Some(Intent::Change));
}

#[test]
fn a_number_after_last_counts_a_list_rather_than_naming_an_item() {
    let query = read("last 5 tags on acme/web");
    assert!(query.plural);
    assert!(!query.item_number);
    assert!(!has_term(&query, "latest"));
}

#[test]
fn a_verbs_plural_past_the_first_word_is_a_noun() {
    let query = read("history of changes to a file");
    assert_eq!(query.intent, None);
    assert!(has_term(&query, "chang"));
}

#[test]
fn an_address_on_the_web_is_a_url_not_a_file() {
    let query = read("send pushes to https://ci.example.com/hook");
    assert!(has_term(&query, "url"));
    assert!(!has_term(&query, "path"));
    assert!(has_term(&read("ping ci.example.com"), "url"));
    assert!(has_term(&read("read README.md"), "path"));
}
