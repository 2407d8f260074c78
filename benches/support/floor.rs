//! `floor-rmcp` (`../shared/perf/floor/`: rmcp configured as the gateway's
//! transport, one tool, a plain bearer compare, nothing else) as a child
//! process of the load bench, against the bench's own fake Gitea: the
//! floor row of the user scenario. Its CPU time is read from `/proc`, so
//! the row's CPU per call is the bench process's plus the floor's.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};

/// The floor server, killed when dropped.
pub struct Floor {
    child: Child,
    pub addr: SocketAddr,
}

impl Floor {
    /// `LOAD_FLOOR_BIN`, when set: the `floor-rmcp` binary to measure.
    pub fn binary_from_env() -> Option<PathBuf> {
        std::env::var_os("LOAD_FLOOR_BIN")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }

    /// Starts `binary` on a free loopback port, in front of `upstream`,
    /// and waits until it listens.
    pub async fn spawn(
        binary: &std::path::Path,
        upstream: SocketAddr,
        gitea_token: &str,
        bearer: &str,
    ) -> anyhow::Result<Self> {
        // A port the kernel just handed out and took back; the floor binds it.
        let port = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
            .local_addr()?
            .port();
        let child = Command::new(binary)
            .env("GITEA_URL", format!("http://{upstream}"))
            .env("GITEA_TOKEN", gitea_token)
            .env("MCP_BEARER_TOKEN", bearer)
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("LOAD_FLOOR_BIN={}: could not start", binary.display()))?;
        let floor = Self {
            child,
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(floor.addr).await.is_ok() {
                return Ok(floor);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!(
            "{} did not listen on {} within 5 s",
            binary.display(),
            floor.addr
        )
    }

    /// The floor's CPU time so far (user and system), from `/proc/PID/stat`.
    pub fn cpu(&self) -> anyhow::Result<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))?;
        // The fields after the command name, which is in parentheses and
        // may hold spaces: utime and stime are the 12th and 13th of them.
        let after_name = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .context("/proc/PID/stat without a command name")?;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        let ticks = |i: usize| -> anyhow::Result<u64> {
            Ok(fields.get(i).context("/proc/PID/stat is short")?.parse()?)
        };
        let per_second = clock_ticks_per_second();
        Ok(Duration::from_secs_f64(
            (ticks(11)? + ticks(12)?) as f64 / per_second,
        ))
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}
