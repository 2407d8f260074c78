//! Table and property tests of the whole result pipeline.

use super::*;
use crate::gitea::call::CallBody;
use crate::gitea::hygiene::redaction::REDACTED;
use crate::gitea::hygiene::secrets::{
    CREDENTIAL_ISSUING_OPERATIONS, WEBHOOK_OPERATIONS, body_secrets,
};
use crate::identity::IdentityMode;
use base64::Engine;
use bytes::Bytes;
use secrecy::SecretString;
use serde_json::json;

pub(super) const TOKEN: &str = "identity-token-0123456789abcdef";
const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
const SHA1: &str = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3";

pub(super) fn identity() -> Identity {
    Identity {
        login: Some("admin".into()),
        mode: IdentityMode::Bearer,
        token: SecretString::from(TOKEN),
        refresh_token: None,
        renewal: None,
        access: crate::identity::Access::ReadWrite,
    }
}

pub(super) fn call(method: http::Method, path: &str, body: CallBody) -> GiteaCall {
    GiteaCall {
        method,
        path: path.into(),
        route: path.into(),
        query: vec![],
        body,
        sudo: None,
    }
}

pub(super) fn get(path: &str) -> GiteaCall {
    call(http::Method::GET, path, CallBody::None)
}

pub(super) fn response(
    status: u16,
    content_type: &str,
    body: impl Into<Bytes>,
) -> UpstreamResponse {
    UpstreamResponse {
        status,
        content_type: Some(content_type.into()),
        total_count: None,
        link: None,
        body: body.into(),
        body_truncated: false,
    }
}

pub(super) fn json_response(status: u16, body: &Value) -> UpstreamResponse {
    response(status, "application/json", body.to_string())
}

/// The shipped pipeline, its text parsed back so a test can look inside.
pub(super) fn tool_result(
    identity: &Identity,
    call: &GiteaCall,
    response: &UpstreamResponse,
    policy: &ResultPolicy,
    redactor: &Redactor,
    operation_id: Option<&str>,
) -> Result<Value, ToolError> {
    super::tool_result(
        identity,
        call,
        response,
        policy,
        redactor,
        operation_id,
        super::ResultView::Full,
    )
    .map(|text| serde_json::from_str(&text).expect("the envelope is JSON"))
}

fn policy(mode: SecretDetectionMode) -> ResultPolicy {
    ResultPolicy::new(&Limits::default(), mode)
}

fn redactor() -> Redactor {
    Redactor::new([TOKEN])
}

fn run(
    mode: SecretDetectionMode,
    resp: &UpstreamResponse,
    op: Option<&str>,
) -> Result<Value, ToolError> {
    tool_result(
        &identity(),
        &get("/x"),
        resp,
        &policy(mode),
        &redactor(),
        op,
    )
}

const MODES: [SecretDetectionMode; 3] = [
    SecretDetectionMode::Off,
    SecretDetectionMode::Mask,
    SecretDetectionMode::Block,
];

#[test]
fn mask_mode_redacts_then_masks_and_keeps_commit_ids() {
    let body = json!({"body": format!("token {TOKEN} and {AWS}"), "sha": SHA1});
    let env = run(SecretDetectionMode::Mask, &json_response(200, &body), None).unwrap();
    assert_eq!(env["data"]["body"], "token [REDACTED] and AKIA[MASKED]MPLE");
    assert_eq!(env["data"]["sha"], SHA1);
    assert_eq!(
        env["untrusted_content"],
        crate::gitea::envelope_shell::UNTRUSTED_CONTENT_NOTICE
    );
}

#[test]
fn off_mode_still_redacts_exactly() {
    let body = json!({"body": format!("{TOKEN} {AWS}")});
    let env = run(SecretDetectionMode::Off, &json_response(200, &body), None).unwrap();
    assert_eq!(env["data"]["body"], format!("{REDACTED} {AWS}"));
}

