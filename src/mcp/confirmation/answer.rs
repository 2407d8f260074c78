//! Asking the person inside the call (MCP 2026-07-28, SEP-2322): a call
//! that waits for its person is answered with an input-required result
//! (a form elicitation, or the confirmation page as a URL elicitation),
//! and the client's retry carries the person's answer and the sealed
//! `requestState` back. The stored confirmation is the same one the page
//! decides, so the page, a replica and a retry all agree, and an approval
//! is spent exactly once.

use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequests, InputRequiredResult, InputResponses,
};
use serde::{Deserialize, Serialize};

use super::seal::SealedAsk;
use super::{
    APPROVAL_WINDOW, ConfirmationGate, DECISION_WINDOW, GateOutcome, GatedCall, Waiting,
    elicitation_approves, elicitation_form, inner_arguments, typed_name,
};
use crate::audit::{Event, EventKind};
use crate::catalog::Operation;
use crate::config::ConfirmElicitation;
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::Connection;
use crate::identity::Identity;
use crate::store::{Confirmation, ConfirmationState, StoreError};

/// The key of our one input request, in `inputRequests` and
/// `inputResponses`.
pub const CONFIRM_INPUT: &str = "confirm";

/// How the person is asked in the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AskMode {
    /// A form in the client: the name to type, or Approve.
    Form,
    /// The confirmation page, opened by the client (URL-mode elicitation).
    Url,
}

/// How a client that declared `elicitation` (`form` and `url` as it
/// says; an empty object means form, as the specification has it) is
/// asked, under `CONFIRM_ELICITATION`; `None` when it offers neither.
pub fn ask_mode(preferred: ConfirmElicitation, form: bool, url: bool) -> Option<AskMode> {
    match (preferred, form, url) {
        (ConfirmElicitation::Url, _, true) | (ConfirmElicitation::Form, false, true) => {
            Some(AskMode::Url)
        }
        (_, true, _) => Some(AskMode::Form),
        (_, false, false) => None,
    }
}

/// A retry after an input-required result: the state it echoes and the
/// client's answers.
#[derive(Debug, Clone, Copy)]
pub struct Retry<'a> {
    pub state: &'a str,
    pub responses: Option<&'a InputResponses>,
}

impl ConfirmationGate {
    /// How a client that offers `form` and `url` elicitation is asked.
    pub fn ask_mode(&self, form: bool, url: bool) -> Option<AskMode> {
        ask_mode(self.rules.settings.elicitation, form, url)
    }

