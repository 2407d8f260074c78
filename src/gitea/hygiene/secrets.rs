//! Which values of a call are secrets, and which operations get special
//! treatment on the result path (ADR 0005, "Amendments"):
//!
//! - the secret values submitted in the request body of the same call,
//!   which Gitea may echo back (a created webhook returns its
//!   `authorization_header`) and which exact redaction therefore removes;
//! - the credential-issuing operations, whose successful results skip
//!   pattern masking and block mode;
//! - the webhook operations, whose `authorization_header` is redacted.

use serde_json::Value;

use crate::gitea::call::{CallBody, MultipartPart};

/// Request-body fields whose values are secrets (ADR 0005). Matched by
/// name, ASCII case-insensitively, at any depth up to [`MAX_BODY_DEPTH`].
pub const SECRET_BODY_FIELDS: &[&str] = &[
    "password",
    "secret",
    "client_secret",
    "token",
    "access_token",
    "auth_password",
    "auth_token",
    "private_key",
    "authorization_header",
    "remote_password",
    "mirror_password",
    "mirror_token",
    "aws_secret_access_key",
    "aws_access_key_id",
];

/// Submitted secret values shorter than this are not redacted (they would
/// match ordinary text); an Action secret's `data` is the exception.
pub const MIN_BODY_SECRET_CHARS: usize = 4;

/// How deep the body is searched: the body itself is level 1, an object
/// inside it level 2, and so on; fields of containers at levels 1 to 8
/// are collected.
pub const MAX_BODY_DEPTH: usize = 8;

/// Gitea 1.27 operations that exist to hand the caller a new credential.
/// Their successful results skip pattern masking and block mode (masking
/// would make the credential unusable); exact redaction still applies,
/// and their errors are masked like every other.
pub const CREDENTIAL_ISSUING_OPERATIONS: &[&str] = &[
    "userCreateToken",
    "adminCreateRunnerRegistrationToken",
    "orgCreateRunnerRegistrationToken",
    "repoCreateRunnerRegistrationToken",
    "userCreateRunnerRegistrationToken",
    "userCreateOAuth2Application",
    "userUpdateOAuth2Application",
];

/// Names on the ADR's credential-issuing list that Gitea 1.27 has no
/// operation for. Kept so the docs and a test can say so explicitly.
#[cfg(test)]
pub const ADR_CREDENTIAL_OPERATIONS_WITHOUT_GITEA_OPERATION: &[&str] = &["repoCreateDeployToken"];

/// Gitea 1.27 operations that return a webhook (`Hook`) with its stored
/// `authorization_header`: list, get, create and edit of repository,
/// organization, user and admin (system) hooks. The redaction itself is
/// keyed on the field (see `redaction::redact_authorization_headers`), so
/// this list documents and tests the coverage.
pub const WEBHOOK_OPERATIONS: &[&str] = &[
    "repoListHooks",
    "repoGetHook",
    "repoCreateHook",
    "repoEditHook",
    "orgListHooks",
    "orgGetHook",
    "orgCreateHook",
    "orgEditHook",
    "userListHooks",
    "userGetHook",
    "userCreateHook",
    "userEditHook",
    "adminListHooks",
    "adminGetHook",
    "adminCreateHook",
    "adminEditHook",
];

/// True for the operations of [`CREDENTIAL_ISSUING_OPERATIONS`]. The raw
/// tool has no operation id and is never credential-issuing.
pub fn is_credential_issuing(operation_id: Option<&str>) -> bool {
    operation_id.is_some_and(|id| CREDENTIAL_ISSUING_OPERATIONS.contains(&id))
}

/// True when `path` writes or reads an Actions secret
/// (`…/actions/secrets/{name}` for repositories, organizations and the
/// user). Decided on the sent path, so the raw tool is covered too.
pub fn is_action_secret_path(path: &str) -> bool {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    segments
        .windows(3)
        .any(|w| w[0].eq_ignore_ascii_case("actions") && w[1].eq_ignore_ascii_case("secrets"))
}

/// The secret values submitted with one call.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BodySecrets {
    /// Values of [`SECRET_BODY_FIELDS`], at least [`MIN_BODY_SECRET_CHARS`] long.
    pub values: Vec<String>,
    /// An Action secret's `data`, redacted at any length.
    pub any_length: Vec<String>,
}

/// Collects the secrets of a call's body. `path` is the sent path, which
/// decides whether `data` is an Action secret.
pub fn body_secrets(body: &CallBody, path: &str) -> BodySecrets {
    let mut out = BodySecrets::default();
    match body {
        CallBody::Json(value) => {
            collect_fields(value, 1, &mut out.values);
            if is_action_secret_path(path)
                && let Some(data) = value.get("data")
            {
                collect_leaves(data, &mut out.any_length);
            }
        }
        CallBody::Multipart(parts) => {
            for part in parts {
                if let MultipartPart::Text { field, value } = part
                    && is_secret_field(field)
                {
                    out.values.push(value.clone());
                }
            }
        }
        CallBody::None | CallBody::Text(_) => {}
    }
    out.values
        .retain(|v| v.chars().count() >= MIN_BODY_SECRET_CHARS);
    out.any_length.retain(|v| !v.is_empty());
    out
}

fn is_secret_field(name: &str) -> bool {
    SECRET_BODY_FIELDS
        .iter()
        .any(|f| f.eq_ignore_ascii_case(name))
}

