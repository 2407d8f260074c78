//! The `fixture.json` of a seeded Gitea, loaded and checked, with accessors.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

/// `fixture.json` written by `tests/e2e/seed.py`.
pub struct Fixture {
    json: Value,
    path: PathBuf,
}

impl Fixture {
    pub fn load() -> Self {
        let dir = std::env::var("AEGIS_E2E_DIR").unwrap_or_else(|_| "/tmp/aegis-e2e".into());
        let path = PathBuf::from(dir).join("fixture.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read the e2e fixture {} ({e}).\n\
                 These tests need a real, seeded Gitea: run `tests/e2e/gitea.sh start` \
                 (and set AEGIS_E2E_DIR if you used another state dir).",
                path.display()
            )
        });
        let json: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        assert_eq!(
            json["fixture_version"],
            1,
            "{}: unsupported fixture_version",
            path.display()
        );
        let fx = Self { json, path };
        fx.check_reachable();
        fx
    }

    /// A fixture left behind by a stopped instance would turn every call into
    /// `upstream_unreachable`; say so up front instead.
    fn check_reachable(&self) {
        let url = url::Url::parse(&self.gitea_url()).expect("gitea_url is a URL");
        let addr = url
            .socket_addrs(|| None)
            .ok()
            .and_then(|a| a.into_iter().next())
            .expect("gitea_url has a host and port");
        if let Err(e) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(3)) {
            panic!(
                "the Gitea of {} ({}) does not answer ({e}): run `tests/e2e/gitea.sh start` \
                 (or `tests/e2e/gitea.sh start --keep` to reuse its state)",
                self.path.display(),
                self.gitea_url()
            );
        }
    }

    /// The value at JSON pointer `pointer`; panics naming the key when absent.
    pub fn get(&self, pointer: &str) -> &Value {
        self.json
            .pointer(pointer)
            .filter(|v| !v.is_null())
            .unwrap_or_else(|| panic!("{}: key {pointer} is missing", self.path.display()))
    }

    pub fn str(&self, pointer: &str) -> String {
        match self.get(pointer) {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    pub fn gitea_url(&self) -> String {
        self.str("/gitea_url")
    }
    pub fn admin_token(&self) -> String {
        self.str("/admin/token")
    }
    pub fn admin_login(&self) -> String {
        self.str("/admin/login")
    }
    pub fn user_login(&self) -> String {
        self.str("/user/login")
    }
    pub fn owner(&self) -> String {
        self.str("/repo/owner")
    }
    pub fn repo(&self) -> String {
        self.str("/repo/name")
    }
}
