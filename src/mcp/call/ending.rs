//! How a call ended, and the one place that tells it: the trace span's
//! outcome, the `aegis_tool_calls_total` label and the activity note are
//! all written from an [`Ending`], once per call.

use std::time::Duration;

use crate::gitea::ErrorKind;
use crate::metrics::CallOutcome;
use crate::store::ActivityOutcome;

use super::{CallContext, CallServices};

/// How a call ended, in the vocabulary of spans, metrics and activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Ending {
    /// Nothing was sent to Gitea: the tool is unknown or not exposed, the
    /// arguments do not fit, the grant only reads, the person denied or
    /// the approval expired, or the write-ahead entry could not be
    /// written. `kind` names why, when a fixed name says it.
    Refused { kind: Option<&'static str> },
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
    /// The span's `aegis.outcome`.
    pub(super) fn span_outcome(&self) -> &'static str {
        match self {
            Self::Refused { .. } => "refused",
            Self::Waiting => "waiting",
            Self::Ran { error: Some(_), .. } => "error",
            Self::Ran { error: None, .. } => "ok",
        }
    }

    /// The error kind the span is marked failed with.
    fn error_kind(&self) -> Option<&'static str> {
        match self {
            Self::Refused { kind } => *kind,
            Self::Waiting => None,
            Self::Ran { error, .. } => error.map(ErrorKind::as_str),
        }
    }

    /// The metric's `outcome`: `refused` for every call that never reached
    /// Gitea, waiting included; `ok` or `error` for one that did.
    pub(super) fn call_outcome(&self) -> CallOutcome {
        match self {
            Self::Refused { .. } | Self::Waiting => CallOutcome::Refused,
            Self::Ran { error: Some(_), .. } => CallOutcome::Error,
            Self::Ran { error: None, .. } => CallOutcome::Ok,
        }
    }

    fn activity(&self) -> ActivityOutcome {
        match self.call_outcome() {
            CallOutcome::Ok => ActivityOutcome::Ok,
            CallOutcome::Error => ActivityOutcome::Error,
            CallOutcome::Refused => ActivityOutcome::Refused,
        }
    }
}

/// Tells how the call of `context` ended: its span, its metric and, for an
/// OAuth connection, its activity note.
pub(super) fn close(service: &CallServices, context: &CallContext<'_>, ending: &Ending) {
    crate::telemetry::spans::outcome(context.span, ending.span_outcome(), ending.error_kind());
    let (status, took) = match ending {
        Ending::Ran { status, took, .. } => (*status, *took),
        _ => (None, Duration::ZERO),
    };
    let metrics = service.metrics();
    metrics.observe_tool_call(context.tool_label, ending.call_outcome(), status, took);
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
        recorder.note(connection, login, context.tool_label, ending.activity());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_never_reached_gitea_is_refused_whatever_stopped_it() {
        let refused = Ending::Refused {
            kind: Some("unknown_tool"),
        };
        assert_eq!(refused.call_outcome(), CallOutcome::Refused);
        assert_eq!(Ending::Waiting.call_outcome(), CallOutcome::Refused);
        assert_eq!(refused.span_outcome(), "refused");
        assert_eq!(Ending::Waiting.span_outcome(), "waiting");
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
        assert_eq!(ok.call_outcome(), CallOutcome::Ok);
        assert_eq!(failed.call_outcome(), CallOutcome::Error);
        assert_eq!(failed.error_kind(), Some("not_found"));
        assert_eq!(ok.activity(), ActivityOutcome::Ok);
    }
}
