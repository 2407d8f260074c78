//! Criterion benches of the pure functions on a tool call's hot path:
//! route filling, the result envelope, pagination headers and argument
//! validation.
//!
//! Run: `cargo bench --bench result_path` (add `-- --quick` for a short run).

use std::hint::black_box;

use aegis_gitea_mcp::catalog::Catalog;
use aegis_gitea_mcp::gitea::call::{CallBody, GiteaCall};
use aegis_gitea_mcp::gitea::encoding::fill_route;
use aegis_gitea_mcp::gitea::envelope::{envelope, json_depth};
use aegis_gitea_mcp::gitea::executor::UpstreamResponse;
use aegis_gitea_mcp::gitea::pagination::pagination_from_headers;
use aegis_gitea_mcp::gitea::redaction::Redactor;
use aegis_gitea_mcp::gitea::{Identity, IdentityMode};
use aegis_gitea_mcp::mcp::validation::ArgumentValidator;
use bytes::Bytes;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use secrecy::SecretString;
use serde_json::{Map, Value, json};

const BASE: &str = "https://gitea.example.org";
const ADMIN_TOKEN: &str = "bench-admin-token-0123456789abcdef";
const BEARER: &str = "bench-bearer-token-0123456789abcdef-0123";
/// Size the issue list is grown to for the envelope bench.
const ENVELOPE_BODY_BYTES: usize = 1024 * 1024;

fn bench_fill_route(c: &mut Criterion) {
    let mut group = c.benchmark_group("fill_route");
    group.bench_function("wildcard contents/{filepath}", |b| {
        b.iter(|| {
            fill_route(
                black_box("/repos/{owner}/{repo}/contents/{filepath}"),
                |name| match name {
                    "owner" => Some("acme"),
                    "repo" => Some("widgets"),
                    "filepath" => Some("docs/user guide/getting started.md"),
                    _ => None,
                },
            )
            .expect("route fills")
        })
    });
    group.bench_function("single-segment releases/tags/{tag}", |b| {
        b.iter(|| {
            fill_route(
                black_box("/repos/{owner}/{repo}/releases/tags/{tag}"),
                |name| match name {
                    "owner" => Some("acme"),
                    "repo" => Some("widgets"),
                    "tag" => Some("release/v2.5.0"),
                    _ => None,
                },
            )
            .expect("route fills")
        })
    });
    group.finish();
}

fn fake_issue(number: u64) -> Value {
    let user = |id: u64, login: &str| {
        json!({
            "id": id,
            "login": login,
            "full_name": format!("{login} Example"),
            "email": format!("{login}@noreply.example.org"),
            "avatar_url": format!("{BASE}/avatars/{id:032x}"),
            "html_url": format!("{BASE}/{login}"),
            "language": "en-US",
            "is_admin": false,
            "created": "2023-03-14T09:26:53Z",
            "active": true,
            "visibility": "public",
            "username": login
        })
    };
    json!({
        "id": 1000 + number,
        "url": format!("{BASE}/api/v1/repos/acme/widgets/issues/{number}"),
        "html_url": format!("{BASE}/acme/widgets/issues/{number}"),
        "number": number,
        "user": user(2 + number % 3, ["alice", "bob", "carol"][(number % 3) as usize]),
        "original_author": "",
        "original_author_id": 0,
        "title": format!("Widget #{number} renders incorrectly when the window is resized"),
        "body": format!(
            "Steps to reproduce:\n\n1. Open the widget gallery\n2. Resize the window below 800px\n3. Widget {number} overlaps its neighbour\n\nExpected: the layout wraps.\nActual: the widget is clipped.\n\n```\nError: layout overflow at node {number}\n```"
        ),
        "ref": "",
        "assets": [],
        "labels": [
            {"id": 1, "name": "bug", "exclusive": false, "is_archived": false, "color": "ee0701",
             "description": "Something is broken", "url": format!("{BASE}/api/v1/repos/acme/widgets/labels/1")},
            {"id": 4, "name": "ui", "exclusive": false, "is_archived": false, "color": "0052cc",
             "description": "User interface", "url": format!("{BASE}/api/v1/repos/acme/widgets/labels/4")}
        ],
        "milestone": {"id": 3, "title": "v2.5", "description": "Layout fixes", "state": "open",
                      "open_issues": 12, "closed_issues": 30, "due_on": "2025-06-30T00:00:00Z"},
        "assignee": user(2, "alice"),
        "assignees": [user(2, "alice")],
        "state": "open",
        "is_locked": false,
        "comments": number % 7,
        "created_at": "2025-01-15T08:30:00Z",
        "updated_at": "2025-02-20T16:45:12Z",
        "closed_at": null,
        "due_date": null,
        "pull_request": null,
        "repository": {"id": 42, "name": "widgets", "owner": "acme", "full_name": "acme/widgets"},
        "pin_order": 0
    })
}

/// A JSON issue list of at least `min_bytes`.
fn issue_list(min_bytes: usize) -> (Bytes, usize) {
    let mut issues = Vec::new();
    let mut size = 2;
    while size < min_bytes {
        let issue = fake_issue(issues.len() as u64 + 1);
        size += serde_json::to_vec(&issue).expect("serializable").len() + 1;
        issues.push(issue);
    }
    let count = issues.len();
    let body = serde_json::to_vec(&Value::Array(issues)).expect("serializable");
    (Bytes::from(body), count)
}

