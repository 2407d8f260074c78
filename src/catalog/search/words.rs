//! The words of a search, as the ranking reads them: a light stemmer, the
//! words that carry no meaning here, the verbs that say what a call should
//! do, and the words that say whose resource it is (the forge words are in
//! `super::synonyms`). Every table is written by hand and read the same way
//! for a query and for an operation, so the ranking stays deterministic and
//! explainable.

/// What a search asks a call to do, from its verb.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    /// list, get, show, read, find, download…
    Read,
    /// create, add, new, upload, register…
    Create,
    /// edit, update, change, rename, close, reopen…
    Change,
    /// delete, remove, unstar, revoke…
    Remove,
}

/// Whose resource a search is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// "my", "me", "I": the signed-in user's own (`/user/…`).
    Own,
    /// "a user's", "someone": another user's (`/users/{username}/…`).
    AnotherUser,
    /// "org", "organization": an organisation's (`/orgs/…`).
    Organization,
    /// "admin", "site", "instance", "server-wide": the site admin's
    /// (`/admin/…`).
    Site,
}

/// Words after which a query names the context, not the resource it asks
/// for ("commits *on a branch*", "members *of a team*").
const PREPOSITIONS: &[&str] = &[
    "of", "on", "in", "for", "from", "to", "at", "by", "with", "into", "between", "about", "under",
    "across", "inside", "within",
];

/// Words that say nothing about which operation is meant.
const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "of",
    "for",
    "on",
    "in",
    "to",
    "at",
    "by",
    "from",
    "with",
    "and",
    "or",
    "is",
    "are",
    "be",
    "as",
    "it",
    "its",
    "this",
    "that",
    "these",
    "those",
    "into",
    "one",
    "some",
    "any",
    "via",
    "do",
    "does",
    // "does", "has" and "was" as their stems are cut.
    "doe",
    "ha",
    "wa",
    "did",
    "can",
    "how",
    "please",
    "there",
    "per",
    "each",
    "every",
    "without",
    "before",
    "after",
    "since",
    "between",
    "two",
    "too",
    "up",
    "out",
    "off",
    "what",
    "which",
    "why",
    "where",
    "when",
    "whom",
    "whose",
    "who",
    "could",
    "would",
    "should",
    "must",
    "may",
    "might",
    "all",
    "detail",
    "info",
    "information",
    "manually",
    "now",
    "entire",
    "whole",
    "single",
    "specific",
    "given",
    "certain",
    "currently",
    "anything",
    "something",
    "also",
    "just",
    "have",
    "had",
    "am",
    "everything",
    // The same, as their stems are cut.
    "anyth",
    "someth",
    "everyth",
];

/// Verbs, with what they ask; they are read as an intent, not matched as
/// words (every name holds one).
const VERBS: &[(&str, Intent)] = &[
    ("list", Intent::Read),
    ("get", Intent::Read),
    ("show", Intent::Read),
    ("view", Intent::Read),
    ("read", Intent::Read),
    ("see", Intent::Read),
    ("fetch", Intent::Read),
    ("find", Intent::Read),
    ("look", Intent::Read),
    ("check", Intent::Read),
    ("display", Intent::Read),
    ("create", Intent::Create),
    ("add", Intent::Create),
    ("make", Intent::Create),
    ("post", Intent::Create),
    ("publish", Intent::Create),
    ("submit", Intent::Create),
    ("put", Intent::Create),
    ("give", Intent::Create),
    ("report", Intent::Create),
    ("write", Intent::Create),
    ("store", Intent::Create),
    ("turn", Intent::Change),
    ("enable", Intent::Change),
    ("disable", Intent::Change),
    ("edit", Intent::Change),
    ("update", Intent::Change),
    ("change", Intent::Change),
    ("modify", Intent::Change),
    ("set", Intent::Change),
    ("replace", Intent::Change),
    ("delete", Intent::Remove),
    ("remove", Intent::Remove),
    ("drop", Intent::Remove),
    ("erase", Intent::Remove),
    ("destroy", Intent::Remove),
];

