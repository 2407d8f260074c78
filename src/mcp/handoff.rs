//! What the HTTP gate found around an MCP request, handed to the rmcp
//! adapter as one typed value: who calls, through which OAuth connection,
//! on which surface (the URL's, narrowed by the operator's policy). The
//! gate's steps pass these to each other as values and put the whole into
//! the request once, after the last step; the adapter reads it once, and
//! a request without it is refused (fail closed: it did not pass the
//! gate). Over stdio the adapter makes its own: the admin account on the
//! default surface.
//!
//! The message the gate read (`crate::mcp::intake::ReadMessage`) stays
//! with the gate, which answers from it what rmcp cannot read; rmcp reads
//! the same bytes for the protocol, and the call is judged by that reading
//! in `call::run`, its admission included.

use crate::identity::{Connection, Identity};
use crate::surface::Surface;

/// Who calls, through which connection, on which surface.
#[derive(Debug, Clone)]
pub struct GateHandoff {
    pub identity: Identity,
    /// The OAuth connection (grant and client) of an `agm_` token.
    pub connection: Option<Connection>,
    /// The URL's surface, narrowed by the operator's policy.
    pub surface: Surface,
}
