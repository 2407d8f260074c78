//! The gateway's integration suites in one test binary: one link instead
//! of one per suite. Each module is one suite, named as its file (run one
//! with `cargo test --test gateway mcp_http::`). The store and OAuth suites
//! (which also run against PostgreSQL) and the end-to-end sweep keep
//! binaries of their own.

#[path = "../support/mod.rs"]
mod support;

mod architecture;
mod audit;
mod audit_forward;
mod audit_process;
mod cli;
mod connection_slots;
mod connections;
mod context_reads;
mod fake_gitea_oauth;
mod health;
mod http_guards;
mod jsonrpc_intake;
mod mcp_http;
mod metrics;
mod otlp_collector;
mod policy_cli;
mod process_log;
mod rate_limits;
mod refusal_snapshots;
mod request_guards;
mod result_hygiene;
mod setup;
mod stdio;
mod store_cli;
mod surfaces;
mod telemetry;
