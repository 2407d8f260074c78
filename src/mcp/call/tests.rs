//! The call operation on its own: a real audit log and store in a scratch
//! directory, a [`ManualClock`], and a stand-in [`Executor`] that records
//! what reached it. No socket: `GITEA_URL` names a port nothing listens
//! on, and nothing here sends to it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use secrecy::SecretString;
use serde_json::{Map, Value, json};

use super::*;
use crate::audit::AuditLog;
use crate::catalog::Catalog;
use crate::clock::{Clock, ManualClock};
use crate::config::{Settings, SettingsSource};
use crate::gitea::GiteaClient;
use crate::identity::Access;
use crate::mcp::confirmation::{ConfirmationGate, ConfirmationRules, StateSeal};
use crate::mcp::exposure::Exposure;
use crate::metrics::Metrics;
use crate::store::cipher::TokenCipher;
use crate::store::{Store, StoreLimits, StoreLocation, open_store};

const KEY: &str = "call-tests-key-0123456789abcdef0123456789";
const DELETE_BRANCH: &str = "gitea_repo_delete_branch";

/// What reached the stand-in executor: the tool names, in order.
#[derive(Default)]
struct Recorder {
    reached: Mutex<Vec<String>>,
    answer: Mutex<Option<ToolOutcome>>,
}

impl Recorder {
    fn reached(&self) -> Vec<String> {
        self.reached.lock().unwrap().clone()
    }
}

impl Executor for Recorder {
    fn execute<'a>(
        &'a self,
        _admission: &'a Admission,
        _identity: &'a Identity,
        _surface: &'a Surface,
        call: AdmittedCall<'a>,
    ) -> impl Future<Output = ToolOutcome> + Send + 'a {
        let name = call
            .operation()
            .map_or_else(|| "search".to_owned(), |op| op.tool_name.clone());
        self.reached.lock().unwrap().push(name);
        let answer = self.answer.lock().unwrap().take();
        async move {
            answer.unwrap_or(ToolOutcome::Success {
                status: Some(200),
                body: r#"{"data":{}}"#.to_owned(),
            })
        }
    }
}

struct Harness {
    service: CallServices,
    executor: Recorder,
    clock: Arc<ManualClock>,
    store: Arc<dyn Store>,
    data_dir: std::path::PathBuf,
    _scratch: tempfile::TempDir,
}

async fn harness(extra: &[(&str, &str)]) -> Harness {
    let scratch = tempfile::tempdir().unwrap();
    let data_dir = scratch.path().to_path_buf();
    let data = data_dir.display().to_string();
    let mut pairs = vec![
        ("GITEA_URL", "http://127.0.0.1:9"),
        ("DATA_DIR", data.as_str()),
        ("TOKEN_ENCRYPTION_KEY", KEY),
    ];
    pairs.extend_from_slice(extra);
    let settings = Settings::from_source(&SettingsSource::from_pairs(pairs)).unwrap();
    let client = GiteaClient::new(settings.gitea_api_base(), &settings.limits).unwrap();
    let admission = Admission::new(Catalog::bundled(), Exposure::new(settings.exposure.clone()));
    let runner = Runner::new(client, &settings);
    let audit = AuditLog::open(&data_dir, None).await.unwrap();
    let keys = [SecretString::from(KEY.to_owned())];
    let store = open_store(
        &StoreLocation::Sqlite(data_dir.clone()),
        TokenCipher::new(&keys).unwrap(),
        StoreLimits::default(),
    )
    .await
    .unwrap();
    let clock = Arc::new(ManualClock::new());
    let rules = || ConfirmationRules::new(settings.confirm.clone());
    let service = CallServices::new((admission, runner), audit, Arc::new(Metrics::new()), None)
        .with_confirmation_rules(rules())
        .with_confirmations(ConfirmationGate::new(
            rules(),
            store.clone(),
            clock.clone(),
            "https://mcp.example".to_owned(),
            StateSeal::from_key_material(&keys).unwrap(),
        ));
    Harness {
        service,
        executor: Recorder::default(),
        clock,
        store,
        data_dir,
        _scratch: scratch,
    }
}

fn identity(mode: IdentityMode, access: Access) -> Identity {
    Identity {
        login: Some("alice".to_owned()),
        mode,
        token: SecretString::from("gitea-token".to_owned()),
        refresh_token: None,
        renewal: None,
        access,
    }
}

