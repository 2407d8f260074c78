//! What `setup` needs to know: the flags first; in a terminal, a prompt for
//! each one the flags did not give (defaults in brackets, the admin token
//! read without echo); otherwise the defaults, or a clear error for what
//! has none. Each answer is checked with the gateway's own rules
//! ([`Settings::from_source`]) as soon as it is given.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use clap::Args;
use secrecy::{ExposeSecret, SecretString};

use crate::config::{ConfigError, Settings, SettingsSource};

pub const DEFAULT_BIND: &str = "127.0.0.1";
pub const DEFAULT_PORT: u16 = 8080;
pub const DEFAULT_OUTPUT: &str = "./.env";
pub const DEFAULT_OAUTH_APP_NAME: &str = "Aegis Gitea MCP";

/// How often an interactive question is asked again after a bad answer.
const MAX_TRIES: usize = 5;

/// `aegis-gitea-mcp setup`: writes an env file for the gateway, checks
/// Gitea and creates the OAuth2 application there.
#[derive(Debug, Clone, Default, Args)]
pub struct SetupArgs {
    /// Gitea base URL, e.g. https://gitea.example.com (GITEA_URL).
    #[arg(long, value_name = "URL")]
    pub gitea_url: Option<String>,
    /// Admin token for Gitea (GITEA_TOKEN); needs read:user, and write:user to
    /// create the OAuth2 application. Never echoed; prefer the environment
    /// variable to the flag, which other users may see in the process list.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "GITEA_TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<SecretString>,
    /// External URL of the gateway (PUBLIC_BASE_URL); https unless loopback
    /// [default: http://127.0.0.1:<port>].
    #[arg(long, value_name = "URL")]
    pub public_base_url: Option<String>,
    /// Address the gateway binds (MCP_HOST): an IP address or `localhost`
    /// [default: 127.0.0.1].
    #[arg(long, value_name = "HOST")]
    pub bind: Option<String>,
    /// Port the gateway binds (MCP_PORT) [default: 8080].
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// Env file to write [default: ./.env].
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    /// Replace the output file if it exists (never a symlink).
    #[arg(long)]
    pub force: bool,
    /// Do not create the OAuth2 application in Gitea (no OAuth sign-in).
    #[arg(long, conflicts_with = "oauth_app_name")]
    pub no_oauth: bool,
    /// Name of the OAuth2 application created in Gitea [default: Aegis Gitea MCP].
    #[arg(long, value_name = "NAME")]
    pub oauth_app_name: Option<String>,
    /// Never prompt: fail naming what is missing (implied when stdin is not a
    /// terminal).
    #[arg(long)]
    pub non_interactive: bool,
}

impl SetupArgs {
    /// Prompts only when asked to and stdin is a terminal.
    pub fn interactive(&self) -> bool {
        !self.non_interactive && std::io::stdin().is_terminal()
    }
}

/// Every answer, resolved and checked one by one.
#[derive(Debug, Clone)]
pub struct Answers {
    /// As given, trimmed; normalised later by [`Settings`].
    pub gitea_url: String,
    pub admin_token: SecretString,
    pub bind: String,
    pub port: u16,
    pub public_base_url: String,
    pub output: PathBuf,
    pub force: bool,
    /// `None`: no OAuth2 application (`--no-oauth`).
    pub oauth_app_name: Option<String>,
}

/// Where interactive answers come from.
pub trait Prompt {
    /// Asks `question`; an empty answer means `default` (or empty).
    fn ask(&mut self, question: &str, default: Option<&str>) -> std::io::Result<String>;
    /// Asks without echoing the answer.
    fn ask_secret(&mut self, question: &str) -> std::io::Result<String>;
    /// Tells something (a rule an answer broke).
    fn tell(&mut self, text: &str);
}

/// Prompts on stderr, reads stdin; the secret is read from the terminal
/// with echo off.
pub struct TerminalPrompt;

impl Prompt for TerminalPrompt {
    fn ask(&mut self, question: &str, default: Option<&str>) -> std::io::Result<String> {
        {
            let mut err = std::io::stderr().lock();
            match default {
                Some(d) => write!(err, "{question} [{d}]: ")?,
                None => write!(err, "{question}: ")?,
            }
            err.flush()?;
        }
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "end of input before an answer",
            ));
        }
        let answer = line.trim();
        Ok(match (answer.is_empty(), default) {
            (true, Some(d)) => d.to_owned(),
            _ => answer.to_owned(),
        })
    }

    fn ask_secret(&mut self, question: &str) -> std::io::Result<String> {
        rpassword::prompt_password(format!("{question} (input hidden): "))
    }

    fn tell(&mut self, text: &str) {
        eprintln!("  {text}");
    }
}

/// A question could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    /// Bad or missing value of a setting: the CLI reports it as a
    /// configuration error (exit code 2).
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("reading the answer to \"{question}\" failed: {why}")]
    Prompt { question: &'static str, why: String },
}

