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
                ConfigError::new("AEGIS_ENV_FILE", "the env file could not be read")
            })?;
            for item in iter {
                let (key, value) = item.map_err(|_| {
                    ConfigError::new(
                        "AEGIS_ENV_FILE",
                        "the env file has a line that is not KEY=VALUE",
                    )
                })?;
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
