//! The MCP URLs (`/mcp`, `/mcp/all`, `/mcp/x/{toolsets}`, each with an
//! optional `/readonly`): the route paths, and the layer that resolves a
//! request's [`Surface`] before authentication. A URL that names an
//! unknown toolset, or one this server exposes nothing of, is a 404 with
//! a JSON error that says which; never an empty tool list.

use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use crate::app::App;
use crate::surface::{Surface, catalog_toolsets};

/// Every route path an MCP URL can take, each also with one trailing
/// slash (the same surface, see `Surface::parse`).
pub const MCP_ROUTES: &[&str] = &[
    "/mcp",
    "/mcp/",
    "/mcp/readonly",
    "/mcp/readonly/",
    "/mcp/all",
    "/mcp/all/",
    "/mcp/all/readonly",
    "/mcp/all/readonly/",
    "/mcp/x/{toolsets}",
    "/mcp/x/{toolsets}/",
    "/mcp/x/{toolsets}/readonly",
    "/mcp/x/{toolsets}/readonly/",
];

/// The URL's surface, or the 404 answer.
#[expect(
    clippy::result_large_err,
    reason = "the answer axum sends in the request's place, as the other steps of `mcp_gate` return it"
)]
pub fn resolve_surface(app: &App, request: &Parts) -> Result<Surface, Response> {
    let admission = app.admission();
    let resolved = Surface::parse(request.uri.path(), catalog_toolsets(admission.catalog()))
        .and_then(|surface| admission.check_surface(&surface).map(|()| surface));
    match resolved {
        Ok(surface) => Ok(surface),
        Err(err) => Err((
            StatusCode::NOT_FOUND,
            axum::Json(serde_json::json!({
                "error": "unknown_mcp_url",
                "error_description": err.to_string(),
            })),
        )
            .into_response()),
    }
}