/// Resolves every answer: flag, else prompt (when `prompt` is given), else
/// default, else a [`ConfigError`] naming the flag.
pub fn resolve(
    args: SetupArgs,
    mut prompt: Option<&mut dyn Prompt>,
) -> Result<Answers, AnswerError> {
    let gitea_url = text_answer(
        args.gitea_url,
        prompt.as_deref_mut(),
        "Gitea URL",
        Fallback::Required("GITEA_URL", "--gitea-url"),
        |url| check_setting("GITEA_URL", &[("GITEA_URL", url)]),
    )?;

    let admin_token = match args.admin_token {
        Some(token) => SecretString::from(token.expose_secret().trim().to_owned()),
        None => match prompt.as_deref_mut() {
            Some(p) => ask_secret(p, "Gitea admin token")?,
            None => {
                return Err(missing(
                    "GITEA_TOKEN",
                    "--admin-token or the GITEA_TOKEN environment variable",
                ));
            }
        },
    };
    check_token(&admin_token)?;

    let bind = text_answer(
        args.bind,
        prompt.as_deref_mut(),
        "Bind address (MCP_HOST)",
        Fallback::Default(DEFAULT_BIND.to_owned()),
        |host| check_setting("MCP_HOST", &[("MCP_HOST", host)]),
    )?;
    check_setting("MCP_HOST", &[("MCP_HOST", &bind)])?;

    let port = match args.port {
        Some(port) => port,
        None => parse_port(&text_answer(
            None,
            prompt.as_deref_mut(),
            "Port (MCP_PORT)",
            Fallback::Default(DEFAULT_PORT.to_string()),
            |port| parse_port(port).map(drop),
        )?)?,
    };

    let public_base_url = text_answer(
        args.public_base_url,
        prompt.as_deref_mut(),
        "Public base URL of the gateway (PUBLIC_BASE_URL; https unless loopback)",
        Fallback::Default(default_public_base_url(&bind, port)),
        |url| check_setting("PUBLIC_BASE_URL", &[("PUBLIC_BASE_URL", url)]),
    )?;

    let oauth_app_name = oauth_app_name(args.no_oauth, args.oauth_app_name, prompt.as_deref_mut())?;
    let output = output_file(args.output, prompt)?;

    Ok(Answers {
        gitea_url,
        admin_token,
        bind,
        port,
        public_base_url,
        output,
        force: args.force,
        oauth_app_name,
    })
}

/// What an unanswered question falls back to without a terminal.
enum Fallback {
    /// This value, which a prompt also offers as its default.
    Default(String),
    /// Nothing: the answer is required, and the error names the setting
    /// and the flag that gives it.
    Required(&'static str, &'static str),
}