#[test]
fn block_mode_withholds_the_result_and_names_the_families_only() {
    let body = json!([{"title": "x", "body": AWS}, {"k": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig"}]);
    let err = run(SecretDetectionMode::Block, &json_response(201, &body), None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::SecretBlocked);
    assert_eq!(err.status, Some(201));
    assert!(
        err.message.contains("aws_access_key_id, jwt"),
        "{}",
        err.message
    );
    assert!(!err.message.contains(AWS));
    assert_eq!(err.to_json()["error"]["kind"], "secret_blocked");
}

#[test]
fn block_mode_passes_results_whose_only_secrets_were_redacted_exactly() {
    let body = json!({"body": format!("password={TOKEN}"), "sha": SHA1});
    let env = run(SecretDetectionMode::Block, &json_response(200, &body), None).unwrap();
    assert_eq!(env["data"]["body"], "password=[REDACTED]");
}

#[test]
fn credential_issuing_successes_skip_masking_and_block_but_not_redaction() {
    let minted = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let body = json!({"id": 1, "name": "ci", "sha1": minted, "note": TOKEN});
    for op in CREDENTIAL_ISSUING_OPERATIONS {
        for mode in MODES {
            let env = run(mode, &json_response(201, &body), Some(op)).unwrap();
            assert_eq!(env["data"]["sha1"], minted, "{op} {mode:?}");
            assert_eq!(env["data"]["note"], REDACTED, "{op} {mode:?}");
        }
    }
    // Any other operation masks the same body.
    let env = run(
        SecretDetectionMode::Mask,
        &json_response(201, &body),
        Some("userGetTokens"),
    )
    .unwrap();
    assert_eq!(env["data"]["sha1"], "ghp_[MASKED]6789");
}

#[test]
fn credential_issuing_errors_are_masked_like_every_other() {
    let body = json!({"message": format!("conflict with {AWS} for {TOKEN}")});
    let err = run(
        SecretDetectionMode::Mask,
        &json_response(409, &body),
        Some("userCreateToken"),
    )
    .unwrap_err();
    assert_eq!(err.message, "conflict with AKIA[MASKED]MPLE for [REDACTED]");
    let err = run(
        SecretDetectionMode::Block,
        &json_response(409, &body),
        Some("userCreateToken"),
    )
    .unwrap_err();
    assert_eq!(err.kind, ErrorKind::SecretBlocked);
    assert_eq!(err.status, Some(409));
    assert!(!err.message.contains("AKIA"));
}

#[test]
fn webhook_authorization_header_is_redacted_on_every_hook_operation_in_every_mode() {
    let hook = json!({
        "id": 7, "type": "gitea", "active": true,
        "authorization_header": "Bearer s3cr3t-hook-value",
        "config": {"url": "https://ci.example.org/hook", "content_type": "json"},
        "events": ["push"],
    });
    for op in WEBHOOK_OPERATIONS {
        let data = if op.ends_with("ListHooks") {
            json!([hook.clone(), {"id": 8, "authorization_header": ""}])
        } else {
            hook.clone()
        };
        for mode in MODES {
            let env = run(mode, &json_response(200, &data), Some(op)).unwrap();
            let first = if data.is_array() {
                &env["data"][0]
            } else {
                &env["data"]
            };
            assert_eq!(first["authorization_header"], REDACTED, "{op} {mode:?}");
            assert!(
                !env.to_string().contains("s3cr3t-hook-value"),
                "{op} {mode:?}"
            );
            if data.is_array() {
                // Gitea 1.27.1 answers "" when none is stored: left as is.
                assert_eq!(env["data"][1]["authorization_header"], "");
            }
        }
    }
}

#[test]
fn a_submitted_secret_echoed_back_is_redacted() {
    let sent = json!({"type": "gitea", "config": {"url": "https://x", "secret": "hmac-secret-1"},
                      "authorization_header": "Bearer abc"});
    let call = call(http::Method::POST, "/repos/o/r/hooks", CallBody::Json(sent));
    let secrets = body_secrets(&call.body, &call.path);
    let r = Redactor::builder()
        .secret(TOKEN)
        .secrets(secrets.values)
        .build();
    let echoed =
        json!({"id": 1, "config": {"note": "hmac-secret-1"}, "authorization_header": "Bearer abc"});
    let env = tool_result(
        &identity(),
        &call,
        &json_response(201, &echoed),
        &policy(SecretDetectionMode::Off),
        &r,
        Some("repoCreateHook"),
    )
    .unwrap();
    assert_eq!(env["data"]["config"]["note"], REDACTED);
    assert_eq!(env["data"]["authorization_header"], REDACTED);
}

#[test]
fn action_secret_data_is_redacted_at_any_length() {
    let call = call(
        http::Method::PUT,
        "/repos/o/r/actions/secrets/S",
        CallBody::Json(json!({"data": "xy"})),
    );
    let secrets = body_secrets(&call.body, &call.path);
    let redactor = Redactor::builder()
        .secret(TOKEN)
        .secrets_any_length(secrets.any_length)
        .build();
    let err = tool_result(
        &identity(),
        &call,
        &json_response(400, &json!({"message": "bad value xy"})),
        &policy(SecretDetectionMode::Mask),
        &redactor,
        Some("updateRepoSecret"),
    )
    .unwrap_err();
    assert_eq!(err.message, "bad value [REDACTED]");
}

#[test]
fn a_secret_used_as_an_object_key_is_redacted() {
    let body = json!({TOKEN: {"nested": {TOKEN: 1}}});
    let env = run(SecretDetectionMode::Mask, &json_response(200, &body), None).unwrap();
    assert!(!env.to_string().contains(TOKEN));
    assert_eq!(env["data"][REDACTED]["nested"][REDACTED], 1);
}

#[test]
fn secrets_in_base64_file_content_are_redacted_and_masked() {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let body = json!({"type": "file", "encoding": "base64", "content": b64(&format!("A={TOKEN}\nB={AWS}\n"))});
    let env = run(SecretDetectionMode::Mask, &json_response(200, &body), None).unwrap();
    assert_eq!(
        env["data"]["content"],
        b64("A=[REDACTED]\nB=AKIA[MASKED]MPLE\n")
    );
    let err = run(SecretDetectionMode::Block, &json_response(200, &body), None).unwrap_err();
    assert_eq!(err.kind, ErrorKind::SecretBlocked);
}

#[test]
fn binary_bodies_are_redacted_inside_their_base64() {
    let mut bytes = vec![0u8, 159, 146];
    bytes.extend_from_slice(TOKEN.as_bytes());
    let env = run(
        SecretDetectionMode::Mask,
        &response(200, "application/octet-stream", bytes),
        None,
    )
    .unwrap();
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(env["data"]["content_base64"].as_str().unwrap())
        .unwrap();
    assert_eq!(&decoded[3..], REDACTED.as_bytes());
}

#[test]
fn lists_are_cut_to_the_item_bound_after_redaction() {
    let items: Vec<Value> = (0..130).map(|i| json!({"n": i, "t": TOKEN})).collect();
    let env = run(
        SecretDetectionMode::Mask,
        &json_response(200, &Value::Array(items)),
        None,
    )
    .unwrap();
    assert_eq!(env["data"].as_array().unwrap().len(), 100);
    assert_eq!(
        env["truncation"],
        json!({"items_returned": 100, "items_omitted": 30})
    );
    assert!(!env.to_string().contains(TOKEN));
}

#[test]
fn a_secret_across_the_character_bound_leaves_no_prefix() {
    let limits = Limits {
        max_tool_response_chars: 1_000,
        ..Limits::default()
    };
    let p = ResultPolicy::new(&limits, SecretDetectionMode::Mask);
    let id = identity();
    // Find the cut point of a plain text, then put the secret across it.
    let plain = "a".repeat(5_000);
    let env = tool_result(
        &id,
        &get("/x"),
        &response(200, "text/plain", plain.clone()),
        &p,
        &redactor(),
        None,
    )
    .unwrap();
    let cut = env["data"].as_str().unwrap().len();
    for shift in 0..TOKEN.len() {
        let mut text = plain.clone();
        text.replace_range(cut - shift..cut - shift + TOKEN.len(), TOKEN);
        let env = tool_result(
            &id,
            &get("/x"),
            &response(200, "text/plain", text),
            &p,
            &redactor(),
            None,
        )
        .unwrap();
        let out = env.to_string();
        assert!(out.chars().count() <= 1_000);
        assert!(!out.contains(&TOKEN[..10]), "shift {shift}: {out}");
        assert_eq!(env["truncated"], true);
    }
}

#[test]
fn a_message_secret_across_the_message_cut_leaves_no_prefix() {
    use crate::gitea::envelope::MAX_ERROR_MESSAGE_CHARS;
    for shift in 1..TOKEN.len() {
        let msg = format!(
            "{}{TOKEN} tail",
            "m".repeat(MAX_ERROR_MESSAGE_CHARS - shift)
        );
        let err = gitea_error(
            &json_response(500, &json!({"message": msg})),
            &redactor(),
            SecretDetectionMode::Mask,
        );
        assert!(
            !err.message.contains("iden"),
            "shift {shift}: {}",
            err.message
        );
    }
}

#[test]
fn hugely_nested_json_is_returned_as_bounded_text() {
    let deep = format!("{}{}", "[".repeat(100_001), "]".repeat(100_001));
    let env = run(
        SecretDetectionMode::Mask,
        &response(200, "application/json", deep),
        None,
    )
    .unwrap();
    assert!(env["data"].is_string());
    assert!(env.to_string().chars().count() <= Limits::default().max_tool_response_chars);
    assert_eq!(env["truncation"]["data_format"], "text");
}

#[test]
fn invalid_utf8_text_becomes_a_well_formed_string() {
    let mut bytes = b"ok ".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    bytes.extend_from_slice(TOKEN.as_bytes());
    let env = run(
        SecretDetectionMode::Mask,
        &response(200, "text/plain", bytes),
        None,
    )
    .unwrap();
    let data = env["data"].as_str().unwrap();
    assert!(data.starts_with("ok "));
    assert!(data.ends_with(REDACTED));
}

#[test]
fn error_messages_are_redacted_masked_stripped_and_truncated() {
    let body = json!({"message": format!("bad {TOKEN} {AWS}\nAuthorization: token abc {}", "x".repeat(900))});
    let err = gitea_error(
        &json_response(422, &body),
        &redactor(),
        SecretDetectionMode::Mask,
    );
    assert_eq!(
        err.message,
        "bad [REDACTED] AKIA[MASKED]MPLE Authorization: [REDACTED]"
    );
    assert_eq!(err.kind, ErrorKind::ValidationFailed);
    let long = json!({"message": "y".repeat(2_000)});
    let err = gitea_error(
        &json_response(500, &long),
        &redactor(),
        SecretDetectionMode::Off,
    );
    assert_eq!(
        err.message.chars().count(),
        crate::gitea::envelope::MAX_ERROR_MESSAGE_CHARS + 1
    );
}

/// A call whose path and sudo user hold `text`, for the shell's tests.
fn call_naming(text: &str) -> GiteaCall {
    let mut call = get(&format!("/repos/o/{text}/issues"));
    call.sudo = Some(format!("user-{text}"));
    call
}

fn run_call(mode: SecretDetectionMode, call: &GiteaCall) -> Result<Value, ToolError> {
    let body = json!([{"id": 1}]);
    tool_result(
        &identity(),
        call,
        &json_response(200, &body),
        &policy(mode),
        &redactor(),
        None,
    )
}

#[test]
fn a_known_secret_in_the_request_path_or_sudo_user_is_redacted_in_every_mode() {
    for mode in [SecretDetectionMode::Off, SecretDetectionMode::Mask] {
        let env = run_call(mode, &call_naming(TOKEN)).unwrap();
        assert_eq!(
            env["request"]["path"], "/repos/o/[REDACTED]/issues",
            "{mode:?}"
        );
        assert_eq!(env["identity"]["sudo"], "user-[REDACTED]", "{mode:?}");
        assert!(!env.to_string().contains(TOKEN), "{mode:?}");
    }
    // Redacted exactly first, it leaves no credential for block mode.
    let env = run_call(SecretDetectionMode::Block, &call_naming(TOKEN)).unwrap();
    assert_eq!(env["request"]["path"], "/repos/o/[REDACTED]/issues");
}

#[test]
fn mask_mode_masks_a_credential_shape_in_the_request_path() {
    let env = run_call(SecretDetectionMode::Mask, &call_naming(AWS)).unwrap();
    assert_eq!(env["request"]["path"], "/repos/o/AKIA[MASKED]MPLE/issues");
    assert_eq!(env["identity"]["sudo"], "user-AKIA[MASKED]MPLE");
}

#[test]
fn block_mode_withholds_a_result_whose_request_path_holds_a_credential() {
    let err = run_call(SecretDetectionMode::Block, &call_naming(AWS)).unwrap_err();
    assert_eq!(err.kind, ErrorKind::SecretBlocked);
    assert!(err.message.contains("aws_access_key_id"), "{}", err.message);
    assert!(!err.message.contains(AWS));
}

/// `GET /user` answered for a caller whose login is `login`.
fn run_as(login: &str, mode: SecretDetectionMode) -> Value {
    let mut who = identity();
    who.login = Some(login.to_owned());
    tool_result(
        &who,
        &get("/user"),
        &json_response(200, &json!({"id": 1})),
        &policy(mode),
        &redactor(),
        None,
    )
    .unwrap()
}

#[test]
fn a_known_secret_as_the_login_is_redacted() {
    let env = run_as(&format!("{TOKEN}-login"), SecretDetectionMode::Off);
    assert_eq!(env["identity"]["login"], "[REDACTED]-login");
}

#[test]
fn invisible_characters_in_the_request_path_are_shown_and_counted() {
    // The raw tool sends a path as typed: a bidi override in it would
    // reorder what the model reads of `request.path`.
    let env = run_call(
        SecretDetectionMode::Mask,
        &get("/repos/o/\u{202E}cod.exe/contents/a\u{200B}b"),
    )
    .unwrap();
    assert_eq!(
        env["request"]["path"],
        "/repos/o/[U+202E]cod.exe/contents/a[U+200B]b"
    );
    assert!(!env.to_string().contains('\u{202E}'));
    let note = env["hidden_characters"].as_str().unwrap();
    assert!(note.starts_with("2 invisible characters"), "{note}");
}

#[test]
fn invisible_characters_in_the_login_are_shown_and_counted() {
    let env = run_as("ad\u{2066}min", SecretDetectionMode::Mask);
    assert_eq!(env["identity"]["login"], "ad[U+2066]min");
    let note = env["hidden_characters"].as_str().unwrap();
    assert!(note.starts_with("1 invisible character"), "{note}");
}
