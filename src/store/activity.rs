//! The records of the activity figures (`ActivityStore`): finished calls
//! as noted, and the sums the pages draw.

use super::UnixTime;

/// How many of each connection's last calls the store keeps.
pub const RECENT_CALLS_KEPT: u64 = 20;

/// How a tool call ended, for the activity figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActivityOutcome {
    Ok,
    /// It ran, and Gitea (or the gateway) answered with an error.
    Error,
    /// It did not run: invalid, not allowed, waiting for its person, or
    /// the audit log was unavailable.
    Refused,
}

impl ActivityOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Refused => "refused",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Ok, Self::Error, Self::Refused]
            .into_iter()
            .find(|o| o.as_str() == text)
    }
}

/// One finished tool call of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityNote {
    pub grant_id: String,
    pub login: String,
    pub client_id: String,
    pub tool: String,
    pub outcome: ActivityOutcome,
    pub at: UnixTime,
}

/// A connection's calls in one hour (`hour`: the hour's start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HourActivity {
    pub grant_id: String,
    pub login: String,
    pub client_id: String,
    pub hour: UnixTime,
    pub calls: u64,
    pub errors: u64,
    pub refusals: u64,
}

/// One of a connection's last calls.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentCall {
    pub grant_id: String,
    pub tool: String,
    pub outcome: ActivityOutcome,
    pub at: UnixTime,
}

/// A tool and how often it was called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCount {
    pub tool: String,
    pub calls: u64,
}
