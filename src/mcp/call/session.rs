//! The admin token's confirmation (`CONFIRM_ADMIN`, off by default): the
//! person at a stdio client that declares elicitation is asked over the
//! session itself, with a form (the name to type for deleting a
//! repository, an organisation, a user or a team; else Approve). Any other
//! client, and the stateless HTTP wire, cannot be asked: the call is
//! refused. The session is behind [`AskSession`], so no transport is here.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::services::CallServices;
use crate::audit::{Event, EventKind};
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::Identity;
use crate::mcp::admission::AdmittedCall;
use crate::mcp::confirmation::{elicitation_approves, elicitation_form, summary, typed_name};

/// What the person answered a form elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionAnswer {
    /// Accepted, with the form's content.
    Accepted(Option<Value>),
    /// Declined or cancelled.
    Declined,
}

/// A session whose client can be asked a form elicitation (rmcp's peer,
/// over stdio, when the client declared the capability).
pub trait AskSession: Sync {
    /// Asks `message` with the form `schema` (a JSON Schema object);
    /// `Err` when the question could not be sent or answered.
    fn ask<'s>(
        &'s self,
        message: String,
        schema: Value,
    ) -> Pin<Box<dyn Future<Output = Result<SessionAnswer, String>> + Send + 's>>;
}

/// Whether `call` may run for the admin token: `Ok(None)` when no rule
/// asks for a person, `Ok(Some("elicitation"))` when they approved, else
/// the refusal. Its audit entries are written here.
pub(super) async fn confirm_admin_call(
    service: &CallServices,
    identity: &Identity,
    session: Option<&dyn AskSession>,
    call: &AdmittedCall<'_>,
) -> Result<Option<String>, ToolError> {
    if !service
        .confirmation_rules()
        .is_some_and(|rules| rules.admin_needs(call.effect()))
    {
        return Ok(None);
    }
    let Some(session) = session else {
        return Err(ToolError::new(
            ErrorKind::ConfirmationRequired,
            "This call needs a person's confirmation (CONFIRM_ADMIN), and this client cannot be asked: over stdio a client must support elicitation; over HTTP the admin token cannot be confirmed. Nothing was sent to Gitea.",
        ));
    };
    let (operation, inner) = (call.operation(), call.operation_args());
    let what = summary(operation, call.route(), inner);
    let typed = typed_name(operation, inner);
    let audit = service.audit();
    let event = |kind| {
        Event::new(kind)
            .identity(identity)
            .tool(call.tool())
            .detail("confirmation", "elicitation")
    };
    audit
        .record_best_effort(event(EventKind::ConfirmationRequested))
        .await;
    let (message, schema) = elicitation_form(&what, typed.as_deref());
    match session.ask(message, schema).await {
        Ok(SessionAnswer::Accepted(content))
            if elicitation_approves(typed.as_deref(), content.as_ref()) =>
        {
            audit
                .record_best_effort(
                    event(EventKind::ConfirmationApproved)
                        .detail("by", identity.login.as_deref().unwrap_or("stdio")),
                )
                .await;
            Ok(Some("elicitation".to_owned()))
        }
        Ok(_) => {
            audit
                .record_best_effort(event(EventKind::ConfirmationDenied))
                .await;
            Err(ToolError::new(
                ErrorKind::ConfirmationDenied,
                "The person did not approve this call (declined, cancelled, or the typed name did not match). Nothing was sent to Gitea.",
            ))
        }
        Err(err) => {
            tracing::warn!(error = %err, "the elicitation could not be sent");
            Err(ToolError::new(
                ErrorKind::ConfirmationRequired,
                "The person could not be asked to confirm this call. Nothing was sent to Gitea.",
            ))
        }
    }
}
