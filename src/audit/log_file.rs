//! The audit log's files as the writer opens and reads them: appending
//! (created private, or an empty file in the log's place taken over), the
//! directory's fsync after a rename, the last entry of an existing file
//! (searched backwards, lines of any length) and whether a closed log has
//! room to be reopened.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::chain::parse_line;

/// How much of a file is read at a time when searching backwards for the
/// last line (which may be of any length).
const TAIL_BYTES: u64 = 256 * 1024;
/// What the end of an existing file says.
pub(super) struct Tail {
    /// The last complete entry: (seq, chain).
    pub last: Option<(u64, String)>,
    /// Bytes after the last newline that are not a complete entry.
    pub torn_bytes: Option<u64>,
    /// The file ends with a complete entry lacking its newline.
    pub needs_newline: bool,
}

/// Room the log must have before a closed file is reopened: several
/// calls' entries, the largest (with 64 argument names) included.
const REOPEN_HEADROOM: u64 = 64 * 1024;

/// Why the log at `path` cannot take [`REOPEN_HEADROOM`] more bytes: this
/// process's file-size limit, or its file system's free space.
pub(super) fn too_little_room(path: &Path) -> Option<String> {
    let length = std::fs::metadata(path).map_or(0, |m| m.len());
    if let Some(limit) = rustix::process::getrlimit(rustix::process::Resource::Fsize).current
        && length.saturating_add(REOPEN_HEADROOM) > limit
    {
        return Some(format!(
            "the file-size limit ({limit} bytes) leaves less than {REOPEN_HEADROOM} bytes for the log"
        ));
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match rustix::fs::statvfs(dir) {
        Ok(fs) if fs.f_bavail.saturating_mul(fs.f_frsize) < REOPEN_HEADROOM => Some(format!(
            "the file system holding the log has less than {REOPEN_HEADROOM} bytes free"
        )),
        _ => None,
    }
}

pub(super) fn open_append(path: &Path, create: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.append(true).read(true).mode(0o600);
    if create {
        options.create_new(true);
    }
    options.open(path)
}

/// The empty file found in the log's place (renamed over it, say), taken
/// over as a new log only when it is what creating one would have made: a
/// regular file (not followed through a link), empty, with no other name,
/// and ours; then made private. Anything else fails the write, as before.
pub(super) fn take_over_empty(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options
        .append(true)
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file()
        || meta.len() != 0
        || meta.nlink() != 1
        || meta.uid() != rustix::process::geteuid().as_raw()
    {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the file in the audit log's place is not an empty regular file of the gateway's own",
        ));
    }
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    Ok(file)
}

pub(super) fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    File::open(dir)?.sync_all()
}

/// Reads the end of `path`: the last complete entry and whether the last line is torn.
pub(super) fn read_tail(path: &Path) -> io::Result<Tail> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    // The last newline ends the last complete line; what follows it is a
    // fragment (torn, or an entry missing its newline). Lines of any length
    // are found: the file is searched backwards in chunks, and only the
    // last line and the fragment are read.
    let last_newline = newline_before(&mut file, len)?;
    let (line_start, line_end) = match last_newline {
        Some(end) => (newline_before(&mut file, end)?.map_or(0, |nl| nl + 1), end),
        None => (0, 0),
    };
    let fragment_start = last_newline.map_or(0, |nl| nl + 1);
    let fragment = read_range(&mut file, fragment_start, len)?;
    let last_line = read_range(&mut file, line_start, line_end)?;
    let mut tail = Tail {
        last: None,
        torn_bytes: None,
        needs_newline: false,
    };
    if !fragment.is_empty() {
        match std::str::from_utf8(&fragment).ok().map(parse_line) {
            Some(Ok(entry)) => {
                tail.last = Some((entry.seq, entry.chain));
                tail.needs_newline = true;
                return Ok(tail);
            }
            _ => tail.torn_bytes = Some(fragment.len() as u64),
        }
    }
    // An empty line other than the file's first: two newlines in a row.
    if last_line.is_empty() && line_start > 0 {
        return Err(io::Error::other("the audit log ends with an empty line"));
    }
    if !last_line.is_empty() {
        let parsed = std::str::from_utf8(&last_line)
            .ok()
            .map(parse_line)
            .and_then(Result::ok)
            .ok_or_else(|| {
                io::Error::other(
                    "the audit log's last complete line is not an entry; check it with `audit verify` and move it away",
                )
            })?;
        tail.last = Some((parsed.seq, parsed.chain));
    }
    Ok(tail)
}

/// The offset of the last `\n` before `end`, searching backwards in
/// [`TAIL_BYTES`] chunks; `None` when there is none.
fn newline_before(file: &mut File, end: u64) -> io::Result<Option<u64>> {
    let mut chunk_end = end;
    let mut chunk = Vec::new();
    while chunk_end > 0 {
        let chunk_start = chunk_end.saturating_sub(TAIL_BYTES);
        chunk.resize((chunk_end - chunk_start) as usize, 0);
        file.seek(SeekFrom::Start(chunk_start))?;
        file.read_exact(&mut chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(Some(chunk_start + i as u64));
        }
        chunk_end = chunk_start;
    }
    Ok(None)
}

/// The bytes `start..end` of `file`.
fn read_range(file: &mut File, start: u64, end: u64) -> io::Result<Vec<u8>> {
    let mut bytes = vec![0; end.saturating_sub(start) as usize];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}
