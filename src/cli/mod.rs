//! The command line: `serve` (HTTP), `stdio`, `catalog` and `policy
//! check` (`catalog_listing`), `setup` (in `crate::setup`), `store rekey`,
//! `audit verify`. Builds the application from settings
//! exactly as the tests do. Configuration errors exit with code 2 and name
//! the setting, never its value.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

mod allocator;
mod catalog_listing;
mod serving;
use catalog_listing::{configured_catalog, print_catalog};
use serving::{bind, serve_http};

use clap::{Parser, Subcommand};

use crate::app::{App, BuildError};
use crate::config::{ConfigError, EnvFileChoice, Settings, SettingsSource, select_env_file};

#[derive(Debug, Parser)]
#[command(name = "aegis-gitea-mcp", version, about = "An MCP gateway to Gitea")]
pub struct Cli {
    /// Read settings from this env file (the environment still wins).
    #[arg(long, global = true, env = "AEGIS_ENV_FILE")]
    env_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over Streamable HTTP at /mcp.
    Serve,
    /// Serve MCP over stdin/stdout (acts with GITEA_TOKEN).
    Stdio,
    /// List the tools the catalog defines.
    Catalog {
        /// Machine-readable JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// List the toolset names instead of the tools.
        #[arg(long)]
        toolsets: bool,
    },
    /// Write a first env file: check Gitea, create the OAuth2 application,
    /// generate the secrets, print how to connect clients.
    Setup(Box<crate::setup::SetupArgs>),
    /// Maintenance of the store.
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// The audit log.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// The operator's policy (POLICY_FILE, docs/policy.md).
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Ask a running gateway's /health (for container health checks): exit
    /// 0 when it answers 200, 1 otherwise. Reads no env file.
    Health {
        /// Default: http://127.0.0.1:$MCP_PORT/health (MCP_PORT from the
        /// environment, default 8080).
        #[arg(long)]
        url: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Check the hash chain (with AUDIT_HMAC_KEY when set). Without PATH:
    /// DATA_DIR/audit.log.N … audit.log.1, audit.log, oldest first. A
    /// directory PATH is a chain of its own (one per replica); consecutive
    /// file PATHs are one chain, in the order given. Exits 1 when any chain
    /// fails, naming its first bad line.
    Verify { paths: Vec<PathBuf> },
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Read and check a policy file (default: POLICY_FILE) against the
    /// configured catalog (the bundled one without GITEA_URL), as `serve`
    /// would at startup: exit 0 and one line per rule, or exit 2 naming
    /// the file, line and reason.
    Check { path: Option<PathBuf> },
}

#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Re-encrypt every stored secret under the newest (first)
    /// TOKEN_ENCRYPTION_KEY; older keys may then be removed.
    Rekey,
}

/// Runs the CLI and returns the process exit code.
pub fn run() -> ExitCode {
    let cli = Cli::parse();
    // `serve` and `stdio` read their settings before the log starts: the
    // trace exporter, when OTEL_* asks for one, is a layer of it.
    let mut loaded = None;
    if matches!(cli.command, Command::Serve | Command::Stdio) {
        match load_settings(cli.env_file.as_deref()) {
            Ok(settings) => loaded = Some(settings),
            Err(err) => {
                crate::logging::init(None);
                eprintln!("configuration error: {err}");
                return ExitCode::from(2);
            }
        }
    }
    let (telemetry, traces) = match &loaded {
        Some((settings, _)) => match start_traces(settings) {
            Ok(started) => started,
            Err(err) => {
                crate::logging::init(None);
                eprintln!("configuration error: {err}");
                return ExitCode::from(2);
            }
        },
        None => (None, None),
    };
    crate::logging::init(traces);
    if let Some((_, Some(why))) = &loaded {
        tracing::warn!("{why}");
    }
    let code = run_in_runtime(cli, loaded.map(|(settings, _)| settings));
    // Sends the spans still queued before the process ends.
    drop(telemetry);
    code
}

type StartedTraces = (
    Option<crate::telemetry::Telemetry>,
    Option<crate::logging::ExtraLayer>,
);

/// The trace exporter and its layer, when `OTEL_*` asks for them.
fn start_traces(settings: &Settings) -> Result<StartedTraces, crate::telemetry::TelemetryError> {
    let Some(otel) = &settings.telemetry else {
        return Ok((None, None));
    };
    let (telemetry, layer) = crate::telemetry::start(otel, &settings.replica_id)?;
    Ok((Some(telemetry), Some(Box::new(layer))))
}

