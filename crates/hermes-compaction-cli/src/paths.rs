//! Path checks: what a path the command line writes may name, two command-line paths that
//! must not name the same file, and session ids.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// How a path the command line writes is written ([`output_target`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputTarget {
    /// A regular file, or nothing yet: written to a temporary file and renamed into place.
    File,
    /// A character device (`/dev/null`, a terminal) or a FIFO: opened and written through,
    /// never replaced.
    Stream,
}

/// What writing `path` (given as `flag`) may do, symbolic links followed: a regular file or a
/// missing one is replaced atomically, a character device or a FIFO is written through, and a
/// directory, a block device or a socket is refused (exit 2, the message names the path).
/// A path whose metadata cannot be read is left to the write to report.
pub fn output_target(path: &Path, flag: &str) -> Result<OutputTarget> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(OutputTarget::File);
    };
    let kind = meta.file_type();
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() || kind.is_fifo() {
            return Ok(OutputTarget::Stream);
        }
    }
    match not_a_file(kind) {
        None => Ok(OutputTarget::File),
        Some(what) => Err(Error::Config(format!(
            "{flag} {}: is {what}; refusing to write over it (name a regular file)",
            path.display()
        ))),
    }
}

/// Refuses (exit 2) a SQLite `--db` that names something other than a regular file (a
/// device, a FIFO, a socket, a directory): SQLite would open it as a database and create its
/// journal beside it (`/dev/null-journal` in `/dev`). A missing file, a `postgres://` URL or
/// an in-memory database pass.
pub fn database_file(db: &str) -> Result<()> {
    use hermes_compaction::store::Backend;
    let path = match Backend::for_url(db) {
        Some(b) if b == Backend::SQLITE => {
            let rest = db.split_once(':').map_or("", |(_, r)| r);
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            rest.split_once('?').map_or(rest, |(p, _)| p)
        }
        Some(_) => return Ok(()),
        None if db.contains("://") => return Ok(()),
        None => db,
    };
    if path.is_empty() || path == ":memory:" {
        return Ok(());
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    match not_a_file(meta.file_type()) {
        None => Ok(()),
        Some(what) => Err(Error::Config(format!(
            "--db {path}: is {what}; a SQLite database is a regular file (name one, or a \
             path that does not exist yet)"
        ))),
    }
}

/// What `kind` is when it is not a regular file.
fn not_a_file(kind: std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_fifo() {
            return Some("a FIFO");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// Refuses (exit 2) when `path` (given as `flag`) names the same file as `other` (`what`):
/// the same canonical path (symbolic links resolved), or on unix the same inode (a hard
/// link). A path that does not exist yet is compared through its canonical directory.
pub fn refuse_same_file(path: &Path, flag: &str, other: &Path, what: &str) -> Result<()> {
    if same_file(path, other) {
        return Err(Error::Config(format!(
            "{flag} {} names {what} ({}); choose another file",
            path.display(),
            other.display()
        )));
    }
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b))
            && x.dev() == y.dev()
            && x.ino() == y.ino()
        {
            return true;
        }
    }
    match (canonical(a), canonical(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The canonical form of `p`, or of its directory joined with its file name when `p` does not
/// exist yet.
fn canonical(p: &Path) -> Option<PathBuf> {
    if let Ok(c) = p.canonicalize() {
        return Some(c);
    }
    let name = p.file_name()?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    dir.canonicalize().ok().map(|d| d.join(name))
}

/// Checks a session id with the store's own rule ([`session_id_problem`](hermes_compaction::store::session_id_problem)), for clap.
pub fn session_id(s: &str) -> std::result::Result<String, String> {
    match hermes_compaction::store::session_id_problem(s) {
        None => Ok(s.to_owned()),
        Some(why) => Err(format!(
            "invalid session id: {why} (use 1-256 bytes without control characters)"
        )),
    }
}
