//! The load bench's settings, from its environment (`benches/load.rs`'s
//! module comment lists them).

use std::time::Duration;

use anyhow::{Context, bail, ensure};

pub struct Config {
    pub requests: usize,
    pub concurrency: Vec<usize>,
    pub max_time: Duration,
    pub big_issues: usize,
    /// The calls ask for `view: "full"`.
    pub full_view: bool,
    /// The main gateway has OAuth too, and the user scenario an OAuth row
    /// (`LOAD_OAUTH`, on unless `0`).
    pub oauth: bool,
}

impl Config {
    pub fn from_env() -> anyhow::Result<Self> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let requests = match var("LOAD_REQUESTS") {
            Some(v) => v.trim().parse().context("LOAD_REQUESTS must be a number")?,
            None => 2000,
        };
        let concurrency = match var("LOAD_CONCURRENCY") {
            Some(v) => v
                .split(',')
                .map(|c| c.trim().parse::<usize>())
                .collect::<Result<Vec<_>, _>>()
                .context("LOAD_CONCURRENCY must be a comma-separated list of numbers")?,
            None => vec![1, 8, 64],
        };
        let big_issues = match var("LOAD_BIG_ISSUES") {
            Some(v) => v
                .trim()
                .parse()
                .context("LOAD_BIG_ISSUES must be a number")?,
            None => 300,
        };
        let max_secs: u64 = match var("LOAD_MAX_SECONDS") {
            Some(v) => v
                .trim()
                .parse()
                .context("LOAD_MAX_SECONDS must be a number")?,
            None => 60,
        };
        let full_view = match var("LOAD_VIEW").as_deref().map(str::trim) {
            None | Some("compact") => false,
            Some("full") => true,
            Some(_) => bail!("LOAD_VIEW must be `compact` or `full`"),
        };
        let oauth = match var("LOAD_OAUTH").as_deref().map(str::trim) {
            None | Some("1") => true,
            Some("0") => false,
            Some(_) => bail!("LOAD_OAUTH must be `1` or `0`"),
        };
        ensure!(requests > 0, "LOAD_REQUESTS must be positive");
        ensure!(
            concurrency.iter().all(|&c| c > 0),
            "LOAD_CONCURRENCY levels must be positive"
        );
        ensure!(max_secs > 0, "LOAD_MAX_SECONDS must be positive");
        Ok(Self {
            requests,
            concurrency,
            max_time: Duration::from_secs(max_secs),
            big_issues,
            full_view,
            oauth,
        })
    }
}
