//! The catalog at the command line: `catalog` lists it, `policy check`
//! checks a policy file against it. Both take the catalog the settings
//! select, without an audit log, store or OAuth client.

use super::CliError;
use super::load_settings;
use crate::app::BuildError;
use crate::catalog::Catalog;
use crate::config::Settings;
use crate::gitea::GiteaClient;

/// The catalog the settings select, filtered by their exposure (no audit
/// log, store or OAuth client), and the settings. Without GITEA_URL
/// (environment or env file): the bundled catalog in full, and no settings.
pub(super) async fn configured_catalog(
    env_file: Option<&std::path::Path>,
) -> Result<(Catalog, Option<Settings>), CliError> {
    match load_settings(env_file) {
        Err(err) if err.setting == "GITEA_URL" && err.rule == "is required" => {
            Ok((Catalog::bundled(), None))
        }
        Err(err) => Err(err.into()),
        Ok((settings, ignored)) => {
            if let Some(why) = ignored {
                tracing::warn!("{why}");
            }
            let client = GiteaClient::new(settings.gitea_api_base(), &settings.limits)
                .map_err(|_| BuildError::HttpClient)?;
            let (catalog, exposure) = crate::app::load_catalog(&settings, &client).await?;
            Ok((catalog.filtered(|op| exposure.exposes(op)), Some(settings)))
        }
    }
}

/// Prints the catalog: a table, JSON, or the toolsets with their sizes.
pub(super) fn print_catalog(catalog: &Catalog, json: bool, toolsets: bool) {
    if toolsets {
        let counts: Vec<(String, usize)> = catalog
            .toolset_names()
            .into_iter()
            .map(|name| {
                let count = catalog
                    .operations()
                    .iter()
                    .filter(|op| op.toolsets.contains(&name))
                    .count();
                (name, count)
            })
            .collect();
        if json {
            let rows: Vec<serde_json::Value> = counts
                .iter()
                .map(|(name, tools)| serde_json::json!({"name": name, "tools": tools}))
                .collect();
            println!("{}", serde_json::Value::from(rows));
        } else {
            counts
                .iter()
                .for_each(|(name, tools)| println!("{name}\t{tools}"));
        }
        return;
    }
    if json {
        let rows: Vec<serde_json::Value> = catalog
            .operations()
            .iter()
            .map(|op| {
                serde_json::json!({
                    "name": op.tool_name,
                    "operation_id": op.operation_id,
                    "method": op.method.as_str(),
                    "path": op.route,
                    "toolset": op.toolset,
                    "toolsets": op.toolsets,
                    "summary": op.summary,
                })
            })
            .collect();
        println!("{}", serde_json::Value::from(rows));
        return;
    }
    for op in catalog.operations() {
        println!(
            "{:<60} {:<7} {:<70} {}",
            op.tool_name,
            op.method.as_str(),
            op.route,
            op.toolset
        );
    }
    println!(
        "{} tools (Gitea API {})",
        catalog.len(),
        catalog.api_version()
    );
}
