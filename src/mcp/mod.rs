//! MCP: the tool side of the gateway, under four names that each own one
//! thing (and, beside the tools, the `resources`, `prompts` and `completion`
//! a client offers its person, each read made as a call by `reads`). [`RmcpAdapter`](rmcp_adapter::RmcpAdapter) translates rmcp's
//! types for both transports; [`call`] is one `tools/call` with no
//! transport inside, run with [`CallServices`] (the audit log, metrics,
//! confirmations, activity, the admin account); [`Admission`] decides once
//! whether a call may run and what it is (an
//! [`AdmittedCall`](admission::AdmittedCall), with the argument
//! `validation`), and the [`Runner`] runs it against Gitea;
//! [`ToolLists`](tool_lists::ToolLists) says which tools each MCP URL lists
//! (with `exposure` and the `discover` tools beside it).

pub(crate) mod activity;
pub(crate) mod admission;
pub(crate) mod call;
pub(crate) mod call_events;
pub(crate) mod caller;
pub(crate) mod completion;
pub(crate) mod confirmation;
pub(crate) mod discover;
pub(crate) mod exposure;
pub mod handoff;
pub mod intake;
pub(crate) mod prompts;
pub(crate) mod reads;
pub(crate) mod resources;
pub(crate) mod rmcp_adapter;
pub(crate) mod rmcp_ask;
pub(crate) mod rmcp_context;
pub(crate) mod runner;
pub(crate) mod search_tool;
pub(crate) mod tool_lists;
pub(crate) mod tool_outcome;
pub(crate) mod tools;
pub(crate) mod transport;
pub mod validation;

pub use admission::Admission;
pub use runner::Runner;

/// The tools that are no catalog operation: the discovery tools and the
/// raw tool.
pub const FIXED_TOOL_NAMES: [&str; 4] = [
    discover::SEARCH_TOOL_NAME,
    discover::CALL_READ_TOOL_NAME,
    discover::CALL_WRITE_TOOL_NAME,
    crate::gitea::raw::RAW_TOOL_NAME,
];
pub use call::CallServices;
