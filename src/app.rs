//! The application, built from settings the same way by the CLI and by the
//! tests: catalog (bundled or live), Gitea client, admission and runner, admin account,
//! and, when OAuth is configured, the store and the authorization server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::audit::{AuditError, AuditLog, AuditOptions};
use crate::catalog::Catalog;
use crate::clock::{Clock, SystemClock};
use crate::config::{ConfigError, OpenApiSource, Settings};
use crate::gitea::GiteaClient;
use crate::gitea::admin::{AdminAccount, AdminTokenState};
use crate::gitea::executor::UpstreamError;
use crate::identity::{Identity, IdentityMode};
use crate::mcp::activity::ActivityRecorder;
use crate::mcp::confirmation::{ConfirmationGate, ConfirmationRules, StateSeal};
use crate::mcp::exposure::Exposure;
use crate::mcp::{Admission, CallServices, Runner};
use crate::metrics::Metrics;
use crate::oauth::upstream::{GiteaOAuth, UpstreamAuthError};
use crate::oauth::{OAuthConfig, OAuthServer};
use crate::policy::{ActivePolicy, FactSource, PolicyError};
use crate::store::cipher::TokenCipher;
use crate::store::schema::{MigrateMode, StoreOpening};
use crate::store::{StoreError, StoreLimits, StoreLocation, open_store_with};

/// How often expired OAuth rows are pruned.
const PRUNE_INTERVAL: Duration = Duration::from_secs(300);

/// Everything a request handler needs. Passed as state, never global.
#[derive(Debug)]
pub struct App {
    settings: Settings,
    call_services: Arc<CallServices>,
    oauth: Option<Arc<OAuthServer>>,
    /// `POLICY_FILE`'s rules and the facts they ask about.
    policy: Option<Arc<ActivePolicy>>,
    audit: AuditLog,
    metrics: Arc<Metrics>,
    draining: Draining,
}

/// Whether the process has been told to stop. Set by the listener at
/// SIGTERM; `/health` and `/health/live` then answer 503, so a balancer
/// or an orchestrator sends nothing new while the open connections drain.
#[derive(Debug, Clone, Default)]
pub struct Draining(Arc<AtomicBool>);

