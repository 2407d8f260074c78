//! Table tests of the pattern families: hits (with the masked form) and
//! non-hits, commit ids among them.

use super::*;
use serde_json::json;

const SHA1: &str = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3";
const SHA256: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn families(text: &str) -> Vec<&'static str> {
    masker().findings(text).iter().map(|f| f.family).collect()
}

fn secret_of(text: &str) -> Vec<String> {
    masker()
        .findings(text)
        .iter()
        .map(|f| text[f.start..f.end].to_owned())
        .collect()
}

#[test]
fn every_family_has_a_hit_in_the_table() {
    let hits = hit_table();
    for name in family_names() {
        assert!(
            hits.iter().any(|(family, _, _)| *family == name),
            "{name} has no hit case"
        );
    }
}

// One table, kept whole: each row is a case to read beside its neighbours.
fn hit_table() -> Vec<(&'static str, String, String)> {
    // (family, text, the secret part that must be found)
    let g35 = "B".repeat(35);
    let t = |family: &'static str, text: String, secret: &str| (family, text, secret.to_owned());
    let gh = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let pat = "github_pat_11ABCDEFG0123456789_abcdefghijklmnop";
    let glpat = "glpat-abcdefghij0123456789";
    let glrt = "GR1348941abcdefghij0123456789";
    let gitea_hex = "0123456789abcdef0123456789abcdef01234567";
    let gto = format!(
        "gto_{}",
        "abcdefghijklmnopqrstuvwxyz234567".repeat(2)[..52].to_owned()
    );
    let aws = "AKIAIOSFODNN7EXAMPLE";
    let slack = "xoxb-1234567890-abcdefghij";
    let slack_hook =
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX";
    let stripe = "sk_live_abcdefghijklmnop1234";
    let google = format!("AIza{g35}");
    let gocspx = "GOCSPX-abcdefghijklmnopqrstuvwxyz01";
    let anthropic = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123";
    let openai = "sk-proj-abcdefghijklmnopqrstuvwxyz";
    let openai_legacy = "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ";
    let agm = "agm_abcdefghijklmnopqrstuvwxyz0123456789ABCD";
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    let pem =
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabc+/=\n-----END RSA PRIVATE KEY-----";
    let pem_header_only = "-----BEGIN OPENSSH PRIVATE KEY-----";
    vec![
        t("github_token", format!("use {gh} here"), gh),
        t("github_token", format!("pat {pat}."), pat),
        t("gitlab_token", format!("GITLAB {glpat}"), glpat),
        t("gitlab_token", format!("runner {glrt}"), glrt),
        t(
            "gitea_token",
            format!("Authorization: token {gitea_hex}"),
            gitea_hex,
        ),
        t("gitea_oauth_client_secret", format!("secret {gto}"), &gto),
        t("aws_access_key_id", format!("key {aws} end"), aws),
        t("slack_token", format!("{slack} "), slack),
        t("slack_token", format!("post to {slack_hook}"), slack_hook),
        t("stripe_key", format!("stripe {stripe}"), stripe),
        t("google_credential", format!("key={google}&x"), &google),
        t("google_credential", gocspx.to_string(), gocspx),
        t("anthropic_key", format!("ANTHROPIC {anthropic}"), anthropic),
        t("openai_key", format!("OPENAI {openai}"), openai),
        t(
            "openai_key",
            format!("OPENAI {openai_legacy}"),
            openai_legacy,
        ),
        t("aegis_token", format!("Bearer-less {agm}"), agm),
        t("jwt", format!("id_token {jwt}"), jwt),
        t("private_key", format!("key:\n{pem}\nthanks"), pem),
        t(
            "private_key",
            format!("{pem_header_only}\nb3BlbnNzaC1rZXk="),
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=",
        ),
        t(
            "bearer_token",
            "Authorization: Bearer abcdef0123456789abcdef".into(),
            "abcdef0123456789abcdef",
        ),
        t(
            "basic_auth",
            "Authorization: Basic dXNlcjpwYXNzd29yZA==".into(),
            "dXNlcjpwYXNzd29yZA==",
        ),
        t(
            "url_credentials",
            "git clone https://oauth2:s3cretpass@gitea.example.org/o/r.git".into(),
            "s3cretpass",
        ),
        t(
            "secret_assignment",
            "password=hunter2hunter2".into(),
            "hunter2hunter2",
        ),
        t(
            "secret_assignment",
            "API_KEY: 'abc123def456'".into(),
            "abc123def456",
        ),
        t(
            "secret_assignment",
            r#"{"client_secret": "0123456789abcdefabcd"}"#.into(),
            "0123456789abcdefabcd",
        ),
        t(
            "secret_assignment",
            format!("GITEA_TOKEN={gitea_hex}"),
            gitea_hex,
        ),
        t(
            "secret_assignment",
            "aws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYzABCDEFGKEY".into(),
            "wJalrXUtnFEMIK7MDENGbPxRfiCYzABCDEFGKEY",
        ),
    ]
}

#[test]
fn hits_find_exactly_the_secret_part() {
    for (family, text, secret) in hit_table() {
        assert_eq!(families(&text), [family], "{text}");
        assert_eq!(secret_of(&text), std::slice::from_ref(&secret), "{text}");
        let masked = masker().mask_str(&text);
        assert!(!masked.contains(&secret), "{masked}");
        assert!(masked.contains(MASKED), "{masked}");
    }
}

