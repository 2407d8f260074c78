//! Where settings come from: the process environment, plus an env file.
//!
//! `./.env` is read only when it is a regular file (not a symlink), owned by
//! the current user and not readable or writable by anybody else (mode 0600);
//! otherwise it is ignored with a warning, because a planted `.env` in the
//! working directory must not be able to redirect the gateway. A file named
//! explicitly (`--env-file`, `AEGIS_ENV_FILE`) must exist and be a regular
//! file. Variables already in the environment always win.

use std::collections::HashMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ConfigError;

/// The merged view of settings: environment over env file.
#[derive(Debug, Default, Clone)]
pub struct SettingsSource {
    values: HashMap<String, String>,
}

impl SettingsSource {
    /// From explicit pairs (tests, embedding).
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            values: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// The env file's variables, then the process environment over them.
    pub fn load(env_file: &EnvFileChoice) -> Result<Self, ConfigError> {
        let mut values = HashMap::new();
        if let EnvFileChoice::Use(path) = env_file {
            let iter = dotenvy::from_path_iter(path).map_err(|_| {
                ConfigError::new(
                    "AEGIS_ENV_FILE",
                    format!("the env file {} could not be read", path.display()),
                )
            })?;
            for item in iter {
                let (key, value) = item.map_err(|err| env_file_error(path, &err))?;
                values.insert(key, value);
            }
        }
        for (key, value) in std::env::vars_os() {
            if let (Some(k), Some(v)) = (key.to_str(), value.to_str()) {
                values.insert(k.to_owned(), v.to_owned());
            }
        }
        Ok(Self { values })
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }
}

/// What is wrong with an env file: its path, the line number and the
/// problem, never the line's text (it may hold a secret).
fn env_file_error(path: &Path, err: &dotenvy::Error) -> ConfigError {
    let text = std::fs::read(path).unwrap_or_default();
    let (line, problem) = match err {
        dotenvy::Error::LineParse(bad, _) => match find_line(&text, bad) {
            Some((number, line)) => (Some(number), line_problem(&line)),
            None => (None, "a line that is not KEY=VALUE".to_owned()),
        },
        _ => match std::str::from_utf8(&text) {
            // Binary junk: where the text stops being UTF-8.
            Err(utf8) => (
                Some(
                    1 + text[..utf8.valid_up_to()]
                        .iter()
                        .filter(|&&b| b == b'\n')
                        .count(),
                ),
                "not UTF-8 text".to_owned(),
            ),
            Ok(_) => (None, "it could not be read".to_owned()),
        },
    };
    let at = line.map_or(String::new(), |n| format!(", line {n}"));
    ConfigError::new(
        "AEGIS_ENV_FILE",
        format!("the env file {}{at}: {problem}", path.display()),
    )
}

/// The 1-based number and the text of the line the parser refused. The
/// parser hands back the whole line, or only its value (after `=`), so the
/// line is the first one that is, or ends with, what it handed back.
fn find_line(text: &[u8], bad: &str) -> Option<(usize, String)> {
    let first = bad.lines().next()?.trim();
    String::from_utf8_lossy(text)
        .lines()
        .enumerate()
        .find(|(_, line)| {
            let line = line.trim();
            line == first || (!first.is_empty() && line.ends_with(first))
        })
        .map(|(index, line)| (index + 1, line.to_owned()))
}

/// Why the parser refused `line`, in words, without quoting it.
fn line_problem(line: &str) -> String {
    let Some((key, value)) = line.split_once('=') else {
        return "not KEY=VALUE (no `=`)".to_owned();
    };
    let value = value.trim_start();
    for quote in ['"', '\''] {
        if value.starts_with(quote) && value.matches(quote).count() % 2 == 1 {
            return "a quote that is never closed".to_owned();
        }
    }
    if line.chars().any(|c| c.is_control() && c != '\t') {
        return "a control character".to_owned();
    }
    if !value.starts_with(['"', '\'']) && value.contains(char::is_whitespace) {
        return "a space in an unquoted value (put the value in quotes)".to_owned();
    }
    format!(
        "the value of `{}` cannot be read",
        key.trim().chars().take(64).collect::<String>()
    )
}

/// The outcome of choosing an env file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvFileChoice {
    Use(PathBuf),
    /// No file; the reason, when there was a candidate, is worth a warning.
    None {
        ignored: Option<String>,
    },
}

/// Picks the env file: the explicit one if named, else `./.env` in `cwd`
/// when it passes the ownership and mode rules.
pub fn select_env_file(explicit: Option<&Path>, cwd: &Path) -> Result<EnvFileChoice, ConfigError> {
    if let Some(path) = explicit {
        let meta = std::fs::metadata(path)
            .map_err(|_| ConfigError::new("AEGIS_ENV_FILE", "the named env file does not exist"))?;
        if !meta.is_file() {
            return Err(ConfigError::new(
                "AEGIS_ENV_FILE",
                "the named env file is not a regular file",
            ));
        }
        return Ok(EnvFileChoice::Use(path.to_path_buf()));
    }
    let candidate = cwd.join(".env");
    let Ok(meta) = std::fs::symlink_metadata(&candidate) else {
        return Ok(EnvFileChoice::None { ignored: None });
    };
    let reason = if meta.file_type().is_symlink() {
        Some("it is a symlink")
    } else if !meta.is_file() {
        Some("it is not a regular file")
    } else if meta.uid() != rustix::process::geteuid().as_raw() {
        Some("it is not owned by the current user")
    } else if meta.permissions().mode() & 0o077 != 0 {
        Some("its mode is not 0600 (group or others have access)")
    } else {
        None
    };
    Ok(match reason {
        None => EnvFileChoice::Use(candidate),
        Some(why) => EnvFileChoice::None {
            ignored: Some(format!("./.env ignored: {why}")),
        },
    })
}
