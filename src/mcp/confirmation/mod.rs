//! A person in the loop: calls through an OAuth connection that need their
//! person's confirmation do not reach Gitea until the person approves them
//! on the confirmation page (`/confirm/{id}`, `src/pages/confirm.rs`).
//!
//! Which calls: `CONFIRM` (`destructive` by default: the tool's effect is
//! destructive, the write call tool running such an operation, the raw
//! tool with a method other than GET and HEAD; `writes`: every call that
//! changes something; `off`), plus `CONFIRM_TOOLS` and the policy's
//! `confirm_tools`, minus `CONFIRM_SKIP_TOOLS` (which the policy cannot be
//! overridden by). The admin token (static bearer, stdio) is the
//! operator's own: never asked.
//!
//! How: the first call is stored as a pending request (bound to the grant
//! and to a digest of the tool and its arguments) and answered with a
//! `confirmation_required` error that names the page. The person approves
//! there; the same call (same grant, tool and arguments) then runs exactly
//! once within [`APPROVAL_WINDOW`]. A retry before the decision, after a
//! denial, or too late gets a result that says so; none reaches Gitea.

mod answer;
mod call;
mod seal;

use std::sync::Arc;

use secrecy::SecretString;
use serde_json::{Value, json};

use super::admission::AdmittedCall;
use crate::audit::{Event, EventKind};
use crate::catalog::{Effect, Operation};
use crate::clock::Clock;
use crate::config::{ConfirmMode, ConfirmSettings};
use crate::gitea::{ErrorKind, ToolError};
use crate::identity::Connection;
use crate::identity::{Identity, IdentityMode};
use crate::random::random_value;
use crate::store::{Confirmation, ConfirmationState, Store, StoreError};
use crate::surface::Surface;

pub use answer::{InCallQuestion, PersonAnswer, Question, Retry};
pub use call::{elicitation_approves, elicitation_form, shown_arguments, summary, typed_name};
pub use seal::StateSeal;

/// How long a person has to decide.
pub const DECISION_WINDOW: i64 = 10 * 60;
/// How long an approved call may be retried.
pub const APPROVAL_WINDOW: i64 = 10 * 60;

/// Which calls need their person, from the settings.
#[derive(Debug, Clone)]
pub struct ConfirmationRules {
    settings: ConfirmSettings,
}

impl ConfirmationRules {
    pub fn new(settings: ConfirmSettings) -> Self {
        Self { settings }
    }

    /// Whether a call of `tool` (running `operation`, doing `effect`)
    /// needs its person, with the policy's confirmations of `surface`.
    pub fn needs(
        &self,
        tool: &str,
        operation: Option<&Operation>,
        effect: Effect,
        surface: &Surface,
    ) -> bool {
        // The tool called, and the operation it runs by each of its rule
        // names (a deprecated operation's twin too: the red team's F3).
        let names =
            || std::iter::once(tool).chain(operation.into_iter().flat_map(Operation::rule_names));
        let named = |list: &[String]| names().any(|name| list.iter().any(|t| t == name));
        let by_policy = surface
            .narrowing
            .as_ref()
            .is_some_and(|n| names().any(|name| n.confirm_tools.contains(name)));
        if by_policy || named(&self.settings.always) {
            return true;
        }
        if named(&self.settings.never) {
            return false;
        }
        asks_for(self.settings.mode, effect)
    }

    /// Whether a call of the admin token (stdio, the static bearer,
    /// loopback) needs its person: `CONFIRM_ADMIN` alone.
    pub fn admin_needs(&self, effect: Effect) -> bool {
        asks_for(self.settings.admin, effect)
    }
}

/// What `mode` says of a call doing `effect` (admission's, which counts
/// every raw write as destructive).
fn asks_for(mode: ConfirmMode, effect: Effect) -> bool {
    match mode {
        ConfirmMode::Off => false,
        ConfirmMode::Destructive => effect == Effect::Destructive,
        ConfirmMode::Writes => effect != Effect::Read,
    }
}

