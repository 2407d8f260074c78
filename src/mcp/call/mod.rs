//! One tool call, with no transport inside: what `tools/call` does from a
//! parsed request to its ending, for whichever adapter carries it (rmcp
//! over Streamable HTTP or stdio, `super::rmcp_adapter`), in this order:
//!
//! 1. **admit** ([`Dispatcher::admit`]): the tool, the URL's surface, the
//!    grant's scope, the arguments and what the call runs (its
//!    [`Target`]); a refusal gets one `tool_call_refused` entry;
//! 2. **confirm**: a call that needs its person waits for them (the OAuth
//!    page or in-call elicitation, `super::confirmation`; the admin token's
//!    session elicitation, [`session`]);
//! 3. **write ahead**: `tool_call_started` must be written before anything
//!    goes to Gitea; a call whose entry cannot be written is refused;
//! 4. **run** ([`Executor`]): the call goes to Gitea;
//! 5. **finish**: `tool_call_finished`, then the result, even if that
//!    entry fails (the call has run: a retry would repeat it).
//!
//! Every path ends in exactly one [`ending::Ending`], which alone writes
//! the span's outcome, the metric and the activity note.

mod ending;
pub mod services;
pub mod session;
#[cfg(test)]
mod tests;

use std::future::Future;

use rmcp::model::InputRequiredResult;
use serde_json::{Map, Value};
use tracing::Instrument;

use super::call_events::{
    audit_unavailable, finished_event, refusal_kind, refused_event, tool_call_event,
};
use super::confirmation::{GateOutcome, GatedCall, Retry};
use super::dispatcher::{CallRefusal, Dispatcher, Target, ToolOutcome};
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::{Connection, Identity, IdentityMode};
use crate::mcp::caller::Caller;
use crate::metrics::UNKNOWN_TOOL;
use crate::surface::Surface;
use crate::telemetry::spans;
use ending::{Ending, close};
pub use services::CallServices;
pub use session::{AskSession, SessionAnswer};

/// A `tools/call` as the client sent it.
pub struct CallRequest<'a> {
    pub name: &'a str,
    pub args: Map<String, Value>,
    /// The `requestState` and input responses of a retry after an
    /// input-required result (2026-07-28 on).
    pub retry: Option<Retry<'a>>,
}

/// Who calls, through which URL, and how their person can be asked: what
/// the adapter found around the request.
pub struct CallContext<'a> {
    pub identity: &'a Identity,
    pub surface: &'a Surface,
    /// The OAuth connection (grant and client) of an `agm_` token.
    pub connection: Option<&'a Connection>,
    /// The (form, url) elicitation a client on the 2026-07-28 wire offers
    /// inside the call; `None` on older wires.
    pub in_call_elicitation: Option<(bool, bool)>,
    /// The session, when its client can be asked a form (stdio).
    pub session: Option<&'a dyn AskSession>,
    /// The tool's name for metrics and spans (`unknown` for a name no
    /// catalog has).
    pub tool_label: &'a str,
    /// The call's trace span, which gets the outcome.
    pub span: &'a tracing::Span,
}

/// What the adapter answers.
#[derive(Debug)]
pub enum CallEnding {
    /// Not a tool of this URL: a JSON-RPC error, not a result.
    UnknownTool,
    /// A result's one text item, `is_error` or not.
    Result { text: String, is_error: bool },
    /// The person is asked inside the call (an input-required result).
    Ask(Box<InputRequiredResult>),
}

impl CallEnding {
    fn error(json: &Value) -> Self {
        Self::Result {
            text: json.to_string(),
            is_error: true,
        }
    }
}

/// What runs an admitted call against Gitea: the dispatcher, or a
/// stand-in that records what reached it.
pub trait Executor: Sync {
    fn execute<'a>(
        &'a self,
        identity: &'a Identity,
        surface: &'a Surface,
        target: Target<'a>,
        args: Map<String, Value>,
    ) -> impl Future<Output = ToolOutcome> + Send + 'a;
}

impl Executor for Dispatcher {
    fn execute<'a>(
        &'a self,
        identity: &'a Identity,
        surface: &'a Surface,
        target: Target<'a>,
        args: Map<String, Value>,
    ) -> impl Future<Output = ToolOutcome> + Send + 'a {
        self.run_admitted(identity, surface, target, args)
    }
}

