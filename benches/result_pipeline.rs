//! Criterion bench of the whole result pipeline of one tool call (decode,
//! exact redaction, webhook redaction, pattern masking, bounds, and the
//! serialization the transport does) on a 1 MB issue list and a 10 MB text
//! file with planted secrets, plus a check that the cost does not grow
//! with the number of secrets. Prints MB/s, and the cost of each stage on
//! a 744 KB and a 5 MB list, and the compact view beside the full one,
//! before the criterion run.
//!
//! Run: `cargo bench --bench result_pipeline` (add `-- --quick` for a short run).

#[path = "support/gitea_issues.rs"]
mod gitea_issues;

use std::hint::black_box;
use std::time::Instant;

use aegis_gitea_mcp::catalog::Catalog;
use aegis_gitea_mcp::config::{Limits, SecretDetectionMode};
use aegis_gitea_mcp::gitea::call::{CallBody, GiteaCall};
use aegis_gitea_mcp::gitea::envelope::decoded_envelope;
use aegis_gitea_mcp::gitea::executor::UpstreamResponse;
use aegis_gitea_mcp::gitea::hygiene::{ResultPolicy, ResultView, tool_result};
use aegis_gitea_mcp::gitea::redaction::Redactor;
use aegis_gitea_mcp::identity::{Identity, IdentityMode};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group};
use secrecy::SecretString;
use serde::de::IgnoredAny;

const BASE: &str = "https://gitea.example.org";
const ADMIN_TOKEN: &str = "bench-admin-token-0123456789abcdef";
const BEARER: &str = "bench-bearer-token-0123456789abcdef-0123";
const AWS: &str = "AKIAIOSFODNN7EXAMPLE";
const SHA: &str = "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3";
const MB: usize = 1_000_000;

/// Every 50th issue quotes a secret: some work for redaction and masking.
fn leak_suffix(number: u64) -> String {
    if number.is_multiple_of(50) {
        format!("\n\nlog: Authorization: token {ADMIN_TOKEN} key {AWS} seen since {SHA}")
    } else {
        String::new()
    }
}

/// A text file of at least `min_bytes`, with a secret every 1000 lines.
fn text_file(min_bytes: usize) -> Bytes {
    let mut text = String::with_capacity(min_bytes + 100);
    let mut line = 0u64;
    while text.len() < min_bytes {
        line += 1;
        if line.is_multiple_of(1000) {
            text.push_str(&format!(
                "    password = \"hunter2hunter2\"  # token {ADMIN_TOKEN}\n"
            ));
        } else {
            text.push_str(&format!(
                "    let value_{line} = compute(&input[{line}..], \"widget\", {line});\n"
            ));
        }
    }
    Bytes::from(text)
}

struct Case {
    name: &'static str,
    response: UpstreamResponse,
    call: GiteaCall,
}

fn case(name: &'static str, content_type: &str, body: Bytes) -> Case {
    Case {
        name,
        response: UpstreamResponse {
            status: 200,
            content_type: Some(content_type.into()),
            total_count: Some(1200),
            link: None,
            body,
            body_truncated: false,
        },
        call: GiteaCall {
            method: http::Method::GET,
            path: "/repos/acme/widgets/issues".into(),
            route: "/repos/{owner}/{repo}/issues".into(),
            query: vec![],
            body: CallBody::None,
            sudo: None,
        },
    }
}

fn identity() -> Identity {
    Identity {
        login: Some("admin".into()),
        mode: IdentityMode::Bearer,
        token: SecretString::from(ADMIN_TOKEN),
        refresh_token: None,
        renewal: None,
        access: aegis_gitea_mcp::identity::Access::ReadWrite,
    }
}

/// One whole call's result path, ending in the text the transport sends.
fn pipeline(case: &Case, policy: &ResultPolicy, redactor: &Redactor) -> String {
    let outcome = tool_result(
        &identity(),
        &case.call,
        &case.response,
        policy,
        redactor,
        Some("issueListIssues"),
        ResultView::Full,
    );
    match outcome {
        Ok(text) => text,
        Err(e) => e.to_json().to_string(),
    }
}

fn policies() -> [(&'static str, ResultPolicy); 2] {
    let unbounded = Limits {
        max_tool_response_items: usize::MAX,
        max_tool_response_chars: usize::MAX,
        max_binary_bytes: 64 * 1024 * 1024,
        ..Limits::default()
    };
    [
        (
            "default bounds",
            ResultPolicy::new(&Limits::default(), SecretDetectionMode::Mask),
        ),
        (
            "unbounded",
            ResultPolicy::new(&unbounded, SecretDetectionMode::Mask),
        ),
    ]
}

fn cases() -> [Case; 2] {
    [
        case(
            "issue list 1 MB",
            "application/json",
            gitea_issues::issue_list(BASE, MB, leak_suffix).0,
        ),
        case(
            "text file 10 MB",
            "text/plain; charset=utf-8",
            text_file(10 * MB),
        ),
    ]
}

fn redactor_with(extra: usize) -> Redactor {
    Redactor::builder()
        .secrets([ADMIN_TOKEN, BEARER])
        .secrets((0..extra).map(|i| format!("extra-secret-{i:06}-value")))
        .build()
}

/// Plain timing, printed as MB/s (10^6 bytes of Gitea's body per second).
fn print_throughput() {
    let redactor = redactor_with(0);
    for case in cases() {
        for (policy_name, policy) in policies() {
            let check = pipeline(&case, &policy, &redactor);
            assert!(!check.contains(ADMIN_TOKEN) && !check.contains(AWS));
            let runs = 5;
            let started = Instant::now();
            for _ in 0..runs {
                black_box(pipeline(black_box(&case), &policy, &redactor));
            }
            let secs = started.elapsed().as_secs_f64() / runs as f64;
            let mb = case.response.body.len() as f64 / MB as f64;
            println!(
                "result_pipeline: {} ({mb:.1} MB), mask mode, {policy_name}: {:.1} ms, {:.0} MB/s",
                case.name,
                secs * 1000.0,
                mb / secs
            );
        }
    }
    // Not quadratic in the number of secrets: 1000 secrets cost about
    // what 2 do (one Aho-Corasick pass either way).
    let list = &cases()[0];
    let (_, policy) = policies()[1];
    for extra in [0, 1000] {
        let r = redactor_with(extra);
        let started = Instant::now();
        for _ in 0..5 {
            black_box(pipeline(list, &policy, &r));
        }
        println!(
            "result_pipeline: issue list 1 MB with {} secrets: {:.1} ms",
            extra + 2,
            started.elapsed().as_secs_f64() * 1000.0 / 5.0
        );
    }
}

/// Mean time of `runs` calls of `f` after two unmeasured ones, in ms.
fn time_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    f();
    let started = Instant::now();
    for _ in 0..runs {
        f();
    }
    started.elapsed().as_secs_f64() * 1000.0 / runs as f64
}

