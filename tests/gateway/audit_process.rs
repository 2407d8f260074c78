//! Audit-log faults that need the gateway as a process: a `kill -9` under
//! load, and a log that can no longer grow (a full disk).

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use support::gateway_process::{
    ServeProcess, audit_verify, free_port, lift_file_size_limit, wait_ready,
};
use support::{BEARER, FakeGitea, call};

const KEY: &str = "audit-key-0123456789abcdef-0123456789";

fn serve<'a>(fake: &'a FakeGitea, data: &'a Path, port: u16) -> ServeProcess<'a> {
    ServeProcess::new(fake, data, port, KEY)
}

fn entries(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_under_load_leaves_a_log_that_verifies_up_to_its_last_complete_line() {
    aegis_gitea_mcp::tls::install_crypto_provider();
    let fake = FakeGitea::start().await;
    let data: PathBuf = support::scratch_dir();
    let port = free_port();
    let mut child = serve(&fake, &data, port).spawn();
    wait_ready(port).await;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let answered = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut load = Vec::new();
    for _ in 0..8 {
        let url = url.clone();
        let answered = answered.clone();
        load.push(tokio::spawn(async move {
            let client = support::mcp_client(&url, Some(BEARER)).await;
            loop {
                let params = CallToolRequestParams::new("gitea_issue_list_issues").with_arguments(
                    json!({"owner": "acme", "repo": "app"})
                        .as_object()
                        .unwrap()
                        .clone(),
                );
                if client.call_tool(params).await.is_err() {
                    return;
                }
                answered.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }));
    }
    // Kill once the load is well under way (however slow the machine is).
    let path = data.join("audit.log");
    let lines = || std::fs::read(&path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count());
    for _ in 0..3000 {
        if lines() > 60 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    for l in load {
        let _ = l.await;
    }
    let bytes = std::fs::read(&path).unwrap();
    let complete = bytes.iter().filter(|&&b| b == b'\n').count();
    assert!(complete > 20, "load produced {complete} entries");
    let (code, out) = audit_verify(&data, Some(KEY), &[]);
    if bytes.last() == Some(&b'\n') {
        assert_eq!(code, 0, "{out}");
    } else {
        // Only the torn last line is named.
        assert_eq!(code, 1);
        assert!(
            out.starts_with(&format!("line {} of", complete + 1)),
            "{out}"
        );
    }
    // Every started call that reached Gitea has its write-ahead entry.
    let text = String::from_utf8_lossy(&bytes);
    let started = text.matches("\"tool_call_started\"").count();
    assert!(
        started >= fake.tool_requests().len(),
        "{started} started entries, {} upstream requests",
        fake.tool_requests().len()
    );

    // Every answered call has its result entry: entries are in the file
    // before the answer leaves, whatever AUDIT_SYNC defers to the disk.
    let finished = text.matches("\"tool_call_finished\"").count();
    let answered = answered.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        finished >= answered,
        "{finished} finished entries, {answered} answered calls"
    );

    // A restarted gateway recovers; the whole log verifies.
    let mut child = serve(&fake, &data, port).spawn();
    wait_ready(port).await;
    child.kill().unwrap();
    child.wait().unwrap();
    let (code, out) = audit_verify(&data, Some(KEY), &[]);
    assert_eq!(code, 0, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_calls_and_leaves_a_log_that_verifies() {
    aegis_gitea_mcp::tls::install_crypto_provider();
    let fake = FakeGitea::start().await;
    let data: PathBuf = support::scratch_dir();
    let port = free_port();
    const LIMIT: u64 = 16 * 1024;
    let mut child = ServeProcess {
        max_file_bytes: Some(LIMIT),
        ..serve(&fake, &data, port)
    }
    .spawn();
    wait_ready(port).await;
    let client = support::mcp_client(&format!("http://127.0.0.1:{port}/mcp"), Some(BEARER)).await;
    let args = json!({"owner": "acme", "repo": "app"});

    // Calls run until the log cannot grow; the first refused one is the
    // first whose write-ahead entry did not fit.
    let mut succeeded = 0;
    let refusal = loop {
        let (is_error, env) = call(&client, "gitea_issue_list_issues", args.clone()).await;
        if is_error {
            break env;
        }
        succeeded += 1;
        assert!(succeeded < 200, "the file-size limit never bit");
    };
    assert!(succeeded > 0);
    assert_eq!(refusal["error"]["kind"], "audit_unavailable", "{refusal}");

    // While the disk stays full, every call is refused before Gitea.
    let upstream = fake.tool_requests().len();
    for _ in 0..3 {
        let (is_error, env) = call(&client, "gitea_issue_list_issues", args.clone()).await;
        assert!(is_error);
        assert_eq!(env["error"]["kind"], "audit_unavailable");
    }
    assert_eq!(
        fake.tool_requests().len(),
        upstream,
        "nothing reached Gitea"
    );

    // The failed writes were cut back: no partial line, the chain verifies,
    // and every call that reached Gitea has its write-ahead entry.
    let path = data.join("audit.log");
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() as u64 <= LIMIT);
    assert_eq!(bytes.last(), Some(&b'\n'), "no torn line");
    let (code, out) = audit_verify(&data, Some(KEY), &[]);
    assert_eq!(code, 0, "{out}");
    let started = entries(&path)
        .iter()
        .filter(|e| e["event"] == "tool_call_started")
        .count();
    assert!(
        started >= upstream,
        "{started} started, {upstream} upstream"
    );
    drop(client);
    child.kill().unwrap();
    child.wait().unwrap();

    // Space again (a restart without the limit): calls run, the log goes on
    // from where it stopped, and the whole file verifies.
    let mut child = serve(&fake, &data, port).spawn();
    wait_ready(port).await;
    let client = support::mcp_client(&format!("http://127.0.0.1:{port}/mcp"), Some(BEARER)).await;
    let (is_error, env) = call(&client, "gitea_issue_list_issues", args).await;
    assert!(!is_error, "{env}");
    drop(client);
    child.kill().unwrap();
    child.wait().unwrap();
    let (code, out) = audit_verify(&data, Some(KEY), &[]);
    assert_eq!(code, 0, "{out}");
}

/// Issue 16: a second process pointed at a log another process writes
/// refuses to start (exit 2, naming the lock) instead of forking the chain;
/// once the first is gone, the log is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_on_one_log_refuses_to_start_naming_the_lock() {
    aegis_gitea_mcp::tls::install_crypto_provider();
    let fake = FakeGitea::start().await;
    let data: PathBuf = support::scratch_dir();
    let port = free_port();
    let mut first = serve(&fake, &data, port).spawn();
    wait_ready(port).await;
    let second = std::process::Command::new(support::gateway_process::BIN)
        .arg("serve")
        .env_clear()
        .env("GITEA_URL", &fake.url)
        .env("GITEA_TOKEN", support::ADMIN_TOKEN)
        .env("MCP_PORT", free_port().to_string())
        .env("DATA_DIR", &data)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("audit.lock"), "{stderr}");
    assert!(stderr.contains("another process"), "{stderr}");
    first.kill().unwrap();
    first.wait().unwrap();
    let (code, out) = audit_verify(&data, Some(KEY), &[]);
    assert_eq!(code, 0, "{out}");
    let mut again = serve(&fake, &data, port).spawn();
    wait_ready(port).await;
    again.kill().unwrap();
    again.wait().unwrap();
}

/// Issue 16: every entry names its replica (`REPLICA_ID`), and `audit
/// verify` checks the log of each replica's directory as its own chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_replica_names_itself_and_verify_checks_each_chain() {
    aegis_gitea_mcp::tls::install_crypto_provider();
    let fake = FakeGitea::start().await;
    let dirs: Vec<PathBuf> = (0..2).map(|_| support::scratch_dir()).collect();
    for (i, dir) in dirs.iter().enumerate() {
        let port = free_port();
        let replica = format!("r{}", i + 1);
        let extra = [("REPLICA_ID", replica.as_str())];
        let mut child = ServeProcess {
            extra: &extra,
            ..serve(&fake, dir, port)
        }
        .spawn();
        wait_ready(port).await;
        let client =
            support::mcp_client(&format!("http://127.0.0.1:{port}/mcp"), Some(BEARER)).await;
        let _ = call(&client, "gitea_user_get_current", json!({})).await;
        child.kill().unwrap();
        child.wait().unwrap();
        let logged = entries(&dir.join("audit.log"));
        assert!(
            logged.iter().all(|e| e["replica"] == replica.as_str()),
            "{logged:?}"
        );
    }
    let paths: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
    let (code, out) = audit_verify(&dirs[0], Some(KEY), &paths);
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    for (line, dir) in lines.iter().zip(&dirs) {
        assert!(
            line.starts_with(&format!("{}: ok: ", dir.display())),
            "{line}"
        );
    }
    // A tampered second chain fails the run and is named.
    let log = dirs[1].join("audit.log");
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replacen("\"r2\"", "\"r9\"", 1)).unwrap();
    let (code, out) = audit_verify(&dirs[0], Some(KEY), &paths);
    assert_eq!(code, 1, "{out}");
    assert!(out.lines().nth(1).unwrap().contains("line 1 of"), "{out}");
}

