//! The policy file: TOML, read and checked whole before anything uses it.
//! Every problem names the file, the line and the column, and nothing of a
//! file with a problem is applied: unknown keys, a toolset or tool this
//! gateway does not have, a URL that is not one of ours, a duplicate or
//! malformed rule id, a rule that narrows nothing, a team not written
//! `org/team`.
//!
//! ```toml
//! [[rule]]
//! id = "connectors-read-only"
//! when = { redirect_hosts = ["claude.ai", "chat.mistral.ai"] }
//! unless = { teams = ["acme/platform"] }
//! read_only = true
//! ```

use std::collections::{BTreeSet, HashSet};
use std::ops::Range;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{Conditions, Effect, Policy, Rule};

/// The largest policy file read.
pub const MAX_POLICY_BYTES: usize = 1024 * 1024;
/// The most rules one file holds.
pub const MAX_RULES: usize = 1000;

/// Why a policy file cannot be used: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct PolicyError {
    pub file: String,
    /// 1-based; 0 when the file as a whole is the problem.
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// What the gateway has, for the names a policy may use.
pub struct Known<'a> {
    pub toolset: &'a dyn Fn(&str) -> bool,
    pub tool: &'a dyn Fn(&str) -> bool,
    /// The canonical path of an MCP URL path of ours, if it is one.
    pub url: &'a dyn Fn(&str) -> Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    rule: Vec<RuleDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleDoc {
    id: Spanned<String>,
    #[serde(default)]
    #[allow(dead_code)] // for people reading the file
    description: Option<String>,
    #[serde(default)]
    when: Option<ConditionsDoc>,
    #[serde(default)]
    unless: Option<ConditionsDoc>,
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    toolsets: Option<Vec<Spanned<String>>>,
    #[serde(default)]
    deny_toolsets: Vec<Spanned<String>>,
    #[serde(default)]
    deny_tools: Vec<Spanned<String>>,
    #[serde(default)]
    confirm_tools: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConditionsDoc {
    #[serde(default)]
    logins: Vec<String>,
    #[serde(default)]
    orgs: Vec<String>,
    #[serde(default)]
    teams: Vec<Spanned<String>>,
    #[serde(default)]
    site_admin: Option<bool>,
    #[serde(default)]
    client_ids: Vec<String>,
    #[serde(default)]
    client_names: Vec<String>,
    #[serde(default)]
    redirect_hosts: Vec<String>,
    #[serde(default)]
    urls: Vec<Spanned<String>>,
}

/// Reads and checks the policy file at `path`.
pub fn load_policy(path: &Path, known: &Known<'_>) -> Result<Policy, PolicyError> {
    let file = path.display().to_string();
    let whole = |message: String| PolicyError {
        file: file.clone(),
        line: 0,
        column: 0,
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| whole(format!("cannot be read ({})", e.kind())))?;
    if bytes.len() > MAX_POLICY_BYTES {
        return Err(whole(format!(
            "is larger than {} KiB",
            MAX_POLICY_BYTES / 1024
        )));
    }
    let text = String::from_utf8(bytes).map_err(|_| whole("is not UTF-8".into()))?;
    parse_policy(&file, &text, known)
}

