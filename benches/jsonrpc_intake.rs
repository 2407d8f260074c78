//! What the `/mcp` intake check (`mcp::intake::check_message`) costs per
//! body: it parses the body as rmcp's message type, which rmcp then does
//! again. A small `tools/call`, and one carrying a 1 MiB base64 upload.
//! serde_json reading the same bytes and keeping nothing is the floor.

use aegis_gitea_mcp::mcp::intake::check_message;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::de::IgnoredAny;
use serde_json::json;
use std::hint::black_box;

fn bodies() -> [(&'static str, Vec<u8>); 2] {
    let small = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "gitea_user_get_current", "arguments": {}},
    });
    let upload = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "gitea_repo_create_file", "arguments": {
            "owner": "o", "repo": "r", "filepath": "a.bin",
            "body": {"content": "QUJD".repeat(1 << 18), "message": "add"},
        }},
    });
    [
        ("small tools/call", small.to_string().into_bytes()),
        (
            "tools/call with a 1 MiB upload",
            upload.to_string().into_bytes(),
        ),
    ]
}

fn intake(c: &mut Criterion) {
    let mut group = c.benchmark_group("jsonrpc intake");
    for (name, body) in bodies() {
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(format!("{name}: check_message"), |b| {
            b.iter(|| check_message(black_box(&body), Some("2025-11-25")).expect("a message"))
        });
        group.bench_function(format!("{name}: floor, serde_json keeps nothing"), |b| {
            b.iter(|| serde_json::from_slice::<IgnoredAny>(black_box(&body)).expect("JSON"))
        });
    }
    group.finish();
}

criterion_group!(benches, intake);
criterion_main!(benches);
