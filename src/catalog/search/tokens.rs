//! A query's tokens: values recognised by their shape (a path, a version,
//! a sha, a number, a branch, a repository, an email address, a URL, a
//! name) and lower-case words.

use super::words::{scope, split};

/// What a token that is a value (not a word) stands for: a model often
/// puts the values it means into its search ("fetch open PRs for
/// acme/app", "release notes for v1.4.2", "edit config.yaml").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// `src/lib.rs`, `CHANGELOG.md`: a file's path.
    Path,
    /// `deploy.yml`, `ci.yaml`: a workflow's file, as a model names a
    /// workflow.
    Workflow,
    /// `v1.4.2`, `v*`: a tag.
    Version,
    /// `9f3e2a1`: a commit.
    Sha,
    /// `42`, `#42`: one item of a list.
    Number,
    /// `main`, `master`, `develop`, `feature/login`: a branch.
    Branch,
    /// `acme/app`: a repository, by its owner and name.
    Repository,
    /// `alice@example.com`: an email address.
    Email,
    /// `https://ci.example.com/hook`, `ci.example.com`: an address on the
    /// web (a webhook's target, a mirror's remote).
    Url,
    /// `DEPLOY_TOKEN`, `priority/high`: a name that says nothing about the
    /// operation.
    Name,
}

/// One piece of a query: a word, a value, or words joined by hyphens
/// (`old-site`, `read-only`), which the reader of the query resolves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Word(String),
    Value(Value),
    Hyphenated(Vec<String>),
}

/// Branch names common enough to read as "a branch".
const BRANCH_NAMES: &[&str] = &["main", "master", "develop", "dev", "trunk", "staging"];
/// The first part of the branch names that are written as paths
/// (`feature/login`, `hotfix/1.2.1`).
const BRANCH_PREFIXES: &[&str] = &[
    "feature", "feat", "hotfix", "bugfix", "fix", "release", "topic",
];

/// The tokens of a query, in order: values recognised by their shape,
/// everything else split into lower-case words.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    for raw in text.split_whitespace() {
        let trimmed =
            raw.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '?' | '!' | '"' | '(' | ')'));
        let lower = trimmed.to_lowercase();
        // "+1", "-1", "👍": a reaction.
        if matches!(lower.as_str(), "+1" | "-1" | "👍" | "👎") {
            tokens.push(Token::Word("reaction".to_owned()));
            continue;
        }
        match value_of(trimmed) {
            Some(value) => tokens.push(Token::Value(value)),
            None if lower.contains('-') && scope(&lower).is_none() => {
                let parts: Vec<String> = split(&lower).map(str::to_owned).collect();
                match parts.len() {
                    0 => {}
                    1 => tokens.push(Token::Word(parts.into_iter().next().unwrap_or_default())),
                    _ => tokens.push(Token::Hyphenated(parts)),
                }
            }
            None => tokens.extend(split(&lower).map(|w| Token::Word(w.to_owned()))),
        }
    }
    tokens
}

fn value_of(token: &str) -> Option<Value> {
    let lower = token.to_lowercase();
    let bare = lower.strip_prefix('#').unwrap_or(&lower);
    let is_version = |t: &str| {
        let t = t.strip_prefix('v').unwrap_or(t);
        t == "*"
            || (t.contains('.')
                && t.split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit() || c == '*')))
    };
    let has_extension = |t: &str| {
        t.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        })
    };
    if bare.is_empty() {
        None
    } else if bare.contains("://") || is_host_name(bare) {
        Some(Value::Url)
    } else if bare.chars().all(|c| c.is_ascii_digit()) {
        Some(Value::Number)
    } else if is_version(bare) {
        Some(Value::Version)
    } else if (7..=40).contains(&bare.len())
        && bare.chars().all(|c| c.is_ascii_hexdigit())
        && bare.chars().any(|c| c.is_ascii_digit())
        && bare.chars().any(|c| c.is_ascii_alphabetic())
    {
        Some(Value::Sha)
    } else if bare.contains('@') && !bare.starts_with('@') && !bare.contains('/') {
        // Before paths: `ops@acme.io` ends in what looks like an extension.
        Some(Value::Email)
    } else if has_extension(bare) && (bare.ends_with(".yml") || bare.ends_with(".yaml")) {
        Some(Value::Workflow)
    } else if has_extension(bare) {
        Some(Value::Path)
    } else if let Some((first, rest)) = bare.split_once('/') {
        // `src/lib.rs` above; `feature/login` a branch, `acme/app` a
        // repository, deeper or scoped names (`priority/high::x`) names.
        Some(if BRANCH_PREFIXES.contains(&first) {
            Value::Branch
        } else if !first.is_empty() && !rest.is_empty() && !rest.contains(['/', ':']) {
            Value::Repository
        } else {
            Value::Name
        })
    } else if bare.contains('@')
        || (token.contains('_')
            && token
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
    {
        Some(Value::Name)
    } else if BRANCH_NAMES.contains(&bare) {
        Some(Value::Branch)
    } else {
        None
    }
}

/// `ci.example.com`: a host's name, by the ending of the most common
/// domains (not a file's extension: `README.md` is a file).
fn is_host_name(token: &str) -> bool {
    const DOMAINS: &[&str] = &[
        "com", "org", "net", "io", "dev", "app", "cloud", "ai", "co", "internal", "local",
    ];
    !token.contains(['/', '@'])
        && token.matches('.').count() >= 1
        && token
            .rsplit_once('.')
            .is_some_and(|(host, ending)| !host.is_empty() && DOMAINS.contains(&ending))
}
