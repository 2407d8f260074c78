//! The policy file at the command line (issue 27): `policy check` says
//! what a file holds or, like `serve`, exits 2 naming the file, the line
//! and the reason; nothing of a bad file is applied.

use crate::cli::{gateway, gateway_within};

const GOOD: &str = r#"
[[rule]]
id = "connectors-read-only"
when = { redirect_hosts = ["claude.ai"] }
unless = { teams = ["acme/platform"] }
read_only = true

[[rule]]
id = "no-admin-toolset"
deny_toolsets = ["admin"]
"#;

/// An unknown toolset on line 4, column 23.
const BAD: &str = "[[rule]]\nid = \"le-chat\"\nwhen = { client_names = [\"Le Chat\"] }\ntoolsets = [\"issue\", \"wiki\"]\n";

const KEY: &str = "policy-test-encryption-key-0123456789abcdef";

fn written(dir: &tempfile::TempDir, text: &str) -> String {
    let path = dir.path().join("policy.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn policy_check_lists_the_rules_of_a_good_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(&dir, GOOD);
    let out = gateway(&["policy", "check", &path], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(&format!("ok: {path} (2 rules)")),
        "{stdout}"
    );
    assert!(stdout.contains("  no-admin-toolset"), "{stdout}");
}

#[test]
fn policy_check_of_a_bad_file_exits_2_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(&dir, BAD);
    let out = gateway(&["policy", "check", &path], &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "policy error: {path}:4:22: rule `le-chat`: unknown toolset `wiki`"
        )),
        "{stderr}"
    );
}

#[test]
fn policy_check_reads_policy_file_from_the_settings() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(&dir, GOOD);
    let gitea = ("GITEA_URL", "http://127.0.0.1:9");
    let out = gateway(
        &["policy", "check"],
        &[gitea, ("POLICY_FILE", path.as_str())],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = gateway(&["policy", "check"], &[gitea]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("POLICY_FILE"));
}

#[test]
fn serve_with_a_bad_policy_file_exits_2_before_it_listens() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(&dir, BAD);
    let data = dir.path().join("data").display().to_string();
    let out = gateway_within(
        std::time::Duration::from_secs(30),
        &["serve"],
        &[
            ("GITEA_URL", "http://127.0.0.1:9"),
            ("GITEA_OAUTH_CLIENT_ID", "id"),
            ("GITEA_OAUTH_CLIENT_SECRET", "secret"),
            ("TOKEN_ENCRYPTION_KEY", KEY),
            ("MCP_PORT", "0"),
            ("DATA_DIR", data.as_str()),
            ("POLICY_FILE", path.as_str()),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{path}:4:22")), "{stderr}");
    assert!(!stderr.contains("listening"), "{stderr}");
}

#[test]
fn a_policy_without_oauth_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = written(&dir, GOOD);
    let out = gateway(
        &["stdio"],
        &[
            ("GITEA_URL", "http://127.0.0.1:9"),
            ("GITEA_TOKEN", "admin-token"),
            ("POLICY_FILE", path.as_str()),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("POLICY_FILE: needs OAuth"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
