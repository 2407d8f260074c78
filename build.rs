//! Names the build: the commit it was made from, so that `/health`, the
//! startup log and the store's schema history say which binary is which in
//! a mixed set of replicas (docs/operations.md). `AEGIS_BUILD_COMMIT` wins
//! (the image's build has no `.git`: tests/containers/run.sh passes it);
//! otherwise `git rev-parse` when the source is a checkout; otherwise none.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=AEGIS_BUILD_COMMIT");
    let commit = std::env::var("AEGIS_BUILD_COMMIT")
        .ok()
        .filter(|c| is_commit(c))
        .or_else(git_commit);
    let package = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let version = match commit {
        Some(commit) => format!("{package} ({commit})"),
        None => package,
    };
    println!("cargo:rustc-env=AEGIS_BUILD_VERSION={version}");
}

/// Twelve hex digits of `HEAD`, when this is a git checkout; rebuilt when
/// `HEAD` or the branch it names moves.
fn git_commit() -> Option<String> {
    let git = Path::new(".git");
    if !git.is_dir() {
        return None;
    }
    println!("cargo:rerun-if-changed=.git/HEAD");
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD"))
        && let Some(reference) = head.trim().strip_prefix("ref: ")
    {
        // A missing path would rerun this script on every build: only
        // name the files that exist (a packed ref lives in packed-refs).
        for path in [git.join(reference), git.join("packed-refs")] {
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let output = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()?;
    let commit = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && is_commit(&commit)).then_some(commit)
}

fn is_commit(text: &str) -> bool {
    (7..=40).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit())
}
