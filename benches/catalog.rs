//! How long turning Gitea's OpenAPI document into the tool catalog takes:
//! it runs at every start (and on `GITEA_OPENAPI=live` reloads), so it bounds
//! startup time.
//!
//! And what searching it costs: the index is built at the first search,
//! and each `gitea_search_operations` call ranks the whole catalog.
//!
//! `cargo bench --bench catalog`

use std::hint::black_box;

use aegis_gitea_mcp::catalog::search::SearchIndex;
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

fn catalog_search(c: &mut Criterion) {
    let catalog = Catalog::bundled();
    c.bench_function("catalog/search_index_build", |b| {
        b.iter(|| SearchIndex::new(black_box(catalog.operations())))
    });
    let index = catalog.search_index();
    c.bench_function("catalog/search_one_query", |b| {
        b.iter(|| index.search(black_box("revoke my old api token"), |_| true, 5))
    });
}

criterion_group!(benches, catalog_build, catalog_search);
criterion_main!(benches);
