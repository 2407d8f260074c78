//! What a confirmation says about its call, as plain functions: the
//! sentence and the argument values the person is shown, and the elicitation form that
//! asks them (with the name to type for the deletions that cannot be
//! undone).

use serde_json::{Map, Value, json};

use crate::catalog::Operation;

/// The longest argument value the page shows (characters).
const MAX_SHOWN_VALUE: usize = 500;
/// Argument names whose values the page does not show.
const HIDDEN_NAMES: [&str; 6] = ["password", "token", "secret", "key", "data", "content"];

/// What the person must type to delete a repository, an organisation, a
/// user or a team in an elicitation form (as GitHub asks for a
/// repository's name): `owner/repo`, the organisation, the login, the
/// team id. `None` for every other call.
pub fn typed_name(operation: Option<&Operation>, args: &Map<String, Value>) -> Option<String> {
    let op = operation?;
    if op.method != http::Method::DELETE {
        return None;
    }
    let arg = |name: &str| {
        args.get(name)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
    };
    match op.route.as_str() {
        "/repos/{owner}/{repo}" => Some(format!("{}/{}", arg("owner")?, arg("repo")?)),
        "/orgs/{org}" => arg("org"),
        "/admin/users/{username}" => arg("username"),
        "/teams/{id}" => arg("id"),
        _ => None,
    }
}

/// The form elicitation that asks the person about a call: its message
/// and its schema (a name to type, or an approval).
pub fn elicitation_form(summary: &str, typed: Option<&str>) -> (String, Value) {
    match typed {
        Some(name) => (
            format!("{summary}. This cannot be undone. To confirm, type {name}."),
            json!({
                "type": "object",
                "properties": {"name": {"type": "string", "title": format!("Type {name} to confirm")}},
                "required": ["name"],
            }),
        ),
        None => (
            format!("{summary}. Approve this call?"),
            json!({
                "type": "object",
                "properties": {"approve": {"type": "boolean", "title": "Approve this call", "default": false}},
                "required": ["approve"],
            }),
        ),
    }
}

/// Whether the person's accepted answer to [`elicitation_form`] approves:
/// the exact name typed, or `approve: true`.
pub fn elicitation_approves(typed: Option<&str>, content: Option<&Value>) -> bool {
    match (typed, content) {
        (Some(name), Some(content)) => content.get("name").and_then(Value::as_str) == Some(name),
        (None, Some(content)) => content.get("approve").and_then(Value::as_bool) == Some(true),
        _ => false,
    }
}

/// The arguments as the page shows them: values of secret-looking names
/// hidden, long texts cut.
pub fn shown_arguments(args: &Map<String, Value>) -> String {
    fn shown(name: &str, value: &Value) -> Value {
        let lower = name.to_ascii_lowercase();
        if HIDDEN_NAMES.iter().any(|h| lower.contains(h)) && !value.is_object() {
            return Value::from("[hidden]");
        }
        match value {
            Value::Object(map) => {
                Value::Object(map.iter().map(|(k, v)| (k.clone(), shown(k, v))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| shown(name, v)).collect()),
            Value::String(text) if text.chars().count() > MAX_SHOWN_VALUE => Value::from(format!(
                "{}…",
                text.chars().take(MAX_SHOWN_VALUE).collect::<String>()
            )),
            other => other.clone(),
        }
    }
    serde_json::to_string_pretty(&shown("", &Value::Object(args.clone()))).unwrap_or_default()
}

/// What the call does, in a sentence: the operation's summary and the
/// values of its path parameters (`Delete a branch (owner: acme, repo:
/// widgets, branch: feature/x)`).
pub fn summary(operation: Option<&Operation>, route: &str, args: &Map<String, Value>) -> String {
    let what = operation.map_or_else(|| "Call the Gitea API".to_owned(), |op| op.summary.clone());
    let named: Vec<String> = route
        .split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .filter_map(|name| {
            let value = args.get(name)?;
            let text = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            Some(format!("{name}: {text}"))
        })
        .collect();
    let what = what.trim_end_matches('.');
    if named.is_empty() {
        what.to_owned()
    } else {
        format!("{what} ({})", named.join(", "))
    }
}
