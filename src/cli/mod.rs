//! The command line: `serve` (HTTP), `stdio`, `catalog` and `policy
//! check` (`catalog_listing`), `setup` (in `crate::setup`), `store rekey`,
//! `migrate`, `backup` and `restore` (`store_commands`), `audit verify`.
//! Builds the application from settings exactly as the tests do.
//! Configuration errors exit with code 2 and name the setting, never its
//! value; a store whose schema this binary will not serve on exits 3.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

mod allocator;
mod catalog_listing;
mod serving;
mod store_commands;
use catalog_listing::{configured_catalog, print_catalog};
use serving::{bind, serve_http};

use clap::{Parser, Subcommand};

use crate::app::{App, BuildError};
use crate::config::{ConfigError, EnvFileChoice, Settings, SettingsSource, select_env_file};

#[derive(Debug, Parser)]
#[command(
    name = "aegis-gitea-mcp",
    version = crate::build_info::VERSION,
    about = "An MCP gateway to Gitea"
)]
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
    /// Apply pending schema migrations (after a backup, on SQLite), as a
    /// step before a rollout of replicas that do not migrate themselves
    /// (STORE_MIGRATE=never). Exits 3 when this binary will not serve on
    /// the store's schema.
    Migrate {
        /// Change nothing: print the store's schema, what is pending, and
        /// whether the binaries serving now can live with it.
        #[arg(long)]
        check: bool,
    },
    /// Copy the SQLite store and the audit log into PATH (a new or empty
    /// folder) while the gateway serves, with a manifest of every file.
    Backup { path: PathBuf },
    /// Put the backup in PATH back into DATA_DIR (the gateway stopped),
    /// after checking it and that TOKEN_ENCRYPTION_KEY opens it. An audit
    /// log in DATA_DIR is kept; a store there needs --force, which moves it
    /// aside.
    Restore {
        path: PathBuf,
        #[arg(long)]
        force: bool,
    },
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
        Err(CliError::Schema(err)) => {
            eprintln!("store schema: {err}");
            ExitCode::from(SCHEMA_EXIT_CODE)
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

/// The exit code of a binary that will not serve on the store's schema
/// (too new for it, migrations pending under `STORE_MIGRATE=never`, a
/// migration that failed part-way): retrying cannot help, another binary
/// or a restore can.
pub const SCHEMA_EXIT_CODE: u8 = 3;

enum CliError {
    Config(ConfigError),
    /// The store's schema does not fit this binary: exit 3, naming both
    /// levels and the way back.
    Schema(crate::store::schema::SchemaRefusal),
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
            BuildError::Store(crate::store::StoreError::Schema(refusal)) => Self::Schema(refusal),
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
    match cli.command {
        Command::Serve => serve(settings.ok_or_else(missing_settings)?).await,
        Command::Stdio => stdio(settings.ok_or_else(missing_settings)?).await,
        Command::Setup(args) => crate::setup::run(*args).await.map_err(|err| match err {
            crate::setup::SetupError::Config(c) => CliError::Config(c),
            other => CliError::other(other),
        }),
        Command::Store { command } => {
            let (settings, ignored) = load_settings(cli.env_file.as_deref())?;
            if let Some(why) = ignored {
                tracing::warn!("{why}");
            }
            match command {
                StoreCommand::Rekey => store_commands::rekey(&settings).await,
                StoreCommand::Migrate { check } => store_commands::migrate(&settings, check).await,
                StoreCommand::Backup { path } => store_commands::backup(&settings, &path).await,
                StoreCommand::Restore { path, force } => {
                    store_commands::restore(&settings, &path, force).await
                }
            }
        }
        Command::Audit {
            command: AuditCommand::Verify { paths },
        } => verify_audit(cli.env_file.as_deref(), paths),
        Command::Health { url } => probe_health(url).await,
        Command::Catalog { json, toolsets } => {
            let (catalog, _) = configured_catalog(cli.env_file.as_deref()).await?;
            print_catalog(&catalog, json, toolsets);
            Ok(())
        }
        Command::Policy {
            command: PolicyCommand::Check { path },
        } => check_policy(cli.env_file.as_deref(), path).await,
    }
}

/// `serve`: binds both listeners, builds the app and serves HTTP.
async fn serve(settings: Settings) -> Result<(), CliError> {
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

/// `stdio`: builds the app and serves MCP over stdin and stdout.
async fn stdio(settings: Settings) -> Result<(), CliError> {
    settings.check_for_stdio()?;
    let app = App::build(settings).await?;
    app.check_gitea().await;
    allocator::release_free_memory();
    let served = crate::mcp::transport::serve_stdio(app.call_services().clone()).await;
    app.audit().flush().await;
    served.map_err(CliError::Other)
}

/// `health`: asks `url`, or this host's `/health` on `MCP_PORT`.
async fn probe_health(url: Option<String>) -> Result<(), CliError> {
    let url = match url {
        Some(url) => url,
        None => {
            let port = match std::env::var("MCP_PORT") {
                Err(_) => 8080,
                Ok(v) => v
                    .trim()
                    .parse::<u16>()
                    .map_err(|_| ConfigError::new("MCP_PORT", "must be a port number (0-65535)"))?,
            };
            format!("http://127.0.0.1:{port}/health")
        }
    };
    crate::http::health::probe(&url)
        .await
        .map_err(CliError::other)
}

/// `policy check`: reads the policy file at `path` (default `POLICY_FILE`)
/// against the configured catalog and lists its rules.
async fn check_policy(
    env_file: Option<&std::path::Path>,
    path: Option<PathBuf>,
) -> Result<(), CliError> {
    let (catalog, settings) = configured_catalog(env_file).await?;
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