    /// The input-required result that asks the person about `waiting`.
    pub fn input_required(&self, waiting: &Waiting, mode: AskMode) -> InputRequiredResult {
        let params = match mode {
            AskMode::Form => {
                let (message, schema) =
                    elicitation_form(&waiting.summary, waiting.typed.as_deref());
                // The form's schema is ours and always fits.
                let requested_schema = serde_json::from_value(schema)
                    .expect("the confirmation form is a valid schema");
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message,
                    requested_schema,
                }
            }
            AskMode::Url => ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: format!(
                    "{}. Open this page to approve or deny the call.",
                    waiting.summary
                ),
                url: self.page_url(&waiting.id),
                elicitation_id: waiting.id.clone(),
            },
        };
        let ask = SealedAsk {
            confirmation: waiting.id.clone(),
            mode,
        };
        let state = self.seal.seal(
            &ask,
            &waiting.grant_id,
            &waiting.digest,
            Duration::from_secs(DECISION_WINDOW.unsigned_abs()),
        );
        let requests = InputRequests::from([(
            CONFIRM_INPUT.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        )]);
        InputRequiredResult::new(Some(requests), Some(state))
    }

    /// The retry of a call that was asked in the call: its state must open
    /// for this grant and these arguments, and name a confirmation still
    /// open; then the person's answer decides it, once.
    pub(super) async fn answer(
        &self,
        identity: &Identity,
        connection: &Connection,
        call: &GatedCall<'_>,
        operation: Option<&Operation>,
        digest: String,
        retry: &Retry<'_>,
    ) -> Result<GateOutcome, StoreError> {
        let Some(ask) = self.seal.open(retry.state, &connection.grant_id, &digest) else {
            return Ok(self.invalid());
        };
        let login = identity.login.as_deref().unwrap_or_default();
        let entry = |kind: EventKind, id: &str| {
            Event::new(kind)
                .identity(identity)
                .tool(call.tool)
                .detail("confirmation", id)
                .detail("via", "elicitation")
        };
        let answer = retry
            .responses
            .and_then(|responses| responses.get(CONFIRM_INPUT))
            .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok());
        let accepted = answer
            .as_ref()
            .is_some_and(|a| a.action == ElicitationAction::Accept);
        let typed = typed_name(operation, inner_arguments(call.tool, call.args));
        let approves = match ask.mode {
            AskMode::Form => {
                accepted
                    && elicitation_approves(
                        typed.as_deref(),
                        answer.as_ref().and_then(|a| a.content.as_ref()),
                    )
            }
            // The page decides; the client's accept only says the person
            // is done there.
            AskMode::Url => false,
        };
        let now = self.clock.now();
        let Some(mut stored) = self
            .stored(&ask.confirmation, &connection.grant_id, &digest)
            .await?
        else {
            return Ok(self.invalid());
        };
        if stored.expires_at <= now {
            self.store.delete_confirmation(&stored.id).await?;
            return Ok(GateOutcome::Stop {
                error: ToolError::new(
                    ErrorKind::ConfirmationExpired,
                    "This call's confirmation expired before it was answered. Call again without requestState to ask the person again.",
                ),
                event: Some(Box::new(entry(EventKind::ConfirmationExpired, &stored.id))),
            });
        }
        if stored.state == ConfirmationState::Pending {
            if answer.is_none() {
                // No answer to our question (SEP-2322: a missing input
                // response): ask again rather than take silence for a no.
                return Ok(GateOutcome::Waiting(Box::new(Waiting {
                    result: self.pending_result(&stored.id),
                    summary: stored.summary,
                    typed,
                    grant_id: stored.grant_id,
                    digest,
                    id: stored.id,
                    event: None,
                })));
            }
            if ask.mode == AskMode::Url && accepted {
                return Ok(GateOutcome::Undecided {
                    result: self.pending_result(&stored.id),
                });
            }
            let use_by = now + APPROVAL_WINDOW;
            if self
                .store
                .decide_confirmation(&stored.id, login, approves, use_by, now)
                .await?
            {
                if !approves {
                    self.store.delete_confirmation(&stored.id).await?;
                    return Ok(self.denied(Some(
                        entry(EventKind::ConfirmationDenied, &stored.id).detail("by", login),
                    )));
                }
                return self
                    .spend(
                        &stored.id,
                        now,
                        Some(
                            entry(EventKind::ConfirmationApproved, &stored.id).detail("by", login),
                        ),
                    )
                    .await;
            }
            // Decided in between (the page, or a racing retry): judge what
            // it is now.
            match self
                .stored(&ask.confirmation, &connection.grant_id, &digest)
                .await?
            {
                Some(now_stored) => stored = now_stored,
                None => return Ok(self.invalid()),
            }
        }
        Ok(match stored.state {
            ConfirmationState::Approved => {
                return self.spend(&stored.id, now, None).await;
            }
            ConfirmationState::Denied => {
                self.store.delete_confirmation(&stored.id).await?;
                self.denied(None)
            }
            // Spent already: a replay.
            ConfirmationState::Used | ConfirmationState::Pending => self.invalid(),
        })
    }

    /// Confirmation `id`, when it is of this grant and this call.
    async fn stored(
        &self,
        id: &str,
        grant_id: &str,
        digest: &str,
    ) -> Result<Option<Confirmation>, StoreError> {
        Ok(self
            .store
            .get_confirmation(id)
            .await?
            .filter(|c| c.grant_id == grant_id && c.digest == digest))
    }

    /// Spends approval `id`: the call runs, or (spent by a racing retry)
    /// it is refused as a replay.
    async fn spend(
        &self,
        id: &str,
        now: i64,
        approved: Option<Event>,
    ) -> Result<GateOutcome, StoreError> {
        Ok(if self.store.use_approval(id, now).await? {
            GateOutcome::Proceed {
                confirmation: Some(id.to_owned()),
                event: approved.map(Box::new),
            }
        } else {
            self.invalid()
        })
    }

    /// The person said no in the form (declined, cancelled, a wrong name)
    /// or on the page.
    fn denied(&self, event: Option<Event>) -> GateOutcome {
        GateOutcome::Stop {
            error: ToolError::new(
                ErrorKind::ConfirmationDenied,
                "The person did not approve this call (declined, cancelled, or the typed name did not match). Nothing was sent to Gitea. Do not retry it unless they ask you to.",
            ),
            event: event.map(Box::new),
        }
    }

    /// A state that does not open, names nothing open, or was spent (the
    /// call's `tool_call_refused` entry is written where every refusal's
    /// is, `call::run`).
    fn invalid(&self) -> GateOutcome {
        GateOutcome::Stop {
            error: ToolError::new(
                ErrorKind::ConfirmationInvalid,
                "This requestState does not fit this call: it was altered, belongs to other arguments or another connection, expired, or was already used. Nothing was sent to Gitea. Call again without requestState to ask the person again.",
            ),
            event: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_is_asked_the_way_it_offers_preferring_the_setting() {
        use ConfirmElicitation::{Form, Url};
        assert_eq!(ask_mode(Form, true, true), Some(AskMode::Form));
        assert_eq!(ask_mode(Url, true, true), Some(AskMode::Url));
        assert_eq!(ask_mode(Form, false, true), Some(AskMode::Url));
        assert_eq!(ask_mode(Url, true, false), Some(AskMode::Form));
        assert_eq!(ask_mode(Form, false, false), None);
        assert_eq!(ask_mode(Url, false, false), None);
    }
}
