//! Aegis Gitea MCP: an MCP gateway that lets AI assistants work on a Gitea
//! instance. The modules follow the request flow: `http` (the route table,
//! guards, authentication) → `surface` (which tools a URL serves) → `mcp`
//! (dispatch, validation, exposure) → `catalog` (tool definitions) →
//! `gitea` (encoding, executor, envelope); beside them `oauth` (the
//! authorization server and the token resolver), `store` (its database),
//! `pages` and `page_kit` (the browser pages), `audit` (the hash-chained
//! log), `metrics` (what Prometheus scrapes) and `telemetry` (traces).
//! `docs/architecture.md`
//! has the map and the import rules. Modules the tests and benches do not
//! reach are `pub(crate)`.

// `deny`, not `forbid`: one call has no safe form (`cli/allocator.rs`,
// the only `unsafe`; tests/gateway/architecture.rs holds it so).
#![deny(unsafe_code)]

pub mod app;
pub mod audit;
pub mod backup;
pub(crate) mod bounded_body;
pub mod build_info;
pub mod catalog;
pub mod cli;
pub(crate) mod client_address;
pub mod clock;
pub mod config;
pub(crate) mod connector_snippets;
// The fuzz targets' entry points (`fuzz/`; `cargo fuzz` sets `fuzzing`).
#[cfg(any(test, fuzzing))]
pub mod fuzzing;
pub mod gitea;
pub(crate) mod hidden_text;
pub mod http;
pub mod identity;
pub(crate) mod logging;
pub(crate) mod masking;
pub mod mcp;
pub(crate) mod metrics;
pub mod oauth;
pub mod outcome;
pub(crate) mod page_kit;
pub(crate) mod pages;
pub mod policy;
pub(crate) mod random;
pub(crate) mod setup;
pub mod store;
pub(crate) mod surface;
pub mod telemetry;
pub mod tls;
