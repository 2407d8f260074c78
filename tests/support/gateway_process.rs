//! The gateway binary as a child process, for tests that need what only a
//! process has: `kill -9`, a file-size limit standing in for a full disk,
//! and the `audit verify` command.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{ADMIN_TOKEN, BEARER, FakeGitea};

pub const BIN: &str = env!("CARGO_BIN_EXE_aegis-gitea-mcp");

/// A free loopback port (free when asked; the gateway binds it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// How to start `serve`: in front of `fake`, with `data` as `DATA_DIR` and
/// `audit_key` as `AUDIT_HMAC_KEY`.
pub struct ServeProcess<'a> {
    pub fake: &'a FakeGitea,
    pub data: &'a Path,
    pub port: u16,
    pub audit_key: &'a str,
    /// `RLIMIT_FSIZE` in bytes: a write past it fails with `EFBIG`, the
    /// way a full disk fails a write with `ENOSPC`.
    pub max_file_bytes: Option<u64>,
    /// `RLIMIT_NOFILE`: open descriptors at most (a common systemd limit
    /// is 1024).
    pub max_open_files: Option<u64>,
    /// Where stderr goes (under the same file-size limit); `None`: nowhere.
    pub stderr_file: Option<&'a Path>,
    /// More settings.
    pub extra: &'a [(&'a str, &'a str)],
}

impl<'a> ServeProcess<'a> {
    /// `serve` in front of `fake` with no limits and no more settings.
    pub fn new(fake: &'a FakeGitea, data: &'a Path, port: u16, audit_key: &'a str) -> Self {
        Self {
            fake,
            data,
            port,
            audit_key,
            max_file_bytes: None,
            max_open_files: None,
            stderr_file: None,
            extra: &[],
        }
    }

    pub fn spawn(&self) -> Child {
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .env_clear()
            .env("GITEA_URL", &self.fake.url)
            .env("GITEA_TOKEN", ADMIN_TOKEN)
            .env("MCP_BEARER_TOKEN", BEARER)
            .env("MCP_PORT", self.port.to_string())
            .env("DATA_DIR", self.data)
            .env("AUDIT_HMAC_KEY", self.audit_key)
            .env("RUST_LOG", "error")
            .stdout(Stdio::null())
            .stderr(match self.stderr_file {
                Some(path) => Stdio::from(std::fs::File::create(path).unwrap()),
                None => Stdio::null(),
            });
        cmd.envs(self.extra.iter().copied());
        let open_files = self.max_open_files;
        let file_bytes = self.max_file_bytes;
        if open_files.is_some() || file_bytes.is_some() {
            // SAFETY: between fork and exec only async-signal-safe calls
            // (setrlimit, signal) run, and nothing is allocated.
            unsafe {
                cmd.pre_exec(move || {
                    if let Some(limit) = open_files {
                        set_limit(libc::RLIMIT_NOFILE, limit)?;
                    }
                    if let Some(limit) = file_bytes {
                        // Ignored, SIGXFSZ would otherwise kill the process
                        // instead of failing the write; it survives exec.
                        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                        // The soft limit only, so the test can lift it
                        // later (`lift_file_size_limit`) without privilege.
                        set_soft_limit(libc::RLIMIT_FSIZE, limit)?;
                    }
                    Ok(())
                });
            }
        }
        cmd.spawn().unwrap()
    }
}

/// Lifts the file-size limit of the running gateway `pid`: the disk has
/// room again.
pub fn lift_file_size_limit(pid: u32) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit writes the old limit into one rlimit we own.
    let read = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_FSIZE,
            std::ptr::null(),
            &mut limit,
        )
    };
    assert_eq!(read, 0, "prlimit: {}", std::io::Error::last_os_error());
    let unlimited = libc::rlimit {
        rlim_cur: limit.rlim_max,
        rlim_max: limit.rlim_max,
    };
    // SAFETY: prlimit reads one rlimit we own and writes nothing back.
    let done = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_FSIZE,
            &unlimited,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(done, 0, "prlimit: {}", std::io::Error::last_os_error());
}

/// `setrlimit(resource, limit)` for the soft limit, the hard one left as
/// it is; for `pre_exec` (async-signal-safe).
fn set_soft_limit(resource: libc::__rlimit_resource_t, limit: u64) -> std::io::Result<()> {
    let mut rlimit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write one rlimit we own.
    if unsafe { libc::getrlimit(resource, &mut rlimit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    rlimit.rlim_cur = limit as libc::rlim_t;
    if unsafe { libc::setrlimit(resource, &rlimit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `setrlimit(resource, limit)` for both the soft and the hard limit; for
/// `pre_exec` (async-signal-safe).
fn set_limit(resource: libc::__rlimit_resource_t, limit: u64) -> std::io::Result<()> {
    let rlimit = libc::rlimit {
        rlim_cur: limit as libc::rlim_t,
        rlim_max: limit as libc::rlim_t,
    };
    // SAFETY: setrlimit reads one rlimit we own.
    if unsafe { libc::setrlimit(resource, &rlimit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Waits until the gateway accepts connections on `port`.
pub async fn wait_ready(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the gateway did not start");
}

/// `audit verify [files]` with the key (or not): (exit code, stdout).
pub fn audit_verify(data_dir: &Path, key: Option<&str>, files: &[&Path]) -> (i32, String) {
    let mut cmd = Command::new(BIN);
    cmd.arg("audit")
        .arg("verify")
        .args(files)
        .env_clear()
        .env("DATA_DIR", data_dir)
        .current_dir(data_dir);
    if let Some(k) = key {
        cmd.env("AUDIT_HMAC_KEY", k);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}
