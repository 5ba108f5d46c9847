//! Session storage for hermes-compaction: the [`TranscriptStore`] extension point and its
//! SQLite (embedded default) and PostgreSQL implementations.
//!
//! The store is the source of truth an agent resumes from. Each message is one row holding
//! the message body exactly as appended ([`Message::to_wire_json`], stored as its UTF-8
//! bytes, so NUL escapes, multi-megabyte content and any Unicode come back byte-identical)
//! plus queryable columns: role, marker kind (`normal`, `batch`, `micro`, `progress`, `continuation`),
//! active, compacted, generation and timestamps.
//!
//! A compaction pass is written with [`TranscriptStore::archive_and_compact`]: in one
//! transaction it soft-archives exactly the rows the pass replaced and inserts the new rows at
//! their positions, touching only those rows (ordering keys have gaps, so nothing is
//! renumbered). Every commit names the session generation it was planned against; a commit
//! against a stale generation is refused with [`StoreError::StaleGeneration`] and changes
//! nothing.
//!
//! Both backends are one engine, `SqlStore`, generic over a sealed `Dialect`. Cargo
//! features: `sqlite` (default), `postgres`, `tls` (TLS for PostgreSQL; implies `postgres`).
//! Without a backend feature (`default-features = false`) the crate is the extension point
//! alone: [`TranscriptStore`], [`Session`], [`Commit`], the value types and the errors, with
//! neither sqlx nor tokio, for a store of one's own. [`Store::connect`] picks the backend by
//! the URL schemes each [`Backend`] declares.
//!
//! Nothing is ever deleted, so what compaction removed stays recoverable: rows by id
//! ([`TranscriptStore::load_rows`]), the full originals of messages trimmed at insertion time
//! by handle ([`TranscriptStore::store_original`], [`TranscriptStore::load_original`]), and a
//! full-text search over a session's archived rows and trimmed originals
//! ([`TranscriptStore::search_archived`]: SQLite FTS5, PostgreSQL `tsvector` with a GIN
//! index), never across sessions.
//!
//! Search text is split into words by the store itself, the same way for both backends:
//! every character that is not a letter or digit separates words, and runs of Chinese,
//! Japanese or Korean characters (Han, kana, Hangul), written without spaces, are indexed
//! as overlapping pairs of characters followed by each character alone (`数据库` as
//! `数据 据库 数 据 库`). A query run of two or more characters is the phrase of its pairs
//! (they must stand next to each other, in order) and a single character is one word, so a
//! query finds exactly the texts holding its characters consecutively, whatever their
//! number. Schema migration 3 rebuilt the index of databases written before this splitting
//! (lazily, at the next search of each session).
//!
//! ```
//! # #[cfg(feature = "sqlite")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> compaction_store::Result<()> {
//! use compaction_core::{Edit, Message, marker, MarkerKind, Role};
//! use compaction_store::{Commit, Store, TranscriptStore};
//!
//! let store = Store::connect("sqlite::memory:").await?;
//! store.create_session("s1").await?;
//! let mut messages = vec![Message::user("hi"), Message::assistant("hello"), Message::user("next")];
//! store.append("s1", &mut messages).await?; // stamps row ids into the messages
//!
//! // A pass replaced messages 0..2 with a summary marker.
//! let edit = Edit::single(0..2, vec![marker::render(MarkerKind::Micro, Role::Assistant, "...")]);
//! let generation = store.generation("s1").await?;
//! let mut commit = Commit::from_edit(generation, &edit, &messages)?;
//! let new_ids = store.archive_and_compact("s1", &mut commit).await?;
//! assert_eq!(new_ids.len(), 1);
//! assert_eq!(store.load_active("s1").await?.len(), 2);
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "sqlite"))]
//! # fn main() {}
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
// Without a backend only the extension point (the trait, `Session`, the value types, `Commit`,
// the backend table) and `Store::connect`'s error remain.
#![cfg_attr(not(feature = "engine"), allow(dead_code, unused_imports))]

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use compaction_core::{MarkerKind, Message};

