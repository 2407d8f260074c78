//! Envelope checks (ADR 0005): the shape of success and error results.

use std::collections::BTreeSet;

use serde_json::Value;

/// Keys every success envelope has (ADR 0005, as issue 44 trimmed it).
const SUCCESS_KEYS: &[&str] = &["identity", "request", "status", "untrusted_content", "data"];

/// Keys said only when they say something: `pagination` when there is more
/// to fetch, `view` when it is the full one, `hidden_characters` when
/// Gitea's content held invisible characters.
const SAID_WHEN_SO: &[&str] = &["pagination", "view", "hidden_characters"];

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Keys a bounded envelope adds, together, when `data` was cut
/// (`MAX_TOOL_RESPONSE_ITEMS` / `MAX_TOOL_RESPONSE_CHARS`).
const TRUNCATION_KEYS: &[&str] = &["truncated", "truncation"];

pub fn check_success_envelope(body: &Value) -> Result<u16, String> {
    let mut want: BTreeSet<&str> = SUCCESS_KEYS.iter().copied().collect();
    if body.get("truncated").is_some() || body.get("truncation").is_some() {
        if body["truncated"] != true || !body["truncation"].is_object() {
            return Err("truncated/truncation are not `true` and an object".into());
        }
        want.extend(TRUNCATION_KEYS);
    }
    want.extend(
        SAID_WHEN_SO
            .iter()
            .copied()
            .filter(|key| body.get(key).is_some()),
    );
    if let Some(view) = body.get("view")
        && view != "full"
    {
        return Err(format!("view {view} is said, and is not \"full\""));
    }
    if keys(body) != want {
        return Err(format!("success envelope keys {:?}", keys(body)));
    }
    let identity = keys(&body["identity"]);
    let sudo = body["identity"].get("sudo").is_some();
    if identity != BTreeSet::from(["login", "mode"]) && !(sudo && identity.len() == 3) {
        return Err("identity is not {login, mode} (and sudo, when set)".into());
    }
    if keys(&body["request"]) != BTreeSet::from(["method", "path"]) {
        return Err("request is not {method, path}".into());
    }
    let path = body["request"]["path"].as_str().unwrap_or_default();
    if !path.starts_with('/') || path.contains(' ') {
        return Err(format!("request.path {path:?} is not an encoded path"));
    }
    if body
        .get("pagination")
        .is_some_and(|p| p.get("page").is_none())
    {
        return Err("pagination is said, and is no pagination object".into());
    }
    if !body["untrusted_content"].is_string() {
        return Err("untrusted_content is not a string".into());
    }
    match body["status"].as_u64() {
        Some(s @ 200..=299) => Ok(s as u16),
        _ => Err("status is not a 2xx number".into()),
    }
}

/// (status, kind, message) of a well-formed error result.
pub fn check_error_envelope(body: &Value) -> Result<(Option<u16>, String, String), String> {
    if keys(body) != BTreeSet::from(["error"]) {
        return Err(format!("error result keys {:?}", keys(body)));
    }
    let err = &body["error"];
    if keys(err) != BTreeSet::from(["kind", "message", "status"]) {
        return Err(format!("error object keys {:?}", keys(err)));
    }
    let status = match &err["status"] {
        Value::Null => None,
        v => Some(
            v.as_u64()
                .filter(|s| (100..=599).contains(s))
                .ok_or("error.status is not an HTTP status")? as u16,
        ),
    };
    let kind = err["kind"].as_str().ok_or("error.kind is not a string")?;
    let message = err["message"]
        .as_str()
        .ok_or("error.message is not a string")?;
    Ok((status, kind.to_owned(), message.to_owned()))
}
