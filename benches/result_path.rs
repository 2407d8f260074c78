//! Criterion benches of the pure functions on a tool call's hot path:
//! route filling, the result envelope, pagination headers and argument
//! validation.
//!
//! Run: `cargo bench --bench result_path` (add `-- --quick` for a short run).

#[path = "support/gitea_issues.rs"]
mod gitea_issues;

use std::hint::black_box;

use aegis_gitea_mcp::catalog::Catalog;
use aegis_gitea_mcp::gitea::call::{CallBody, GiteaCall};
use aegis_gitea_mcp::gitea::encoding::fill_route;
use aegis_gitea_mcp::gitea::envelope::{decoded_envelope, json_depth};
use aegis_gitea_mcp::gitea::executor::UpstreamResponse;
use aegis_gitea_mcp::gitea::pagination::pagination_from_headers;
use aegis_gitea_mcp::gitea::redaction::Redactor;
use aegis_gitea_mcp::identity::{Identity, IdentityMode};
use aegis_gitea_mcp::mcp::validation::ArgumentValidator;
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

const LINK: &str = r#"<https://gitea.example.org/api/v1/repos/acme/widgets/issues?limit=30&page=4>; rel="next",<https://gitea.example.org/api/v1/repos/acme/widgets/issues?limit=30&page=40>; rel="last",<https://gitea.example.org/api/v1/repos/acme/widgets/issues?limit=30&page=1>; rel="first",<https://gitea.example.org/api/v1/repos/acme/widgets/issues?limit=30&page=2>; rel="prev""#;

fn bench_envelope(c: &mut Criterion) {
    let (body, count) = gitea_issues::issue_list(BASE, ENVELOPE_BODY_BYTES, |_| String::new());
    let identity = Identity {
        login: Some("admin".into()),
        mode: IdentityMode::Bearer,
        token: SecretString::from(ADMIN_TOKEN),
        refresh_token: None,
        renewal: None,
        access: aegis_gitea_mcp::identity::Access::ReadWrite,
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
    // Decoding and exact redaction, the first stages of the result pipeline
    // (the whole pipeline is measured by the `result_pipeline` bench).
    let envelope = |identity: &Identity, call: &GiteaCall, response: &UpstreamResponse| {
        let mut value = decoded_envelope(identity, call, response, 5 * 1024 * 1024)
            .expect("the envelope builds");
        redactor.redact_value(&mut value);
        value
    };
    let check = envelope(&identity, &call, &response);
    assert_eq!(check["data"].as_array().map(Vec::len), Some(count));

    let mut group = c.benchmark_group("envelope");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.sample_size(20);
    group.bench_function(
        format!("issue list {count} issues, {} bytes", body.len()),
        |b| b.iter(|| envelope(black_box(&identity), black_box(&call), black_box(&response))),
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
    validator
        .validate(TOOL, &args, false)
        .expect("valid arguments");
    let invalid: Map<String, Value> =
        json!({"owner": "acme", "repo": "widgets", "body": {"labels": ["x"]}, "bogus": 1})
            .as_object()
            .cloned()
            .expect("an object");
    assert!(validator.validate(TOOL, &invalid, false).is_err());

    let mut group = c.benchmark_group("ArgumentValidator::validate");
    group.bench_function("gitea_issue_create_issue valid", |b| {
        b.iter(|| validator.validate(black_box(TOOL), black_box(&args), false))
    });
    group.bench_function("gitea_issue_create_issue invalid", |b| {
        b.iter(|| validator.validate(black_box(TOOL), black_box(&invalid), false))
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
