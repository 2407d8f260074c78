//! MCP protocol wiring: the dispatcher behind `tools/list` and `tools/call`
//! (exposure, the surface of each MCP URL, validation, the discovery
//! tools), and the rmcp adapter for the stdio and Streamable HTTP transports.

pub(crate) mod activity;
pub(crate) mod call;
pub(crate) mod call_events;
pub(crate) mod caller;
pub(crate) mod confirmation;
pub(crate) mod discover;
pub(crate) mod dispatcher;
pub(crate) mod exposure;
pub mod intake;
pub(crate) mod server;
pub(crate) mod service;
pub(crate) mod surface_tools;
pub(crate) mod tools;
pub(crate) mod transport;
pub mod validation;

pub use dispatcher::{Dispatcher, ToolOutcome, UnknownTool};

/// The tools that are no catalog operation: the discovery tools and the
/// raw tool.
pub const FIXED_TOOL_NAMES: [&str; 4] = [
    discover::SEARCH_TOOL_NAME,
    discover::CALL_READ_TOOL_NAME,
    discover::CALL_WRITE_TOOL_NAME,
    crate::gitea::raw::RAW_TOOL_NAME,
];
pub use service::ToolService;