#[test]
fn non_hits_are_left_alone() {
    let cases = [
        // Commit ids, in every context they appear in.
        SHA1.to_owned(),
        SHA256.to_owned(),
        format!("Merge commit '{SHA1}' into main"),
        format!("https://gitea.example.org/o/r/commit/{SHA1}"),
        format!(r#"{{"sha": "{SHA1}", "id": "{SHA256}"}}"#),
        format!("sha={SHA1} ref: {SHA1} commit_id={SHA1}"),
        format!("tokens {SHA1}"),
        // Near misses of every family.
        "ghp_short and ghx_abcdefghijklmnopqrstuvwxyz0123456789".into(),
        "glpat-short".into(),
        "XAKIAIOSFODNN7EXAMPLE AKIA123".into(),
        "xoxb-short".into(),
        "pk_live_abcdefghijklmnop1234 is publishable".into(),
        "sk-ant-short sk-short".into(),
        "eyJhbGciOiJIUzI1NiJ9 alone".into(),
        "-----BEGIN PUBLIC KEY----- -----BEGIN CERTIFICATE-----".into(),
        "bearer authentication_scheme_name".into(),
        "Basic authentication is disabled".into(),
        "git@github.com:org/repo.git https://user@host/x".into(),
        "password: ${{ secrets.DOCKER_PASSWORD }}".into(),
        "token_type: bearer".into(),
        "password: changeme123".into(),
        "token=[REDACTED]".into(),
        "max_tokens: 4096".into(),
        "secret: required_field".into(),
        "password: ********".into(),
        "The token is required; the password is secret.".into(),
        "agm_short".into(),
    ];
    for text in cases {
        assert_eq!(families(&text), Vec::<&str>::new(), "{text}");
        assert!(matches!(masker().mask_str(&text), Cow::Borrowed(_)));
    }
}

#[test]
fn a_url_password_is_found_after_a_user_name_of_any_length() {
    let text = format!("https://{}:s3cretpass@gitea.example.org/", "u".repeat(300));
    assert_eq!(secret_of(&text), ["s3cretpass"]);
}

#[test]
fn long_matches_keep_four_characters_at_each_end() {
    let text = "x ghp_abcdefghijklmnopqrstuvwxyz0123456789 y";
    assert_eq!(masker().mask_str(text), "x ghp_[MASKED]6789 y");
    assert_eq!(mask_secret("0123456789abcdef"), "0123[MASKED]cdef");
}

#[test]
fn short_matches_are_replaced_whole() {
    assert_eq!(mask_secret("0123456789abcde"), MASKED);
    assert_eq!(masker().mask_str("password=hunter22"), "password=[MASKED]");
}

#[test]
fn masking_is_stable_when_applied_again() {
    let once = masker()
        .mask_str("password=hunter2hunter2 ghp_abcdefghijklmnopqrstuvwxyz0123456789")
        .into_owned();
    assert_eq!(masker().mask_str(&once), once);
}

#[test]
fn several_secrets_in_one_string_are_all_masked() {
    let text = "a=AKIAIOSFODNN7EXAMPLE b=xoxb-1234567890-abcdefghij";
    let masked = masker().mask_str(text);
    assert_eq!(masked, "a=AKIA[MASKED]MPLE b=xoxb[MASKED]ghij");
}

#[test]
fn values_keys_and_base64_content_are_masked() {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut v = json!({
        "body": "leaked AKIAIOSFODNN7EXAMPLE",
        "AKIAIOSFODNN7EXAMPLE": 1,
        "file": {"encoding": "base64", "content": b64("password=hunter2hunter2\n")},
        "sha": SHA1,
    });
    masker().mask_value(&mut v);
    assert_eq!(v["body"], "leaked AKIA[MASKED]MPLE");
    assert!(v.get("AKIA[MASKED]MPLE").is_some());
    assert_eq!(v["file"]["content"], b64("password=[MASKED]\n"));
    assert_eq!(v["sha"], SHA1);
}

#[test]
fn families_in_value_names_each_family_once() {
    let b64 = base64::engine::general_purpose::STANDARD.encode("xoxb-1234567890-abcdefghij");
    let v = json!([
        "AKIAIOSFODNN7EXAMPLE",
        {"AKIAIOSFODNN7EXAMPLF": {"content_base64": b64}},
        SHA1
    ]);
    let found: Vec<&str> = masker().families_in_value(&v).into_iter().collect();
    assert_eq!(found, ["aws_access_key_id", "slack_token"]);
    assert!(masker().families_in_value(&json!({"sha": SHA1})).is_empty());
}

#[test]
fn a_body_full_of_near_misses_is_scanned_in_linear_time() {
    let unit = "ghp_short glpat-x token abc password: x eyJx.eyJ -----BEGIN KEY----- sk-x AKIA ";
    let text = unit.repeat(1024 * 1024 / unit.len());
    let started = std::time::Instant::now();
    assert!(masker().findings(&text).is_empty());
    // Generous for debug builds on a busy machine; quadratic would be minutes.
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}
