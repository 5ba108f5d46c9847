//! The crate's error type.

use crate::RowId;

/// Everything that can go wrong in the store. Messages name sessions, rows and indices, never
/// transcript text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The URL names no backend this build supports.
    #[error("unsupported store URL scheme `{scheme}` (expected {expected})")]
    UnsupportedUrl {
        /// The scheme part of the URL (never the rest, which may hold credentials).
        scheme: String,
        /// The schemes the backend table knew, as `sqlite:, postgres:, postgresql:`.
        expected: String,
    },
    /// [`Store::open`](crate::Store::open) without [`Access::Create`](crate::Access::Create)
    /// was given a SQLite file that does not exist (nothing was created).
    #[error("no database at {path}")]
    NoDatabase {
        /// The file the location names.
        path: String,
    },
    /// The URL names a backend whose cargo feature is off.
    #[error("the {backend} backend is not compiled in (enable the `{backend}` feature)")]
    BackendDisabled {
        /// The backend's name, which for this crate's is its feature: `sqlite` or `postgres`.
        backend: &'static str,
    },
    /// [`Backend::register`](crate::Backend::register) was given a backend whose name or one
    /// of whose URL schemes another backend of the table already has.
    #[error(
        "backend {backend} cannot join the backend table: backend {taken_by} has its name or a scheme"
    )]
    BackendConflict {
        /// The backend being registered.
        backend: &'static str,
        /// The backend already in the table.
        taken_by: &'static str,
    },
    /// A PostgreSQL schema name that is not a plain lower-case identifier.
    #[error(
        "invalid schema name (use 1-63 characters of a-z, 0-9 and _, not starting with a digit)"
    )]
    InvalidSchemaName,
    /// A session id that is empty, too long, or contains control characters.
    #[error("invalid session id (1-256 bytes, no control characters)")]
    InvalidSessionId,
    /// No session with this id.
    #[error("unknown session `{session}`")]
    UnknownSession {
        /// The session id.
        session: String,
    },
    /// `create_session` for an id that exists.
    #[error("session `{session}` already exists")]
    SessionExists {
        /// The session id.
        session: String,
    },
    /// The commit was planned against an older generation of the session. Nothing changed;
    /// the pass that produced it must be discarded.
    #[error(
        "stale generation for session `{session}`: commit planned against {expected}, store is at {actual}"
    )]
    StaleGeneration {
        /// The session id.
        session: String,
        /// The generation the commit named.
        expected: u64,
        /// The session's current generation.
        actual: u64,
    },
    /// A restore named a generation the session has not reached.
    #[error("unknown generation {generation}: the session is at generation {current}")]
    UnknownGeneration {
        /// The generation asked for.
        generation: u64,
        /// The session's current generation.
        current: u64,
    },
    /// A restore named a generation older than the session's recorded history (written
    /// before schema version 4, which began recording what each generation archived).
    #[error(
        "generation {generation} cannot be restored: the session's history starts at generation {from}"
    )]
    HistoryUnavailable {
        /// The generation asked for.
        generation: u64,
        /// The oldest restorable generation.
        from: u64,
    },
    /// [`Session::undo`](crate::Session::undo) of a session at generation 0 (with or without a
    /// target).
    #[error("session `{session}` is at generation 0: nothing to undo")]
    NothingToUndo {
        /// The session id.
        session: String,
    },
    /// [`Session::diff`](crate::Session::diff) of a generation written before the store
    /// recorded what each generation archived (schema version 4).
    #[error(
        "generation {generation} was written before the store recorded what each generation archived"
    )]
    DiffUnavailable {
        /// The generation asked for.
        generation: u64,
    },
    /// [`Session::pin_at`](crate::Session::pin_at) named an index past the active messages.
    #[error("index {index} is out of range: session `{session}` has {active} active messages")]
    IndexOutOfRange {
        /// The session id.
        session: String,
        /// The index asked for.
        index: usize,
        /// How many messages are active.
        active: usize,
    },
    /// The commit changes nothing.
    #[error("empty commit: no rows to archive and none to insert")]
    EmptyCommit,
    /// A message that an edit replaces has never been persisted (no row id), so the commit
    /// cannot name its row.
    #[error("message {index} of the planned-against transcript has no row id (append it first)")]
    MissingRowId {
        /// Index in the transcript the edit was planned against.
        index: usize,
    },
    /// The edit does not fit the transcript it claims to be planned against.
    #[error("edit does not fit the transcript: {0}")]
    Edit(#[from] compaction_core::Error),
    /// A commit names a row that does not exist or belongs to another session.
    #[error("splice {splice}: row {row} is not a row of this session")]
    RowNotInSession {
        /// Index of the splice in the commit.
        splice: usize,
        /// The row id.
        row: RowId,
    },
    /// A commit names a row that is already archived.
    #[error("splice {splice}: row {row} is already archived")]
    RowNotActive {
        /// Index of the splice in the commit.
        splice: usize,
        /// The row id.
        row: RowId,
    },
    /// The rows a splice archives are not a run of consecutive active rows, in order.
    #[error("splice {splice}: archived rows are not consecutive active rows in transcript order")]
    NotContiguous {
        /// Index of the splice in the commit.
        splice: usize,
    },
    /// A splice does not come after the previous one in transcript order.
    #[error("splice {splice} does not follow the previous splice in transcript order")]
    SplicesOutOfOrder {
        /// Index of the splice in the commit.
        splice: usize,
    },
    /// No ordering key is free between the neighbours of a splice (would need renumbering).
    #[error("splice {splice}: no free ordering key between its neighbours")]
    KeysExhausted {
        /// Index of the splice in the commit.
        splice: usize,
    },
    /// A handle that is empty, longer than 128 bytes, or contains control characters.
    #[error("invalid handle (1-128 bytes, no control characters)")]
    InvalidHandle,
    /// A different original is already stored under this handle in the session; the stored
    /// one is kept.
    #[error("a different original is already stored under handle `{handle}`")]
    HandleConflict {
        /// The handle.
        handle: String,
    },
    /// A stored row cannot be turned back into a message.
    #[error("stored row {row} is corrupt: {reason}")]
    CorruptRow {
        /// The row id.
        row: RowId,
        /// What is wrong (never the stored text).
        reason: String,
    },
    /// A value does not fit the store's integer columns.
    #[error("{what} is out of range for the store")]
    OutOfRange {
        /// Which value.
        what: &'static str,
    },
    /// Library metadata could not be serialized.
    #[error("message metadata could not be serialized")]
    Meta(#[source] serde_json::Error),
    /// The database failed. The database's own message is not kept: it may quote stored
    /// content or connection details.
    #[error("database error: {failure}{}", code_suffix(.code))]
    Database {
        /// What kind of failure.
        failure: DatabaseFailure,
        /// The database's error code when it gave one (a PostgreSQL SQLSTATE such as `28P01`,
        /// or an SQLite extended result code such as `8` or `1032`).
        code: Option<String>,
    },
    /// The embedded schema migrations cannot run on this database (a failure of the database
    /// itself while migrating is [`StoreError::Database`]).
    #[error("schema migration failed: {reason}")]
    Migration {
        /// What is wrong (never the database's message).
        reason: String,
    },
    /// A fault injected by a test (see `inject_fault`).
    #[doc(hidden)]
    #[error("injected fault")]
    InjectedFault,
}

impl StoreError {
    /// The class of a database failure, or `None` when the error is not one.
    pub fn database_failure(&self) -> Option<DatabaseFailure> {
        match self {
            StoreError::Database { failure, .. } => Some(*failure),
            _ => None,
        }
    }
}

fn code_suffix(code: &Option<String>) -> String {
    match code {
        Some(code) => format!(" (code {code})"),
        None => String::new(),
    }
}

/// Why the database failed, told apart by error codes and I/O error kinds, never by message
/// text. Shown as what it means for the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DatabaseFailure {
    /// Nothing listens at the server's address (connection refused).
    ConnectionRefused,
    /// The server cannot be reached (unreachable network or host, timed out, connection
    /// reset or lost, the server shutting down).
    Unreachable,
    /// The server refused the user or its password (PostgreSQL `28P01`, `28000`).
    Authentication,
    /// The named database does not exist (PostgreSQL `3D000`).
    MissingDatabase,
    /// The database file cannot be opened or created (SQLite `SQLITE_CANTOPEN`: a missing
    /// directory or no permission).
    CannotOpen,
    /// The database is read-only (SQLite `SQLITE_READONLY`, PostgreSQL `25006`, a read-only
    /// file system).
    ReadOnly,
    /// The disk or the database is full (SQLite `SQLITE_FULL`, PostgreSQL `53100`).
    DiskFull,
    /// Another connection holds a lock this one needed, past the busy timeout (SQLite
    /// `SQLITE_BUSY` and `SQLITE_LOCKED`, PostgreSQL lock, serialization and deadlock
    /// failures).
    Busy,
    /// The server has no connection slot left (PostgreSQL `53300`).
    TooManyConnections,
    /// Not permitted (PostgreSQL `42501`, SQLite `SQLITE_PERM`, file permissions).
    PermissionDenied,
    /// No pooled connection became free within the timeout.
    PoolTimedOut,
    /// The store's connection pool was closed.
    PoolClosed,
    /// The TLS handshake failed, or TLS was required without the `tls` feature.
    Tls,
    /// The URL or connection options are invalid.
    Configuration,
    /// The database file is damaged or not a database (SQLite `SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`).
    Corrupt,
    /// The tables are not what this version expects (a missing table or column).
    Schema,
    /// A constraint of the schema refused a write.
    Constraint,
    /// Reading or writing failed at the operating-system level.
    Io,
    /// Any other failure.
    Other,
}

