//! What a call runs with: everything one MCP tool call needs, and nothing
//! else. The admission (tools and their rules), the runner (the Gitea
//! client and the result rules), the audit log (the
//! write-ahead entry and the result entry), the metrics, and the admin
//! account (the identity of stdio and of the static bearer), and with
//! OAuth the confirmation gate (`crate::mcp::confirmation`). The rmcp
//! adapter (`crate::mcp::rmcp_adapter`) is handed this, not the whole
//! application.

use std::sync::Arc;

use crate::audit::AuditLog;
use crate::gitea::admin::AdminAccount;
use crate::identity::{Identity, IdentityMode};
use crate::mcp::activity::ActivityRecorder;
use crate::mcp::confirmation::{ConfirmationGate, ConfirmationRules};
use crate::mcp::{Admission, Runner};
use crate::metrics::Metrics;

#[derive(Debug)]
pub struct CallServices {
    admission: Admission,
    runner: Runner,
    audit: AuditLog,
    metrics: Arc<Metrics>,
    admin: Option<AdminAccount>,
    /// With OAuth: the calls that wait for their person.
    confirmations: Option<ConfirmationGate>,
    /// Which calls need their person (the admin token's, `CONFIRM_ADMIN`).
    confirmation_rules: Option<ConfirmationRules>,
    /// With OAuth: what connections' calls did, for the pages.
    activity: Option<Arc<ActivityRecorder>>,
}

impl CallServices {
    pub fn new(
        (admission, runner): (Admission, Runner),
        audit: AuditLog,
        metrics: Arc<Metrics>,
        admin: Option<AdminAccount>,
    ) -> Self {
        Self {
            admission,
            runner,
            audit,
            metrics,
            admin,
            confirmations: None,
            confirmation_rules: None,
            activity: None,
        }
    }

    /// With OAuth: connections' finished calls are noted for the pages.
    pub fn with_activity(mut self, recorder: Arc<ActivityRecorder>) -> Self {
        self.activity = Some(recorder);
        self
    }

    pub fn activity(&self) -> Option<&ActivityRecorder> {
        self.activity.as_deref()
    }

    /// Which calls need their person, for the admin token's confirmations.
    pub fn with_confirmation_rules(mut self, rules: ConfirmationRules) -> Self {
        self.confirmation_rules = Some(rules);
        self
    }

    pub fn confirmation_rules(&self) -> Option<&ConfirmationRules> {
        self.confirmation_rules.as_ref()
    }

    /// With OAuth: `gate` holds calls that need their person.
    pub fn with_confirmations(mut self, gate: ConfirmationGate) -> Self {
        self.confirmations = Some(gate);
        self
    }

    pub fn confirmations(&self) -> Option<&ConfirmationGate> {
        self.confirmations.as_ref()
    }

    pub fn admission(&self) -> &Admission {
        &self.admission
    }

    pub fn runner(&self) -> &Runner {
        &self.runner
    }

    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The admin account, when `GITEA_TOKEN` is configured.
    pub fn admin(&self) -> Option<&AdminAccount> {
        self.admin.as_ref()
    }

    /// The admin-token identity for a caller authenticated by `mode`, when
    /// `GITEA_TOKEN` is configured.
    pub async fn admin_identity(&self, mode: IdentityMode) -> Option<Identity> {
        let admin = self.admin.as_ref()?;
        Some(admin.identity(self.runner.client(), mode).await)
    }
}
