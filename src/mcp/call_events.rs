//! The audit entries of one tool call, built from what the call is (its
//! identity, tool, route template and argument names) and how it ended:
//! `tool_call_started`, `tool_call_finished`, `tool_call_refused`. Never an
//! argument value.

use crate::audit::{Event, EventKind, Outcome};
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::Identity;
use crate::mcp::admission::AdmittedCall;
use crate::mcp::call::RefusalKind;
use crate::mcp::tool_outcome::ToolOutcome;

/// The error of a call refused because its audit entry could not be written.
pub fn audit_unavailable() -> ToolError {
    ToolError::new(
        ErrorKind::AuditUnavailable,
        "the audit log is unavailable, so the call was refused; nothing was sent to Gitea",
    )
}

/// `tool_call_started`: identity, tool, method and route template (for
/// catalog operations, also when a call tool runs one), the operation a
/// call tool or the raw tool runs, argument names: the admitted call's
/// description. Never values.
pub(super) fn tool_call_event(identity: &Identity, call: &AdmittedCall<'_>) -> Event {
    let described = call.description();
    let mut event = Event::new(EventKind::ToolCallStarted)
        .identity(identity)
        .tool(call.tool());
    event.method.clone_from(&described.method);
    event.route.clone_from(&described.route);
    if let Some(operation) = &described.operation {
        event = event.detail("operation", operation);
    }
    event.args = Some(described.arg_names.clone());
    event
}

/// Longest tool name an entry records as given; a longer one is a name no
/// catalog has, and is cut (with `…`) so it cannot grow the log.
const MAX_RECORDED_TOOL_NAME: usize = 128;

/// `tool_call_refused`: identity, the tool name (cut to
/// [`MAX_RECORDED_TOOL_NAME`] characters), and why (`unknown_tool`,
/// `invalid_arguments`, `confirmation_required`, …). No argument names: they may not fit the schema.
pub(crate) fn refused_event(identity: &Identity, name: &str, kind: RefusalKind) -> Event {
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
    event.error_kind = Some(kind.as_str().to_owned());
    event
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
