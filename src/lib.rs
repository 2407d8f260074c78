//! Aegis Gitea MCP: an MCP gateway that lets AI assistants work on a Gitea
//! instance. The modules follow the request flow: `http` (guards,
//! authentication) → `mcp` (dispatch, validation, exposure) → `catalog`
//! (tool definitions) → `gitea` (encoding, executor, envelope).

pub mod app;
pub mod catalog;
pub mod cli;
pub mod config;
pub mod gitea;
pub mod http;
pub mod mcp;
pub mod tls;