impl std::fmt::Display for DatabaseFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DatabaseFailure::ConnectionRefused => {
                "cannot connect: connection refused (is the server running at that address?)"
            }
            DatabaseFailure::Unreachable => "cannot connect: the server is unreachable",
            DatabaseFailure::Authentication => {
                "authentication failed (wrong user name or password)"
            }
            DatabaseFailure::MissingDatabase => "the database does not exist",
            DatabaseFailure::CannotOpen => {
                "cannot open the database file (missing directory or no permission)"
            }
            DatabaseFailure::ReadOnly => "the database is read-only",
            DatabaseFailure::DiskFull => "the disk or the database is full",
            DatabaseFailure::Busy => "the database is busy (locked by another writer)",
            DatabaseFailure::TooManyConnections => "the server has too many connections",
            DatabaseFailure::PermissionDenied => "permission denied",
            DatabaseFailure::PoolTimedOut => {
                "no connection within the timeout (server unreachable or pool exhausted)"
            }
            DatabaseFailure::PoolClosed => "the store was closed",
            DatabaseFailure::Tls => {
                if cfg!(feature = "tls") {
                    "the TLS connection failed"
                } else {
                    "the TLS connection failed (TLS support is the `tls` feature, not compiled in)"
                }
            }
            DatabaseFailure::Configuration => "invalid database URL or connection options",
            DatabaseFailure::Corrupt => "the database file is damaged or not a database",
            DatabaseFailure::Schema => "the database tables are not what this version expects",
            DatabaseFailure::Constraint => "a database constraint refused the write",
            DatabaseFailure::Io => "an I/O error",
            DatabaseFailure::Other => "an unclassified database failure",
        })
    }
}

