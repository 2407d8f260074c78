//! The MCP URLs (`/mcp`, `/mcp/all`, `/mcp/x/{toolsets}`, each with an
//! optional `/readonly`): the route paths, and the layer that resolves a
//! request's [`Surface`] before authentication. A URL that names an
//! unknown toolset, or one this server exposes nothing of, is a 404 with
//! a JSON error that says which; never an empty tool list.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::app::App;
use crate::surface::{Surface, catalog_toolsets};

/// Every route path an MCP URL can take.
pub const MCP_ROUTES: &[&str] = &[
    "/mcp",
    "/mcp/readonly",
    "/mcp/all",
    "/mcp/all/readonly",
    "/mcp/x/{toolsets}",
    "/mcp/x/{toolsets}/readonly",
];

/// Middleware: puts the URL's surface into the request, or answers 404.
pub async fn resolve_surface(
    State(app): State<Arc<App>>,
    mut request: Request,
    next: Next,
) -> Response {
    let dispatcher = app.dispatcher();
    let resolved = Surface::parse(request.uri().path(), catalog_toolsets(dispatcher.catalog()))
        .and_then(|surface| dispatcher.check_surface(&surface).map(|()| surface));
    match resolved {
        Ok(surface) => {
            request.extensions_mut().insert(surface);
            next.run(request).await
        }
        Err(err) => (
            StatusCode::NOT_FOUND,
            axum::Json(serde_json::json!({
                "error": "unknown_mcp_url",
                "error_description": err.to_string(),
            })),
        )
            .into_response(),
    }
}