fn run_in_runtime(cli: Cli, settings: Option<Settings>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: the async runtime could not start: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run_command(cli, settings)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Config(err)) => {
            eprintln!("configuration error: {err}");
            ExitCode::from(2)
        }
        Err(CliError::InUse(err)) => {
            eprintln!("error: {err}");
            ExitCode::from(2)
        }
        Err(CliError::Bind(err)) => {
            eprintln!("error: {err}");
            ExitCode::from(2)
        }
        Err(CliError::Policy(err)) => {
            eprintln!("policy error: {err}");
            ExitCode::from(2)
        }
        Err(CliError::Other(err)) => {
            eprintln!("error: {}", error_text(err.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes on one line. Most of our errors already name
/// their cause in their message (`{0}`), so a cause whose text is already
/// in the line is not repeated (anyhow's `{:#}` would print it twice).
fn error_text(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(next) = cause {
        let next_text = next.to_string();
        if !text.contains(&next_text) {
            text = format!("{text}: {next_text}");
        }
        cause = next.source();
    }
    text
}

enum CliError {
    Config(ConfigError),
    /// A listener could not be bound (the port is taken, the address is
    /// not this host's): exit 2, naming the address and its setting.
    Bind(BindError),
    /// Another process holds what this one needs (the audit log): exit 2,
    /// like a configuration error, since retrying cannot help.
    InUse(crate::audit::AuditError),
    /// The policy file cannot be used: exit 2, naming the file and line.
    Policy(crate::policy::PolicyError),
    Other(anyhow::Error),
}

impl CliError {
    fn other(err: impl Into<anyhow::Error>) -> Self {
        Self::Other(err.into())
    }
}

impl From<ConfigError> for CliError {
    fn from(err: ConfigError) -> Self {
        Self::Config(err)
    }
}

impl From<BuildError> for CliError {
    fn from(err: BuildError) -> Self {
        match err {
            BuildError::Config(c) => Self::Config(c),
            BuildError::Policy(p) => Self::Policy(p),
            BuildError::Audit(err @ crate::audit::AuditError::Locked { .. }) => Self::InUse(err),
            other => Self::Other(other.into()),
        }
    }
}

impl From<std::io::Error> for CliError {
    fn from(err: std::io::Error) -> Self {
        Self::Other(err.into())
    }
}

/// A listener that could not be bound, with the settings that chose it.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot listen on {address} ({settings}): {source}; stop what holds it or choose another address"
)]
struct BindError {
    address: SocketAddr,
    settings: &'static str,
    source: std::io::Error,
}

fn missing_settings() -> CliError {
    CliError::other(anyhow::anyhow!(
        "the settings were not read before the command ran"
    ))
}

/// The settings, and why an env file was passed over (said once the log
/// is up).
fn load_settings(
    env_file: Option<&std::path::Path>,
) -> Result<(Settings, Option<String>), ConfigError> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let choice = select_env_file(env_file, &cwd)?;
    let settings = Settings::from_source(&SettingsSource::load(&choice)?)?;
    let ignored = match choice {
        EnvFileChoice::None { ignored } => ignored,
        _ => None,
    };
    Ok((settings, ignored))
}

/// `settings` are those `run` read for `serve` and `stdio`.
async fn run_command(cli: Cli, settings: Option<Settings>) -> Result<(), CliError> {
    let loaded = settings;
    match cli.command {
        Command::Serve => {
            let settings = loaded.ok_or_else(missing_settings)?;
            settings.check_for_serve()?;
            // Both listeners first: a port that is taken stops startup
            // before anything is created or written (DATA_DIR, the audit
            // log, the store).
            let addr = SocketAddr::new(settings.mcp_host, settings.mcp_port);
            let listener = bind(addr, "MCP_HOST, MCP_PORT").await?;
            let metrics = match settings.metrics_bind {
                Some(metrics_addr) => Some(bind(metrics_addr, "METRICS_BIND").await?),
                None => None,
            };
            let app = App::build(settings).await?;
            app.check_gitea().await;
            allocator::release_free_memory();
            if app.settings().unauthenticated_loopback() {
                tracing::warn!(
                    address = %addr,
                    "no authentication: any process on this machine can call /mcp and act with GITEA_TOKEN; set MCP_BEARER_TOKEN or configure OAuth"
                );
            }
            serve_http(app, listener, metrics).await
        }
        Command::Stdio => {
            let settings = loaded.ok_or_else(missing_settings)?;
            settings.check_for_stdio()?;
            let app = App::build(settings).await?;
            app.check_gitea().await;
            allocator::release_free_memory();
            let served = crate::mcp::transport::serve_stdio(app.call_services().clone()).await;
            app.audit().flush().await;
            served.map_err(CliError::Other)
        }
        Command::Setup(args) => crate::setup::run(*args).await.map_err(|err| match err {
            crate::setup::SetupError::Config(c) => CliError::Config(c),
            other => CliError::other(other),
        }),
        Command::Store {
            command: StoreCommand::Rekey,
        } => {
            let (settings, ignored) = load_settings(cli.env_file.as_deref())?;
            if let Some(why) = ignored {
                tracing::warn!("{why}");
            }
            rekey_store(&settings).await
        }
        Command::Audit {
            command: AuditCommand::Verify { paths },
        } => verify_audit(cli.env_file.as_deref(), paths),
        Command::Health { url } => {
            let url = match url {
                Some(url) => url,
                None => {
                    let port = match std::env::var("MCP_PORT") {
                        Err(_) => 8080,
                        Ok(v) => v.trim().parse::<u16>().map_err(|_| {
                            ConfigError::new("MCP_PORT", "must be a port number (0-65535)")
                        })?,
                    };
                    format!("http://127.0.0.1:{port}/health")
                }
            };
            crate::http::health::probe(&url)
                .await
                .map_err(CliError::other)
        }
        Command::Catalog { json, toolsets } => {
            let (catalog, _) = configured_catalog(cli.env_file.as_deref()).await?;
            print_catalog(&catalog, json, toolsets);
            Ok(())
        }
        Command::Policy {
            command: PolicyCommand::Check { path },
        } => {
            let (catalog, settings) = configured_catalog(cli.env_file.as_deref()).await?;
            let Some(path) = path.or_else(|| settings.and_then(|s| s.policy_file)) else {
                return Err(ConfigError::new(
                    "POLICY_FILE",
                    "is not set: name the file (`policy check FILE`) or set POLICY_FILE",
                )
                .into());
            };
            let policy = crate::policy::load_for(&path, &catalog, &crate::mcp::FIXED_TOOL_NAMES)
                .map_err(CliError::Policy)?;
            println!("ok: {} ({} rules)", path.display(), policy.rules.len());
            for rule in &policy.rules {
                println!("  {}", rule.id);
            }
            Ok(())
        }
    }
}

