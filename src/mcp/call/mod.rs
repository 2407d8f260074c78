//! One tool call, with no transport inside: what `tools/call` does from a
//! parsed request to its ending, for whichever adapter carries it (rmcp
//! over Streamable HTTP or stdio, `super::rmcp_adapter`), in this order:
//!
//! 1. **admit** ([`Admission::admit`]): the tool, the URL's surface, the
//!    arguments, what the call runs and the grant's scope, decided once
//!    into an [`AdmittedCall`] that every step after reads; a refusal gets
//!    one `tool_call_refused` entry;
//! 2. **confirm**: a call that needs its person waits for them (the OAuth
//!    page or in-call elicitation, `super::confirmation`; the admin token's
//!    session elicitation, [`session`]);
//! 3. **write ahead**: `tool_call_started` must be written before anything
//!    goes to Gitea; a call whose entry cannot be written is refused;
//! 4. **run** ([`Executor`], the [`Runner`] in production): the call goes
//!    to Gitea;
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

use serde_json::{Map, Value};
use tracing::Instrument;

use super::admission::{Admission, AdmittedCall, CallRefusal};
use super::call_events::{audit_unavailable, finished_event, refused_event, tool_call_event};
use super::confirmation::{GateOutcome, GatedCall, InCallQuestion, Retry};
use super::runner::Runner;
use super::tool_outcome::ToolOutcome;
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::{Connection, Identity, IdentityMode};
use crate::mcp::caller::Caller;
use crate::metrics::UNKNOWN_TOOL;
use crate::surface::Surface;
use crate::telemetry::spans;
pub use ending::RefusalKind;
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
    Ask(Box<InCallQuestion>),
}

impl CallEnding {
    fn error(json: &Value) -> Self {
        Self::Result {
            text: json.to_string(),
            is_error: true,
        }
    }
}

/// What runs an admitted call: the [`Runner`], or a stand-in that
/// records what reached it.
pub trait Executor: Sync {
    fn execute<'a>(
        &'a self,
        admission: &'a Admission,
        identity: &'a Identity,
        surface: &'a Surface,
        call: AdmittedCall<'a>,
    ) -> impl Future<Output = ToolOutcome> + Send + 'a;
}

impl Executor for Runner {
    fn execute<'a>(
        &'a self,
        admission: &'a Admission,
        identity: &'a Identity,
        surface: &'a Surface,
        call: AdmittedCall<'a>,
    ) -> impl Future<Output = ToolOutcome> + Send + 'a {
        self.run(admission, identity, surface, call)
    }
}

/// The tool's name as metrics and spans may carry it: a name the catalog
/// defines, else `unknown` (clients cannot add label values).
pub fn tool_label<'a>(service: &CallServices, name: &'a str) -> &'a str {
    if service.admission().is_tool_name(name) {
        name
    } else {
        UNKNOWN_TOOL
    }
}

/// The step-up question, asked before the call reaches [`run`] (over HTTP,
/// where the answer is the `insufficient_scope` challenge, before rmcp):
/// whether a call of `name` with `args` from a grant that only reads would
/// write. Such a call is refused here, with the same entry and the same
/// ending [`run`] gives that refusal; `true` then. A grant that may write
/// is never asked, and costs nothing here; a read-only grant's call is
/// admitted here and again in [`run`] (admission is pure: both agree).
pub async fn refused_for_scope(
    service: &CallServices,
    context: &CallContext<'_>,
    name: &str,
    args: Map<String, Value>,
) -> bool {
    let identity = context.identity;
    if identity.access.may_write() {
        return false;
    }
    let admitted = service.admission().admit(
        context.surface,
        (Caller::of(identity.mode), identity.access),
        name,
        args,
    );
    let Err(CallRefusal::ReadOnlyGrant) = admitted else {
        return false;
    };
    let (ending, _) = refuse(service, context, name, CallRefusal::ReadOnlyGrant).await;
    close(service, context, &ending);
    true
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
    let call = match admit(service, context, name, args) {
        Ok(call) => call,
        Err(refusal) => return refuse(service, context, name, refusal).await,
    };
    let confirmation = match confirm_stage(service, context, &call, retry).await {
        Ok(confirmation) => confirmation,
        Err(stopped) => return stopped.end(service, context.identity, name).await,
    };
    // Write-ahead: durable before anything goes upstream.
    let mut started = tool_call_event(context.identity, &call);
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
            let kind = RefusalKind::Error(ErrorKind::AuditUnavailable);
            return (
                Ending::Refused { kind },
                CallEnding::error(&audit_unavailable().to_json()),
            );
        }
    };
    let began = std::time::Instant::now();
    let outcome = executor
        .execute(service.admission(), context.identity, context.surface, call)
        .await;
    let took = began.elapsed();
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
    ran(outcome, took)
}