fn connection(grant: &str) -> Connection {
    Connection {
        grant_id: grant.to_owned(),
        client_id: "client-1".to_owned(),
        redirect_uri: None,
    }
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

/// The write call tool deleting a branch: destructive, so it waits.
fn delete_branch() -> Map<String, Value> {
    args(json!({
        "name": DELETE_BRANCH,
        "arguments": {"owner": "acme", "repo": "app", "branch": "old"},
    }))
}

/// Who calls and how they can be asked.
struct Who<'a> {
    identity: Identity,
    connection: Option<Connection>,
    in_call: Option<(bool, bool)>,
    session: Option<&'a dyn AskSession>,
}

impl Who<'_> {
    fn oauth(grant: &str) -> Self {
        Self {
            identity: identity(IdentityMode::Oauth, Access::ReadWrite),
            connection: Some(connection(grant)),
            in_call: None,
            session: None,
        }
    }

    /// An OAuth connection whose client, on the 2026-07-28 wire, offers
    /// `(form, url)` elicitation inside the call.
    fn on_new_wire(grant: &str, offers: (bool, bool)) -> Self {
        Self {
            in_call: Some(offers),
            ..Self::oauth(grant)
        }
    }

    fn admin() -> Self {
        Self {
            identity: identity(IdentityMode::Stdio, Access::ReadWrite),
            connection: None,
            in_call: None,
            session: None,
        }
    }
}

mod refusals;
mod retry;
mod scope;

impl Harness {
    async fn call(&self, caller: &Who<'_>, name: &str, args: Map<String, Value>) -> CallEnding {
        self.call_retrying(caller, name, args, None).await
    }

    /// A call, or the retry of one asked inside it.
    async fn call_retrying(
        &self,
        caller: &Who<'_>,
        name: &str,
        args: Map<String, Value>,
        retry: Option<Retry<'_>>,
    ) -> CallEnding {
        let surface = Surface::default();
        let span = tracing::Span::none();
        let label = tool_label(&self.service, name);
        let context = CallContext {
            identity: &caller.identity,
            surface: &surface,
            connection: caller.connection.as_ref(),
            in_call_elicitation: caller.in_call,
            session: caller.session,
            tool_label: label,
            span: &span,
        };
        let request = CallRequest { name, args, retry };
        run(&self.service, &self.executor, &context, request).await
    }