/// `audit verify`: needs `AUDIT_HMAC_KEY` and `DATA_DIR` only, never a Gitea.
fn verify_audit(env_file: Option<&std::path::Path>, paths: Vec<PathBuf>) -> Result<(), CliError> {
    use crate::audit::verify::{ChainFiles, chains_of, default_files, verify_files};
    use secrecy::ExposeSecret;

    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let source = SettingsSource::load(&select_env_file(env_file, &cwd)?)?;
    let (key, data_dir) = match Settings::from_source(&source) {
        Ok(settings) => (
            settings
                .audit_hmac_key
                .map(|k| k.expose_secret().as_bytes().to_vec()),
            settings.data_dir,
        ),
        Err(err) if err.setting == "AUDIT_HMAC_KEY" => return Err(err.into()),
        // Settings a Gitea needs may be missing: read the two this needs.
        Err(_) => (
            source
                .get("AUDIT_HMAC_KEY")
                .filter(|k| !k.is_empty())
                .map(|k| k.as_bytes().to_vec()),
            PathBuf::from(source.get("DATA_DIR").unwrap_or("./data")),
        ),
    };
    let chains = if paths.is_empty() {
        vec![ChainFiles {
            files: default_files(&data_dir),
            name: data_dir,
        }]
    } else {
        chains_of(&paths, std::path::Path::is_dir)
    };
    let key = crate::audit::ChainKey::new(key.as_deref());
    let mut all_ok = true;
    for chain in &chains {
        let report = verify_files(&chain.files, &key);
        all_ok &= report.is_ok();
        // One chain prints as it always has; several say whose each line is.
        if chains.len() == 1 {
            println!("{report}");
        } else {
            println!("{}: {report}", chain.name.display());
        }
    }
    if all_ok {
        Ok(())
    } else {
        Err(CliError::Other(anyhow::anyhow!(
            "audit verification failed"
        )))
    }
}

/// `store rekey`: rewrites every encrypted value under the newest key,
/// then proves the store opens with that key alone.
async fn rekey_store(settings: &Settings) -> Result<(), CliError> {
    use crate::store::cipher::TokenCipher;
    use crate::store::{StoreLimits, open_store};

    let Some(newest) = settings.token_encryption_keys.first() else {
        return Err(
            ConfigError::new("TOKEN_ENCRYPTION_KEY", "is required for `store rekey`").into(),
        );
    };
    let location = crate::app::store_location(settings);
    let cipher = TokenCipher::new(&settings.token_encryption_keys).map_err(CliError::other)?;
    let store = open_store(&location, cipher, StoreLimits::default())
        .await
        .map_err(CliError::other)?;
    let rewritten = store.rekey().await.map_err(CliError::other)?;
    let newest_only = TokenCipher::new(std::slice::from_ref(newest)).map_err(CliError::other)?;
    let checked = open_store(&location, newest_only, StoreLimits::default())
        .await
        .map_err(CliError::other)?
        .verify_decryptable()
        .await
        .map_err(CliError::other)?;
    println!(
        "re-encrypted {rewritten} values under the newest key; {checked} values verified with it alone"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::error_text;

    #[derive(Debug, thiserror::Error)]
    enum Inner {
        #[error("disk full")]
        Full,
    }

    #[derive(Debug, thiserror::Error)]
    enum Outer {
        #[error("the store: {0}")]
        Names(#[from] Inner),
        #[error("the log could not be written")]
        Silent(#[source] Inner),
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        assert_eq!(
            error_text(&Outer::Names(Inner::Full)),
            "the store: disk full"
        );
    }

    #[test]
    fn a_cause_the_message_leaves_out_is_appended() {
        assert_eq!(
            error_text(&Outer::Silent(Inner::Full)),
            "the log could not be written: disk full"
        );
    }
}
