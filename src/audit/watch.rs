//! What tells the writer that the log's path may no longer lead to its
//! open file, without looking the path up before every write.
//!
//! The writer checks, before each entry, that `audit.log` is still the file
//! it holds open, and writable (`docs/audit.md`, "Faults"). Looking the path
//! up (`statx`) before each entry, two entries a call, was a visible share
//! of the gateway's own work per call (`docs/benchmarks.md`, issue 30). An
//! inotify watch answers the same question for the price of one `read`
//! that finds nothing: the kernel queues its events synchronously with the
//! rename, unlink or chmod that causes them, so a write after any of them
//! sees the event, as it would have seen the changed path.
//!
//! Watched: the file (its attributes, which include its link count: it is
//! deleted or renamed over; it is moved away) and every directory above it
//! (the same), and each of those names itself where it is a symbolic link
//! (pointed elsewhere, it is replaced). Any event, a full event queue, or an error makes
//! the writer look the path up as before, and so does a watch that could
//! not be set up (inotify's limits reached): then every write looks it up.

use std::fs::File;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};
use rustix::io::Errno;

/// An inotify watch on the log's file and the directories above it.
pub(super) struct PathWatch {
    /// `None`: no watch could be set up, and every write looks the path up.
    inotify: Option<OwnedFd>,
    /// The path is looked up at the next write, whatever the watch says:
    /// set at first, since the watch was set up after the file was opened.
    look_up: bool,
}

impl PathWatch {
    /// Watches `path` (`file` is what it led to when opened) and every
    /// directory above it; no watch on a filesystem that does not report
    /// every change through inotify (NFS, FUSE, anything not known local).
    pub fn new(path: &Path, file: &File) -> Self {
        let inotify = match local_filesystem(file).and_then(|()| watch(path)) {
            Ok(fd) => Some(fd),
            Err(err) => {
                tracing::warn!(
                    error = %err,
                    "no inotify watch on the audit log: its path is looked up before every entry"
                );
                None
            }
        };
        Self {
            inotify,
            look_up: true,
        }
    }

    /// Whether there is a watch (else every write looks the path up).
    pub fn is_watching(&self) -> bool {
        self.inotify.is_some()
    }

    /// Whether the path must be looked up before the next write: something
    /// happened to the file or a directory above it since the last call, or
    /// there is no watch to say. Drains the events it read.
    pub fn path_may_have_changed(&mut self) -> bool {
        let Some(fd) = &self.inotify else {
            return true;
        };
        let mut changed = std::mem::take(&mut self.look_up);
        let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
        loop {
            match rustix::io::read(fd, &mut buf) {
                Ok((read, _)) if !read.is_empty() => changed = true,
                // A read of an inotify descriptor never returns 0 bytes;
                // should it, the queue is taken as empty.
                Ok(_) => return changed,
                Err(Errno::WOULDBLOCK) => return changed,
                Err(Errno::INTR) => {}
                // Whatever went wrong, the lookup answers instead.
                Err(_) => return true,
            }
        }
    }
}

/// Filesystems whose every change, to a file or a name, is made by this
/// kernel and so reported by inotify: ext4, XFS, Btrfs, tmpfs, overlayfs,
/// ZFS, F2FS. On NFS, CIFS or FUSE another machine or process can change
/// the path unseen, and an unlink may be a rename the watch does not see.
const LOCAL_FILESYSTEMS: [u64; 7] = [
    0xEF53,
    0x5846_5342,
    0x9123_683E,
    0x0102_1994,
    0x794C_7630,
    0x2FC1_2FC1,
    0xF2F5_2010,
];

fn local_filesystem(file: &File) -> rustix::io::Result<()> {
    let kind = rustix::fs::fstatfs(file)?.f_type;
    if u64::try_from(kind).is_ok_and(|kind| LOCAL_FILESYSTEMS.contains(&kind)) {
        Ok(())
    } else {
        Err(Errno::NOTSUP)
    }
}