/// Verbs that are also the name of what an operation does, or a noun:
/// matched as a word, and read as an intent only when the query starts
/// with them ("tag a commit", "new label"; but "labels of a repo",
/// "pinned issues", "any new notifications").
const ACTION_VERBS: &[(&str, Intent)] = &[
    ("new", Intent::Create),
    ("log", Intent::Create),
    ("label", Intent::Create),
    ("kick", Intent::Remove),
    ("stick", Intent::Create),
    ("cut", Intent::Create),
    ("recolor", Intent::Change),
    ("mark", Intent::Change),
    ("attach", Intent::Create),
    ("protect", Intent::Create),
    ("unprotect", Intent::Remove),
    ("suspend", Intent::Change),
    ("reset", Intent::Change),
    ("schedule", Intent::Create),
    ("run", Intent::Create),
    ("download", Intent::Read),
    ("search", Intent::Read),
    ("upload", Intent::Create),
    ("star", Intent::Create),
    ("follow", Intent::Create),
    ("watch", Intent::Create),
    ("subscribe", Intent::Create),
    ("fork", Intent::Create),
    ("comment", Intent::Create),
    ("reply", Intent::Create),
    ("approve", Intent::Create),
    ("trigger", Intent::Create),
    ("rerun", Intent::Create),
    ("retry", Intent::Create),
    ("merge", Intent::Create),
    ("tag", Intent::Create),
    ("assign", Intent::Create),
    ("block", Intent::Create),
    ("lock", Intent::Create),
    ("pin", Intent::Create),
    ("rename", Intent::Change),
    ("close", Intent::Change),
    ("reopen", Intent::Change),
    ("archive", Intent::Change),
    ("transfer", Intent::Create),
    ("revoke", Intent::Remove),
    ("unstar", Intent::Remove),
    ("unwatch", Intent::Remove),
    ("unfollow", Intent::Remove),
    ("unblock", Intent::Remove),
    ("unlink", Intent::Remove),
    ("unpin", Intent::Remove),
    ("clear", Intent::Remove),
    ("dismiss", Intent::Create),
    // Everyday verbs a model asks with that Gitea's names do not use; each
    // also reaches Gitea's word through `super::synonyms`.
    ("ask", Intent::Create),
    ("register", Intent::Create),
    ("start", Intent::Create),
    ("launch", Intent::Create),
    ("ship", Intent::Create),
    ("cut", Intent::Create),
    ("squash", Intent::Create),
    ("bump", Intent::Create),
    ("invite", Intent::Create),
    ("grant", Intent::Create),
    ("ban", Intent::Create),
    ("freeze", Intent::Create),
    ("hand", Intent::Create),
    ("pause", Intent::Change),
    ("resume", Intent::Change),
    ("promote", Intent::Change),
    ("demote", Intent::Change),
    ("hide", Intent::Change),
    ("force", Intent::Change),
    ("mute", Intent::Remove),
    ("strip", Intent::Remove),
    ("throw", Intent::Remove),
    ("cancel", Intent::Remove),
    ("withdraw", Intent::Remove),
    ("kill", Intent::Remove),
    ("wipe", Intent::Remove),
    ("purge", Intent::Remove),
    ("undo", Intent::Remove),
    ("propose", Intent::Create),
    ("retitle", Intent::Change),
    ("slap", Intent::Create),
    ("define", Intent::Create),
    ("provision", Intent::Create),
    ("classify", Intent::Create),
    ("connect", Intent::Create),
];

/// Words that name the same thing in Gitea's own vocabulary; both a query
/// and an operation are read with them, so `repository` and `repo`, or
/// `PR` and `pull request`, are one word with one rarity.
const CANONICAL: &[(&str, &str)] = &[
    ("repository", "repo"),
    ("organization", "org"),
    ("organisation", "org"),
    ("pr", "pull"),
    ("mr", "pull"),
    ("webhook", "hook"),
    ("configuration", "config"),
    ("oauth2", "oauth"),
    ("app", "application"),
    ("subscriber", "subscription"),
    ("watcher", "subscription"),
];

/// Words that name whose resource is meant.
const SCOPES: &[(&str, Scope)] = &[
    ("my", Scope::Own),
    ("me", Scope::Own),
    ("i", Scope::Own),
    ("mine", Scope::Own),
    ("am", Scope::Own),
    ("i'm", Scope::Own),
    ("user's", Scope::AnotherUser),
    ("users'", Scope::AnotherUser),
    ("someone's", Scope::AnotherUser),
    ("someone", Scope::AnotherUser),
    ("org", Scope::Organization),
    ("orgs", Scope::Organization),
    ("org-wide", Scope::Organization),
    ("organization", Scope::Organization),
    ("organizations", Scope::Organization),
    ("organisation", Scope::Organization),
    ("admin", Scope::Site),
    ("site", Scope::Site),
    ("instance", Scope::Site),
    ("instance-wide", Scope::Site),
    ("site-wide", Scope::Site),
    ("server-wide", Scope::Site),
    ("global", Scope::Site),
    ("server", Scope::Site),
    ("system-wide", Scope::Site),
];