#[cfg(feature = "engine")]
impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        if let sqlx::Error::Migrate(m) = e {
            return StoreError::from(*m);
        }
        let (failure, code) = classify(&e);
        StoreError::Database { failure, code }
    }
}

#[cfg(feature = "engine")]
impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        use sqlx::migrate::MigrateError as M;
        let reason = match e {
            // The database failed while migrating: say how, as for any other statement.
            M::Execute(e) | M::ExecuteMigration(e, _) => {
                let (failure, code) = classify(&e);
                if failure != DatabaseFailure::Other {
                    return StoreError::Database { failure, code };
                }
                "a migration statement failed".to_owned()
            }
            M::VersionMissing(v) | M::VersionNotPresent(v) => format!(
                "the database has migration {v}, which this version does not know (written by a newer version?)"
            ),
            M::VersionMismatch(v) => {
                format!("migration {v} in the database differs from this version's")
            }
            M::VersionTooOld(v, latest) | M::VersionTooNew(v, latest) => {
                format!("migration {v} is out of order with the applied migration {latest}")
            }
            M::Dirty(v) => format!("migration {v} was applied only in part"),
            _ => "the migrations could not be run".to_owned(),
        };
        StoreError::Migration { reason }
    }
}

#[cfg(feature = "engine")]
/// The class and code of a sqlx error, from codes and error kinds only.
pub(crate) fn classify(e: &sqlx::Error) -> (DatabaseFailure, Option<String>) {
    use sqlx::Error as E;
    let failure = match e {
        E::Database(db) => {
            let code = db.code().map(|c| c.into_owned());
            let failure = code.as_deref().map_or(DatabaseFailure::Other, |c| {
                crate::backend_failure(db.as_ref(), c)
            });
            return (failure, code.filter(|c| c.len() <= 16));
        }
        E::Io(io) => io_failure(io.kind()),
        E::Tls(_) => DatabaseFailure::Tls,
        E::Configuration(_) => DatabaseFailure::Configuration,
        E::PoolTimedOut => DatabaseFailure::PoolTimedOut,
        E::PoolClosed => DatabaseFailure::PoolClosed,
        E::TypeNotFound { .. } | E::ColumnNotFound(_) | E::ColumnIndexOutOfBounds { .. } => {
            DatabaseFailure::Schema
        }
        _ => DatabaseFailure::Other,
    };
    (failure, None)
}