impl Draining {
    /// From now on the process is stopping.
    pub fn begin(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_draining(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Why the application could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the HTTP client could not be built")]
    HttpClient,
    #[error("the store: {0}")]
    Store(#[from] StoreError),
    #[error("TOKEN_ENCRYPTION_KEY: {0}")]
    Cipher(#[from] crate::store::cipher::CipherError),
    #[error("the Gitea OAuth client could not be built: {0}")]
    Upstream(#[from] UpstreamAuthError),
    #[error("TOKEN_ENCRYPTION_KEY, as the requestState key: {0}")]
    RequestState(#[from] rmcp::model::RequestStateError),
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error("AUDIT_FORWARD_URL: forwarding cannot start: {0}")]
    AuditForward(#[from] crate::audit::forward::ForwardError),
    #[error("POLICY_FILE {0}")]
    Policy(#[from] PolicyError),
}

impl App {
    /// Builds the application. With `GITEA_OPENAPI=live` the instance's own
    /// document is fetched; on failure the bundled one is used, with a warning.
    pub async fn build(settings: Settings) -> Result<Arc<Self>, BuildError> {
        Self::build_with_clock(settings, Arc::new(SystemClock)).await
    }

    /// As [`App::build`], with the clock the OAuth server uses (tests move it).
    pub async fn build_with_clock(
        settings: Settings,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<Self>, BuildError> {
        let metrics = Arc::new(Metrics::new());
        // First: a log that cannot be written stops startup.
        let audit = open_audit(&settings, metrics.clone()).await?;
        if let Some(forward) = &settings.audit_forward {
            let state = audit.forward_to(forward, &settings.data_dir, &settings.replica_id)?;
            tracing::info!(sink = %state.sink, "the audit log is forwarded");
        }
        let client = GiteaClient::new(settings.gitea_api_base(), &settings.limits)
            .map_err(|_| BuildError::HttpClient)?;
        let (catalog, exposure) = load_catalog(&settings, &client).await?;
        let admission = Admission::new(catalog, exposure);
        let runner = Runner::new(client, &settings);
        let admin = settings.gitea_token.clone().map(AdminAccount::new);
        let oauth = match GiteaOAuth::from_settings(&settings) {
            None => None,
            Some(upstream) => Some(
                build_oauth(
                    &settings,
                    admission.catalog().clone(),
                    upstream?,
                    clock,
                    audit.clone(),
                )
                .await?,
            ),
        };
        let policy = load_active_policy(&settings, (&admission, &runner), oauth.as_deref())?;
        let mut call_services =
            CallServices::new((admission, runner), audit.clone(), metrics.clone(), admin)
                .with_confirmation_rules(ConfirmationRules::new(settings.confirm.clone()));
        if let Some(server) = &oauth {
            call_services = call_services.with_confirmations(ConfirmationGate::new(
                ConfirmationRules::new(settings.confirm.clone()),
                server.store().clone(),
                server.clock().clone(),
                server.config().issuer.clone(),
                StateSeal::from_key_material(&settings.token_encryption_keys)?,
            ));
            call_services = call_services.with_activity(ActivityRecorder::spawn(
                server.store().clone(),
                server.clock().clone(),
            ));
        }
        let call_services = Arc::new(call_services);
        Ok(Arc::new(Self {
            settings,
            call_services,
            oauth,
            policy,
            audit,
            metrics,
            draining: Draining::default(),
        }))
    }

    /// The authorization server, when OAuth is configured.
    pub fn oauth(&self) -> Option<&Arc<OAuthServer>> {
        self.oauth.as_ref()
    }

    /// The operator's policy, when `POLICY_FILE` is set.
    pub fn policy(&self) -> Option<&Arc<ActivePolicy>> {
        self.policy.as_ref()
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The tools each URL lists and the rules that admit a call.
    pub fn admission(&self) -> &Admission {
        self.call_services.admission()
    }

    /// The client that sends to Gitea.
    pub fn gitea_client(&self) -> &GiteaClient {
        self.call_services.runner().client()
    }

    /// What the MCP transports are handed.
    pub fn call_services(&self) -> &Arc<CallServices> {
        &self.call_services
    }

    /// The audit log (`DATA_DIR/audit.log`).
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// Whether the process is stopping.
    pub fn draining(&self) -> &Draining {
        &self.draining
    }

    /// What `/metrics` exports.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The admin-token identity for a caller authenticated by `mode`, when
    /// `GITEA_TOKEN` is configured.
    pub async fn admin_identity(&self, mode: IdentityMode) -> Option<Identity> {
        self.call_services.admin_identity(mode).await
    }

    /// What `GITEA_TOKEN`'s last check said, when one is configured.
    pub fn admin_token_state(&self) -> Option<AdminTokenState> {
        self.call_services.admin().map(AdminAccount::state)
    }

    /// At startup: asks Gitea whether it answers, which version it is and
    /// whether it accepts the admin token, and says what is wrong, naming
    /// `GITEA_URL`. The gateway starts either way (Gitea may start after
    /// it; `/health` reports both), so a first run ends in a clear log line
    /// rather than in the first tool call's error (docs/configuration.md,
    /// "At startup").
    pub async fn check_gitea(&self) {
        let gitea_url = self.settings.gitea_url.as_str();
        let client = self.gitea_client();
        let url = format!("{}/version", self.settings.gitea_api_base());
        match client.get_json(&url, None).await {
            Ok(answer) => {
                let version = answer
                    .get("version")
                    .and_then(|v| v.as_str())
                    .unwrap_or("?");
                let catalog = self.admission().catalog().api_version();
                if version != catalog {
                    tracing::warn!(
                        gitea_url,
                        version,
                        catalog,
                        "Gitea's version differs from the catalog's: operations new in Gitea are missing, removed ones answer 404 (GITEA_OPENAPI=live reads the instance's own document)"
                    );
                } else {
                    tracing::info!(gitea_url, version, "Gitea answers");
                }
            }
            Err(err) => tracing::error!(
                gitea_url,
                error = %err,
                "Gitea does not answer GET /api/v1/version: every tool call fails until it does (check GITEA_URL)"
            ),
        }
        if let Some(admin) = self.call_services.admin() {
            match admin.check(client).await {
                Ok(login) => tracing::info!(gitea_url, login, "GITEA_TOKEN is accepted"),
                Err(UpstreamError::Answered {
                    status: status @ (401 | 403),
                }) => tracing::error!(
                    gitea_url,
                    status,
                    "GITEA_TOKEN is not accepted by Gitea: calls over stdio, with MCP_BEARER_TOKEN or on unauthenticated loopback will fail (create a token and set GITEA_TOKEN)"
                ),
                Err(err) => {
                    tracing::warn!(gitea_url, error = %err, "GITEA_TOKEN could not be checked")
                }
            }
        }
    }
}

/// Opens `DATA_DIR/audit.log` (the directory created 0700 when missing).
async fn open_audit(settings: &Settings, metrics: Arc<Metrics>) -> Result<AuditLog, AuditError> {
    let mut options = AuditOptions::new(&settings.data_dir, settings.audit_hmac_key.as_ref());
    options.max_bytes = settings.audit_max_bytes;
    options.keep_files = settings.audit_keep_files;
    options.replica = Some(settings.replica_id.clone());
    options.metrics = Some(metrics);
    options.sync = settings.audit_sync;
    let audit = AuditLog::open_with(options).await?;
    tracing::info!(
        path = %audit.path().display(),
        keyed = audit.is_keyed(),
        sync = audit.sync_policy().as_str(),
        "audit log opened"
    );
    Ok(audit)
}

/// `POLICY_FILE`, read and checked against the catalog, with its fact
/// lookups; nothing when it is not set. A policy narrows what each
/// person's connections may do, so it needs OAuth.
fn load_active_policy(
    settings: &Settings,
    (admission, runner): (&Admission, &Runner),
    oauth: Option<&OAuthServer>,
) -> Result<Option<Arc<ActivePolicy>>, BuildError> {
    let Some(path) = &settings.policy_file else {
        return Ok(None);
    };
    let Some(oauth) = oauth else {
        return Err(ConfigError::new(
            "POLICY_FILE",
            "needs OAuth (GITEA_OAUTH_CLIENT_ID): a policy narrows what each person's connections may do",
        )
        .into());
    };
    let policy = crate::policy::load_for(path, admission.catalog(), &crate::mcp::FIXED_TOOL_NAMES)?;
    tracing::info!(
        file = %path.display(),
        rules = policy.rules.len(),
        "policy loaded"
    );
    let facts = FactSource::new(
        runner.client().clone(),
        oauth.store().clone(),
        policy.needs(),
    );
    Ok(Some(Arc::new(ActivePolicy::new(policy, facts))))
}

/// The catalog the settings select (bundled, or the instance's own document
/// with `GITEA_OPENAPI=live`) and the exposure that filters it, checked
/// against each other. Opens nothing but (with `live`) one request to Gitea.
pub async fn load_catalog(
    settings: &Settings,
    client: &GiteaClient,
) -> Result<(Catalog, Exposure), ConfigError> {
    let started = Instant::now();
    let catalog = match settings.gitea_openapi {
        OpenApiSource::Bundled => Catalog::bundled(),
        OpenApiSource::Live => live_catalog(settings, client)
            .await
            .unwrap_or_else(|reason| {
                tracing::warn!(%reason, "GITEA_OPENAPI=live: the instance's document could not be used; falling back to the bundled catalog");
                Catalog::bundled()
            }),
        OpenApiSource::LiveStrict => live_catalog(settings, client).await.map_err(|reason| {
            ConfigError::new(
                "GITEA_OPENAPI",
                format!("live-strict: the instance's document could not be used ({reason}); not starting on another catalog"),
            )
        })?,
    };
    tracing::info!(
        tools = catalog.len(),
        skipped = catalog.skipped(),
        gitea_api = catalog.api_version(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "catalog built"
    );
    let exposure = Exposure::new(settings.exposure.clone());
    exposure.check_against(&catalog)?;
    Ok((catalog, exposure))
}

/// The instance's own catalog, or why not.
async fn live_catalog(settings: &Settings, client: &GiteaClient) -> Result<Catalog, String> {
    let url = format!(
        "{}/swagger.v1.json",
        settings.gitea_url.as_str().trim_end_matches('/')
    );
    client
        .get_json(&url, None)
        .await
        .map_err(|e| e.to_string())
        .and_then(|doc| Catalog::from_openapi(&doc).map_err(|e| e.to_string()))
}

/// Where the store lives, from `DATA_DIR` and `DATABASE_URL`.
pub fn store_location(settings: &Settings) -> StoreLocation {
    StoreLocation::from_parts(&settings.data_dir, settings.database_url.as_ref())
}

/// How this binary opens the store: `STORE_MIGRATE`, `STORE_BACKUPS_KEEP`,
/// its version.
pub fn store_opening(settings: &Settings, now: crate::store::UnixTime) -> StoreOpening {
    StoreOpening {
        migrate: match settings.store.migrate {
            crate::config::StoreMigrate::Auto => MigrateMode::Auto,
            crate::config::StoreMigrate::Never => MigrateMode::Never,
        },
        keep_backups: settings.store.keep_backups,
        binary_version: crate::build_info::VERSION.to_owned(),
        now,
    }
}

/// Opens the store (migrations applied), checks that every encrypted value
/// still decrypts (a store no key opens stops startup; nothing is wiped),
/// and starts the pruning task.
async fn build_oauth(
    settings: &Settings,
    catalog: Catalog,
    upstream: GiteaOAuth,
    clock: Arc<dyn Clock>,
    audit: AuditLog,
) -> Result<Arc<OAuthServer>, BuildError> {
    if !upstream.has_read_app() {
        tracing::warn!(
            "GITEA_OAUTH_READ_CLIENT_ID is not set: reading connections and page sign-ins hold Gitea sessions that could write, and only the gateway keeps them from it (docs/oauth.md, the two Gitea applications; `setup` creates both)"
        );
    }
    let cipher = TokenCipher::new(&settings.token_encryption_keys)?;
    let limits = StoreLimits {
        max_clients: settings.oauth_max_clients,
        max_new_clients_per_login: settings.oauth_max_new_clients_per_login,
        ..StoreLimits::default()
    };
    let opening = store_opening(settings, clock.now());
    let (store, report) =
        open_store_with(&store_location(settings), cipher, limits, &opening).await?;
    let checked = store.verify_decryptable().await?;
    for migration in &report.applied {
        tracing::info!(
            migration = %migration.level,
            description = migration.description,
            "store migration applied"
        );
    }
    if let Some(backup) = &report.backup {
        tracing::info!(backup = %backup.display(), "the store was backed up before migrating");
    }
    if report.serving_newer {
        tracing::warn!(
            store_schema = %report.status.store,
            binary_schema = %report.status.binary,
            "the store's schema is newer than this binary's; its newer migrations let this binary serve (docs/operations.md#rolling-back)"
        );
    }
    tracing::info!(
        backend = store.backend(),
        encrypted_values = checked,
        version = crate::build_info::VERSION,
        store_schema = %report.status.store,
        binary_schema = %report.status.binary,
        "store opened"
    );
    if store.backend() == "sqlite" && !crate::config::is_loopback_url(&settings.public_base_url) {
        // One process cannot see whether others serve the same URL; say
        // what breaks if they do (docs/replicas.md).
        tracing::warn!(
            public_base_url = %settings.public_base_url,
            "the store is SQLite in DATA_DIR, which one process uses: several replicas behind one URL need DATABASE_URL on PostgreSQL, or their clients get random 401s and invalid_client"
        );
    }
    let server = Arc::new(OAuthServer::new(
        OAuthConfig::from_settings(settings, catalog),
        store,
        clock,
        upstream,
        audit,
    ));
    spawn_pruning(Arc::downgrade(&server));
    Ok(server)
}

/// Prunes expired rows every few minutes while the server lives.
fn spawn_pruning(server: Weak<OAuthServer>) {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(PRUNE_INTERVAL);
        loop {
            ticks.tick().await;
            let Some(server) = server.upgrade() else {
                return;
            };
            match server.store().prune(server.now()).await {
                Ok(counts) => tracing::debug!(?counts, "store pruned"),
                Err(err) => tracing::warn!(error = %err, "store pruning failed"),
            }
        }
    });
}