/// The form a word is matched by: its [`stem`], then cut by the Snowball
/// English stemmer, so that the forms of one word meet ("attach" and
/// "attachment", "following" and "follow", "protected" and "protection").
/// The tables of this module and of `super::synonyms` are read on the
/// [`stem`]; only the match compares keys.
pub fn key(stemmed: &str) -> String {
    static ENGLISH: std::sync::LazyLock<rust_stemmers::Stemmer> = std::sync::LazyLock::new(|| {
        rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English)
    });
    ENGLISH.stem(stemmed).into_owned()
}

/// A word cut to its stem (lower case, no possessive, no plural), in
/// Gitea's vocabulary where it has another word for it.
pub fn stem(word: &str) -> String {
    let stemmed = plain_stem(word);
    match CANONICAL.iter().find(|(w, _)| *w == stemmed) {
        Some((_, canonical)) => (*canonical).to_owned(),
        None => stemmed,
    }
}

fn plain_stem(word: &str) -> String {
    let mut w = word.to_lowercase();
    for suffix in ["'s", "’s", "'"] {
        if let Some(cut) = w.strip_suffix(suffix) {
            w = cut.to_owned();
        }
    }
    let n = w.len();
    if n > 4 && w.ends_with("ies") {
        w.truncate(n - 3);
        w.push('y');
    } else if n > 4
        && (w.ends_with("uses")
            || w.ends_with("sses")
            || w.ends_with("shes")
            || w.ends_with("ches")
            || w.ends_with("xes"))
    {
        w.truncate(n - 2);
    } else if n >= 3
        && w.ends_with('s')
        && !w.ends_with("ss")
        && !w.ends_with("us")
        && !w.ends_with("is")
    {
        w.truncate(n - 1);
    }
    w
}

/// The words of a text: split on anything that is not a letter, digit or
/// apostrophe, lower case. Short tokens such as `pr` stay.
pub fn split(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .filter(|w| !w.is_empty())
}

/// The words of a CamelCase or snake_case identifier, lower case.
pub fn identifier_words(identifier: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    for c in identifier.chars() {
        if c == '_' || c == '-' || c == '.' || c == '/' {
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        } else if c.is_uppercase() && !current.is_empty() {
            words.push(std::mem::take(&mut current));
            current.extend(c.to_lowercase());
        } else {
            current.extend(c.to_lowercase());
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

pub fn is_preposition(word: &str) -> bool {
    PREPOSITIONS.contains(&word)
}

pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

/// The intent a generic verb carries; such a verb is not matched as a word.
pub fn verb(word: &str) -> Option<Intent> {
    VERBS.iter().find(|(w, _)| *w == word).map(|(_, i)| *i)
}

/// The intent an action word carries; it is also matched as a word.
pub fn action(word: &str) -> Option<Intent> {
    ACTION_VERBS
        .iter()
        .find(|(w, _)| *w == word)
        .map(|(_, i)| *i)
}

/// Whose resource a word says is meant (checked on the word as typed,
/// lower case, before stemming: `users` and `user's` differ from `user`).
pub fn scope(word: &str) -> Option<Scope> {
    SCOPES.iter().find(|(w, _)| *w == word).map(|(_, s)| *s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_and_possessives_share_a_stem() {
        assert_eq!(stem("commits"), "commit");
        assert_eq!(stem("Repositories"), "repo");
        assert_eq!(stem("repos"), "repo");
        assert_eq!(stem("statuses"), "status");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("branches"), "branch");
        assert_eq!(stem("user's"), "user");
        assert_eq!(stem("access"), "access");
        assert_eq!(stem("PRs"), "pull");
    }

    #[test]
    fn identifiers_split_into_words() {
        assert_eq!(
            identifier_words("repoGetAllCommits"),
            ["repo", "get", "all", "commits"]
        );
        assert_eq!(
            identifier_words("gitea_repo_list_hooks"),
            ["gitea", "repo", "list", "hooks"]
        );
    }

    #[test]
    fn forge_words_reach_giteas() {
        assert_eq!(stem("webhooks"), "hook");
    }

    #[test]
    fn the_forms_of_one_word_share_a_key() {
        assert_eq!(key(&stem("attach")), key(&stem("attachments")));
        assert_eq!(key(&stem("following")), key(&stem("follow")));
        assert_eq!(key(&stem("protected")), key(&stem("protection")));
        assert_ne!(key(&stem("issue")), key(&stem("user")));
    }
}
