//! One process per audit log: an exclusive `flock` on `audit.lock` beside
//! the log (the log itself is renamed on rotation, the lock file never is),
//! held for as long as the writer runs. The kernel drops it when the
//! process ends, however it ends. A second process pointed at the same log
//! gets [`AuditError::Locked`] after [`LOCK_WAIT`] (time for a restart's
//! old process to finish exiting). Within one process the lock is shared: a
//! flock is per open file, so a second open here would lock this process
//! out of its own log; the binary builds one application, and only tests
//! build several.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::{AUDIT_LOCK_NAME, AuditError};

/// How long a start waits for another holder of the log's lock to let go.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// The locks this process holds, by lock file.
static HELD: Mutex<Vec<(PathBuf, Weak<File>)>> = Mutex::new(Vec::new());

/// A held lock on one log; released when the last holder drops it.
#[derive(Debug)]
pub(super) struct LogLock {
    _held: Arc<File>,
}

/// Takes (or, in this process, shares) the lock on the log at `path`.
pub(super) fn lock_log(path: &Path) -> Result<LogLock, AuditError> {
    let lock_path = path.with_file_name(AUDIT_LOCK_NAME);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_path)
        .map_err(AuditError::open)?;
    let key = std::fs::canonicalize(&lock_path).map_err(AuditError::open)?;
    let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
    held.retain(|(_, lock)| lock.strong_count() > 0);
    if let Some(lock) = held
        .iter()
        .find(|(p, _)| *p == key)
        .and_then(|(_, l)| l.upgrade())
    {
        return Ok(LogLock { _held: lock });
    }
    let deadline = Instant::now() + LOCK_WAIT;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(AuditError::Locked {
                    lock: lock_path.display().to_string(),
                });
            }
            Err(std::fs::TryLockError::Error(err)) => return Err(AuditError::open(err)),
        }
    }
    let lock = Arc::new(file);
    held.push((key, Arc::downgrade(&lock)));
    Ok(LogLock { _held: lock })
}