fn io_failure(kind: std::io::ErrorKind) -> DatabaseFailure {
    use DatabaseFailure as F;
    use std::io::ErrorKind as K;
    match kind {
        K::ConnectionRefused => F::ConnectionRefused,
        K::HostUnreachable
        | K::NetworkUnreachable
        | K::NetworkDown
        | K::TimedOut
        | K::ConnectionReset
        | K::ConnectionAborted
        | K::NotConnected
        | K::AddrNotAvailable
        | K::BrokenPipe
        | K::UnexpectedEof => F::Unreachable,
        K::PermissionDenied => F::PermissionDenied,
        K::ReadOnlyFilesystem => F::ReadOnly,
        K::StorageFull | K::QuotaExceeded => F::DiskFull,
        K::NotFound => F::CannotOpen,
        _ => F::Io,
    }
}

/// The crate's `Result`.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_kinds_map_to_their_class() {
        use DatabaseFailure as F;
        #[cfg(feature = "engine")]
        for (kind, want) in [
            (std::io::ErrorKind::ConnectionRefused, F::ConnectionRefused),
            (std::io::ErrorKind::TimedOut, F::Unreachable),
            (std::io::ErrorKind::StorageFull, F::DiskFull),
        ] {
            let (got, code) = classify(&sqlx::Error::Io(kind.into()));
            assert_eq!((got, code), (want, None), "{kind:?}");
        }
    }

    #[test]
    fn display_says_which_without_the_message() {
        let e = StoreError::Database {
            failure: DatabaseFailure::DiskFull,
            code: Some("53100".into()),
        };
        assert_eq!(
            e.to_string(),
            "database error: the disk or the database is full (code 53100)"
        );
        assert_eq!(e.database_failure(), Some(DatabaseFailure::DiskFull));
    }

    #[cfg(feature = "engine")]
    #[test]
    fn driver_errors_keep_no_message() {
        let e = StoreError::from(sqlx::Error::Protocol("secret row text".into()));
        assert!(!format!("{e} {e:?}").contains("secret"), "{e:?}");
        let e = StoreError::from(sqlx::migrate::MigrateError::VersionMissing(9));
        assert!(e.to_string().contains("migration 9"), "{e}");
    }
}
