//! The `hermes-compaction` command line, as a library so every command is testable.
//!
//! The binary is a thin `main` over [`run`]. Each command is a function over plain
//! arguments: [`compact`](mod@compact) runs one kind of pass over a transcript file,
//! [`simulate`](mod@simulate) replays sessions under several policies side by side
//! (over the `compaction-sim` crate), [`tune`](mod@tune) searches the policy space,
//! [`session`](mod@session) drives the store, and the telemetry report comes from
//! `compaction-telemetry`. Everything else is library calls into the facade.
//!
//! The README's library examples are compile-checked as doctests of the workspace's root
//! package (`src/lib.rs`).

use std::path::PathBuf;
use std::sync::Arc;

use hermes_compaction::oneshot::SessionOneShotError;
use hermes_compaction::store::{Access, Store, StoreError, TranscriptStore};

pub mod cli;
pub mod compact;
pub mod history;
pub mod input;
pub mod paths;
pub mod session;
pub mod setup;
pub mod simulate;
pub mod tune;

pub use cli::{Cli, Command};
pub use compaction_logs::TranscriptError;
pub use input::{Strictness, TranscriptFormat};

/// Why a command failed. [`Error::exit_code`] maps it to the process exit code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A transcript file cannot be used (exit 2).
    #[error(transparent)]
    Input(#[from] TranscriptError),
    /// The configuration or the command line is invalid (exit 2).
    #[error("{0}")]
    Config(String),
    /// Reading or writing a file failed (exit 1).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The `--telemetry` file cannot be created or written (exit 1); the message names it
    /// (compaction-telemetry's `FileSink`).
    #[error("{0}")]
    Telemetry(std::io::Error),
    /// The store failed (exit 1), or was named wrongly: an unsupported URL, a backend not
    /// compiled in, an invalid schema name or session id (exit 2).
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// The telemetry report failed (exit 2: unreadable logs).
    #[error("report: {0}")]
    Report(#[from] hermes_compaction::telemetry::Error),
    /// A compaction pass failed; nothing was written (exit 1).
    #[error("{0}")]
    Pass(String),
}

/// A `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A simulator error: a configuration or option error exits 2, a store or runtime one 1.
impl From<compaction_sim::Error> for Error {
    fn from(e: compaction_sim::Error) -> Error {
        match e {
            compaction_sim::Error::Config(m) => Error::Config(m),
            compaction_sim::Error::Store(e) => Error::Store(e),
            other => Error::Pass(other.to_string()),
        }
    }
}

/// A stored one-shot run that could not start: the store's error, or the configuration's.
impl From<SessionOneShotError> for Error {
    fn from(e: SessionOneShotError) -> Error {
        match e {
            SessionOneShotError::Store(e) => Error::Store(e),
            other => Error::Config(other.to_string()),
        }
    }
}

impl Error {
    /// 2 for bad input, configuration or usage; 1 for runtime failures.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Input(_) | Error::Config(_) | Error::Report(_) => 2,
            Error::Store(
                StoreError::UnsupportedUrl { .. }
                | StoreError::BackendDisabled { .. }
                | StoreError::InvalidSchemaName
                | StoreError::InvalidSessionId
                | StoreError::UnknownSession { .. }
                | StoreError::SessionExists { .. }
                | StoreError::UnknownGeneration { .. }
                | StoreError::HistoryUnavailable { .. }
                | StoreError::NothingToUndo { .. }
                | StoreError::DiffUnavailable { .. }
                | StoreError::IndexOutOfRange { .. },
            ) => 2,
            Error::Io { .. } | Error::Telemetry(_) | Error::Store(_) | Error::Pass(_) => 1,
        }
    }
}

/// Runs a parsed command line, writing results to `out` (stdout in the binary) and progress
/// to stderr.
pub fn run(cli: Cli, out: &mut dyn std::io::Write) -> Result<()> {
    match cli.command {
        Command::Compact(a) => compact::run(&a, out),
        Command::Simulate(a) => simulate::run(&a, out),
        Command::Tune(a) => tune::run(&a, out),
        Command::Report(a) => {
            let options = hermes_compaction::telemetry::ReportOptions {
                per_session: a.per_session,
                json: a.json,
            };
            let text = hermes_compaction::telemetry::report::run(&a.logs, options)?;
            write_out(out, &text)
        }
        Command::Session(c) => session::run(c, out),
        Command::Demo(a) => session::demo(&a, out),
        Command::ExampleSession => write_out(out, &compaction_sim::example::session_jsonl()),
    }
}

