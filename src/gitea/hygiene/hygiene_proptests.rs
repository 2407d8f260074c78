//! Property tests of the whole result pipeline: no planted secret
//! survives, in any mode and bound, in the data, the envelope's caller
//! strings or Gitea's error messages.

use super::tests::{TOKEN, get, identity, json_response, response, tool_result};
use super::*;
use proptest::prelude::*;
use serde_json::json;

/// A piece of a generated string: filler text (lowercase and JSON
/// punctuation, so it can never spell a secret) or one of the secrets.
#[derive(Debug, Clone)]
enum Piece {
    Filler(String),
    Secret(usize),
}

#[derive(Debug, Clone)]
enum Doc {
    Null,
    Bool(bool),
    Num(i64),
    Text(Vec<Piece>),
    List(Vec<Doc>),
    Obj(Vec<(Vec<Piece>, Doc)>),
}

const SECRETS: usize = 4;

fn piece() -> impl Strategy<Value = Piece> {
    prop_oneof![
        3 => "[a-z .,:{}\\[\\]\"\\\\\n]{0,12}".prop_map(Piece::Filler),
        1 => (0..SECRETS).prop_map(Piece::Secret),
    ]
}

fn text() -> impl Strategy<Value = Vec<Piece>> {
    prop::collection::vec(piece(), 0..4)
}

fn doc() -> impl Strategy<Value = Doc> {
    let leaf = prop_oneof![
        Just(Doc::Null),
        any::<bool>().prop_map(Doc::Bool),
        any::<i64>().prop_map(Doc::Num),
        text().prop_map(Doc::Text),
    ];
    leaf.prop_recursive(8, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Doc::List),
            prop::collection::vec((text(), inner), 0..6).prop_map(Doc::Obj),
        ]
    })
}

fn render(pieces: &[Piece], secrets: &[String]) -> String {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Filler(s) => s.as_str(),
            Piece::Secret(i) => secrets[*i].as_str(),
        })
        .collect()
}

fn to_json(doc: &Doc, secrets: &[String]) -> Value {
    match doc {
        Doc::Null => Value::Null,
        Doc::Bool(b) => Value::Bool(*b),
        Doc::Num(n) => json!(n),
        Doc::Text(t) => Value::String(render(t, secrets)),
        Doc::List(items) => Value::Array(items.iter().map(|d| to_json(d, secrets)).collect()),
        Doc::Obj(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (render(k, secrets), to_json(v, secrets)))
                .collect(),
        ),
    }
}

fn mode() -> impl Strategy<Value = SecretDetectionMode> {
    prop_oneof![
        Just(SecretDetectionMode::Off),
        Just(SecretDetectionMode::Mask),
        Just(SecretDetectionMode::Block),
    ]
}

/// Everything the model would see of an outcome.
fn shown(outcome: &Result<Value, ToolError>) -> String {
    match outcome {
        Ok(v) => v.to_string(),
        Err(e) => e.to_json().to_string(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// No secret, nor its first six characters (which a cut would leave if
    /// truncation ran before redaction), survives in any mode and bound,
    /// in the data or the envelope's request path and sudo user.
    #[test]
    fn no_planted_secret_survives(
        secrets in prop::collection::vec("S[A-Z0-9]{11,31}", SECRETS),
        in_path in text(),
        in_sudo in text(),
        doc in doc(),
        list in prop::collection::vec(doc(), 0..40),
        top_is_list in any::<bool>(),
        mode in mode(),
        max_items in 1usize..30,
        max_chars in 1_000usize..4_000,
        as_text in any::<bool>(),
    ) {
        let data = if top_is_list {
            Value::Array(list.iter().map(|d| to_json(d, &secrets)).collect())
        } else {
            to_json(&doc, &secrets)
        };
        let resp = if as_text {
            response(200, "text/plain", data.to_string())
        } else {
            json_response(200, &data)
        };
        let limits = Limits { max_tool_response_items: max_items, max_tool_response_chars: max_chars, ..Limits::default() };
        let policy = ResultPolicy::new(&limits, mode);
        let redactor = Redactor::builder().secret(TOKEN).secrets(secrets.clone()).build();
        let mut call = get(&format!("/repos/o/{}/issues", render(&in_path, &secrets)));
        call.sudo = Some(render(&in_sudo, &secrets));
        let outcome = tool_result(&identity(), &call, &resp, &policy, &redactor, None);
        let out = shown(&outcome);
        for s in &secrets {
            prop_assert!(!out.contains(&s[..6]), "{} leaked in {}", s, out);
        }
        if let Ok(env) = &outcome {
            prop_assert!(out.chars().count() <= max_chars, "{} > {}", out.chars().count(), max_chars);
            if let Some(items) = env["data"].as_array() {
                prop_assert!(items.len() <= max_items);
            }
        }
    }

    /// The same when the secrets are of every kind a call has (the
    /// gateway's own, the caller's tokens, the body's secret fields) and
    /// the redactor comes from the cache, after another caller's call and
    /// after this caller's first.
    #[test]
    fn no_planted_secret_survives_a_cached_redactor(
        secrets in prop::collection::vec("S[A-Z0-9]{11,31}", SECRETS),
        split in (0..=SECRETS, 0..=SECRETS),
        list in prop::collection::vec(doc(), 0..20),
        mode in mode(),
        reuse in any::<bool>(),
    ) {
        use crate::gitea::hygiene::redactor_cache::RedactorCache;
        use crate::gitea::hygiene::secrets::BodySecrets;
        let own_end = split.0.min(secrets.len());
        let caller_end = (own_end + split.1).min(secrets.len());
        let cache = RedactorCache::new(secrets[..own_end].iter().cloned());
        let caller: Vec<&str> = secrets[own_end..caller_end].iter().map(String::as_str).collect();
        let submitted = || BodySecrets { values: secrets[caller_end..].to_vec(), any_length: Vec::new() };
        cache.redactor(&["another-callers-token"], BodySecrets::default());
        if reuse {
            cache.redactor(&caller, submitted());
        }
        let redactor = cache.redactor(&caller, submitted());
        let data = Value::Array(list.iter().map(|d| to_json(d, &secrets)).collect());
        let limits = Limits { max_tool_response_chars: 1_000_000, ..Limits::default() };
        let policy = ResultPolicy::new(&limits, mode);
        let outcome = tool_result(&identity(), &get("/repos/o/r/issues"), &json_response(200, &data), &policy, &redactor, None);
        let out = shown(&outcome);
        for s in &secrets {
            prop_assert!(!out.contains(&s[..6]), "{} leaked in {}", s, out);
        }
    }

    /// The same for Gitea's error messages.
    #[test]
    fn no_planted_secret_survives_in_errors(
        secrets in prop::collection::vec("S[A-Z0-9]{11,31}", SECRETS),
        message in text(),
        pad in 0usize..600,
        mode in mode(),
        status in prop_oneof![Just(400u16), Just(404), Just(422), Just(500)],
    ) {
        let msg = format!("{}{}", "p".repeat(pad), render(&message, &secrets));
        let redactor = Redactor::new(secrets.clone());
        let err = gitea_error(&json_response(status, &json!({"message": msg})), &redactor, mode);
        let out = err.to_json().to_string();
        for s in &secrets {
            prop_assert!(!out.contains(&s[..6]), "{} leaked in {}", s, out);
        }
    }
}