mod backend;
mod change;
mod commit;
#[cfg(feature = "engine")]
mod dialect;
#[cfg(feature = "engine")]
mod engine;
mod error;
mod export;
mod history;
mod options;
#[cfg(feature = "postgres")]
mod postgres;
mod rows;
mod session;
#[cfg(feature = "sqlite")]
mod sqlite;
mod store;

pub use backend::{Backend, Connect};
pub use change::{Change, Rows, Snapshot, Written};
pub use commit::{Commit, CommitSplice, GenerationKind, PassLabel, stamp_edit};
#[cfg(feature = "engine")]
pub use dialect::Dialect;
#[cfg(feature = "engine")]
pub use engine::SqlStore;
pub use error::{DatabaseFailure, Result, StoreError};
pub use export::{ExportForm, export_jsonl};
pub use history::{GenerationDiff, HistoryTable};
pub use options::StoreOptions;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresDialect, PostgresStore};
pub use rows::session_id_problem;
pub use session::{PinnedAt, Session, Undone};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteDialect, SqliteStore};
pub use store::{Access, Store};

// Each backend of this crate is wired in here and nowhere else: its module and exports above,
// its row of the backend table and its share of error classification below.

impl Backend {
    /// SQLite (file or in-memory): `sqlite:<path>`, `sqlite://<path>`, `sqlite::memory:`.
    /// Compiled with the `sqlite` feature.
    pub const SQLITE: Backend = Backend::built_in("sqlite", &["sqlite"], SQLITE_CONNECT);

    /// PostgreSQL: `postgres://…`, `postgresql://…`. Compiled with the `postgres` feature.
    pub const POSTGRES: Backend =
        Backend::built_in("postgres", &["postgres", "postgresql"], POSTGRES_CONNECT);
}

#[cfg(feature = "sqlite")]
const SQLITE_CONNECT: Option<Connect> = Some(sqlite::connect);
#[cfg(not(feature = "sqlite"))]
const SQLITE_CONNECT: Option<Connect> = None;
#[cfg(feature = "postgres")]
const POSTGRES_CONNECT: Option<Connect> = Some(postgres::connect);
#[cfg(not(feature = "postgres"))]
const POSTGRES_CONNECT: Option<Connect> = None;

/// A database's own error code, classified by the backend whose driver raised it (each backend
/// keeps its code table: `sqlite::failure`, `postgres::failure`).
#[cfg(feature = "engine")]
fn backend_failure(db: &dyn sqlx::error::DatabaseError, code: &str) -> DatabaseFailure {
    #[cfg(feature = "sqlite")]
    if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
        return sqlite::failure(code);
    }
    #[cfg(feature = "postgres")]
    if db
        .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
        .is_some()
    {
        return postgres::failure(code);
    }
    let _ = (db, code);
    DatabaseFailure::Other
}

/// The id of a stored message row (what [`compaction_core::Meta::row_id`] holds).
pub type RowId = i64;

/// A boxed, `Send` future, so [`TranscriptStore`] can be used as `Arc<dyn TranscriptStore>`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The session store an agent resumes from. Implementations must behave alike; the two in
/// this crate pass the same tests.
///
/// A store implements eight methods: [`open`](Self::open) and
/// [`list_sessions`](Self::list_sessions) (sessions), [`load`](Self::load) (rows and their
/// generation from one snapshot), [`write`](Self::write) (one atomic [`Change`]),
/// [`history`](Self::history), [`compaction_state`](Self::compaction_state),
/// [`load_original`](Self::load_original) and [`search_archived`](Self::search_archived).
/// Every other method is provided on top of them, so each named write (an append, an import,
/// a compaction pass, a restore...) is exactly one [`write`](Self::write), one transaction
/// with its generation check inside.
///
/// Session ids are 1-256 bytes without control characters. Every method on an unknown
/// session fails with [`StoreError::UnknownSession`].
///
/// The session-keyed methods are also reached through a [`Session`] handle, which binds the
/// id once: `store.session(id)` on a `dyn TranscriptStore` (and on [`Store`]),
/// [`Session::new`] for any other store. Implement the trait, use the handle.
///
/// The trait and its value types need no backend: with `default-features = false` this crate
/// compiles neither sqlx nor tokio, so a store of its own (in memory, on another database)
/// implements the trait without them, and joins [`Store::connect`] with a [`Backend`] row
/// ([`Backend::register`]).
pub trait TranscriptStore: Send + Sync + fmt::Debug {
    // ---- Required: the primitives. ----