/// `text` with every control character but the line break written as an escape (`\u{1b}`,
/// `\t`, ...), so user text echoed in a message (a profile name, an argument clap quotes)
/// cannot drive the terminal.
pub fn escape_controls(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() && c != '\n' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Writes `text` (plus a final newline when missing) to `out`.
pub(crate) fn write_out(out: &mut dyn std::io::Write, text: &str) -> Result<()> {
    let newline = if text.is_empty() || text.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    write!(out, "{text}{newline}").map_err(|e| Error::Io {
        what: "cannot write the output".into(),
        source: e,
    })
}

/// Writes `value` as pretty JSON to `path` (given as `flag`; [`write_output`]).
pub(crate) fn write_json(
    path: &std::path::Path,
    flag: &str,
    value: &impl serde::Serialize,
) -> Result<()> {
    let json = serde_json::to_string_pretty(value)
        .map_err(|e| Error::Config(format!("cannot render JSON: {e}")))?;
    write_output(path, flag, json.as_bytes())
}

/// Ends a progress bar's line on a terminal stderr.
pub(crate) fn end_progress(tty: bool) {
    #[allow(clippy::print_stderr)]
    if tty {
        eprintln!();
    }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, renamed into
/// place. On error nothing is created or overwritten. A file that is replaced keeps its
/// permissions; a new file gets the default the umask gives (0644 under the usual 022), not
/// the temporary file's private 0600. A symbolic link is followed: the file it names is
/// replaced and the link stays. What is not a regular file is never replaced
/// ([`paths::output_target`]): a character device or a FIFO is opened and written through, a
/// directory, block device or socket is refused (exit 2).
pub fn write_atomically(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    write_output(path, "output", bytes)
}

/// [`write_atomically`], with the command-line `flag` that named `path` in a refusal.
pub fn write_output(path: &std::path::Path, flag: &str, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    // A symbolic link stays a link: the file it points to is replaced (atomically, in the
    // target's directory), not the link.
    let target = link_target(path).map_err(|e| Error::Io {
        what: format!("cannot follow the link {}", path.display()),
        source: e,
    })?;
    let path = target.as_path();
    let io = |what: &str, e| Error::Io {
        what: format!("{what} {}", path.display()),
        source: e,
    };
    if paths::output_target(path, flag)? == paths::OutputTarget::Stream {
        // Opened without create or truncate (a FIFO blocks here until it has a reader); a
        // device has nothing to sync.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| io("cannot open", e))?;
        return f.write_all(bytes).map_err(|e| io("cannot write", e));
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".hermes-compaction-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // What `File::create` would give; the kernel applies the umask.
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut tmp = builder
        .tempfile_in(&dir)
        .map_err(|e| io("cannot create a temporary file for", e))?;
    if let Ok(existing) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), existing.permissions())
            .map_err(|e| io("cannot copy the permissions of", e))?;
    }
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| io("cannot write", e))?;
    tmp.persist(path)
        .map_err(|e| io("cannot rename the temporary file to", e.error))?;
    Ok(())
}

/// Where writing `path` should go: `path` itself, or for a symbolic link (a chain of them
/// included, dangling ones too) the file it finally names.
fn link_target(path: &std::path::Path) -> std::io::Result<PathBuf> {
    let mut current = path.to_owned();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(m) if m.file_type().is_symlink() => {
                let next = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(dir) if next.is_relative() => dir.join(next),
                    _ => next,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// Runs `work` against the store at `db` ([`Store::open`] with `access`: a missing SQLite file
/// is a usage error, exit 2, unless `access` creates it), then closes the store whatever
/// `work` returned: on SQLite that checkpoints the write-ahead log, so the `.db` file alone
/// holds the session.
pub(crate) async fn with_store<T>(
    db: &str,
    access: Access,
    work: impl AsyncFnOnce(Arc<dyn TranscriptStore>) -> Result<T>,
) -> Result<T> {
    paths::database_file(db)?;
    let store = Store::open(db, access).await.map_err(|e| match e {
        // The store's message holds the scheme only (the rest may hold credentials) and the
        // schemes its backends declare.
        StoreError::UnsupportedUrl { .. } => {
            Error::Config(format!("--db: {e}; a plain path names a SQLite file"))
        }
        StoreError::NoDatabase { .. } => {
            Error::Config(format!("--db: {e} (`session import` creates one)"))
        }
        e => Error::Store(e),
    })?;
    let result = work(store.clone().into_dyn()).await;
    store.close().await;
    result
}

/// A current-thread tokio runtime (telemetry is captured per thread).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Io {
            what: "cannot start the async runtime".into(),
            source: e,
        })
}