/// Walks containers down to [`MAX_BODY_DEPTH`]; under a secret field name
/// every scalar is a secret (a secret sent as an object or list stays one).
fn collect_fields(value: &Value, level: usize, out: &mut Vec<String>) {
    if level > MAX_BODY_DEPTH {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                if is_secret_field(key) {
                    collect_leaves(v, out);
                } else {
                    collect_fields(v, level + 1, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_fields(v, level + 1, out)),
        _ => {}
    }
}

/// Every string and number below `value` (bounded by the same depth, so a
/// hostile argument cannot make this recurse without end).
fn collect_leaves(value: &Value, out: &mut Vec<String>) {
    fn walk(value: &Value, level: usize, out: &mut Vec<String>) {
        match value {
            Value::String(s) => out.push(s.clone()),
            Value::Number(n) => out.push(n.to_string()),
            Value::Array(items) if level < MAX_BODY_DEPTH => {
                items.iter().for_each(|v| walk(v, level + 1, out));
            }
            Value::Object(map) if level < MAX_BODY_DEPTH => {
                map.values().for_each(|v| walk(v, level + 1, out));
            }
            _ => {}
        }
    }
    walk(value, 1, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn json_secrets(body: Value, path: &str) -> BodySecrets {
        body_secrets(&CallBody::Json(body), path)
    }

    #[test]
    fn every_adr_field_is_collected_at_the_top_level() {
        for field in SECRET_BODY_FIELDS {
            let s = json_secrets(json!({ *field: "value-1234", "name": "x" }), "/x");
            assert_eq!(s.values, ["value-1234"], "{field}");
        }
    }

    #[test]
    fn field_names_match_case_insensitively_and_nested() {
        let s = json_secrets(
            json!({"config": {"Password": "hunter22"}, "list": [{"token": "tok-value"}]}),
            "/x",
        );
        assert_eq!(s.values, ["hunter22", "tok-value"]);
    }

    #[test]
    fn values_shorter_than_four_characters_are_ignored() {
        let s = json_secrets(json!({"password": "abc", "secret": "abcd"}), "/x");
        assert_eq!(s.values, ["abcd"]);
    }

    #[test]
    fn depth_eight_is_searched_and_depth_nine_is_not() {
        // The body is level 1; each wrapper adds one level.
        let mut at_8 = json!({"password": "level-eight"});
        for _ in 0..7 {
            at_8 = json!({ "w": at_8 });
        }
        assert_eq!(json_secrets(at_8.clone(), "/x").values, ["level-eight"]);
        let at_9 = json!({ "w": at_8 });
        assert!(json_secrets(at_9, "/x").values.is_empty());
        // Lists count as levels too.
        let in_list = json!([[{"secret": "in-a-list"}]]);
        assert_eq!(json_secrets(in_list, "/x").values, ["in-a-list"]);
    }

    #[test]
    fn a_secret_sent_as_an_object_or_number_is_still_collected() {
        let s = json_secrets(json!({"secret": {"a": "inner-value", "n": 123456}}), "/x");
        assert_eq!(s.values, ["inner-value", "123456"]);
    }

    #[test]
    fn action_secret_data_is_collected_at_any_length_on_secret_paths_only() {
        let body = json!({"data": "x", "description": "d"});
        for path in [
            "/repos/o/r/actions/secrets/NAME",
            "/orgs/o/actions/secrets/NAME",
            "/user/actions/secrets/NAME",
        ] {
            assert_eq!(json_secrets(body.clone(), path).any_length, ["x"], "{path}");
        }
        assert!(
            json_secrets(body, "/repos/o/r/actions/variables/NAME")
                .any_length
                .is_empty()
        );
    }

    #[test]
    fn multipart_text_fields_are_collected() {
        let body = CallBody::Multipart(vec![
            MultipartPart::Text {
                field: "password".into(),
                value: "form-secret".into(),
            },
            MultipartPart::Text {
                field: "name".into(),
                value: "public".into(),
            },
        ]);
        assert_eq!(body_secrets(&body, "/x").values, ["form-secret"]);
    }

    #[test]
    fn credential_issuing_is_by_operation_id_only() {
        assert!(is_credential_issuing(Some("userCreateToken")));
        assert!(!is_credential_issuing(Some("userGetTokens")));
        assert!(!is_credential_issuing(None));
    }

    #[test]
    fn operation_lists_match_the_bundled_gitea_catalog() {
        let catalog = crate::catalog::Catalog::bundled();
        let ids: Vec<&str> = catalog
            .operations()
            .iter()
            .map(|op| op.operation_id.as_str())
            .collect();
        for id in CREDENTIAL_ISSUING_OPERATIONS
            .iter()
            .chain(WEBHOOK_OPERATIONS)
        {
            assert!(ids.contains(id), "{id} is not a Gitea 1.27 operation");
        }
        for id in ADR_CREDENTIAL_OPERATIONS_WITHOUT_GITEA_OPERATION {
            assert!(!ids.contains(id), "{id} now exists: add it to the list");
        }
        // Every operation that answers with a webhook is listed: its
        // route is a `hooks` route (not the git hooks) and it is not a
        // delete or a test delivery.
        let hook_ops: Vec<&str> = catalog
            .operations()
            .iter()
            .filter(|op| {
                op.route.contains("/hooks")
                    && !op.route.contains("/hooks/git")
                    && !op.route.ends_with("/tests")
                    && op.method != http::Method::DELETE
            })
            .map(|op| op.operation_id.as_str())
            .collect();
        let mut expected: Vec<&str> = WEBHOOK_OPERATIONS.to_vec();
        expected.sort_unstable();
        let mut found = hook_ops;
        found.sort_unstable();
        assert_eq!(found, expected);
    }
}