/// A non-blocking inotify descriptor watching `path` and its ancestors.
fn watch(path: &Path) -> rustix::io::Result<OwnedFd> {
    let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
    // ATTRIB covers the link count (deleted, renamed over) and the mode.
    let mask = WatchFlags::ATTRIB | WatchFlags::MOVE_SELF | WatchFlags::DELETE_SELF;
    // Lexical: a symbolic link on the way stays a component of its own.
    let absolute = std::path::absolute(path).map_err(|_| Errno::INVAL)?;
    for name in absolute.ancestors() {
        // The name itself, should it be a symbolic link (pointed elsewhere,
        // it is replaced), then what it leads to. For any other name both
        // are one inode, watched once.
        inotify::add_watch(&fd, name, mask | WatchFlags::DONT_FOLLOW)?;
        inotify::add_watch(&fd, name, mask)?;
    }
    // And every directory on the way to where the links lead (a directory
    // above a link's target moved away sends nothing to the target).
    // Without links on the way, those are the directories above, watched.
    let resolved = std::fs::canonicalize(path).map_err(|_| Errno::NOENT)?;
    if resolved != absolute {
        for name in resolved.ancestors() {
            inotify::add_watch(&fd, name, mask)?;
        }
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watched(dir: &Path) -> (std::path::PathBuf, std::fs::File, PathWatch) {
        let path = dir.join("audit.log");
        let file = std::fs::File::create(&path).unwrap();
        let mut watch = PathWatch::new(&path, &file);
        assert!(watch.is_watching(), "a local filesystem");
        assert!(watch.path_may_have_changed(), "looked up once at first");
        (path, file, watch)
    }

    #[test]
    fn writes_to_the_file_are_no_change() {
        let dir = tempfile::tempdir().unwrap();
        let (_path, mut file, mut watch) = watched(dir.path());
        std::io::Write::write_all(&mut file, b"entry\n").unwrap();
        file.sync_data().unwrap();
        assert!(!watch.path_may_have_changed());
    }

    #[test]
    fn a_deleted_file_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _file, mut watch) = watched(dir.path());
        std::fs::remove_file(&path).unwrap();
        assert!(watch.path_may_have_changed());
        assert!(!watch.path_may_have_changed(), "each event is read once");
    }

    #[test]
    fn a_file_renamed_over_the_path_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _file, mut watch) = watched(dir.path());
        let other = dir.path().join("other");
        std::fs::write(&other, b"").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert!(watch.path_may_have_changed());
    }

    #[test]
    fn a_file_moved_away_is_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let (path, _file, mut watch) = watched(dir.path());
        std::fs::rename(&path, dir.path().join("elsewhere")).unwrap();
        assert!(watch.path_may_have_changed());
    }

    #[test]
    fn a_file_made_read_only_is_a_change() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (path, _file, mut watch) = watched(dir.path());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert!(watch.path_may_have_changed());
    }

    #[test]
    fn a_directory_above_moved_away_is_a_change() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let (_path, _file, mut watch) = watched(&data);
        std::fs::rename(&data, root.path().join("data.old")).unwrap();
        assert!(watch.path_may_have_changed());
    }

    #[test]
    fn a_symbolic_link_above_pointed_elsewhere_is_a_change() {
        let root = tempfile::tempdir().unwrap();
        for dir in ["one", "two"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        let link = root.path().join("data");
        std::os::unix::fs::symlink("one", &link).unwrap();
        let (_path, _file, mut watch) = watched(&link);
        let next = root.path().join("data.next");
        std::os::unix::fs::symlink("two", &next).unwrap();
        std::fs::rename(&next, &link).unwrap();
        assert!(watch.path_may_have_changed());
    }

    #[test]
    fn a_directory_above_a_links_target_moved_away_is_a_change() {
        let root = tempfile::tempdir().unwrap();
        let volume = root.path().join("vol");
        std::fs::create_dir_all(volume.join("gw")).unwrap();
        let link = root.path().join("data");
        std::os::unix::fs::symlink(volume.join("gw"), &link).unwrap();
        let (_path, _file, mut watch) = watched(&link);
        std::fs::rename(&volume, root.path().join("vol.old")).unwrap();
        assert!(watch.path_may_have_changed());
    }

    #[test]
    fn another_file_in_the_directory_is_no_change() {
        let dir = tempfile::tempdir().unwrap();
        let (_path, _file, mut watch) = watched(dir.path());
        std::fs::write(dir.path().join("gateway.db-journal"), b"x").unwrap();
        std::fs::remove_file(dir.path().join("gateway.db-journal")).unwrap();
        assert!(!watch.path_may_have_changed());
    }
}
