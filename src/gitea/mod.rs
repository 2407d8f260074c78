//! Everything about talking to Gitea. Knows nothing of OAuth, cookies or
//! the HTTP server. A tool call flows through it in this order:
//!
//! 1. `crate::identity` (and `admin`, the operator's account): who the
//!    call acts as;
//! 2. `call`, with the rules of `encoding`, or `raw` for the raw tool: the
//!    arguments become a request, every refusal happening before anything
//!    is sent (`routes` says which operation a raw path reaches);
//! 3. `executor`: the HTTP client sends it and reads the answer with size
//!    caps;
//! 4. `envelope`: the answer is decoded and labelled (`envelope_shell`,
//!    its fields but the data; `pagination` reads the paging headers), or
//!    becomes a sanitized error (`error`);
//! 5. `hygiene`: the result pipeline on the way out (exact redaction,
//!    pattern masking, bounds, in that order).

pub(crate) mod admin;
pub mod call;
pub mod encoding;
pub mod envelope;
pub mod envelope_shell;
pub(crate) mod error;
pub mod executor;
pub mod hygiene;

pub mod pagination;
pub(crate) mod raw;
pub(crate) mod routes;
pub mod text_files;

pub use call::{GiteaCall, build_call};
pub use error::{ErrorKind, ToolError};
pub use executor::GiteaClient;
pub use hygiene::{redaction, secrets};