    /// Opens an existing session.
    fn open<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>>;

    /// Every session, ordered by id.
    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>>;

    /// The session's `rows` and its generation, read from one snapshot: the generation is the
    /// one the rows belong to.
    fn load<'a>(&'a self, session: &'a str, rows: Rows<'a>) -> BoxFuture<'a, Result<Snapshot>>;

    /// Applies one [`Change`] atomically: in one transaction, with the change's generation
    /// check inside it, all of it or (on any error) nothing, and nothing stamped.
    fn write<'a>(&'a self, session: &'a str, change: Change<'a>) -> BoxFuture<'a, Result<Written>>;

    /// The session's generations, oldest first, from 0 (its creation) to the current one:
    /// when each was written, what made it ([`PassLabel`] of its commit), how many rows it
    /// archived and inserted, and whether [`restore`](Self::restore) can go back to it.
    /// Generations written before schema version 4 are listed with
    /// [`GenerationKind::Unknown`] and no time, and only the newest of them is restorable.
    fn history<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<GenerationInfo>>>;

    /// The session's durable compaction state.
    fn compaction_state<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<CompactionState>>;

    /// The original stored under `handle` in this session (byte-identical wire body, no
    /// metadata), or `None`.
    fn load_original<'a>(
        &'a self,
        session: &'a str,
        handle: &'a str,
    ) -> BoxFuture<'a, Result<Option<Message>>>;

    /// Full-text search over what compaction removed from this session: its archived rows and
    /// its trimmed originals, best match first, at most `limit` hits. Every word of `query`
    /// (letters and digits, case-insensitive) must occur. A run of CJK characters in the query
    /// must occur as it is: `数据库` finds text containing `数据库`, not text holding `数据`
    /// and `据库` apart, and a single CJK character finds it anywhere. At most 16 index words
    /// are used, the first ones (a word or a lone CJK character counts one, a CJK run of
    /// `n > 1` characters `n - 1`): a CJK run longer than 17 characters narrows the search
    /// by its first 17 only, and what follows a run cut that way is not used. On PostgreSQL, a
    /// text longer than a tsvector keeps positions for (past its 16,383rd word, or with a word
    /// occurring more than 255 times) matches a CJK run when all its pairs occur, adjacent or
    /// not; SQLite keeps every position.
    /// Archived rows are indexed on the first search after they were archived, so work is
    /// proportional to what changed since the last search. Never returns another session's
    /// content.
    fn search_archived<'a>(
        &'a self,
        session: &'a str,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>>>;

    // ---- Provided: the store's own details, overridable. ----

    /// Which backend this is, when it has a row in the backend table; `None` (the default)
    /// for a store that has none.
    fn backend(&self) -> Option<Backend> {
        None
    }

    /// Closes the store's connections (the default does nothing). See [`Store::close`].
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }

    /// Arms a one-shot fault (tests only; the default ignores it).
    #[doc(hidden)]
    fn inject_fault(&self, point: FaultPoint) {
        let _ = point;
    }

    // ---- Provided: every named operation, one primitive call each (two reads at most). ----

    /// Creates an empty session at generation 0 ([`Change::Create`] with no messages); fails
    /// with [`StoreError::SessionExists`] when the id is taken.
    fn create_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        Box::pin(async move {
            self.write(session, Change::Create { messages: &mut [] })
                .await?;
            self.open(session).await
        })
    }

    /// Opens the session, creating it first when it does not exist (a concurrent creator
    /// winning the race is fine: the session is then opened).
    fn open_or_create<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        Box::pin(async move {
            match self.open(session).await {
                Err(StoreError::UnknownSession { .. }) => {
                    match self.create_session(session).await {
                        Err(StoreError::SessionExists { .. }) => self.open(session).await,
                        other => other,
                    }
                }
                other => other,
            }
        })
    }

    /// The session's current generation: 0 when created, plus one per successful
    /// [`archive_and_compact`](Self::archive_and_compact) or [`restore`](Self::restore) that
    /// changed something. Appends do not change it.
    fn generation<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move { Ok(self.open(session).await?.generation) })
    }

    /// The agent's append-only flush: stores every message that carries no row id, after all
    /// active rows, in one transaction, and stamps each with its new row id. Messages already
    /// stamped are skipped, so flushing after a compaction writes only what is new. Returns
    /// the ids of the rows written, in order (empty when every message was stamped).
    fn append<'a>(
        &'a self,
        session: &'a str,
        messages: &'a mut [Message],
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        Box::pin(async move {
            let change = Change::Append {
                expected: None,
                messages,
            };
            Ok(self.write(session, change).await?.ids)
        })
    }

    /// [`append`](Self::append) for a writer whose view of the session reflects generation
    /// `expected`: refused with [`StoreError::StaleGeneration`], nothing written and nothing
    /// stamped, when the session is at another generation (another writer compacted or
    /// restored it since that view was loaded). The check and the append are one transaction.
    fn append_at<'a>(
        &'a self,
        session: &'a str,
        expected: u64,
        messages: &'a mut [Message],
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        Box::pin(async move {
            let change = Change::Append {
                expected: Some(expected),
                messages,
            };
            Ok(self.write(session, change).await?.ids)
        })
    }

    /// Imports a whole transcript as a new session: creates the session and stores every
    /// message in order, in one transaction, and stamps each with its new row id (row ids the
    /// messages carried are replaced). It commits whole or not at all: on any error (the id is
    /// taken: [`StoreError::SessionExists`]; a full disk, a lost connection, a killed process)
    /// no session is left behind, so the same import can simply be retried. Returns the ids of
    /// the rows written, in order.
    fn import_session<'a>(
        &'a self,
        session: &'a str,
        messages: &'a mut [Message],
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        Box::pin(async move { Ok(self.write(session, Change::Create { messages }).await?.ids) })
    }

    /// What a resumed agent loads: the active messages in order, each stamped with its row id
    /// and (for markers) its marker kind.
    fn load_active<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<Message>>> {
        Box::pin(async move { Ok(self.load(session, Rows::Active).await?.into_messages()) })
    }

    /// [`load_active`](Self::load_active) and [`generation`](Self::generation) read from one
    /// snapshot: the generation is the one the messages belong to. Plan a compaction from
    /// these, and a commit that lost a race to another writer fails with
    /// [`StoreError::StaleGeneration`] (two separate reads can pair a newer generation with
    /// older messages, and the commit then names rows that are gone).
    fn load_active_with_generation<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<(Vec<Message>, u64)>> {
        Box::pin(async move {
            let read = self.load(session, Rows::Active).await?;
            let generation = read.generation;
            Ok((read.into_messages(), generation))
        })
    }

    /// Active and archived rows, for audit and recovery, in ordering-key order (an archived
    /// row sorts before the row that took its position).
    fn load_all<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<StoredRow>>> {
        Box::pin(async move { Ok(self.load(session, Rows::All).await?.rows) })
    }

    /// The rows of this session among `ids` (active or archived), in transcript order. Ids of
    /// other sessions or of no row are left out.
    fn load_rows<'a>(
        &'a self,
        session: &'a str,
        ids: &'a [RowId],
    ) -> BoxFuture<'a, Result<Vec<StoredRow>>> {
        Box::pin(async move { Ok(self.load(session, Rows::Ids(ids)).await?.rows) })
    }

    /// Writes one compaction pass in one transaction: checks the commit's generation, archives
    /// the named rows (active = false, compacted = true), inserts the new rows at their
    /// positions, bumps the generation and stamps the inserted messages of `commit` with their
    /// row ids, which it also returns in order. Work is proportional to the rows changed.
    ///
    /// On any error nothing changes: [`StoreError::StaleGeneration`] when the session moved
    /// on, [`StoreError::EmptyCommit`], [`StoreError::RowNotInSession`],
    /// [`StoreError::RowNotActive`], [`StoreError::NotContiguous`],
    /// [`StoreError::SplicesOutOfOrder`].
    fn archive_and_compact<'a>(
        &'a self,
        session: &'a str,
        commit: &'a mut Commit,
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        Box::pin(async move { Ok(self.write(session, Change::Commit(commit)).await?.ids) })
    }

    /// Undo: makes the active rows exactly the rows that were active at generation `target`
    /// (their bodies, metadata, kinds and order), as a new generation committed in one
    /// transaction. The rows active now that were not active then are archived; the rows
    /// active then that are archived now come back as new rows (copies that name their
    /// origin) at their old places; rows active in both stay as they are. The archive is never
    /// rewritten, so a restore can itself be undone by restoring the generation before it.
    /// "Active at `target`" includes what was appended while the session was at `target`,
    /// and excludes what was appended since.
    ///
    /// `expected` is the generation the caller's view of the session reflects: when the
    /// session has moved on the restore is refused with [`StoreError::StaleGeneration`].
    /// [`StoreError::UnknownGeneration`] when `target` is newer than the session,
    /// [`StoreError::HistoryUnavailable`] when it is older than the session's recorded
    /// history. On any error nothing changes. Restoring the current generation changes
    /// nothing and writes no generation.
    fn restore<'a>(
        &'a self,
        session: &'a str,
        expected: u64,
        target: u64,
    ) -> BoxFuture<'a, Result<Restored>> {
        Box::pin(async move {
            let done = self
                .write(session, Change::Restore { expected, target })
                .await?;
            Ok(Restored {
                generation: done.generation.unwrap_or(expected),
                archived: done.archived,
                reactivated: done.reactivated,
            })
        })
    }

    /// Pins or unpins the active row `row` ([`compaction_core::Meta::pinned`]: no pass
    /// prunes, trims, summarizes or reorders it), as a generation of its own
    /// ([`GenerationKind::Pin`], so [`restore`](Self::restore) undoes it): the row is archived
    /// and a copy with the new flag takes its place. Returns the copy's row id and the new
    /// generation; when the flag is already as asked, nothing is written and the row and
    /// generation are returned as they are. Refused like a commit, with nothing changed:
    /// [`StoreError::StaleGeneration`] when the session is not at `expected`,
    /// [`StoreError::RowNotInSession`] or [`StoreError::RowNotActive`] for another row.
    /// (Messages appended or committed with the flag set keep it too: it is stored with the
    /// rest of their metadata.)
    fn set_pinned<'a>(
        &'a self,
        session: &'a str,
        expected: u64,
        row: RowId,
        pinned: bool,
    ) -> BoxFuture<'a, Result<(RowId, u64)>> {
        Box::pin(async move {
            let read = self.load(session, Rows::Ids(&[row])).await?;
            let Some(stored) = read.rows.into_iter().next() else {
                return Err(StoreError::RowNotInSession { splice: 0, row });
            };
            if !stored.active {
                return Err(StoreError::RowNotActive { splice: 0, row });
            }
            if stored.message.is_pinned() == pinned {
                if read.generation != expected {
                    return Err(StoreError::StaleGeneration {
                        session: session.to_owned(),
                        expected,
                        actual: read.generation,
                    });
                }
                return Ok((row, read.generation));
            }
            let mut copy = stored.message;
            copy.meta_mut().pinned = pinned;
            let mut commit = Commit {
                generation: expected,
                splices: vec![CommitSplice {
                    archive: vec![row],
                    insert_after: None,
                    insert: vec![copy],
                }],
                label: PassLabel::new(GenerationKind::Pin),
            };
            // The commit checks `expected` again, in its own transaction.
            let ids = self.archive_and_compact(session, &mut commit).await?;
            let id = ids.first().copied().ok_or(StoreError::OutOfRange {
                what: "row ids returned",
            })?;
            Ok((id, expected + 1))
        })
    }

    /// Replaces the session's durable compaction state ([`Change::State`]).
    fn set_compaction_state<'a>(
        &'a self,
        session: &'a str,
        state: &'a CompactionState,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            self.write(session, Change::State(state)).await?;
            Ok(())
        })
    }

    /// Keeps the full original of a message trimmed at insertion time, under `handle`
    /// (1-128 bytes, no control characters), as its exact wire bytes, and adds it to the
    /// session's search index, in one transaction. Storing the same original under the same
    /// handle again changes nothing; a different one fails with
    /// [`StoreError::HandleConflict`] and keeps the first. Call it, and see it succeed, before
    /// the compact form replaces the original in the transcript.
    fn store_original<'a>(
        &'a self,
        session: &'a str,
        handle: &'a str,
        original: &'a Message,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let change = Change::Original {
                handle,
                message: original,
            };
            self.write(session, change).await?;
            Ok(())
        })
    }
}