const LINK: &str = r#"<https://gitea.example.org/api/v1/repos/acme/widgets/issues?limit=30&page=4>; rel="next",<https://gitea.example.org/api/v1/repos/acme/widgets/issues?limit=30&page=40>; rel="last",<https://gitea.example.org/api/v1/repos/acme/widgets/issues?limit=30&page=1>; rel="first",<https://gitea.example.org/api/v1/repos/acme/widgets/issues?limit=30&page=2>; rel="prev""#;

fn bench_envelope(c: &mut Criterion) {
    let (body, count) = issue_list(ENVELOPE_BODY_BYTES);
    let identity = Identity {
        login: Some("admin".into()),
        mode: IdentityMode::Bearer,
        token: SecretString::from(ADMIN_TOKEN),
    };
    let call = GiteaCall {
        method: http::Method::GET,
        path: "/repos/acme/widgets/issues".into(),
        route: "/repos/{owner}/{repo}/issues".into(),
        query: vec![("page".into(), "3".into()), ("limit".into(), "30".into())],
        body: CallBody::None,
        sudo: None,
    };
    let response = UpstreamResponse {
        status: 200,
        content_type: Some("application/json;charset=utf-8".into()),
        total_count: Some(1200),
        link: Some(LINK.into()),
        body: body.clone(),
        body_truncated: false,
    };
    // What the dispatcher redacts: the known secrets plus the caller's token.
    let redactor = Redactor::new([ADMIN_TOKEN, BEARER]);
    let check = envelope(&identity, &call, &response, 5 * 1024 * 1024, &redactor)
        .expect("the envelope builds");
    assert_eq!(check["data"].as_array().map(Vec::len), Some(count));

    let mut group = c.benchmark_group("envelope");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.sample_size(20);
    group.bench_function(
        format!("issue list {count} issues, {} bytes", body.len()),
        |b| {
            b.iter(|| {
                envelope(
                    black_box(&identity),
                    black_box(&call),
                    black_box(&response),
                    5 * 1024 * 1024,
                    &redactor,
                )
                .expect("the envelope builds")
            })
        },
    );
    // The envelope's parts on the same body, to attribute its cost.
    group.bench_function("part: json_depth", |b| {
        b.iter(|| json_depth(black_box(&body)))
    });
    group.bench_function("part: serde_json::from_slice::<Value>", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&body)).expect("JSON"))
    });
    let parsed: Value = serde_json::from_slice(&body).expect("JSON");
    group.bench_function("part: Redactor::redact_value", |b| {
        b.iter_batched(
            || parsed.clone(),
            |mut value| {
                redactor.redact_value(&mut value);
                value
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn bench_pagination(c: &mut Criterion) {
    let mut group = c.benchmark_group("pagination_from_headers");
    group.bench_function("link with next/last/first/prev + total", |b| {
        b.iter(|| {
            pagination_from_headers(
                black_box(Some(1200)),
                black_box(Some(LINK)),
                black_box(Some(3)),
                black_box(Some(30)),
            )
        })
    });
    group.bench_function("total count only", |b| {
        b.iter(|| {
            pagination_from_headers(
                black_box(Some(1200)),
                black_box(None),
                black_box(Some(3)),
                black_box(Some(30)),
            )
        })
    });
    group.finish();
}

fn bench_validation(c: &mut Criterion) {
    const TOOL: &str = "gitea_issue_create_issue";
    let catalog = Catalog::bundled();
    let op = catalog.get(TOOL).expect("the bundled catalog has the tool");
    let validator = ArgumentValidator::new([(op.tool_name.clone(), op.input_schema.clone())]);
    let args: Map<String, Value> = json!({
        "owner": "acme",
        "repo": "widgets",
        "body": {
            "title": "Widget renders incorrectly when the window is resized",
            "body": "Steps to reproduce:\n\n1. Open the gallery\n2. Resize the window\n\nExpected: the layout wraps.",
            "assignees": ["alice", "bob"],
            "labels": [1, 4],
            "milestone": 3,
            "due_date": "2025-06-30T00:00:00Z",
            "closed": false
        }
    })
    .as_object()
    .cloned()
    .expect("an object");
    // Compiles the schema once, outside the measurement (the dispatcher
    // keeps compiled validators too), and checks the arguments are valid.
    validator.validate(TOOL, &args).expect("valid arguments");
    let invalid: Map<String, Value> =
        json!({"owner": "acme", "repo": "widgets", "body": {"labels": ["x"]}, "bogus": 1})
            .as_object()
            .cloned()
            .expect("an object");
    assert!(validator.validate(TOOL, &invalid).is_err());

    let mut group = c.benchmark_group("ArgumentValidator::validate");
    group.bench_function("gitea_issue_create_issue valid", |b| {
        b.iter(|| validator.validate(black_box(TOOL), black_box(&args)))
    });
    group.bench_function("gitea_issue_create_issue invalid", |b| {
        b.iter(|| validator.validate(black_box(TOOL), black_box(&invalid)))
    });
    group.finish();
}

criterion_group!(
    benches,
    bench_fill_route,
    bench_envelope,
    bench_pagination,
    bench_validation
);
criterion_main!(benches);
