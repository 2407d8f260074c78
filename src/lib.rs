//! Aegis Gitea MCP: an MCP gateway that lets AI assistants work on a Gitea
//! instance. The modules follow the request flow: `http` (guards,
//! authentication) → `mcp` (dispatch, validation, exposure) → `catalog`
//! (tool definitions) → `gitea` (encoding, executor, envelope); beside them
//! `oauth` (the authorization server and the token resolver), `store` (its
//! database), `pages` (what browser pages share), `audit` (the hash-chained
//! log) and `metrics` (what Prometheus scrapes).

#![forbid(unsafe_code)]

pub mod app;
pub mod audit;
pub mod bounded_body;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod connector_snippets;
pub mod gitea;
pub mod http;
pub mod identity;
pub mod masking;
pub mod mcp;
pub mod metrics;
pub mod oauth;
pub mod page_kit;
pub mod pages;
pub mod setup;
pub mod store;
pub mod surface;
pub mod tls;
