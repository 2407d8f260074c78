//! What a tool call produced, before the protocol edge: a result's text,
//! or the tool error it carries.

use crate::gitea::{ErrorKind, ToolError};

/// What a tool call produced, typed: the audit entry and the metrics read
/// its status and error kind from here; its text is handed to the
/// protocol edge as it is ([`ToolOutcome::into_text`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// An envelope (with Gitea's 2xx `status`), or a search result (none).
    Success {
        status: Option<u16>,
        /// The JSON text of the result's one content item.
        body: String,
    },
    Failure(ToolError),
}

impl ToolOutcome {
    pub(crate) fn error(err: ToolError) -> Self {
        Self::Failure(err)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Self::Failure(_))
    }

    /// Gitea's HTTP status, when Gitea answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Success { status, .. } => *status,
            Self::Failure(err) => err.status,
        }
    }

    pub fn error_kind(&self) -> Option<ErrorKind> {
        match self {
            Self::Success { .. } => None,
            Self::Failure(err) => Some(err.kind),
        }
    }

    /// The JSON text of the result's one content item (the envelope is
    /// moved, not copied: it can be megabytes).
    pub fn into_text(self) -> String {
        match self {
            Self::Success { body, .. } => body,
            Self::Failure(err) => err.to_json().to_string(),
        }
    }
}
