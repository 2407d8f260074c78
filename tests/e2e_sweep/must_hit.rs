//! Must-hit routes: slashes and spaces in path parameters reach the right
//! Gitea route.

use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};

use crate::fixture::Fixture;
use crate::gateway::{LiveGateway, call_ok};

struct MustHit {
    client: RunningService<RoleClient, ()>,
    fx: Fixture,
    _gw: LiveGateway,
}

impl MustHit {
    async fn new() -> Self {
        let fx = Fixture::load();
        let gw = LiveGateway::start(&fx, &fx.admin_token(), &[]).await;
        let client = gw.client().await;
        Self {
            client,
            fx,
            _gw: gw,
        }
    }

    /// Calls `tool` on the seeded repo with `extra` arguments; asserts 200
    /// and the path that was sent.
    async fn get(&self, tool: &str, extra: Value, want_path: &str) -> Value {
        let mut args = json!({"owner": self.fx.owner(), "repo": self.fx.repo()});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let env = call_ok(&self.client, tool, args).await;
        assert_eq!(env["status"], 200, "{tool}: {env}");
        let prefix = format!("/repos/{}/{}", self.fx.owner(), self.fx.repo());
        assert_eq!(
            env["request"]["path"],
            format!("{prefix}{want_path}"),
            "{tool}"
        );
        env
    }
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn tag_with_a_slash_reaches_release_and_tag_routes() {
    let t = MustHit::new().await;
    let tag = t.fx.str("/tag");
    assert_eq!(
        tag, "rel/1.0",
        "the fixture's tag changed; update the expected paths"
    );

    let release = t
        .get(
            "gitea_repo_get_release_by_tag",
            json!({"tag": tag}),
            "/releases/tags/rel%2F1.0",
        )
        .await;
    assert_eq!(release["data"]["tag_name"], tag);
    assert_eq!(release["data"]["id"], *t.fx.get("/release_id"));

    let got = t
        .get("gitea_repo_get_tag", json!({"tag": tag}), "/tags/rel/1.0")
        .await;
    assert_eq!(got["data"]["name"], tag);
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn branch_with_a_slash_reaches_the_branch_route() {
    let t = MustHit::new().await;
    let branch = t.fx.str("/branch");
    let env = t
        .get(
            "gitea_repo_get_branch",
            json!({"branch": branch}),
            "/branches/feature/x",
        )
        .await;
    assert_eq!(env["data"]["name"], branch);
    assert!(env["data"]["commit"]["id"].is_string(), "{env}");
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn nested_file_with_a_space_reaches_contents_and_raw() {
    let t = MustHit::new().await;
    let path = t.fx.str("/file_path");
    let content = t.fx.str("/file_content");

    let env = t
        .get(
            "gitea_repo_get_contents",
            json!({"filepath": path}),
            "/contents/docs/guide/a%20b.md",
        )
        .await;
    assert_eq!(env["data"]["path"], path);
    assert_eq!(env["data"]["type"], "file");
    assert_eq!(env["data"]["sha"], *t.fx.get("/file_sha"));

    let raw = t
        .get(
            "gitea_repo_get_raw_file",
            json!({"filepath": path}),
            "/raw/docs/guide/a%20b.md",
        )
        .await;
    // Text comes back as a string; anything Gitea labels binary as base64.
    let text = match &raw["data"] {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            use base64::Engine;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(o["content_base64"].as_str().unwrap())
                .unwrap();
            String::from_utf8(bytes).unwrap()
        }
        other => panic!("raw file data {other}"),
    };
    assert_eq!(text, content);
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn compare_basehead_with_a_slashed_branch() {
    let t = MustHit::new().await;
    let basehead = format!(
        "{}...{}",
        t.fx.str("/repo/default_branch"),
        t.fx.str("/branch")
    );
    let env = t
        .get(
            "gitea_repo_compare_diff",
            // The compact view leaves a listed commit's files out (issue
            // 44); the full view keeps Gitea's answer whole.
            json!({"basehead": basehead, "view": "full"}),
            "/compare/main...feature/x",
        )
        .await;
    let commits = env["data"]["commits"].as_array().expect("commits");
    assert_eq!(env["data"]["total_commits"], 1, "{env}");
    assert_eq!(commits.len(), 1);
    // 1.27.1 lists the changed files per commit.
    let files: Vec<&str> = commits[0]["files"]
        .as_array()
        .map(|fs| fs.iter().filter_map(|f| f["filename"].as_str()).collect())
        .unwrap_or_default();
    assert!(
        files.contains(&t.fx.str("/branch_file_path").as_str()),
        "{files:?}"
    );
}

#[tokio::test]
#[ignore = "needs a real Gitea: tests/e2e/gitea.sh start"]
async fn combined_status_of_a_slashed_ref() {
    let t = MustHit::new().await;
    let env = t
        .get(
            "gitea_repo_get_combined_status_by_ref",
            // Gitea's whole answer: the compact view leaves the 0 out.
            json!({"ref": t.fx.str("/branch"), "view": "full"}),
            "/commits/feature/x/status",
        )
        .await;
    // No status was ever posted: Gitea reports an empty combined status of
    // the branch head.
    assert!(env["data"]["sha"].is_string(), "{env}");
    assert_eq!(env["data"]["total_count"], 0, "{env}");
}