/// What the gate decided for one call.
#[derive(Debug)]
pub enum GateOutcome {
    /// Run it; with the id of the approval it spends, if any, and the
    /// entry of an approval given in the same round trip (an elicitation).
    Proceed {
        confirmation: Option<String>,
        event: Option<Box<Event>>,
    },
    /// Do not run it: the error the `isError` result carries, and an
    /// audit entry.
    Stop {
        error: ToolError,
        event: Option<Box<Event>>,
    },
    /// Asked by URL, the person has not decided on the page yet: the
    /// `isError` result that says so. Nothing new to ask.
    Undecided { result: Value },
    /// It waits for its person: a new request (with its audit entry) or
    /// one still pending. The page flow answers `result`; a client that
    /// can be asked in the call gets an input-required result instead.
    Waiting(Box<Waiting>),
}

impl GateOutcome {
    fn proceed(confirmation: Option<String>) -> Self {
        Self::Proceed {
            confirmation,
            event: None,
        }
    }
}

/// A call waiting for its person.
#[derive(Debug)]
pub struct Waiting {
    /// The stored confirmation.
    pub id: String,
    /// What the person is asked about, in a sentence.
    pub summary: String,
    /// The name to type, for the deletions that cannot be undone.
    pub typed: Option<String>,
    pub grant_id: String,
    pub digest: String,
    /// The page flow's `isError` result.
    pub result: Value,
    pub event: Option<Box<Event>>,
}

/// The confirmations of one gateway: rules, store, clock, and where the
/// page is.
pub struct ConfirmationGate {
    rules: ConfirmationRules,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// `PUBLIC_BASE_URL`, no trailing slash.
    base_url: String,
    /// Seals the `requestState` of input-required results.
    seal: StateSeal,
}

impl std::fmt::Debug for ConfirmationGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfirmationGate")
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

/// The call the gate looks at.
pub struct GatedCall<'a> {
    /// The call, as admitted.
    pub call: &'a AdmittedCall<'a>,
    pub surface: &'a Surface,
    /// The `requestState` and input responses of a retry after an
    /// input-required result.
    pub retry: Option<Retry<'a>>,
}

impl ConfirmationGate {
    pub fn new(
        rules: ConfirmationRules,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        base_url: String,
        seal: StateSeal,
    ) -> Self {
        Self {
            rules,
            store,
            clock,
            base_url,
            seal,
        }
    }

    /// The page of confirmation `id`.
    pub fn page_url(&self, id: &str) -> String {
        format!("{}/confirm/{id}", self.base_url)
    }

    /// Whether `call` may run now, for `identity` on `connection`.
    pub async fn check(
        &self,
        identity: &Identity,
        connection: Option<&Connection>,
        gated: GatedCall<'_>,
    ) -> Result<GateOutcome, StoreError> {
        let (IdentityMode::Oauth, Some(connection)) = (identity.mode, connection) else {
            return Ok(GateOutcome::proceed(None));
        };
        let call = gated.call;
        // Judged from the admitted call: most calls need no one, and pay
        // for nothing more than a few comparisons.
        if !self
            .rules
            .needs(call.tool(), call.operation(), call.effect(), gated.surface)
        {
            return Ok(GateOutcome::proceed(None));
        }
        let digest = call.digest().as_str().to_owned();
        if let Some(retry) = &gated.retry {
            return self.answer(identity, connection, call, digest, retry).await;
        }
        let now = self.clock.now();
        let open = self
            .store
            .open_confirmation(&connection.grant_id, &digest)
            .await?;
        let Some(open) = open else {
            return self.request(identity, connection, call, digest).await;
        };
        let expired = open.expires_at <= now;
        Ok(match (open.state, expired) {
            (ConfirmationState::Approved, false) => {
                if self.store.use_approval(&open.id, now).await? {
                    GateOutcome::proceed(Some(open.id))
                } else {
                    // Spent by a racing retry: this one is a new request.
                    return self.request(identity, connection, call, digest).await;
                }
            }
            (ConfirmationState::Pending, false) => GateOutcome::Waiting(Box::new(Waiting {
                typed: typed_name(call.operation(), call.operation_args()),
                result: self.pending_result(&open.id),
                summary: open.summary,
                grant_id: open.grant_id,
                digest,
                id: open.id,
                event: None,
            })),
            (ConfirmationState::Denied, _) => {
                self.store.delete_confirmation(&open.id).await?;
                GateOutcome::Stop {
                    error: ToolError::new(
                        ErrorKind::ConfirmationDenied,
                        "The person denied this call. Do not retry it unless they ask you to.",
                    ),
                    event: None,
                }
            }
            (_, true) => {
                self.store.delete_confirmation(&open.id).await?;
                GateOutcome::Stop {
                    error: ToolError::new(
                        ErrorKind::ConfirmationExpired,
                        "This call's confirmation expired before it ran: the person did not decide in time, or the approved call was not retried within 10 minutes. Retrying asks the person again.",
                    ),
                    event: Some(Box::new(
                        Event::new(EventKind::ConfirmationExpired)
                            .identity(identity)
                            .tool(call.tool())
                            .detail("confirmation", &open.id),
                    )),
                }
            }
            (ConfirmationState::Used, false) => {
                return self.request(identity, connection, call, digest).await;
            }
        })
    }

