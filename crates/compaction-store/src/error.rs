//! The crate's error type.

use crate::RowId;

/// Everything that can go wrong in the store. Messages name sessions, rows and indices, never
/// transcript text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The URL names no backend this build supports.
    #[error("unsupported store URL scheme `{scheme}` (expected sqlite: or postgres://)")]
    UnsupportedUrl {
        /// The scheme part of the URL (never the rest, which may hold credentials).
        scheme: String,
    },
    /// The URL names a backend whose cargo feature is off.
    #[error("the {backend} backend is not compiled in (enable the `{backend}` feature)")]
    BackendDisabled {
        /// `sqlite` or `postgres`.
        backend: &'static str,
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
    Edit(#[from] compaction_core::edit::EditError),
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
    /// The database failed.
    #[error("database error")]
    Database(#[from] sqlx::Error),
    /// The embedded migrations failed.
    #[error("schema migration failed")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A fault injected by a test (see `inject_fault`).
    #[doc(hidden)]
    #[error("injected fault")]
    InjectedFault,
}

/// The crate's `Result`.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