/// Where a search hit comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HitSource {
    /// An archived message row.
    Row(RowId),
    /// A message trimmed at insertion time, by handle.
    Original(String),
}

/// One result of [`TranscriptStore::search_archived`].
#[derive(Clone, Debug, PartialEq)]
pub struct SearchHit {
    /// Where it comes from.
    pub source: HitSource,
    /// The archived message (stamped with its row id) or the trimmed original.
    pub message: Message,
}

/// A session as listed by the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// The session id.
    pub id: String,
    /// Current generation.
    pub generation: u64,
    /// Creation time, unix milliseconds.
    pub created_at_ms: i64,
}

/// One stored row, active or archived.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredRow {
    /// Row id.
    pub id: RowId,
    /// Ordering key within the session (gapped; only the order is meaningful).
    pub position: i64,
    /// The message, stamped with its row id and marker kind.
    pub message: Message,
    /// The marker kind column (`None` for a normal message).
    pub kind: Option<MarkerKind>,
    /// Whether a resumed session loads this row.
    pub active: bool,
    /// Whether a compaction archived this row.
    pub compacted: bool,
    /// The session generation the row was written at.
    pub generation: u64,
    /// When the row was written, unix milliseconds.
    pub created_at_ms: i64,
    /// When the row was archived, unix milliseconds.
    pub archived_at_ms: Option<i64>,
    /// The generation that archived the row (`None` while active, and for rows archived
    /// before schema version 4).
    pub archived_generation: Option<u64>,
    /// The generation whose commit or restore inserted the row (`None` for an appended row
    /// and for rows written before schema version 4).
    pub pass_generation: Option<u64>,
}

