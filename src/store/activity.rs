//! The records of the activity figures (`ActivityStore`): finished calls
//! as noted, and the sums the pages draw.

use super::UnixTime;
use crate::outcome::CallOutcome;

/// How many of each connection's last calls the store keeps.
pub const RECENT_CALLS_KEPT: u64 = 20;

/// One finished tool call of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityNote {
    pub grant_id: String,
    pub login: String,
    pub client_id: String,
    pub tool: String,
    pub outcome: CallOutcome,
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
    pub outcome: CallOutcome,
    pub at: UnixTime,
}

/// A tool and how often it was called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCount {
    pub tool: String,
    pub calls: u64,
}
