//! End-to-end tests against a REAL Gitea 1.27.1 (see `tests/e2e/README.md`).
//!
//! Every test is `#[ignore]`d: start the instance first, then run
//!
//! ```sh
//! tests/e2e/gitea.sh start
//! cargo test --test e2e_sweep -- --ignored --nocapture
//! ```
//!
//! Each test reads `$AEGIS_E2E_DIR/fixture.json` (default `/tmp/aegis-e2e`),
//! builds the gateway exactly as the CLI does (`Settings` → `App::build` →
//! `http::router`), serves it on a loopback port and talks to it with the
//! official Rust MCP SDK client over Streamable HTTP.
//!
//! How the sweep tells a gateway fault from a Gitea refusal:
//! - Gitea answers a *route miss* (no handler for the path) with a plain-text
//!   `404 page not found`, and an existing route whose object is absent with
//!   JSON `{"message": "...", "url": ".../api/swagger"}`. The gateway turns a
//!   non-JSON error body into the generic message `Gitea answered with HTTP
//!   404`, which an empty-bodied "no" (e.g. "not a member") also gets. So a
//!   generic 404 is re-sent outside the gateway — the request built by the
//!   gateway's own `build_call`, sent by its own `GiteaClient` — and the raw
//!   body decides (`route_miss_is_told_apart_from_a_missing_object` checks the
//!   premise).
//! - A 405 on a GET tool means the path matched a route of another method.

#[path = "../support/mod.rs"]
mod support;

mod classify;
mod envelope_checks;
mod expected_refusals;
mod fixture;
mod gateway;
mod sweep_args;

mod live_catalog;
mod must_hit;
mod seeded_data;
mod sweep;
