//! The forwarder's cursor: the sequence number of the last entry the sink
//! took, in `DATA_DIR/audit.forward`, so that a restart resumes where the
//! sink left off. Written to a temporary file, fsynced and renamed: a crash
//! leaves the old cursor or the new one, never a torn one (at worst a few
//! entries are sent again).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The cursor's file name inside `DATA_DIR`.
pub const CURSOR_FILE_NAME: &str = "audit.forward";

/// The persisted cursor of one data dir.
#[derive(Debug, Clone)]
pub struct Cursor {
    path: PathBuf,
}

impl Cursor {
    pub fn new(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(CURSOR_FILE_NAME),
        }
    }

    /// The last forwarded sequence number; 0 when nothing was forwarded
    /// yet. A file that is not a number is an error: forwarding everything
    /// again, or nothing, would both be wrong.
    pub fn load(&self) -> io::Result<u64> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => text.trim().parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} does not hold a sequence number", self.path.display()),
                )
            }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(err) => Err(err),
        }
    }

    /// Records `seq` as forwarded.
    pub fn store(&self, seq: u64) -> io::Result<()> {
        let temporary = self.path.with_extension("forward.tmp");
        let mut file = std::fs::File::create(&temporary)?;
        writeln!(file, "{seq}")?;
        file.sync_all()?;
        std::fs::rename(&temporary, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_data_dir_has_forwarded_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Cursor::new(dir.path()).load().unwrap(), 0);
    }

    #[test]
    fn a_stored_cursor_is_what_the_next_start_loads() {
        let dir = tempfile::tempdir().unwrap();
        Cursor::new(dir.path()).store(41).unwrap();
        Cursor::new(dir.path()).store(42).unwrap();
        assert_eq!(Cursor::new(dir.path()).load().unwrap(), 42);
    }

    #[test]
    fn a_damaged_cursor_is_an_error_not_a_guess() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CURSOR_FILE_NAME), "forty-two").unwrap();
        assert!(Cursor::new(dir.path()).load().is_err());
    }
}
