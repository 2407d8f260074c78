//! The audit log over real files and the real binary: chain tamper tests,
//! rotation, faults while running, startup refusal and write-ahead refusal
//! of tool calls. (The faults that need a process: `tests/gateway/audit_process.rs`.)

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use aegis_gitea_mcp::audit::{AuditLog, AuditOptions, AuditSync, Event, EventKind};
use secrecy::SecretString;
use serde_json::{Value, json};
use support::gateway_process::audit_verify as verify;
use support::{ADMIN_TOKEN, BEARER, FakeGitea, Gateway, call};

use support::gateway_process::BIN;
const KEY: &str = "audit-key-0123456789abcdef-0123456789";

fn key() -> SecretString {
    SecretString::from(KEY.to_owned())
}

async fn write_entries(dir: &Path, writers: usize, each: usize) {
    let log = AuditLog::open(dir, Some(&key())).await.unwrap();
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let log = log.clone();
            tokio::spawn(async move {
                for i in 0..each {
                    let mut event =
                        Event::new(EventKind::ToolCallStarted).tool(&format!("tool_{w}_{i}"));
                    event.args = Some(vec!["owner".into(), "repo".into()]);
                    log.record(event).await.unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// `AUDIT_SYNC=always`: every caller waits for an fsync covering its
/// entry; concurrent callers share them, and the chain stays whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_records_waiting_for_the_disk_all_land_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = AuditOptions::new(dir.path(), Some(&key()));
    options.sync = AuditSync::Always;
    let log = AuditLog::open_with(options).await.unwrap();
    let tasks: Vec<_> = (0..16)
        .map(|_| {
            let log = log.clone();
            tokio::spawn(async move {
                for _ in 0..20 {
                    log.record(Event::new(EventKind::RateLimited))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(lines_of(&dir.path().join("audit.log")).len(), 1 + 16 * 20);
    let (code, out) = verify(dir.path(), Some(KEY), &[]);
    assert_eq!(code, 0, "{out}");
}

/// `AUDIT_SYNC=interval` (the default): `record` returns once the entry
/// is in the file, without waiting for the disk.
#[tokio::test]
async fn a_recorded_entry_is_in_the_file_before_the_next_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = AuditOptions::new(dir.path(), Some(&key()));
    options.sync = AuditSync::Interval(std::time::Duration::from_secs(10));
    let log = AuditLog::open_with(options).await.unwrap();
    let seq = log
        .record(Event::new(EventKind::RateLimited))
        .await
        .unwrap();
    let lines = lines_of(&dir.path().join("audit.log"));
    assert_eq!(lines.len() as u64, seq);
    assert!(lines[1].contains("\"rate_limited\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_records_verify_and_every_tampered_copy_fails_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    write_entries(dir.path(), 16, 25).await;
    let log = dir.path().join("audit.log");
    let meta = std::fs::metadata(&log).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let (code, out) = verify(dir.path(), Some(KEY), &[]);
    assert_eq!(code, 0, "{out}");
    // log_opened + 400 entries.
    assert_eq!(out.trim(), "ok: 401 entries verified (keyed)");
    let lines = lines_of(&log);
    for (i, line) in lines.iter().enumerate() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["seq"], i as u64 + 1);
    }

    let copy = |name: &str, lines: &[String]| {
        let p = dir.path().join(name);
        write_lines(&p, lines);
        p
    };
    // An edited field.
    let mut edited = lines.clone();
    edited[9] = edited[9].replacen("\"owner\"", "\"0wner\"", 1);
    let p = copy("edited", &edited);
    let (code, out) = verify(dir.path(), Some(KEY), &[&p]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with(&format!("line 10 of {}: chain mismatch", p.display())),
        "{out}"
    );
    // A deleted line.
    let mut deleted = lines.clone();
    deleted.remove(20);
    let p = copy("deleted", &deleted);
    let (code, out) = verify(dir.path(), Some(KEY), &[&p]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with(&format!("line 21 of {}", p.display())),
        "{out}"
    );
    // Two lines swapped.
    let mut swapped = lines.clone();
    swapped.swap(30, 31);
    let p = copy("swapped", &swapped);
    let (code, out) = verify(dir.path(), Some(KEY), &[&p]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with(&format!("line 31 of {}", p.display())),
        "{out}"
    );
    // Truncated in the middle of the last line, no recovery.
    let text = std::fs::read(&log).unwrap();
    let p = dir.path().join("truncated");
    std::fs::write(&p, &text[..text.len() - 20]).unwrap();
    let (code, out) = verify(dir.path(), Some(KEY), &[&p]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with(&format!("line 401 of {}", p.display())),
        "{out}"
    );
    assert!(out.contains("torn"), "{out}");
    // The wrong key, and no key.
    let (code, out) = verify(
        dir.path(),
        Some("another-key-0123456789abcdef-012345678"),
        &[&log],
    );
    assert_eq!(code, 1);
    assert!(
        out.starts_with(&format!("line 1 of {}", log.display())),
        "{out}"
    );
    let (code, _) = verify(dir.path(), None, &[&log]);
    assert_eq!(code, 1);
}

#[tokio::test]
async fn a_reopened_log_continues_its_chain() {
    let dir = tempfile::tempdir().unwrap();
    write_entries(dir.path(), 1, 3).await;
    write_entries(dir.path(), 1, 3).await;
    let (code, out) = verify(dir.path(), Some(KEY), &[]);
    assert_eq!((code, out.trim()), (0, "ok: 8 entries verified (keyed)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rotation_keeps_verification_green_across_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = AuditOptions::new(dir.path(), Some(&key()));
    options.max_bytes = 4096;
    options.keep_files = Some(50);
    let log = AuditLog::open_with(options).await.unwrap();
    for i in 0..300 {
        log.record(Event::new(EventKind::RateLimited).detail("n", i))
            .await
            .unwrap();
    }
    drop(log);
    let rotated: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("audit.log."))
        .collect();
    assert!(rotated.len() >= 3, "{} rotated files", rotated.len());
    let (code, out) = verify(dir.path(), Some(KEY), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("ok: "), "{out}");
    // The newest file alone verifies from its log_rotated anchor.
    let current = dir.path().join("audit.log");
    assert_eq!(verify(dir.path(), Some(KEY), &[&current]).0, 0);
    let first: Value = serde_json::from_str(&lines_of(&current)[0]).unwrap();
    assert_eq!(first["event"], "log_rotated");
    // Files out of order fail.
    let one = dir.path().join("audit.log.1");
    let two = dir.path().join("audit.log.2");
    assert_eq!(verify(dir.path(), Some(KEY), &[&one, &two]).0, 1);
}

#[tokio::test]
async fn rotation_drops_the_oldest_file_beyond_keep_and_still_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = AuditOptions::new(dir.path(), None);
    options.max_bytes = 4096;
    options.keep_files = Some(2);
    let log = AuditLog::open_with(options).await.unwrap();
    for i in 0..200 {
        log.record(Event::new(EventKind::RateLimited).detail("n", i))
            .await
            .unwrap();
    }
    assert!(!dir.path().join("audit.log.3").exists());
    let (code, out) = verify(dir.path(), None, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("ok: "), "{out}");
    // The dropped file is not passed over in silence.
    assert!(out.contains("older entries were not checked"), "{out}");
}

#[tokio::test]
async fn a_log_made_unwritable_refuses_records_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::open(dir.path(), Some(&key())).await.unwrap();
    let path = dir.path().join("audit.log");
    log.record(Event::new(EventKind::RateLimited))
        .await
        .unwrap();

    // Read-only: refused (even for root), then writable again.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    assert!(
        log.record(Event::new(EventKind::RateLimited))
            .await
            .is_err()
    );
    assert!(
        log.record(Event::new(EventKind::RateLimited))
            .await
            .is_err()
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    log.record(Event::new(EventKind::RateLimited))
        .await
        .unwrap();

    // Replaced by something that cannot be written: refused; then gone: recreated.
    std::fs::rename(&path, dir.path().join("moved-away")).unwrap();
    std::fs::create_dir(&path).unwrap();
    assert!(
        log.record(Event::new(EventKind::RateLimited))
            .await
            .is_err()
    );
    std::fs::remove_dir(&path).unwrap();
    log.record(Event::new(EventKind::RateLimited))
        .await
        .unwrap();
    log.record(Event::new(EventKind::RateLimited))
        .await
        .unwrap();

    let moved = dir.path().join("moved-away");
    let (code, out) = verify(dir.path(), Some(KEY), &[&moved, &path]);
    assert_eq!(code, 0, "{out}");
    let events: Vec<String> = lines_of(&path)
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(events[0], "log_reopened");
    let text = std::fs::read_to_string(&moved).unwrap();
    assert!(
        text.contains("log_reopened"),
        "the read-only spell is recorded"
    );
}

#[tokio::test]
async fn a_deleted_log_is_recreated_and_verifies_from_its_anchor() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::open(dir.path(), None).await.unwrap();
    log.record(Event::new(EventKind::RateLimited))
        .await
        .unwrap();
    std::fs::remove_file(dir.path().join("audit.log")).unwrap();
    log.record(Event::new(EventKind::RateLimited))
        .await
        .unwrap();
    let (code, out) = verify(dir.path(), None, &[]);
    assert_eq!(
        (code, out.trim()),
        (
            0,
            "ok: 2 entries verified (unkeyed); the chain starts at sequence 3, not 1: \
             older entries were not checked (files not given, rotated away or deleted)"
        )
    );
}

#[tokio::test]
async fn an_unwritable_data_dir_stops_startup() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let fake = FakeGitea::start().await;
    let settings = aegis_gitea_mcp::config::Settings::from_source(
        &aegis_gitea_mcp::config::SettingsSource::from_pairs([
            ("GITEA_URL", fake.url.as_str()),
            ("GITEA_TOKEN", ADMIN_TOKEN),
            ("DATA_DIR", not_a_dir.to_str().unwrap()),
        ]),
    )
    .unwrap();
    let err = aegis_gitea_mcp::app::App::build(settings)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("audit log"), "{err}");
    // The binary refuses to serve too.
    let out = Command::new(BIN)
        .arg("serve")
        .env_clear()
        .env("GITEA_URL", &fake.url)
        .env("GITEA_TOKEN", ADMIN_TOKEN)
        .env("MCP_PORT", "0")
        .env("DATA_DIR", &not_a_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("audit log"));
}

#[tokio::test]
async fn tool_calls_write_ahead_and_are_refused_when_the_log_is_unavailable() {
    let data = support::scratch_dir();
    let gw = Gateway::start(&[
        ("DATA_DIR", data.to_str().unwrap()),
        ("AUDIT_HMAC_KEY", KEY),
    ])
    .await;
    let client = gw.client().await;
    let (is_error, env) = call(
        &client,
        "gitea_issue_list_issues",
        json!({"owner": "acme", "repo": "secret-repo-name"}),
    )
    .await;
    assert!(!is_error, "{env}");
    let path = data.join("audit.log");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("secret-repo-name") && !text.contains("acme"),
        "no argument values"
    );
    assert!(
        !text.contains(ADMIN_TOKEN) && !text.contains(BEARER),
        "no tokens"
    );
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let started = &entries[entries.len() - 2];
    let finished = &entries[entries.len() - 1];
    assert_eq!(started["event"], "tool_call_started");
    assert_eq!(started["args"], json!(["owner", "repo"]));
    assert_eq!(started["route"], "/repos/{owner}/{repo}/issues");
    assert_eq!(started["identity"]["mode"], "bearer");
    assert_eq!(finished["event"], "tool_call_finished");
    assert_eq!(finished["outcome"], "ok");
    assert_eq!(finished["status"], 200);
    assert_eq!(
        finished["detail"]["started_seq"],
        started["seq"].to_string()
    );

    // The log becomes unwritable: the call is refused, nothing reaches Gitea.
    let before = gw.fake.tool_requests().len();
    std::fs::rename(&path, data.join("audit.log.old")).unwrap();
    std::fs::create_dir(&path).unwrap();
    let (is_error, env) = call(
        &client,
        "gitea_issue_list_issues",
        json!({"owner": "acme", "repo": "app"}),
    )
    .await;
    assert!(is_error);
    assert_eq!(env["error"]["kind"], "audit_unavailable");
    assert_eq!(
        gw.fake.tool_requests().len(),
        before,
        "nothing was sent to Gitea"
    );
    // Writable again: calls go through, and the chain verifies.
    std::fs::remove_dir(&path).unwrap();
    let (is_error, _) = call(
        &client,
        "gitea_issue_list_issues",
        json!({"owner": "a", "repo": "b"}),
    )
    .await;
    assert!(!is_error);
    let old = data.join("audit.log.old");
    let (code, out) = verify(&data, Some(KEY), &[&old, &path]);
    assert_eq!(code, 0, "{out}");
}

#[tokio::test]
async fn a_torn_last_line_fails_verification_until_a_restart_records_the_recovery() {
    let dir = tempfile::tempdir().unwrap();
    write_entries(dir.path(), 2, 5).await;
    let path = dir.path().join("audit.log");
    // What a kill -9 in the middle of a write leaves.
    let mut text = std::fs::read(&path).unwrap();
    text.extend_from_slice(br#"{"v":1,"seq":12,"ts":"2026-01-01T00:00:00.000Z","event":"tool_ca"#);
    std::fs::write(&path, &text).unwrap();
    let (code, out) = verify(dir.path(), Some(KEY), &[]);
    assert_eq!(code, 1);
    assert!(
        out.starts_with(&format!("line 12 of {}", path.display())),
        "{out}"
    );
    // The next start ends the torn line and records log_recovered.
    let log = AuditLog::open(dir.path(), Some(&key())).await.unwrap();
    log.record(Event::new(EventKind::RateLimited))
        .await
        .unwrap();
    let (code, out) = verify(dir.path(), Some(KEY), &[]);
    assert_eq!((code, out.trim()), (0, "ok: 14 entries verified (keyed)"));
    let lines = lines_of(&path);
    let recovered: Value = serde_json::from_str(&lines[12]).unwrap();
    assert_eq!(recovered["event"], "log_recovered");
    assert_eq!(recovered["seq"], 12);
}

/// The entries of `log`, parsed.
fn entries_of(path: &Path) -> Vec<Value> {
    lines_of(path)
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn discovery_and_raw_calls_record_which_operation_ran() {
    let data = support::scratch_dir();
    let gw = Gateway::start(&[
        ("DATA_DIR", data.to_str().unwrap()),
        ("TOOL_MODE", "discover"),
        ("TOOLSETS", "issue,raw"),
    ])
    .await;
    let client = gw.client().await;
    let (is_error, env) = call(
        &client,
        "gitea_call_read_operation",
        json!({"name": "gitea_issue_list_issues", "arguments": {"owner": "acme", "repo": "secret-repo"}}),
    )
    .await;
    assert!(!is_error, "{env}");
    let (_, _) = call(
        &client,
        "gitea_api_request",
        json!({"method": "get", "path": "/repos/acme/secret-repo/issues"}),
    )
    .await;
    let started: Vec<Value> = entries_of(&data.join("audit.log"))
        .into_iter()
        .filter(|e| e["event"] == "tool_call_started")
        .collect();
    let by_name = &started[0];
    assert_eq!(by_name["tool"], "gitea_call_read_operation");
    assert_eq!(by_name["detail"]["operation"], "gitea_issue_list_issues");
    // The operation's argument names, as for a direct call.
    assert_eq!(by_name["args"], json!(["owner", "repo"]));
    assert_eq!(by_name["method"], "GET");
    assert_eq!(by_name["route"], "/repos/{owner}/{repo}/issues");
    let raw = &started[1];
    assert_eq!(raw["tool"], "gitea_api_request");
    assert_eq!(raw["method"], "GET");
    assert_eq!(raw["detail"]["operation"], "gitea_api_request:GET:repos");
    // The template of the operation its path reaches (issue 45, F8).
    assert_eq!(raw["route"], "/repos/{owner}/{repo}/issues");
    let text = std::fs::read_to_string(data.join("audit.log")).unwrap();
    assert!(!text.contains("secret-repo"), "no argument values");
}

/// F2: a last entry longer than any tail window (a 300 KB line, as an
/// earlier version wrote for a call with 1,200 long argument names) does
/// not stop the next start.
#[tokio::test]
async fn a_log_whose_last_entry_is_very_long_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::open(dir.path(), Some(&key())).await.unwrap();
    let mut event = Event::new(EventKind::ToolCallStarted).tool("gitea_repo_get");
    event.args = Some((0..1_200).map(|i| format!("{i:0>250}")).collect());
    log.record(event).await.unwrap();
    drop(log);
    let len = std::fs::metadata(dir.path().join("audit.log"))
        .unwrap()
        .len();
    assert!(len > 300_000, "{len}");
    write_entries(dir.path(), 1, 1).await;
    let (code, out) = verify(dir.path(), Some(KEY), &[]);
    assert_eq!(code, 0, "{out}");
}

/// F1: by default no rotated file is ever deleted: a flood of calls cannot
/// push earlier entries out of the log.
#[tokio::test]
async fn rotation_keeps_every_file_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = AuditOptions::new(dir.path(), None);
    options.max_bytes = 4096;
    let log = AuditLog::open_with(options).await.unwrap();
    log.record(Event::new(EventKind::AdminAction).detail("first", "kept"))
        .await
        .unwrap();
    for i in 0..1_000 {
        log.record(Event::new(EventKind::RateLimited).detail("n", i))
            .await
            .unwrap();
    }
    drop(log);
    let files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("audit.log")
        })
        .count();
    assert!(files > 11, "{files} files");
    let all: String = (1..files)
        .map(|k| std::fs::read_to_string(dir.path().join(format!("audit.log.{k}"))).unwrap())
        .collect();
    assert!(all.contains("\"first\":\"kept\""));
    let (code, out) = verify(dir.path(), None, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("older entries were not checked"), "{out}");
}