/// One generation of a session, as [`TranscriptStore::history`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GenerationInfo {
    /// The generation.
    pub generation: u64,
    /// When it was written, unix milliseconds (`None` before schema version 4).
    pub created_at_ms: Option<i64>,
    /// What wrote it, with the tokens before and after when its writer knew them.
    pub label: PassLabel,
    /// For a restore, the generation it went back to.
    pub restored_to: Option<u64>,
    /// Rows it archived.
    pub archived: u64,
    /// Rows it inserted.
    pub inserted: u64,
    /// Whether [`TranscriptStore::restore`] can go back to it.
    pub restorable: bool,
}

impl GenerationInfo {
    /// Generation `generation`, written by `label`: no time, archiving and inserting nothing,
    /// restorable. Set the public fields for the rest (a store implemented outside this crate
    /// builds its history this way).
    ///
    /// ```
    /// use compaction_store::{GenerationInfo, GenerationKind, PassLabel};
    ///
    /// let mut info = GenerationInfo::new(3, PassLabel::new(GenerationKind::Batch));
    /// info.archived = 12;
    /// info.inserted = 1;
    /// assert!(info.restorable && info.restored_to.is_none());
    /// ```
    pub fn new(generation: u64, label: PassLabel) -> GenerationInfo {
        GenerationInfo {
            generation,
            created_at_ms: None,
            label,
            restored_to: None,
            archived: 0,
            inserted: 0,
            restorable: true,
        }
    }
}

