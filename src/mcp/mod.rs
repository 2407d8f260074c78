//! MCP protocol wiring: the dispatcher behind `tools/list` and `tools/call`
//! (exposure, the surface of each MCP URL, validation, the discovery
//! tools), and the rmcp adapter for the stdio and Streamable HTTP transports.

pub mod discover;
pub mod dispatcher;
pub mod exposure;
pub mod server;
pub mod service;
pub mod surface_tools;
pub mod tools;
pub mod transport;
pub mod validation;

pub use dispatcher::{Dispatcher, ToolOutcome, UnknownTool};
pub use service::ToolService;