/// One `tools/call` over plain HTTP with the bearer, answered within
/// `timeout`: the envelope's error kind (`None` on success), or how the
/// transport failed.
async fn call_once(http: &reqwest::Client, port: u16, id: u64) -> Result<Option<String>, String> {
    let body = json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "gitea_user_get_current", "arguments": {}},
    });
    let response = http
        .post(format!("http://127.0.0.1:{port}/mcp"))
        .bearer_auth(BEARER)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&body)
        .send()
        .await
        .map_err(|err| format!("no answer: {err}"))?;
    let text = response.text().await.map_err(|err| err.to_string())?;
    let data = text
        .lines()
        .find_map(|line| line.strip_prefix("data: "))
        .unwrap_or(&text);
    let message: Value = serde_json::from_str(data).map_err(|_| format!("not JSON: {text}"))?;
    let result = &message["result"];
    if result["isError"] != true {
        return Ok(None);
    }
    let envelope: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or("{}")).unwrap();
    Ok(envelope["error"]["kind"].as_str().map(str::to_owned))
}

async fn health_of(http: &reqwest::Client, port: u16) -> (u16, Value) {
    let response = http
        .get(format!("http://127.0.0.1:{port}/health"))
        .send()
        .await
        .expect("/health answers");
    (response.status().as_u16(), response.json().await.unwrap())
}