/// What [`TranscriptStore::restore`] did.
///
/// ```
/// # #[cfg(feature = "sqlite")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> compaction_store::Result<()> {
/// use compaction_core::{Edit, Message, marker, MarkerKind, Role};
/// use compaction_store::{Commit, GenerationKind, PassLabel, Store, TranscriptStore};
///
/// let store = Store::connect("sqlite::memory:").await?;
/// store.create_session("s1").await?;
/// let mut messages = vec![Message::user("hi"), Message::assistant("hello"), Message::user("next")];
/// store.append("s1", &mut messages).await?;
/// let edit = Edit::single(0..2, vec![marker::render(MarkerKind::Micro, Role::Assistant, "...")]);
/// let mut commit = Commit::from_edit(0, &edit, &messages)?
///     .with_label(PassLabel::new(GenerationKind::Micro).with_tokens(12, 5));
/// store.archive_and_compact("s1", &mut commit).await?;
///
/// let history = store.history("s1").await?;
/// assert_eq!(history[1].label.kind, GenerationKind::Micro);
/// // Undo: back to generation 0, as generation 2.
/// let done = store.restore("s1", 1, 0).await?;
/// assert_eq!((done.generation, done.archived, done.reactivated), (2, 1, 2));
/// assert_eq!(store.load_active("s1").await?.len(), 3);
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "sqlite"))]
/// # fn main() {}
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Restored {
    /// The session's generation after the restore (unchanged when nothing changed).
    pub generation: u64,
    /// Rows active before that the restore archived.
    pub archived: u64,
    /// Rows the restore made active again (as copies of the archived rows).
    pub reactivated: u64,
}