/// The admission of a call, within its span: checked before anything is
/// written, so a refused call gets one small entry, whatever it carried.
fn admit<'a>(
    service: &'a CallServices,
    context: &CallContext<'_>,
    name: &'a str,
    args: Map<String, Value>,
) -> Result<AdmittedCall<'a>, CallRefusal> {
    let identity = context.identity;
    let span = spans::admit();
    let admitted = span.in_scope(|| {
        service.admission().admit(
            context.surface,
            (Caller::of(identity.mode), identity.access),
            name,
            args,
        )
    });
    let stage = match &admitted {
        Ok(_) => spans::StageOutcome::Ok,
        Err(_) => spans::StageOutcome::Refused,
    };
    spans::stage_outcome(&span, stage);
    admitted
}

/// The confirmation of an admitted call, within its span.
async fn confirm_stage(
    service: &CallServices,
    context: &CallContext<'_>,
    call: &AdmittedCall<'_>,
    retry: Option<Retry<'_>>,
) -> Result<Option<String>, Stopped> {
    let gated = GatedCall {
        call,
        surface: context.surface,
        retry,
    };
    let span = spans::confirmation();
    let confirmed = confirm(service, context, gated)
        .instrument(span.clone())
        .await;
    let stage = match &confirmed {
        Ok(_) => spans::StageOutcome::Ok,
        Err(Stopped::Refused(..)) => spans::StageOutcome::Refused,
        Err(Stopped::Waiting(_) | Stopped::Ask(_)) => spans::StageOutcome::Waiting,
    };
    spans::stage_outcome(&span, stage);
    confirmed
}

/// How a call that ran ended, and its answer.
fn ran(outcome: ToolOutcome, took: std::time::Duration) -> (Ending, CallEnding) {
    let ending = Ending::Ran {
        error: outcome
            .is_error()
            .then(|| outcome.error_kind().unwrap_or(ErrorKind::InternalError)),
        status: outcome.status(),
        took,
    };
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

/// A call [`Admission::admit`] refused: its entry and its answer.
async fn refuse(
    service: &CallServices,
    context: &CallContext<'_>,
    name: &str,
    refusal: CallRefusal,
) -> (Ending, CallEnding) {
    let kind = RefusalKind::of(&refusal);
    let ending = Ending::Refused { kind };
    let mut event = refused_event(context.identity, name, kind);
    if let Some(rules) = service.admission().hidden_by_policy(context.surface, name) {
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
    Ask(Box<InCallQuestion>),
}

impl Stopped {
    /// The ending of a call that does not run yet, and its answer. Every
    /// refusal leaves the call's own entry, whatever the gate wrote about
    /// the confirmation (the red team's F4, issue 53).
    async fn end(
        self,
        service: &CallServices,
        identity: &Identity,
        name: &str,
    ) -> (Ending, CallEnding) {
        match self {
            Self::Refused(error) => {
                let kind = RefusalKind::Error(error.kind);
                record_refusal(service, refused_event(identity, name, kind)).await;
                (
                    Ending::Refused { kind },
                    CallEnding::error(&error.to_json()),
                )
            }
            Self::Waiting(json) => (Ending::Waiting, CallEnding::error(&json)),
            Self::Ask(ask) => (Ending::Waiting, CallEnding::Ask(ask)),
        }
    }
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
        return session::confirm_admin_call(service, identity, context.session, call.call)
            .await
            .map_err(Stopped::Refused);
    }
    let Some(gate) = service.confirmations() else {
        return Ok(None);
    };
    let checked = gate.check(identity, context.connection, call).await;
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
                Some(mode) => Stopped::Ask(Box::new(gate.question(&waiting, mode))),
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
