//! Asking the person inside the call (MCP 2026-07-28, SEP-2322): a call
//! that waits for its person is answered with an input-required result
//! (a form elicitation, or the confirmation page as a URL elicitation),
//! and the client's retry carries the person's answer and the sealed
//! `requestState` back. The stored confirmation is the same one the page
//! decides, so the page, a replica and a retry all agree, and an approval
//! is spent exactly once.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::seal::SealedAsk;
use super::{
    APPROVAL_WINDOW, ConfirmationGate, DECISION_WINDOW, GateOutcome, Waiting, elicitation_approves,
    elicitation_form, typed_name,
};
use crate::audit::{Event, EventKind};
use crate::config::ConfirmElicitation;
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::Connection;
use crate::identity::Identity;
use crate::mcp::admission::AdmittedCall;
use crate::store::{Confirmation, ConfirmationState, StoreError};

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
/// person's answer to our one question, if the client sent one back.
#[derive(Debug, Clone)]
pub struct Retry<'a> {
    pub state: &'a str,
    pub answer: Option<PersonAnswer>,
}

/// What the person answered our one question.
#[derive(Debug, Clone, PartialEq)]
pub struct PersonAnswer {
    /// They accepted (for a URL question: they are done on the page);
    /// declined or cancelled otherwise.
    pub accepted: bool,
    /// The form's content.
    pub content: Option<Value>,
}

/// A question for the person inside the call (an input-required result,
/// as the adapter words it for its wire), and the sealed state its retry
/// must echo.
#[derive(Debug, Clone, PartialEq)]
pub struct InCallQuestion {
    pub state: String,
    pub question: Question,
}

/// How the person is asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    /// A form: its message and its JSON Schema.
    Form { message: String, schema: Value },
    /// The confirmation page, opened by the client; `id` names the
    /// confirmation (the elicitation's id).
    Url {
        message: String,
        url: String,
        id: String,
    },
}

impl ConfirmationGate {
    /// How a client that offers `form` and `url` elicitation is asked.
    pub fn ask_mode(&self, form: bool, url: bool) -> Option<AskMode> {
        ask_mode(self.rules.settings.elicitation, form, url)
    }

    /// The question that asks the person about `waiting` in the call.
    pub fn question(&self, waiting: &Waiting, mode: AskMode) -> InCallQuestion {
        let question = match mode {
            AskMode::Form => {
                let (message, schema) =
                    elicitation_form(&waiting.summary, waiting.typed.as_deref());
                Question::Form { message, schema }
            }
            AskMode::Url => Question::Url {
                message: format!(
                    "{}. Open this page to approve or deny the call.",
                    waiting.summary
                ),
                url: self.page_url(&waiting.id),
                id: waiting.id.clone(),
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
        InCallQuestion { state, question }
    }

    /// The retry of a call that was asked in the call: its state must open
    /// for this grant and these arguments, and name a confirmation still
    /// open; then the person's answer decides it, once.
    pub(super) async fn answer(
        &self,
        identity: &Identity,
        connection: &Connection,
        call: &AdmittedCall<'_>,
        digest: String,
        retry: &Retry<'_>,
    ) -> Result<GateOutcome, StoreError> {
        let Some(ask) = self.seal.open(retry.state, &connection.grant_id, &digest) else {
            return Ok(self.invalid());
        };
        let said = PersonSaid::read(
            retry,
            &ask,
            typed_name(call.operation(), call.operation_args()),
        );
        let now = self.clock.now();
        let Some(stored) = self
            .stored(&ask.confirmation, &connection.grant_id, &digest)
            .await?
        else {
            return Ok(self.invalid());
        };
        let entry = |kind: EventKind, id: &str| {
            Event::new(kind)
                .identity(identity)
                .tool(call.tool())
                .detail("confirmation", id)
                .detail("via", "elicitation")
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
        let stored = if stored.state == ConfirmationState::Pending {
            let login = identity.login.as_deref().unwrap_or_default();
            match self
                .decide(
                    stored,
                    &said,
                    (login, &entry),
                    (&digest, &connection.grant_id),
                    now,
                )
                .await?
            {
                Decided::Answer(outcome) => return Ok(outcome),
                Decided::Now(stored) => stored,
            }
        } else {
            stored
        };
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

    /// A pending confirmation decided by what the person said: the answer
    /// of the call, or, decided in between (the page, or a racing retry),
    /// the confirmation as it is now.
    async fn decide(
        &self,
        stored: Confirmation,
        said: &PersonSaid,
        (login, entry): (&str, &EntryOf<'_>),
        (digest, grant_id): (&str, &str),
        now: i64,
    ) -> Result<Decided, StoreError> {
        if !said.answered {
            // No answer to our question (SEP-2322: a missing input
            // response): ask again rather than take silence for a no.
            return Ok(Decided::Answer(GateOutcome::Waiting(Box::new(Waiting {
                result: self.pending_result(&stored.id),
                summary: stored.summary,
                typed: said.typed.clone(),
                grant_id: stored.grant_id,
                digest: digest.to_owned(),
                id: stored.id,
                event: None,
            }))));
        }
        if said.mode == AskMode::Url && said.accepted {
            return Ok(Decided::Answer(GateOutcome::Undecided {
                result: self.pending_result(&stored.id),
            }));
        }
        let use_by = now + APPROVAL_WINDOW;
        if self
            .store
            .decide_confirmation(&stored.id, login, said.approves, use_by, now)
            .await?
        {
            let outcome = if said.approves {
                let approved =
                    entry(EventKind::ConfirmationApproved, &stored.id).detail("by", login);
                self.spend(&stored.id, now, Some(approved)).await?
            } else {
                self.store.delete_confirmation(&stored.id).await?;
                let denied = entry(EventKind::ConfirmationDenied, &stored.id).detail("by", login);
                self.denied(Some(denied))
            };
            return Ok(Decided::Answer(outcome));
        }
        Ok(match self.stored(&stored.id, grant_id, digest).await? {
            Some(now_stored) => Decided::Now(now_stored),
            None => Decided::Answer(self.invalid()),
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

/// Builds a confirmation's audit entry of a kind, for a confirmation id.
type EntryOf<'a> = dyn Fn(EventKind, &str) -> Event + Sync + 'a;

/// What the person said in the retry of a call asked in the call.
struct PersonSaid {
    /// An answer to our question came back.
    answered: bool,
    /// They accepted (for a URL elicitation: they are done on the page).
    accepted: bool,
    /// The form approves: the exact name typed, or `approve: true`; a URL
    /// elicitation never approves by itself (the page decides).
    approves: bool,
    mode: AskMode,
    /// The name they had to type, if any.
    typed: Option<String>,
}

impl PersonSaid {
    fn read(retry: &Retry<'_>, ask: &SealedAsk, typed: Option<String>) -> Self {
        let answer = retry.answer.as_ref();
        let accepted = answer.is_some_and(|a| a.accepted);
        let approves = match ask.mode {
            AskMode::Form => {
                accepted
                    && elicitation_approves(
                        typed.as_deref(),
                        answer.and_then(|a| a.content.as_ref()),
                    )
            }
            AskMode::Url => false,
        };
        Self {
            answered: answer.is_some(),
            accepted,
            approves,
            mode: ask.mode,
            typed,
        }
    }
}

/// A pending confirmation after the person's answer.
enum Decided {
    /// The call's answer.
    Answer(GateOutcome),
    /// Decided in between: judge it as it is now.
    Now(Confirmation),
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