impl Restored {
    /// What a restore did: the session's generation after it, the rows it archived and the
    /// rows it made active again (for a store implemented outside this crate).
    ///
    /// ```
    /// let done = compaction_store::Restored::new(4, 2, 3);
    /// assert_eq!((done.generation, done.archived, done.reactivated), (4, 2, 3));
    /// ```
    pub fn new(generation: u64, archived: u64, reactivated: u64) -> Restored {
        Restored {
            generation,
            archived,
            reactivated,
        }
    }
}

/// Durable per-session compaction state, so anti-thrash survives a restart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompactionState {
    /// No automatic compaction before this time (unix milliseconds), after a failure.
    pub cooldown_until_ms: Option<i64>,
    /// Ineffective compactions in a row.
    pub ineffective_count: u32,
    /// Opaque small JSON for state a later version keeps (`Null` when unset).
    pub extra: serde_json::Value,
}

/// A one-shot fault for atomicity tests: armed with `inject_fault`, it makes the next
/// `archive_and_compact`, `import_session`, `restore` or `generation` reaching that point fail
/// there with `StoreError::InjectedFault`. Each point is armed on its own, so several can be
/// armed at once.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FaultPoint {
    /// After the rows of a splice are archived, before its new rows are inserted.
    AfterArchive,
    /// After an `import_session` inserted the session and its messages, before it commits.
    BeforeImportCommit,
    /// After a `restore` archived the rows it replaces, before it re-activates the others.
    AfterRestoreArchive,
    /// After an `archive_and_compact` committed its transaction: the commit has landed, but
    /// the caller is told it failed (as when the database dies before its acknowledgement
    /// arrives).
    AfterCommit,
    /// The next `generation` read fails (a database that cannot be reached any more). May be
    /// armed together with another point.
    GenerationRead,
}
