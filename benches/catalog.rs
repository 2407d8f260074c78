//! How long turning Gitea's OpenAPI document into the tool catalog takes:
//! it runs at every start (and on `GITEA_OPENAPI=live` reloads), so it bounds
//! startup time.
//!
//! `cargo bench --bench catalog`

use std::hint::black_box;

use aegis_gitea_mcp::catalog::{BUNDLED_OPENAPI, Catalog};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;

fn catalog_build(c: &mut Criterion) {
    let doc: Value = serde_json::from_str(BUNDLED_OPENAPI).expect("bundled document is JSON");

    c.bench_function("catalog/from_openapi", |b| {
        b.iter(|| Catalog::from_openapi(black_box(&doc)).expect("bundled document converts"))
    });

    c.bench_function("catalog/parse_and_from_openapi", |b| {
        b.iter(|| {
            let doc: Value =
                serde_json::from_str(black_box(BUNDLED_OPENAPI)).expect("bundled document is JSON");
            Catalog::from_openapi(&doc).expect("bundled document converts")
        })
    });
}

criterion_group!(benches, catalog_build);
criterion_main!(benches);
