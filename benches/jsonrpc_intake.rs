//! What the `/mcp` intake check (`mcp::intake::check_message`) costs per
//! body: it parses the body as rmcp's message type, which rmcp then does
//! again. A small `tools/call`, and one carrying a 1 MiB base64 upload.
//! serde_json reading the same bytes and keeping nothing is the floor.
//!
//! The second group measures rmcp's own read of a message, which the
//! gateway and `floor-rmcp` both pay: its request type is an untagged enum
//! of 22 variants, tried in order, each failure building a `serde_json`
//! error. Beside it, what a read dispatched on `method` would cost: the
//! message buffered once and read as the one variant, and read directly as
//! that variant (docs/upstream-rmcp.md).

use aegis_gitea_mcp::mcp::intake::check_message;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rmcp::model::{CallToolRequest, ClientJsonRpcMessage, JsonRpcRequest, PingRequest};
use serde::de::IgnoredAny;
use serde_json::{Value, json};
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

/// A message of each kind: `ping` is the untagged enum's first variant,
/// `tools/call` its fourteenth, `tools/list` its fifteenth.
fn messages() -> [(&'static str, Vec<u8>); 3] {
    let message = |method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            .to_string()
            .into_bytes()
    };
    [
        ("ping", message("ping", json!({}))),
        (
            "tools/call",
            message(
                "tools/call",
                json!({"name": "gitea_user_get_current", "arguments": {}}),
            ),
        ),
        ("tools/list", message("tools/list", json!({}))),
    ]
}

fn rmcp_read(c: &mut Criterion) {
    let mut group = c.benchmark_group("rmcp read");
    for (method, body) in messages() {
        group.bench_function(
            format!("{method}: ClientJsonRpcMessage (rmcp today)"),
            |b| {
                b.iter(|| {
                    serde_json::from_slice::<ClientJsonRpcMessage>(black_box(&body))
                        .expect("a message")
                })
            },
        );
    }
    let [(_, ping), (_, call), _] = messages();
    group.bench_function(
        "tools/call: buffered once, read as its variant (dispatched on method)",
        |b| {
            b.iter(|| {
                let buffered: Value = serde_json::from_slice(black_box(&call)).expect("JSON");
                serde_json::from_value::<JsonRpcRequest<CallToolRequest>>(buffered)
                    .expect("a tools/call")
            })
        },
    );
    group.bench_function("tools/call: read directly as its variant", |b| {
        b.iter(|| {
            serde_json::from_slice::<JsonRpcRequest<CallToolRequest>>(black_box(&call))
                .expect("a tools/call")
        })
    });
    group.bench_function("ping: read directly as its variant", |b| {
        b.iter(|| {
            serde_json::from_slice::<JsonRpcRequest<PingRequest>>(black_box(&ping)).expect("a ping")
        })
    });
    group.finish();
}

criterion_group!(benches, intake, rmcp_read);
criterion_main!(benches);