/// Issue 29: with stderr's file on the same full disk, calls went on being
/// answered only until stderr filled; from then on every request died with
/// its connection (a log write that failed made the logger panic), and
/// `/health` said 200. Now every call is answered, refused while the log
/// cannot be written; `/health` says 503 until the disk has room, then the
/// log resumes by itself and verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_under_stderr_and_the_log_refuses_calls_promptly_and_recovers() {
    aegis_gitea_mcp::tls::install_crypto_provider();
    let fake = FakeGitea::start().await;
    let data: PathBuf = support::scratch_dir();
    let port = free_port();
    let stderr = data.join("stderr.log");
    let extra = [("RUST_LOG", "info")];
    let mut child = ServeProcess {
        max_file_bytes: Some(8 * 1024),
        stderr_file: Some(&stderr),
        extra: &extra,
        ..serve(&fake, &data, port)
    }
    .spawn();
    wait_ready(port).await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();

    let mut refusals = 0;
    for id in 1..=60 {
        match call_once(&http, port, id).await {
            Ok(None) => assert_eq!(refusals, 0, "call {id} ran after a refusal"),
            Ok(Some(kind)) => {
                assert_eq!(kind, "audit_unavailable", "call {id}");
                refusals += 1;
                let (status, body) = health_of(&http, port).await;
                assert_eq!(status, 503, "{body}");
                assert_eq!(body["checks"]["audit"], "unwritable", "{body}");
            }
            Err(failure) => panic!("call {id} was not answered: {failure}"),
        }
        if refusals == 10 {
            break;
        }
    }
    assert_eq!(refusals, 10, "the file-size limit never bit");
    assert!(
        std::fs::metadata(&stderr).unwrap().len() >= 8 * 1024,
        "stderr filled up too"
    );

    // The disk has room again: /health reopens the log, calls run.
    lift_file_size_limit(child.id());
    let (status, body) = health_of(&http, port).await;
    assert_eq!(
        (status, &body["checks"]["audit"]),
        (200, &json!("ok")),
        "{body}"
    );
    assert_eq!(call_once(&http, port, 100).await, Ok(None));
    child.kill().unwrap();
    child.wait().unwrap();
    let (code, out) = audit_verify(&data, Some(KEY), &[]);
    assert_eq!(code, 0, "{out}");
    let reopened = entries(&data.join("audit.log"))
        .iter()
        .filter(|e| e["event"] == "log_reopened")
        .count();
    assert!(reopened >= 1, "the resumption is in the log");
}