    /// The `event` of every audit entry, in order.
    async fn entries(&self) -> Vec<String> {
        self.service.audit().flush().await;
        std::fs::read_to_string(self.data_dir.join("audit.log"))
            .unwrap()
            .lines()
            .map(|line| {
                serde_json::from_str::<Value>(line).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .filter(|event| event != "log_opened")
            .collect()
    }

    fn counted(&self, tool: &str, outcome: &str) -> bool {
        self.service.metrics().render().contains(&format!(
            "aegis_tool_calls_total{{tool=\"{tool}\",outcome=\"{outcome}\"}} 1"
        ))
    }

    /// The one open confirmation of `grant`, approved by its person.
    async fn approve(&self, grant: &str, approve: bool) {
        let digest = crate::mcp::admission::ArgsDigest::of(
            crate::mcp::discover::CALL_WRITE_TOOL_NAME,
            &delete_branch(),
        );
        let open = self
            .store
            .open_confirmation(grant, digest.as_str())
            .await
            .unwrap()
            .expect("a request waits");
        let now = self.clock.now();
        assert!(
            self.store
                .decide_confirmation(&open.id, "alice", approve, now + 600, now)
                .await
                .unwrap()
        );
    }
}

fn error_kind(ending: &CallEnding) -> Option<String> {
    match ending {
        CallEnding::Result {
            text,
            is_error: true,
        } => serde_json::from_str::<Value>(text).unwrap()["error"]["kind"]
            .as_str()
            .map(str::to_owned),
        _ => None,
    }
}

#[tokio::test]
async fn a_read_runs_between_its_two_entries() {
    let h = harness(&[]).await;
    let ending = h
        .call(&Who::oauth("g1"), "gitea_user_get_current", Map::new())
        .await;
    assert!(matches!(
        ending,
        CallEnding::Result {
            is_error: false,
            ..
        }
    ));
    assert_eq!(h.executor.reached(), ["gitea_user_get_current"]);
    assert_eq!(
        h.entries().await,
        ["tool_call_started", "tool_call_finished"]
    );
    assert!(h.counted("gitea_user_get_current", "ok"));
}

#[tokio::test]
async fn gitea_s_error_is_a_call_that_ran_and_failed() {
    let h = harness(&[]).await;
    *h.executor.answer.lock().unwrap() = Some(ToolOutcome::Failure(ToolError::new(
        ErrorKind::NotFound,
        "not found",
    )));
    let ending = h
        .call(&Who::oauth("g1"), "gitea_user_get_current", Map::new())
        .await;
    assert_eq!(error_kind(&ending).as_deref(), Some("not_found"));
    assert_eq!(
        h.entries().await,
        ["tool_call_started", "tool_call_finished"]
    );
    assert!(h.counted("gitea_user_get_current", "error"));
}

#[tokio::test]
async fn an_unknown_tool_is_refused_with_one_entry_and_reaches_nothing() {
    let h = harness(&[]).await;
    let ending = h
        .call(&Who::oauth("g1"), "gitea_no_such_tool", Map::new())
        .await;
    assert!(matches!(ending, CallEnding::UnknownTool));
    assert!(h.executor.reached().is_empty());
    assert_eq!(h.entries().await, ["tool_call_refused"]);
    assert!(h.counted("unknown", "refused"));
}

#[tokio::test]
async fn arguments_that_do_not_fit_are_refused_before_anything_is_written() {
    let h = harness(&[]).await;
    let ending = h
        .call(
            &Who::oauth("g1"),
            "gitea_issue_get_issue",
            args(json!({"owner": "acme"})),
        )
        .await;
    assert_eq!(error_kind(&ending).as_deref(), Some("invalid_arguments"));
    assert!(h.executor.reached().is_empty());
    assert_eq!(h.entries().await, ["tool_call_refused"]);
    assert!(h.counted("gitea_issue_get_issue", "refused"));
}

#[tokio::test]
async fn a_read_grant_may_not_write() {
    let h = harness(&[]).await;
    let mut caller = Who::oauth("g1");
    caller.identity.access = Access::Read;
    let ending = h
        .call(
            &caller,
            "gitea_issue_create_issue",
            args(json!({"owner": "acme", "repo": "app", "body": {"title": "t"}})),
        )
        .await;
    assert_eq!(error_kind(&ending).as_deref(), Some("forbidden"));
    assert!(h.executor.reached().is_empty());
    assert!(h.counted("gitea_issue_create_issue", "refused"));
}

#[tokio::test]
async fn a_call_whose_entry_cannot_be_written_is_refused_and_reaches_nothing() {
    let h = harness(&[]).await;
    // The log's path becomes a directory: the writer cannot reopen it.
    let log = h.data_dir.join("audit.log");
    std::fs::remove_file(&log).unwrap();
    std::fs::create_dir(&log).unwrap();
    let ending = h
        .call(&Who::oauth("g1"), "gitea_user_get_current", Map::new())
        .await;
    assert_eq!(error_kind(&ending).as_deref(), Some("audit_unavailable"));
    assert!(h.executor.reached().is_empty());
    assert!(h.counted("gitea_user_get_current", "refused"));
}

#[tokio::test]
async fn a_destructive_call_waits_for_its_person_and_runs_once_approved() {
    let h = harness(&[]).await;
    let caller = Who::oauth("g1");
    let write = crate::mcp::discover::CALL_WRITE_TOOL_NAME;
    let first = h.call(&caller, write, delete_branch()).await;
    assert_eq!(error_kind(&first).as_deref(), Some("confirmation_required"));
    let again = h.call(&caller, write, delete_branch()).await;
    assert_eq!(error_kind(&again).as_deref(), Some("confirmation_pending"));
    assert!(h.executor.reached().is_empty());
    h.approve("g1", true).await;
    let approved = h.call(&caller, write, delete_branch()).await;
    assert!(matches!(
        approved,
        CallEnding::Result {
            is_error: false,
            ..
        }
    ));
    assert_eq!(h.executor.reached(), [DELETE_BRANCH]);
    assert_eq!(
        h.entries().await,
        [
            "confirmation_requested",
            "tool_call_started",
            "tool_call_finished"
        ]
    );
}

#[tokio::test]
async fn an_approval_is_spent_by_one_call() {
    let h = harness(&[]).await;
    let caller = Who::oauth("g1");
    let write = crate::mcp::discover::CALL_WRITE_TOOL_NAME;
    h.call(&caller, write, delete_branch()).await;
    h.approve("g1", true).await;
    h.call(&caller, write, delete_branch()).await;
    let replayed = h.call(&caller, write, delete_branch()).await;
    assert_eq!(
        error_kind(&replayed).as_deref(),
        Some("confirmation_required")
    );
    assert_eq!(h.executor.reached(), [DELETE_BRANCH]);
}

#[tokio::test]
async fn a_denied_call_is_refused_and_never_runs() {
    let h = harness(&[]).await;
    let caller = Who::oauth("g1");
    let write = crate::mcp::discover::CALL_WRITE_TOOL_NAME;
    h.call(&caller, write, delete_branch()).await;
    h.approve("g1", false).await;
    let denied = h.call(&caller, write, delete_branch()).await;
    assert_eq!(error_kind(&denied).as_deref(), Some("confirmation_denied"));
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn an_approval_not_used_in_time_expires() {
    let h = harness(&[]).await;
    let caller = Who::oauth("g1");
    let write = crate::mcp::discover::CALL_WRITE_TOOL_NAME;
    h.call(&caller, write, delete_branch()).await;
    h.approve("g1", true).await;
    h.clock.advance(601);
    let late = h.call(&caller, write, delete_branch()).await;
    assert_eq!(error_kind(&late).as_deref(), Some("confirmation_expired"));
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn another_connection_does_not_spend_an_approval() {
    let h = harness(&[]).await;
    let write = crate::mcp::discover::CALL_WRITE_TOOL_NAME;
    h.call(&Who::oauth("g1"), write, delete_branch()).await;
    h.approve("g1", true).await;
    let other = h.call(&Who::oauth("g2"), write, delete_branch()).await;
    assert_eq!(error_kind(&other).as_deref(), Some("confirmation_required"));
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn a_client_on_the_new_wire_is_asked_inside_the_call() {
    let h = harness(&[]).await;
    let caller = Who::on_new_wire("g1", (true, false));
    let write = crate::mcp::discover::CALL_WRITE_TOOL_NAME;
    let asked = h.call(&caller, write, delete_branch()).await;
    assert!(matches!(asked, CallEnding::Ask(_)));
    assert!(h.executor.reached().is_empty());
    assert!(h.counted(write, "refused"));
}

/// A session that answers as told, and counts the questions.
struct Session {
    answer: Result<SessionAnswer, String>,
    asked: Mutex<usize>,
}

impl AskSession for Session {
    fn ask<'s>(
        &'s self,
        _message: String,
        _schema: Value,
    ) -> Pin<Box<dyn Future<Output = Result<SessionAnswer, String>> + Send + 's>> {
        *self.asked.lock().unwrap() += 1;
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

fn session(answer: Result<SessionAnswer, String>) -> Session {
    Session {
        answer,
        asked: Mutex::new(0),
    }
}

#[tokio::test]
async fn the_admin_token_without_a_session_to_ask_is_refused() {
    let h = harness(&[("CONFIRM_ADMIN", "destructive")]).await;
    let write = crate::mcp::discover::CALL_WRITE_TOOL_NAME;
    let refused = h.call(&Who::admin(), write, delete_branch()).await;
    assert_eq!(
        error_kind(&refused).as_deref(),
        Some("confirmation_required")
    );
    assert!(h.executor.reached().is_empty());
    // The log holds the call, refused.
    assert_eq!(h.entries().await, ["tool_call_refused"]);
}

#[tokio::test]
async fn the_admin_token_runs_once_its_person_approves_over_the_session() {
    let h = harness(&[("CONFIRM_ADMIN", "destructive")]).await;
    let approving = session(Ok(SessionAnswer::Accepted(Some(json!({"approve": true})))));
    let mut caller = Who::admin();
    caller.session = Some(&approving);
    let write = crate::mcp::discover::CALL_WRITE_TOOL_NAME;
    let ran = h.call(&caller, write, delete_branch()).await;
    assert!(matches!(
        ran,
        CallEnding::Result {
            is_error: false,
            ..
        }
    ));
    assert_eq!(*approving.asked.lock().unwrap(), 1);
    assert_eq!(h.executor.reached(), [DELETE_BRANCH]);
    assert_eq!(
        h.entries().await,
        [
            "confirmation_requested",
            "confirmation_approved",
            "tool_call_started",
            "tool_call_finished"
        ]
    );
}

#[tokio::test]
async fn the_admin_token_is_refused_when_its_person_declines_or_cannot_be_asked() {
    let h = harness(&[("CONFIRM_ADMIN", "destructive")]).await;
    let write = crate::mcp::discover::CALL_WRITE_TOOL_NAME;
    for (answer, kind) in [
        (Ok(SessionAnswer::Declined), "confirmation_denied"),
        (
            Ok(SessionAnswer::Accepted(Some(json!({"approve": false})))),
            "confirmation_denied",
        ),
        (Err("gone".to_owned()), "confirmation_required"),
    ] {
        let asked = session(answer);
        let mut caller = Who::admin();
        caller.session = Some(&asked);
        let refused = h.call(&caller, write, delete_branch()).await;
        assert_eq!(error_kind(&refused).as_deref(), Some(kind));
    }
    assert!(h.executor.reached().is_empty());
}

#[tokio::test]
async fn the_admin_token_needs_no_one_for_a_read() {
    let h = harness(&[("CONFIRM_ADMIN", "destructive")]).await;
    let ending = h
        .call(&Who::admin(), "gitea_user_get_current", Map::new())
        .await;
    assert!(matches!(
        ending,
        CallEnding::Result {
            is_error: false,
            ..
        }
    ));
}
