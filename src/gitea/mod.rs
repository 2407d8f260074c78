//! Everything about talking to Gitea: who a call acts as, how arguments
//! become a request (encoding rules, the raw tool), the HTTP client, and
//! how the answer becomes the result envelope, and the result hygiene on
//! the way out (exact redaction, pattern masking, bounds: `hygiene` runs
//! them in order). Knows nothing of OAuth, cookies or the HTTP server.

pub mod admin;
pub mod bounds;
pub mod call;
pub mod encoding;
pub mod envelope;
pub mod error;
pub mod executor;
pub mod hygiene;
pub mod identity;
pub mod masking;
pub mod pagination;
pub mod raw;
pub mod redaction;
pub mod secrets;
pub mod walk;

pub use call::{GiteaCall, build_call};
pub use error::{ErrorKind, ToolError};
pub use executor::GiteaClient;
pub use identity::{Identity, IdentityMode};