    /// Stores a new pending request and says where the person decides.
    async fn request(
        &self,
        identity: &Identity,
        connection: &Connection,
        call: &AdmittedCall<'_>,
        digest: String,
    ) -> Result<GateOutcome, StoreError> {
        let now = self.clock.now();
        let description = call.description();
        let route = call.route().to_owned();
        let (operation, inner) = (call.operation(), call.operation_args());
        let confirmation = Confirmation {
            id: random_value(),
            grant_id: connection.grant_id.clone(),
            login: identity.login.clone().unwrap_or_default(),
            client_id: connection.client_id.clone(),
            tool: call.tool().to_owned(),
            digest,
            summary: summary(operation, &route, inner),
            method: description.method.clone().unwrap_or_default(),
            route,
            arguments: SecretString::from(shown_arguments(call.args())),
            state: ConfirmationState::Pending,
            created_at: now,
            expires_at: now + DECISION_WINDOW,
            decided_at: None,
            decided_by: None,
        };
        match self.store.insert_confirmation(&confirmation, now).await {
            Ok(()) => {}
            Err(StoreError::Full { .. }) => {
                return Ok(GateOutcome::Stop {
                    error: ToolError::new(
                        ErrorKind::ConfirmationPending,
                        "Too many calls of this connection wait for the person. Ask them to decide those first (their account page lists them).",
                    ),
                    event: None,
                });
            }
            Err(err) => return Err(err),
        }
        Ok(GateOutcome::Waiting(Box::new(Waiting {
            result: self.result(
                ErrorKind::ConfirmationRequired,
                &format!(
                    "This call needs the person's approval before it runs. Show them this link: {} . Once they say they approved it, retry the same call with the same arguments within 10 minutes.",
                    self.page_url(&confirmation.id)
                ),
                Some(&confirmation.id),
            ),
            event: Some(Box::new(
                Event::new(EventKind::ConfirmationRequested)
                    .identity(identity)
                    .tool(call.tool())
                    .detail("confirmation", &confirmation.id)
                    .detail("client_id", &connection.client_id),
            )),
            typed: typed_name(operation, inner),
            summary: confirmation.summary,
            grant_id: confirmation.grant_id,
            digest: confirmation.digest,
            id: confirmation.id,
        })))
    }

    /// The result of a retry before the person decided.
    fn pending_result(&self, id: &str) -> Value {
        self.result(
            ErrorKind::ConfirmationPending,
            &format!(
                "The person has not decided yet. Ask them to open {} and approve or deny this call; retry it with the same arguments once they say they approved.",
                self.page_url(id)
            ),
            Some(id),
        )
    }

    /// An `isError` result's JSON, as `ToolError` writes them, with the
    /// page's URL when there is one.
    fn result(&self, kind: ErrorKind, message: &str, id: Option<&str>) -> Value {
        let mut error = json!({"status": null, "kind": kind.as_str(), "message": message});
        if let Some(id) = id {
            error["confirm_url"] = Value::from(self.page_url(id));
        }
        json!({ "error": error })
    }
}

#[cfg(test)]
mod tests;
