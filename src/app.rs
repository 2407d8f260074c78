//! The application, built from settings the same way by the CLI and by the
//! tests: catalog (bundled or live), Gitea client, dispatcher, admin account.

use std::sync::Arc;
use std::time::Instant;

use crate::catalog::Catalog;
use crate::config::{ConfigError, OpenApiSource, Settings};
use crate::gitea::admin::AdminAccount;
use crate::gitea::{GiteaClient, Identity, IdentityMode};
use crate::mcp::Dispatcher;
use crate::mcp::exposure::Exposure;

/// Everything a request handler needs. Passed as state, never global.
#[derive(Debug)]
pub struct App {
    settings: Settings,
    dispatcher: Dispatcher,
    admin: Option<AdminAccount>,
}

/// Why the application could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("the HTTP client could not be built")]
    HttpClient,
}

impl App {
    /// Builds the application. With `GITEA_OPENAPI=live` the instance's own
    /// document is fetched; on failure the bundled one is used, with a warning.
    pub async fn build(settings: Settings) -> Result<Arc<Self>, BuildError> {
        let client = GiteaClient::new(settings.gitea_api_base(), &settings.limits)
            .map_err(|_| BuildError::HttpClient)?;
        let started = Instant::now();
        let catalog = match settings.gitea_openapi {
            OpenApiSource::Bundled => Catalog::bundled(),
            OpenApiSource::Live => load_live_catalog(&settings, &client).await,
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
        let dispatcher = Dispatcher::new(
            catalog,
            exposure,
            client,
            settings.limits,
            settings.known_secrets(),
        )
        .with_result_hygiene(
            settings.secret_detection_mode,
            settings.expose_error_details,
        );
        let admin = settings.gitea_token.clone().map(AdminAccount::new);
        Ok(Arc::new(Self {
            settings,
            dispatcher,
            admin,
        }))
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn dispatcher(&self) -> &Dispatcher {
        &self.dispatcher
    }

    /// The admin-token identity for a caller authenticated by `mode`, when
    /// `GITEA_TOKEN` is configured.
    pub async fn admin_identity(&self, mode: IdentityMode) -> Option<Identity> {
        let admin = self.admin.as_ref()?;
        Some(admin.identity(self.dispatcher.client(), mode).await)
    }
}

async fn load_live_catalog(settings: &Settings, client: &GiteaClient) -> Catalog {
    let url = format!(
        "{}/swagger.v1.json",
        settings.gitea_url.as_str().trim_end_matches('/')
    );
    let loaded = client
        .get_json(&url, None)
        .await
        .map_err(|e| e.to_string())
        .and_then(|doc| Catalog::from_openapi(&doc).map_err(|e| e.to_string()));
    match loaded {
        Ok(catalog) => catalog,
        Err(reason) => {
            tracing::warn!(%reason, "GITEA_OPENAPI=live: the instance's document could not be used; falling back to the bundled catalog");
            Catalog::bundled()
        }
    }
}
