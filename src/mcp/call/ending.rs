//! How a call ended, and the one place that tells it: the trace span's
//! outcome, the `aegis_tool_calls_total` label and the activity note are
//! all written from an [`Ending`], once per call, in one vocabulary
//! ([`CallOutcome`]).

use std::time::Duration;

use crate::gitea::ErrorKind;
use crate::mcp::admission::CallRefusal;
use crate::outcome::CallOutcome;

use super::{CallContext, CallServices};

/// Why a call was refused, as its audit entry, its span's `error.type` and
/// its refusal say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// The URL's surface does not list the tool.
    UnknownTool,
    /// The call writes and the grant only reads.
    InsufficientScope,
    /// Refused with a tool error of this kind: the arguments, the target,
    /// the person's confirmation, the audit log.
    Error(ErrorKind),
}

impl RefusalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::InsufficientScope => "insufficient_scope",
            Self::Error(kind) => kind.as_str(),
        }
    }

    /// The kind of an admission's refusal.
    pub fn of(refusal: &CallRefusal) -> Self {
        match refusal {
            CallRefusal::UnknownTool => Self::UnknownTool,
            CallRefusal::ReadOnlyGrant => Self::InsufficientScope,
            CallRefusal::Error(err) => Self::Error(err.kind),
        }
    }
}

/// How a call ended, in the vocabulary of spans, metrics and activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ending {
    /// Nothing was sent to Gitea: the tool is unknown or not exposed, the
    /// arguments do not fit, the grant only reads, the person denied or
    /// the approval expired, or the write-ahead entry could not be
    /// written. `kind` names why.
    Refused { kind: RefusalKind },
    /// Nothing was sent to Gitea yet: the call waits for its person.
    Waiting,
    /// The call ran: Gitea answered (`status`), or the request failed
    /// (`error` names how).
    Ran {
        error: Option<ErrorKind>,
        status: Option<u16>,
        took: Duration,
    },
}

impl Ending {
    /// How the call ended: `refused` for every call that never reached
    /// Gitea, waiting included; `ok` or `error` for one that did.
    pub(super) fn outcome(&self) -> CallOutcome {
        match self {
            Self::Refused { .. } | Self::Waiting => CallOutcome::Refused,
            Self::Ran { error: Some(_), .. } => CallOutcome::Error,
            Self::Ran { error: None, .. } => CallOutcome::Ok,
        }
    }

    /// The error kind the span is marked failed with (a call waiting for
    /// its person has failed at nothing).
    fn error_kind(&self) -> Option<&'static str> {
        match self {
            Self::Refused { kind } => Some(kind.as_str()),
            Self::Waiting => None,
            Self::Ran { error, .. } => error.map(ErrorKind::as_str),
        }
    }
}

/// Tells how the call of `context` ended: its span, its metric and, for an
/// OAuth connection, its activity note.
pub(super) fn close(service: &CallServices, context: &CallContext<'_>, ending: &Ending) {
    let outcome = ending.outcome();
    crate::telemetry::spans::outcome(context.span, outcome, ending.error_kind());
    let (status, took) = match ending {
        Ending::Ran { status, took, .. } => (*status, *took),
        _ => (None, Duration::ZERO),
    };
    let metrics = service.metrics();
    metrics.observe_tool_call(context.tool_label, outcome, status, took);
    // `aegis_gitea_up`: Gitea answered this call, or could not be reached.
    match ending {
        Ending::Ran {
            status: Some(_), ..
        } => metrics.set_gitea_up(true),
        Ending::Ran {
            error: Some(ErrorKind::UpstreamUnreachable | ErrorKind::UpstreamTimeout),
            ..
        } => metrics.set_gitea_up(false),
        _ => {}
    }
    if let (Some(recorder), Some(connection), Some(login)) = (
        service.activity(),
        context.connection,
        context.identity.login.as_deref(),
    ) {
        recorder.note(connection, login, context.tool_label, outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_never_reached_gitea_is_refused_whatever_stopped_it() {
        let refused = Ending::Refused {
            kind: RefusalKind::UnknownTool,
        };
        assert_eq!(refused.outcome(), CallOutcome::Refused);
        assert_eq!(Ending::Waiting.outcome(), CallOutcome::Refused);
        assert_eq!(refused.error_kind(), Some("unknown_tool"));
        assert_eq!(Ending::Waiting.error_kind(), None);
    }

    #[test]
    fn a_call_that_ran_is_ok_or_an_error_by_its_outcome() {
        let ok = Ending::Ran {
            error: None,
            status: Some(200),
            took: Duration::from_millis(3),
        };
        let failed = Ending::Ran {
            error: Some(ErrorKind::NotFound),
            status: Some(404),
            took: Duration::from_millis(3),
        };
        assert_eq!(ok.outcome(), CallOutcome::Ok);
        assert_eq!(failed.outcome(), CallOutcome::Error);
        assert_eq!(failed.error_kind(), Some("not_found"));
    }

    #[test]
    fn an_admission_refusal_is_named_by_its_kind() {
        assert_eq!(
            RefusalKind::of(&CallRefusal::ReadOnlyGrant).as_str(),
            "insufficient_scope"
        );
        assert_eq!(
            RefusalKind::of(&CallRefusal::UnknownTool).as_str(),
            "unknown_tool"
        );
        let invalid = crate::gitea::ToolError::invalid_arguments("x");
        assert_eq!(
            RefusalKind::of(&CallRefusal::Error(invalid)).as_str(),
            "invalid_arguments"
        );
    }
}