/// Parses and checks policy `text` (named `file` in errors).
pub fn parse_policy(file: &str, text: &str, known: &Known<'_>) -> Result<Policy, PolicyError> {
    let at = |span: Option<Range<usize>>, message: String| {
        let (line, column) = span.map_or((0, 0), |s| line_and_column(text, s.start));
        PolicyError {
            file: file.to_owned(),
            line,
            column,
            message,
        }
    };
    let doc: FileDoc = toml::from_str(text).map_err(|e| at(e.span(), e.message().to_owned()))?;
    if doc.rule.len() > MAX_RULES {
        return Err(at(None, format!("holds more than {MAX_RULES} rules")));
    }
    let mut ids = HashSet::new();
    let mut rules = Vec::with_capacity(doc.rule.len());
    for rule in doc.rule {
        let id = rule.id.get_ref().clone();
        let id_at = |message: String| at(Some(rule.id.span()), message);
        if !is_rule_id(&id) {
            return Err(id_at(format!(
                "rule id `{}` must be 1 to 64 of a-z, 0-9, `-`, `_`, `.`",
                id.chars().take(64).collect::<String>()
            )));
        }
        if !ids.insert(id.clone()) {
            return Err(id_at(format!("rule id `{id}` is used twice")));
        }
        let effect = rule_effect(&rule, &id, known, &at)?;
        if effect.is_empty() {
            return Err(id_at(format!(
                "rule `{id}` narrows nothing: give it read_only, toolsets, deny_toolsets, deny_tools or confirm_tools"
            )));
        }
        rules.push(Rule {
            when: rule_conditions(rule.when, &id, known, &at)?,
            unless: rule_conditions(rule.unless, &id, known, &at)?,
            effect,
            id,
        });
    }
    Ok(Policy { rules })
}

/// What rule `id` narrows, every toolset and tool it names checked.
fn rule_effect(
    rule: &RuleDoc,
    id: &str,
    known: &Known<'_>,
    at: &impl Fn(Option<Range<usize>>, String) -> PolicyError,
) -> Result<Effect, PolicyError> {
    let names = |list: &[Spanned<String>], check: &dyn Fn(&str) -> bool, what: &str| {
        let mut out = BTreeSet::new();
        for name in list {
            if !check(name.get_ref()) {
                return Err(at(
                    Some(name.span()),
                    format!("rule `{id}`: unknown {what} `{}`", name.get_ref()),
                ));
            }
            out.insert(name.get_ref().clone());
        }
        Ok(out)
    };
    Ok(Effect {
        read_only: rule.read_only,
        toolsets: rule
            .toolsets
            .as_deref()
            .map(|list| names(list, known.toolset, "toolset"))
            .transpose()?,
        deny_toolsets: names(&rule.deny_toolsets, known.toolset, "toolset")?,
        deny_tools: names(&rule.deny_tools, known.tool, "tool")?,
        confirm_tools: names(&rule.confirm_tools, known.tool, "tool")?,
    })
}

/// Rule `id`'s `when` or `unless`, its URLs made canonical and its teams
/// checked; none matches everyone.
fn rule_conditions(
    doc: Option<ConditionsDoc>,
    id: &str,
    known: &Known<'_>,
    at: &impl Fn(Option<Range<usize>>, String) -> PolicyError,
) -> Result<Conditions, PolicyError> {
    let Some(doc) = doc else {
        return Ok(Conditions::default());
    };
    let mut urls = Vec::new();
    for url in &doc.urls {
        let canonical = (known.url)(url.get_ref()).ok_or_else(|| {
            at(
                Some(url.span()),
                format!(
                    "rule `{id}`: `{}` is not an MCP URL path of this gateway (`/mcp`, `/mcp/all`, `/mcp/x/…`, with or without `/readonly`)",
                    url.get_ref()
                ),
            )
        })?;
        urls.push(canonical);
    }
    for team in &doc.teams {
        let well_formed = team
            .get_ref()
            .split_once('/')
            .is_some_and(|(org, name)| !org.is_empty() && !name.is_empty() && !name.contains('/'));
        if !well_formed {
            return Err(at(
                Some(team.span()),
                format!(
                    "rule `{id}`: a team is written `org/team`, not `{}`",
                    team.get_ref()
                ),
            ));
        }
    }
    Ok(Conditions {
        logins: doc.logins,
        orgs: doc.orgs,
        teams: doc.teams.into_iter().map(Spanned::into_inner).collect(),
        site_admin: doc.site_admin,
        client_ids: doc.client_ids,
        client_names: doc.client_names,
        redirect_hosts: doc.redirect_hosts,
        urls,
    })
}

fn is_rule_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