/// The tool's name as metrics and spans may carry it: a name the catalog
/// defines, else `unknown` (clients cannot add label values).
pub fn tool_label<'a>(service: &CallServices, name: &'a str) -> &'a str {
    if service.dispatcher().is_tool_name(name) {
        name
    } else {
        UNKNOWN_TOOL
    }
}

/// A call refused before it reached [`run`] (over HTTP, the step-up
/// challenge answers a write from a read-only grant before rmcp): the same
/// entry and the same ending as `run` writes for that refusal.
pub async fn refused_before_run(
    service: &CallServices,
    context: &CallContext<'_>,
    name: &str,
    refusal: CallRefusal,
) {
    let (ending, _) = refuse(service, context, name, refusal).await;
    close(service, context, &ending);
}

/// Runs the call `request` in `context`, from admission to its ending.
pub async fn run(
    service: &CallServices,
    executor: &impl Executor,
    context: &CallContext<'_>,
    request: CallRequest<'_>,
) -> CallEnding {
    let (ending, answer) = steps(service, executor, context, request).await;
    close(service, context, &ending);
    answer
}

async fn steps(
    service: &CallServices,
    executor: &impl Executor,
    context: &CallContext<'_>,
    request: CallRequest<'_>,
) -> (Ending, CallEnding) {
    let CallRequest { name, args, retry } = request;
    let identity = context.identity;
    // Checked before anything is written: a refused call gets one small
    // entry, whatever it carried.
    let admission = spans::admit();
    let admitted = admission.in_scope(|| {
        service.dispatcher().admit(
            context.surface,
            (Caller::of(identity.mode), identity.access),
            name,
            &args,
        )
    });
    spans::outcome(
        &admission,
        if admitted.is_ok() { "ok" } else { "refused" },
        None,
    );
    let target = match admitted {
        Ok(target) => target,
        Err(refusal) => return refuse(service, context, name, refusal).await,
    };
    let call = GatedCall {
        tool: name,
        args: &args,
        target: &target,
        surface: context.surface,
        retry,
    };
    let confirming = spans::confirmation();
    let confirmed = confirm(service, context, call)
        .instrument(confirming.clone())
        .await;
    let confirmation_outcome = match &confirmed {
        Ok(_) => "proceed",
        Err(Stopped::Refused(..)) => "stopped",
        Err(Stopped::Waiting(_) | Stopped::Ask(_)) => "waiting",
    };
    spans::outcome(&confirming, confirmation_outcome, None);
    let confirmation = match confirmed {
        Ok(confirmation) => confirmation,
        Err(Stopped::Refused(error)) => {
            // Every refusal leaves the call's own entry, whatever the gate
            // wrote about the confirmation (the red team's F4, issue 53).
            let kind = error.kind.as_str();
            record_refusal(service, refused_event(identity, name, kind)).await;
            let ending = Ending::Refused { kind: Some(kind) };
            return (ending, CallEnding::error(&error.to_json()));
        }
        Err(Stopped::Waiting(json)) => return (Ending::Waiting, CallEnding::error(&json)),
        Err(Stopped::Ask(ask)) => return (Ending::Waiting, CallEnding::Ask(ask)),
    };
    // Write-ahead: durable before anything goes upstream.
    let mut started = tool_call_event(service, identity, name, &args);
    if let Some(confirmation) = &confirmation {
        // The approval this call spends.
        started = started.detail("confirmation", confirmation);
    }
    let audit = service.audit();
    let started_seq = match audit
        .record(started.clone())
        .instrument(spans::audit("tool_call_started"))
        .await
    {
        Ok(seq) => seq,
        Err(err) => {
            tracing::error!(error = %err, tool = %name, "tool call refused: the audit log is unavailable");
            return (
                Ending::Refused {
                    kind: Some(ErrorKind::AuditUnavailable.as_str()),
                },
                CallEnding::error(&audit_unavailable().to_json()),
            );
        }
    };
    let began = std::time::Instant::now();
    let outcome = executor
        .execute(identity, context.surface, target, args)
        .await;
    let took = began.elapsed();
    let ending = Ending::Ran {
        error: outcome
            .is_error()
            .then(|| outcome.error_kind().unwrap_or(ErrorKind::InternalError)),
        status: outcome.status(),
        took,
    };
    // Exactly one result entry. The call has run: its result is returned
    // even if this write fails.
    let finished = finished_event(started, started_seq, took, &outcome);
    if let Err(err) = audit
        .record(finished)
        .instrument(spans::audit("tool_call_finished"))
        .await
    {
        tracing::error!(error = %err, seq = started_seq, "the tool_call_finished entry could not be written");
    }
    let is_error = outcome.is_error();
    (
        ending,
        CallEnding::Result {
            text: outcome.into_text(),
            is_error,
        },
    )
}