/// The pipeline stage by stage on a 744 KB list (the size of 300 real
/// issues) and a 5 MB one, bounds raised. The first two lines are floors
/// for comparison (serde_json reading the body without keeping anything,
/// and the tree the tree path builds); from the third on, each line adds
/// one stage to the one before, so the differences are what each stage
/// costs.
fn print_stages() {
    let unbounded = policies()[1].1;
    let off = ResultPolicy {
        mode: SecretDetectionMode::Off,
        ..unbounded
    };
    let none = Redactor::builder().build();
    let redactor = redactor_with(0);
    for (label, bytes) in [("744 KB", 744_000), ("5 MB", 5 * MB)] {
        let case = case(
            "list",
            "application/json",
            gitea_issues::issue_list(BASE, bytes, leak_suffix).0,
        );
        let mb = case.response.body.len() as f64 / MB as f64;
        let runs = if bytes > MB { 3 } else { 10 };
        let result = |policy: &ResultPolicy, redactor: &Redactor| {
            tool_result(
                &identity(),
                &case.call,
                &case.response,
                policy,
                redactor,
                None,
                ResultView::Full,
            )
        };
        let catalog = Catalog::bundled();
        let issues = catalog.get("gitea_issue_list_issues").expect("bundled");
        let compact = |policy: &ResultPolicy, redactor: &Redactor| {
            tool_result(
                &identity(),
                &case.call,
                &case.response,
                policy,
                redactor,
                None,
                ResultView::Compact {
                    shapes: catalog.shapes(),
                    root: issues.response.as_ref().expect("a JSON answer"),
                },
            )
        };
        let floors = [
            (
                "floor: serde_json reads it",
                time_ms(runs, || {
                    black_box(serde_json::from_slice::<IgnoredAny>(&case.response.body).ok());
                }),
            ),
            (
                "floor: a Value tree (tree path)",
                time_ms(runs, || {
                    black_box(
                        decoded_envelope(&identity(), &case.call, &case.response, usize::MAX).ok(),
                    );
                }),
            ),
        ];
        for (stage, ms) in floors {
            println!(
                "result_pipeline stages: list {label} ({mb:.2} MB): {stage:<34} {ms:>7.2} ms, {:>4.0} MB/s",
                mb / (ms / 1000.0)
            );
        }
        let stages = [
            (
                "streamed, written, bounds checked",
                time_ms(runs, || {
                    black_box(result(&off, &none).ok());
                }),
            ),
            (
                "+ exact redaction",
                time_ms(runs, || {
                    black_box(result(&off, &redactor).ok());
                }),
            ),
            (
                "+ pattern masking (the envelope)",
                time_ms(runs, || {
                    black_box(result(&unbounded, &redactor).ok());
                }),
            ),
            (
                "+ escaped into the JSON-RPC text",
                time_ms(runs, || {
                    black_box(serde_json::to_string(&pipeline(&case, &unbounded, &redactor)).ok());
                }),
            ),
        ];
        let mut previous = 0.0;
        for (stage, ms) in stages {
            println!(
                "result_pipeline stages: list {label} ({mb:.2} MB): {stage:<34} {ms:>7.2} ms total ({:>+6.2} ms), {:>4.0} MB/s so far",
                ms - previous,
                mb / (ms / 1000.0)
            );
            previous = ms;
        }
        // The compact view does the same passes and writes less: its cost
        // beside the third stage above (the full view, masked).
        let full_ms = time_ms(runs, || {
            black_box(result(&unbounded, &redactor).ok());
        });
        let compact_ms = time_ms(runs, || {
            black_box(compact(&unbounded, &redactor).ok());
        });
        let compact_len = compact(&unbounded, &redactor).map_or(0, |t| t.len());
        let full_len = result(&unbounded, &redactor).map_or(0, |t| t.len());
        println!(
            "result_pipeline stages: list {label} ({mb:.2} MB): compact view {compact_ms:>7.2} ms ({compact_len} bytes) vs full {full_ms:>7.2} ms ({full_len} bytes)"
        );
    }
}

fn bench_pipeline(c: &mut Criterion) {
    let redactor = redactor_with(0);
    let mut group = c.benchmark_group("result_pipeline");
    group.sample_size(10);
    for case in cases() {
        group.throughput(Throughput::Bytes(case.response.body.len() as u64));
        for (policy_name, policy) in policies() {
            group.bench_function(format!("{}, mask, {policy_name}", case.name), |b| {
                b.iter(|| pipeline(black_box(&case), &policy, &redactor))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_pipeline);

fn main() {
    print_stages();
    print_throughput();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
