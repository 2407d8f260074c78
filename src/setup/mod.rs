//! `aegis-gitea-mcp setup`: a first configuration in one command.
//!
//! In order, so that bad input leaves nothing behind: resolve the answers
//! (`answers`: flags, then prompts), generate the secrets (`secrets`),
//! validate everything with the gateway's own rules, check the output path
//! and create a temporary file beside it (`env_file`), check Gitea and
//! create the OAuth2 application (`gitea`), then write the env file
//! atomically and print the next steps and the connector snippets
//! (`crate::connector_snippets`). Secrets go to the file only, never to stdout or stderr.

mod answers;
mod env_file;
mod gitea;
mod secrets;

use std::io::Write;
use std::path::{Path, PathBuf};

use secrecy::{ExposeSecret, SecretString};

use crate::config::{ConfigError, Settings, SettingsSource, is_loopback_url};

pub use crate::connector_snippets::{bearer_snippets, connector_snippets};
pub use answers::SetupArgs;
use answers::{AnswerError, Answers, TerminalPrompt};
use env_file::{OutputError, PendingFile};
use gitea::{Gitea, GiteaError, OAuthApp};
use secrets::Generated;

/// Why `setup` stopped. No variant carries a secret.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A missing or invalid answer, by the gateway's rules (exit code 2).
    #[error(transparent)]
    Config(ConfigError),
    #[error("{0}")]
    Prompt(String),
    #[error(transparent)]
    Output(#[from] OutputError),
    #[error(transparent)]
    Gitea(#[from] GiteaError),
    /// OAuth2 applications exist in Gitea (name and id of each), but the
    /// file that would hold their secrets was not written.
    #[error("{cause}\n{}", deletion_advice(apps))]
    AfterApps {
        cause: String,
        apps: Vec<(String, i64)>,
    },
}

/// What to delete in Gitea after a setup that stopped past creating `apps`.
fn deletion_advice(apps: &[(String, i64)]) -> String {
    apps.iter()
        .map(|(name, id)| format!(
            "The OAuth2 application \"{name}\" (id {id}) was created in Gitea but its secret was not saved: delete it in Gitea (Settings → Applications, or DELETE /api/v1/user/applications/oauth2/{id}) before running setup again"
        ))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The two OAuth2 applications the gateway is at Gitea (`docs/oauth.md`):
/// Gitea keeps the scopes of a person's first grant to an application, so
/// reading and writing sessions need one each.
struct OAuthApps {
    /// `GITEA_OAUTH_CLIENT_ID`: writing sessions.
    read_write: OAuthApp,
    /// `GITEA_OAUTH_READ_CLIENT_ID`: reading sessions and page sign-ins.
    read: OAuthApp,
}

impl OAuthApps {
    fn created(&self) -> Vec<(String, i64)> {
        [&self.read_write, &self.read]
            .iter()
            .map(|app| (app.name.clone(), app.id))
            .collect()
    }
}

impl From<AnswerError> for SetupError {
    fn from(err: AnswerError) -> Self {
        match err {
            AnswerError::Config(c) => Self::Config(with_flag(c)),
            other => Self::Prompt(other.to_string()),
        }
    }
}

/// Adds the flag that sets `err.setting`, so the operator knows what to fix.
fn with_flag(err: ConfigError) -> ConfigError {
    let flag = match err.setting {
        "GITEA_URL" => "--gitea-url",
        "GITEA_TOKEN" => "--admin-token",
        "MCP_HOST" => "--bind",
        "MCP_PORT" => "--port",
        "PUBLIC_BASE_URL" => "--public-base-url",
        _ => return err,
    };
    if err.rule.contains(flag) {
        return err;
    }
    ConfigError::new(err.setting, format!("{} (set by {flag})", err.rule))
}

/// Runs `setup` to the end, or stops at the first failure with nothing
/// written (and, unless the failure comes after it, nothing created in
/// Gitea).
pub async fn run(args: SetupArgs) -> Result<(), SetupError> {
    let answers = if args.interactive() {
        eprintln!(
            "Setting up aegis-gitea-mcp: answer each question, or press Enter for the default in brackets."
        );
        answers::resolve(args, Some(&mut TerminalPrompt))?
    } else {
        answers::resolve(args, None)?
    };
    let secrets = Generated::new();
    let plan = Plan::new(&answers, &secrets)?;
    let pending = PendingFile::prepare(&answers.output, answers.force)?;
    let mut out = std::io::stdout();
    for warning in plan.warnings() {
        eprintln!("warning: {warning}");
    }

    let gitea = Gitea::new(&plan.gitea_url, answers.admin_token.clone())?;
    let version = gitea.version().await?;
    say(
        &mut out,
        format!("✓ Gitea {version} answers at {}", plan.gitea_url),
    );
    let user = gitea.user().await?;
    say(
        &mut out,
        format!(
            "✓ the admin token works: it is {}'s, {}",
            user.login,
            if user.is_admin {
                "a site administrator"
            } else {
                "NOT a site administrator (the static bearer and loopback mode act with this user's permissions only)"
            }
        ),
    );
    let apps = match &answers.oauth_app_name {
        None => None,
        Some(name) => Some(create_apps(&gitea, name, &plan.redirect_uri, &mut out).await?),
    };

    if let Err(err) = write_file(pending, &plan, &answers, &secrets, apps.as_ref()) {
        return Err(match apps {
            Some(apps) => SetupError::AfterApps {
                cause: err.to_string(),
                apps: apps.created(),
            },
            None => err,
        });
    }
    let summary = Summary {
        plan: &plan,
        path: &answers.output,
        oauth: apps.is_some(),
    };
    say(&mut out, summary.render());
    Ok(())
}

/// Creates the read-write application `name` and the read one
/// `name (read only)`; if the second fails, the error names the first
/// for deletion.
async fn create_apps(
    gitea: &Gitea,
    name: &str,
    redirect_uri: &str,
    out: &mut impl Write,
) -> Result<OAuthApps, SetupError> {
    let read_write = gitea.create_oauth_app(name, redirect_uri).await?;
    let read = gitea
        .create_oauth_app(&format!("{name} (read only)"), redirect_uri)
        .await
        .map_err(|err| SetupError::AfterApps {
            cause: err.to_string(),
            apps: vec![(read_write.name.clone(), read_write.id)],
        })?;
    for (app, what) in [(&read_write, "reading and writing"), (&read, "reading")] {
        say(
            out,
            format!(
                "✓ created the confidential OAuth2 application \"{}\" in Gitea (id {}) for {what} sessions, redirect URI {redirect_uri}",
                app.name, app.id
            ),
        );
    }
    Ok(OAuthApps { read_write, read })
}

/// Everything decided before Gitea is asked anything.
struct Plan {
    /// `GITEA_URL`, normalised (no trailing slash).
    gitea_url: String,
    /// `PUBLIC_BASE_URL`, normalised.
    public_base_url: String,
    /// `PUBLIC_BASE_URL/oauth/callback`, as the gateway sends it to Gitea.
    redirect_uri: String,
    /// `PUBLIC_BASE_URL/mcp`.
    mcp_url: String,
    settings: Settings,
}

/// Stands in for the OAuth client id and secret until Gitea issues them,
/// so the first validation already sees OAuth configured.
const PLACEHOLDER_CLIENT: &str = "setup-placeholder";
const PLACEHOLDER_READ_CLIENT: &str = "setup-placeholder-read";

impl Plan {
    /// Validates the answers and secrets exactly as `serve` would read them.
    fn new(answers: &Answers, secrets: &Generated) -> Result<Self, SetupError> {
        let placeholder_app = |client: &str| OAuthApp {
            id: 0,
            name: String::new(),
            client_id: client.to_owned(),
            client_secret: SecretString::from(client.to_owned()),
        };
        let placeholder = answers.oauth_app_name.as_ref().map(|_| OAuthApps {
            read_write: placeholder_app(PLACEHOLDER_CLIENT),
            read: placeholder_app(PLACEHOLDER_READ_CLIENT),
        });
        let pairs = pairs(
            &answers.gitea_url,
            &answers.public_base_url,
            answers,
            secrets,
            placeholder.as_ref(),
        );
        let settings = validate(&pairs).map_err(|e| SetupError::Config(with_flag(e)))?;
        let base = |url: &url::Url| url.as_str().trim_end_matches('/').to_owned();
        let public_base_url = base(&settings.public_base_url);
        Ok(Self {
            gitea_url: base(&settings.gitea_url),
            redirect_uri: format!("{public_base_url}/oauth/callback"),
            mcp_url: format!("{public_base_url}/mcp"),
            public_base_url,
            settings,
        })
    }

    /// Things that are allowed but probably not meant.
    fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.settings.gitea_url.scheme() == "http" && !is_loopback_url(&self.settings.gitea_url)
        {
            out.push(format!(
                "{} is plain http: the admin token will cross the network unencrypted",
                self.gitea_url
            ));
        }
        if !self.settings.binds_loopback() && is_loopback_url(&self.settings.public_base_url) {
            out.push(format!(
                "the gateway binds {} but PUBLIC_BASE_URL ({}) is a loopback URL: clients on other machines need its external https URL (--public-base-url)",
                self.settings.mcp_host, self.public_base_url
            ));
        }
        out
    }
}

/// The settings written, in file order.
fn pairs(
    gitea_url: &str,
    public_base_url: &str,
    answers: &Answers,
    secrets: &Generated,
    apps: Option<&OAuthApps>,
) -> Vec<(&'static str, String)> {
    let secret = |s: &SecretString| s.expose_secret().to_owned();
    let mut pairs = vec![
        ("GITEA_URL", gitea_url.to_owned()),
        ("GITEA_TOKEN", secret(&answers.admin_token)),
        ("MCP_HOST", answers.bind.clone()),
        ("MCP_PORT", answers.port.to_string()),
        ("PUBLIC_BASE_URL", public_base_url.to_owned()),
        ("MCP_BEARER_TOKEN", secret(&secrets.bearer_token)),
        (
            "TOKEN_ENCRYPTION_KEY",
            secret(&secrets.token_encryption_key),
        ),
        ("AUDIT_HMAC_KEY", secret(&secrets.audit_hmac_key)),
    ];
    if let Some(OAuthApps { read_write, read }) = apps {
        pairs.push(("GITEA_OAUTH_CLIENT_ID", read_write.client_id.clone()));
        pairs.push((
            "GITEA_OAUTH_CLIENT_SECRET",
            secret(&read_write.client_secret),
        ));
        pairs.push(("GITEA_OAUTH_READ_CLIENT_ID", read.client_id.clone()));
        pairs.push((
            "GITEA_OAUTH_READ_CLIENT_SECRET",
            secret(&read.client_secret),
        ));
    }
    pairs
}

/// `Settings::from_source` and the checks `serve` adds.
fn validate(pairs: &[(&'static str, String)]) -> Result<Settings, ConfigError> {
    let settings = Settings::from_source(&SettingsSource::from_pairs(
        pairs.iter().map(|(k, v)| (*k, v.as_str())),
    ))?;
    settings.check_for_serve()?;
    Ok(settings)
}

/// Renders the file, proves it reads back into valid settings through
/// dotenvy, and writes it.
fn write_file(
    pending: PendingFile,
    plan: &Plan,
    answers: &Answers,
    secrets: &Generated,
    apps: Option<&OAuthApps>,
) -> Result<(), SetupError> {
    let pairs = pairs(
        &plan.gitea_url,
        &plan.public_base_url,
        answers,
        secrets,
        apps,
    );
    let text = env_file::render(&header(plan, apps), &pairs)?;
    let read_back = dotenvy::from_read_iter(text.as_bytes())
        .collect::<Result<Vec<(String, String)>, _>>()
        .map_err(|_| {
            SetupError::Config(ConfigError::new(
                "AEGIS_ENV_FILE",
                "the rendered env file does not read back",
            ))
        })?;
    Settings::from_source(&SettingsSource::from_pairs(read_back))
        .and_then(|s| s.check_for_serve())
        .map_err(SetupError::Config)?;
    pending.commit(&text)?;
    Ok(())
}

fn header(plan: &Plan, apps: Option<&OAuthApps>) -> Vec<String> {
    let mut lines = vec![
        format!(
            "Written by `aegis-gitea-mcp setup` (version {}) at {}.",
            env!("CARGO_PKG_VERSION"),
            env_file::utc_timestamp(std::time::SystemTime::now())
        ),
        format!("Gitea: {}", plan.gitea_url),
    ];
    if let Some(OAuthApps { read_write, read }) = apps {
        lines.push(format!(
            "OAuth2 applications in Gitea: \"{}\" (id {}, reading and writing) and \"{}\" (id {}, reading), redirect URI {}",
            read_write.name, read_write.id, read.name, read.id, plan.redirect_uri
        ));
    }
    lines.push("This file holds secrets: keep it mode 0600 and out of version control.".to_owned());
    lines.push(
        "Every setting is described in docs/configuration.md; the environment wins over this file."
            .to_owned(),
    );
    lines
}

/// What stdout gets at the end: where the file is, what to run, how to
/// connect clients. Never a secret.
struct Summary<'a> {
    plan: &'a Plan,
    path: &'a Path,
    oauth: bool,
}

impl Summary<'_> {
    fn render(&self) -> String {
        let shown = std::path::absolute(self.path).unwrap_or_else(|_| PathBuf::from(self.path));
        let shown = shown.display().to_string();
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        line(format!(
            "✓ wrote {shown} (mode 0600) with GITEA_URL, GITEA_TOKEN, MCP_HOST, MCP_PORT, PUBLIC_BASE_URL{}, and a fresh MCP_BEARER_TOKEN, TOKEN_ENCRYPTION_KEY and AUDIT_HMAC_KEY",
            if self.oauth {
                ", GITEA_OAUTH_CLIENT_ID, GITEA_OAUTH_CLIENT_SECRET, GITEA_OAUTH_READ_CLIENT_ID, GITEA_OAUTH_READ_CLIENT_SECRET"
            } else {
                ""
            }
        ));
        line("  The secrets are in the file only; they are not shown here.".to_owned());
        line(String::new());
        line("Next: start the gateway".to_owned());
        line(format!(
            "  aegis-gitea-mcp --env-file {} serve",
            crate::connector_snippets::shell_word(&shown)
        ));
        if self.oauth {
            line(
                "  (the store is created in ./data, or DATA_DIR, of the directory it runs in)"
                    .to_owned(),
            );
        }
        line(String::new());
        line(format!(
            "Then connect MCP clients to {}{}",
            self.plan.mcp_url,
            if self.oauth {
                ": each person signs in at Gitea and acts as themselves."
            } else {
                "."
            }
        ));
        let snippets = if self.oauth {
            connector_snippets(&self.plan.mcp_url)
        } else {
            line(format!(
                "  Without OAuth every request needs the header `Authorization: Bearer <MCP_BEARER_TOKEN>` (the value is in {shown}), and every caller acts with GITEA_TOKEN. Hosted connectors (claude.ai, Le Chat) cannot send it: they need OAuth, which `aegis-gitea-mcp setup` adds when it may create the OAuth2 application (docs/oauth.md)."
            ));
            bearer_snippets(&self.plan.mcp_url)
        };
        for snippet in snippets {
            line(String::new());
            line(snippet.client.to_owned());
            line(format!("  {}", snippet.how));
            for l in snippet.snippet.lines() {
                line(format!("    {l}"));
            }
        }
        out
    }
}

fn say(out: &mut impl Write, text: impl AsRef<str>) {
    let _ = writeln!(out, "{}", text.as_ref().trim_end_matches('\n'));
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(public: &str, bind: &str, oauth: bool) -> Answers {
        Answers {
            gitea_url: "https://gitea.example.com/".to_owned(),
            admin_token: SecretString::from("admin-token-value".to_owned()),
            bind: bind.to_owned(),
            port: 8080,
            public_base_url: public.to_owned(),
            output: PathBuf::from("./.env"),
            force: false,
            oauth_app_name: oauth.then(|| "Aegis Gitea MCP".to_owned()),
        }
    }

    #[test]
    fn the_plan_normalises_urls_like_the_gateway() {
        let plan = Plan::new(
            &answers("https://MCP.example.com/", "0.0.0.0", true),
            &Generated::new(),
        )
        .unwrap();
        assert_eq!(plan.gitea_url, "https://gitea.example.com");
        assert_eq!(plan.public_base_url, "https://mcp.example.com");
        assert_eq!(plan.redirect_uri, "https://mcp.example.com/oauth/callback");
        assert_eq!(plan.mcp_url, "https://mcp.example.com/mcp");
        assert!(plan.warnings().is_empty());
    }

    #[test]
    fn plain_http_off_loopback_is_refused_naming_the_flag() {
        let Err(SetupError::Config(err)) = Plan::new(
            &answers("http://mcp.example.com", "0.0.0.0", true),
            &Generated::new(),
        ) else {
            panic!("accepted");
        };
        assert_eq!(err.setting, "PUBLIC_BASE_URL");
        assert!(err.rule.contains("--public-base-url"), "{}", err.rule);
    }

    #[test]
    fn a_public_bind_with_a_loopback_url_is_a_warning() {
        let plan = Plan::new(
            &answers("http://127.0.0.1:8080", "0.0.0.0", false),
            &Generated::new(),
        )
        .unwrap();
        assert!(plan.warnings().iter().any(|w| w.contains("binds 0.0.0.0")));
    }

    #[test]
    fn the_summary_names_the_file_and_command_and_holds_no_secret() {
        let a = answers("http://127.0.0.1:8080", "127.0.0.1", true);
        let secrets = Generated::new();
        let plan = Plan::new(&a, &secrets).unwrap();
        let text = Summary {
            plan: &plan,
            path: Path::new("/srv/aegis/.env"),
            oauth: true,
        }
        .render();
        assert!(text.contains("aegis-gitea-mcp --env-file /srv/aegis/.env serve"));
        assert!(text.contains("claude mcp add --transport http aegis http://127.0.0.1:8080/mcp"));
        assert!(!text.contains("admin-token-value"));
        for s in secrets.all() {
            assert!(!text.contains(s.expose_secret()));
        }
    }

    #[test]
    fn a_failed_write_after_the_apps_names_each_for_deletion() {
        let err = SetupError::AfterApps {
            cause: "/srv/.env could not be written: No space left on device".to_owned(),
            apps: vec![
                ("Aegis Gitea MCP".to_owned(), 42),
                ("Aegis Gitea MCP (read only)".to_owned(), 43),
            ],
        };
        let msg = err.to_string();
        assert!(msg.starts_with("/srv/.env could not be written"), "{msg}");
        assert!(msg.contains("\"Aegis Gitea MCP\" (id 42)"), "{msg}");
        assert!(
            msg.contains("\"Aegis Gitea MCP (read only)\" (id 43)"),
            "{msg}"
        );
        for id in [42, 43] {
            assert!(
                msg.contains(&format!("DELETE /api/v1/user/applications/oauth2/{id}")),
                "{msg}"
            );
        }
    }

    #[test]
    fn flags_are_added_to_the_settings_they_set() {
        let err = with_flag(ConfigError::new("MCP_HOST", "must be an IP address"));
        assert_eq!(err.rule, "must be an IP address (set by --bind)");
        let err = with_flag(ConfigError::new("DATA_DIR", "x"));
        assert_eq!(err.rule, "x");
    }
}