/// Writes a refused call's `tool_call_refused` entry; the call is refused
/// whether or not the entry could be written.
async fn record_refusal(service: &CallServices, event: crate::audit::Event) {
    if let Err(err) = service
        .audit()
        .record(event)
        .instrument(spans::audit("tool_call_refused"))
        .await
    {
        tracing::error!(error = %err, "the tool_call_refused entry could not be written");
    }
}

/// A call [`Dispatcher::admit`] refused: its entry and its answer.
async fn refuse(
    service: &CallServices,
    context: &CallContext<'_>,
    name: &str,
    refusal: CallRefusal,
) -> (Ending, CallEnding) {
    let kind = refusal_kind(&refusal);
    let ending = Ending::Refused { kind: Some(kind) };
    let mut event = refused_event(context.identity, name, kind);
    if let Some(rules) = service.dispatcher().hidden_by_policy(context.surface, name) {
        // Rule ids, never argument values.
        event = event.detail("policy_rules", rules.join(","));
    }
    record_refusal(service, event).await;
    let answer = match refusal {
        CallRefusal::UnknownTool => CallEnding::UnknownTool,
        CallRefusal::Error(err) => CallEnding::error(&err.to_json()),
        CallRefusal::ReadOnlyGrant => CallEnding::error(
            &ToolError::new(
                ErrorKind::Forbidden,
                "this connection may only read; the person must connect again and allow read and write",
            )
            .to_json(),
        ),
    };
    (ending, answer)
}

/// Why a call does not run yet.
enum Stopped {
    /// Refused: the error the `isError` result carries.
    Refused(ToolError),
    /// It waits for its person on the page: the `isError` result that
    /// says where.
    Waiting(Value),
    /// The person is asked in the call.
    Ask(Box<InputRequiredResult>),
}

/// Whether `call` may run now: with the approval it spends, if any; or,
/// when it waits for its person (or the store cannot say), why not. Its
/// audit entries are written here.
async fn confirm(
    service: &CallServices,
    context: &CallContext<'_>,
    call: GatedCall<'_>,
) -> Result<Option<String>, Stopped> {
    let identity = context.identity;
    if identity.mode != IdentityMode::Oauth {
        return session::confirm_admin_call(service, identity, context.session, &call)
            .await
            .map_err(Stopped::Refused);
    }
    let Some(gate) = service.confirmations() else {
        return Ok(None);
    };
    let checked = gate
        .check(identity, context.connection, call, service.dispatcher())
        .await;
    let audit = service.audit();
    match checked {
        Ok(GateOutcome::Proceed {
            confirmation,
            event,
        }) => {
            if let Some(event) = event {
                audit.record_best_effort(*event).await;
            }
            Ok(confirmation)
        }
        Ok(GateOutcome::Stop { error, event }) => {
            if let Some(event) = event {
                audit.record_best_effort(*event).await;
            }
            Err(Stopped::Refused(error))
        }
        Ok(GateOutcome::Undecided { result }) => Err(Stopped::Waiting(result)),
        Ok(GateOutcome::Waiting(mut waiting)) => {
            if let Some(event) = waiting.event.take() {
                audit.record_best_effort(*event).await;
            }
            let mode = context
                .in_call_elicitation
                .and_then(|(form, url)| gate.ask_mode(form, url));
            Err(match mode {
                Some(mode) => Stopped::Ask(Box::new(gate.input_required(&waiting, mode))),
                None => Stopped::Waiting(waiting.result),
            })
        }
        Err(err) => {
            // Fail closed: without the store, nothing that needs a person
            // runs.
            tracing::error!(error = %err, "the confirmation store is unavailable");
            Err(Stopped::Refused(ToolError::new(
                ErrorKind::InternalError,
                "the call could not be checked for confirmation; nothing was sent to Gitea, try again later",
            )))
        }
    }
}