/// F1: argument names the schema does not know are never written, however
/// many are sent, and a refused call's entry stays small; an unknown tool's
/// name is cut short.
#[tokio::test]
async fn argument_names_and_tool_names_cannot_grow_the_log() {
    let data = support::scratch_dir();
    let gw = Gateway::start(&[("DATA_DIR", data.to_str().unwrap())]).await;
    let client = gw.client().await;
    let path = data.join("audit.log");
    let before = std::fs::metadata(&path).unwrap().len();
    let mut args = serde_json::Map::new();
    args.insert("owner".into(), json!("acme"));
    args.insert("repo".into(), json!("app"));
    for i in 0..1_200 {
        args.insert(format!("{i:0>250}"), json!(1));
    }
    let (is_error, env) = call(&client, "gitea_issue_list_issues", Value::Object(args)).await;
    assert!(is_error);
    assert_eq!(env["error"]["kind"], "invalid_arguments");
    let grown = std::fs::metadata(&path).unwrap().len() - before;
    assert!(grown < 4096, "the refused call wrote {grown} bytes");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains(&"0".repeat(240)),
        "unknown names are not written"
    );

    let params = rmcp::model::CallToolRequestParams::new("x".repeat(100_000));
    let _ = client.call_tool(params).await;
    let grown = std::fs::metadata(&path).unwrap().len() - before;
    assert!(grown < 8192, "two refused calls wrote {grown} bytes");
    assert_eq!(gw.fake.tool_requests().len(), 0);
    let (code, out) = verify(&data, None, &[]);
    assert_eq!(code, 0, "{out}");
}
