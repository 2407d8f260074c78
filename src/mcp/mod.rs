//! MCP protocol wiring: the dispatcher behind `tools/list` and `tools/call`
//! (exposure, the surface of each MCP URL, validation, the discovery
//! tools), and the rmcp adapter for the stdio and Streamable HTTP transports.

pub(crate) mod caller;
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
pub use service::ToolService;