/// One text answer: the flag's value (trimmed), else asked (checked by
/// `check`), else the fallback.
fn text_answer(
    given: Option<String>,
    prompt: Option<&mut (dyn Prompt + '_)>,
    question: &'static str,
    fallback: Fallback,
    check: impl Fn(&str) -> Result<(), ConfigError>,
) -> Result<String, AnswerError> {
    if let Some(value) = given {
        return Ok(value.trim().to_owned());
    }
    let Some(p) = prompt else {
        return match fallback {
            Fallback::Default(value) => Ok(value),
            Fallback::Required(setting, flag) => Err(missing(setting, flag)),
        };
    };
    let default = match &fallback {
        Fallback::Default(value) => Some(value.as_str()),
        Fallback::Required(..) => None,
    };
    ask_checked(p, question, default, check)
}

/// The OAuth2 application to create: none with `--no-oauth`, else the
/// given name, else asked (or the default without a terminal).
fn oauth_app_name(
    no_oauth: bool,
    given: Option<String>,
    prompt: Option<&mut (dyn Prompt + '_)>,
) -> Result<Option<String>, AnswerError> {
    let name = if no_oauth {
        None
    } else {
        match given {
            Some(name) => Some(name.trim().to_owned()),
            None => match prompt {
                Some(p) => {
                    let create = ask_checked(
                        p,
                        "Create the OAuth2 application in Gitea, so people sign in as themselves? (y/n)",
                        Some("y"),
                        |yes| parse_yes_no(yes).map(drop),
                    )?;
                    if parse_yes_no(&create)? {
                        Some(ask_checked(
                            p,
                            "Name of the OAuth2 application",
                            Some(DEFAULT_OAUTH_APP_NAME),
                            check_app_name,
                        )?)
                    } else {
                        None
                    }
                }
                None => Some(DEFAULT_OAUTH_APP_NAME.to_owned()),
            },
        }
    };
    if let Some(name) = &name {
        check_app_name(name)?;
    }
    Ok(name)
}

/// The env file to write: given, else asked (or the default).
fn output_file(
    given: Option<PathBuf>,
    prompt: Option<&mut (dyn Prompt + '_)>,
) -> Result<PathBuf, AnswerError> {
    Ok(match given {
        Some(path) => path,
        None => match prompt {
            Some(p) => PathBuf::from(ask_checked(
                p,
                "Env file to write",
                Some(DEFAULT_OUTPUT),
                |path| {
                    if path.is_empty() {
                        Err(ConfigError::new("AEGIS_ENV_FILE", "must name a file"))
                    } else {
                        Ok(())
                    }
                },
            )?),
            None => PathBuf::from(DEFAULT_OUTPUT),
        },
    })
}

/// `http://<bind>:<port>` when the bind is loopback (or unspecified, then
/// 127.0.0.1); the gateway's own default for the default bind.
pub fn default_public_base_url(bind: &str, port: u16) -> String {
    let host = match bind.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) if ip.is_loopback() => ip.to_string(),
        Ok(std::net::IpAddr::V6(ip)) if ip.is_loopback() => format!("[{ip}]"),
        _ => DEFAULT_BIND.to_owned(),
    };
    format!("http://{host}:{port}")
}

fn missing(setting: &'static str, flag: &str) -> AnswerError {
    AnswerError::Config(ConfigError::new(
        setting,
        format!(
            "is required: pass {flag} (or run `setup` in a terminal without --non-interactive to be asked)"
        ),
    ))
}

/// Checks one setting with the gateway's rules: `pairs` plus a placeholder
/// `GITEA_URL` when the check is not about it; only an error about
/// `setting` counts.
pub(super) fn check_setting(
    setting: &'static str,
    pairs: &[(&str, &str)],
) -> Result<(), ConfigError> {
    let mut all: Vec<(&str, &str)> = pairs.to_vec();
    if !pairs.iter().any(|(k, _)| *k == "GITEA_URL") {
        all.push(("GITEA_URL", "http://127.0.0.1:3000"));
    }
    match Settings::from_source(&SettingsSource::from_pairs(all)) {
        Err(err) if err.setting == setting => Err(err),
        _ => Ok(()),
    }
}

fn check_token(token: &SecretString) -> Result<(), ConfigError> {
    let value = token.expose_secret();
    if value.is_empty() {
        return Err(ConfigError::new("GITEA_TOKEN", "must not be empty"));
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(ConfigError::new(
            "GITEA_TOKEN",
            "must not contain whitespace or control characters",
        ));
    }
    Ok(())
}

fn check_app_name(name: &str) -> Result<(), ConfigError> {
    if name.trim().is_empty() || name.chars().count() > 255 || name.chars().any(char::is_control) {
        return Err(ConfigError::new(
            "GITEA_OAUTH_CLIENT_ID",
            "the OAuth2 application name (--oauth-app-name) must be 1-255 characters without control characters",
        ));
    }
    Ok(())
}

fn parse_port(value: &str) -> Result<u16, ConfigError> {
    match value.trim().parse::<u16>() {
        Ok(port) if port > 0 => Ok(port),
        _ => Err(ConfigError::new(
            "MCP_PORT",
            "must be a port number (1-65535)",
        )),
    }
}

fn parse_yes_no(value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(true),
        "n" | "no" => Ok(false),
        _ => Err(ConfigError::new("GITEA_OAUTH_CLIENT_ID", "answer y or n")),
    }
}

/// Asks until `check` passes (at most [`MAX_TRIES`] times), telling the
/// rule each bad answer broke.
fn ask_checked(
    prompt: &mut dyn Prompt,
    question: &'static str,
    default: Option<&str>,
    check: impl Fn(&str) -> Result<(), ConfigError>,
) -> Result<String, AnswerError> {
    let mut last = None;
    for _ in 0..MAX_TRIES {
        let answer = prompt
            .ask(question, default)
            .map_err(|err| AnswerError::Prompt {
                question,
                why: err.to_string(),
            })?;
        let answer = answer.trim().to_owned();
        if answer.is_empty() && default.is_none() {
            prompt.tell("an answer is required");
            continue;
        }
        match check(&answer) {
            Ok(()) => return Ok(answer),
            Err(err) => {
                prompt.tell(&err.to_string());
                last = Some(err);
            }
        }
    }
    Err(AnswerError::Config(last.unwrap_or_else(|| {
        ConfigError::new("GITEA_URL", format!("no answer to \"{question}\""))
    })))
}

fn ask_secret(
    prompt: &mut dyn Prompt,
    question: &'static str,
) -> Result<SecretString, AnswerError> {
    for _ in 0..MAX_TRIES {
        let answer = prompt
            .ask_secret(question)
            .map_err(|err| AnswerError::Prompt {
                question,
                why: err.to_string(),
            })?;
        let answer = SecretString::from(answer.trim().to_owned());
        match check_token(&answer) {
            Ok(()) => return Ok(answer),
            // The rule only: the answer itself is never repeated.
            Err(err) => prompt.tell(&err.to_string()),
        }
    }
    Err(AnswerError::Config(ConfigError::new(
        "GITEA_TOKEN",
        "no usable admin token was given",
    )))
}

#[cfg(test)]
#[path = "answers_tests.rs"]
mod tests;
