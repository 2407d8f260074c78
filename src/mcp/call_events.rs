//! The audit entries of one tool call, built from what the call is (its
//! identity, tool, route template and argument names) and how it ended:
//! `tool_call_started`, `tool_call_finished`, `tool_call_refused`. Never an
//! argument value.

use super::CallServices;
use crate::audit::{Event, EventKind, Outcome};
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::Identity;
use crate::mcp::dispatcher::{CallRefusal, ToolOutcome};

/// The error of a call refused because its audit entry could not be written.
pub fn audit_unavailable() -> ToolError {
    ToolError::new(
        ErrorKind::AuditUnavailable,
        "the audit log is unavailable, so the call was refused; nothing was sent to Gitea",
    )
}

/// `tool_call_started`: identity, tool, method and route template (for
/// catalog operations, also when a call tool runs one), the operation a
/// call tool or the raw tool runs, argument names. Never values.
pub(super) fn tool_call_event(
    service: &CallServices,
    identity: &Identity,
    name: &str,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Event {
    let described = service.dispatcher().describe_call(name, args);
    let mut event = Event::new(EventKind::ToolCallStarted)
        .identity(identity)
        .tool(name);
    event.method = described.method;
    event.route = described.route;
    if let Some(operation) = described.operation {
        event = event.detail("operation", operation);
    }
    event.args = Some(described.arg_names);
    event
}

/// Longest tool name an entry records as given; a longer one is a name no
/// catalog has, and is cut (with `…`) so it cannot grow the log.
const MAX_RECORDED_TOOL_NAME: usize = 128;

/// `tool_call_refused`: identity, the tool name (cut to
/// [`MAX_RECORDED_TOOL_NAME`] characters), and why (`unknown_tool`,
/// `invalid_arguments`, `confirmation_required`, …: [`refusal_kind`] or an
/// error's kind). No argument names: they may not fit the schema.
pub(crate) fn refused_event(identity: &Identity, name: &str, kind: &str) -> Event {
    let shown: String = if name.chars().count() > MAX_RECORDED_TOOL_NAME {
        name.chars()
            .take(MAX_RECORDED_TOOL_NAME)
            .chain(std::iter::once('…'))
            .collect()
    } else {
        name.to_owned()
    };
    let mut event = Event::new(EventKind::ToolCallRefused)
        .identity(identity)
        .tool(&shown);
    event.outcome = Some(Outcome::Error);
    event.error_kind = Some(kind.to_owned());
    event
}

/// Why a call was refused, as its entry and its span name it.
pub(super) fn refusal_kind(refusal: &CallRefusal) -> &'static str {
    match refusal {
        CallRefusal::UnknownTool => "unknown_tool",
        CallRefusal::Error(err) => err.kind.as_str(),
        CallRefusal::ReadOnlyGrant => "insufficient_scope",
    }
}

/// `tool_call_finished`: outcome, status, duration, error kind (never the message).
pub(super) fn finished_event(
    mut event: Event,
    started_seq: u64,
    elapsed: std::time::Duration,
    outcome: &ToolOutcome,
) -> Event {
    event.event = EventKind::ToolCallFinished;
    event.duration_ms = Some(elapsed.as_millis() as u64);
    event = event.detail("started_seq", started_seq);
    event.outcome = Some(if outcome.is_error() {
        Outcome::Error
    } else {
        Outcome::Ok
    });
    event.status = outcome.status();
    event.error_kind = outcome.error_kind().map(|kind| kind.as_str().to_owned());
    event
}
