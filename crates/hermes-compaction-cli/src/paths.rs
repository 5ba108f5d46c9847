//! Path checks: two command-line paths that must not name the same file, and session ids.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

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
