//! What differs between the backends, for the one generic engine (`engine/`): the database
//! driver, the backend name, how a write transaction begins, the statements whose SQL differs,
//! and how the full-text index is queried and written.

use std::fmt;

use sqlx::Database;

use crate::rows::{Doc, Term};
use crate::{Backend, BoxFuture, Result};

/// A backend's SQL dialect. Sealed: implemented by [`SqliteDialect`](crate::SqliteDialect)
/// and [`PostgresDialect`](crate::PostgresDialect) only, each behind its cargo feature. A
/// dialect value carries the backend's connection settings that the engine keeps (the
/// PostgreSQL schema).
pub trait Dialect: sealed::Sealed + Clone + fmt::Debug + Send + Sync + 'static {
    /// The sqlx driver.
    #[doc(hidden)]
    type Db: Database;

    /// The backend's name.
    const BACKEND: Backend;

    /// Begins a transaction that writes: SQLite takes the write lock at once
    /// (`BEGIN IMMEDIATE`), so two writers never deadlock on a lock upgrade; PostgreSQL
    /// begins READ COMMITTED and serializes the writers of one session on its row lock.
    #[doc(hidden)]
    const BEGIN_WRITE: &'static str;

    /// Begins a transaction that reads several statements from one snapshot.
    #[doc(hidden)]
    const BEGIN_READ: &'static str;

    /// The ordering key of the closest active row before `$2` in session `$1`.
    #[doc(hidden)]
    const SQL_PREV_ACTIVE: &'static str;
    /// The ordering key of the closest active row after `$2` in session `$1`.
    #[doc(hidden)]
    const SQL_NEXT_ACTIVE: &'static str;
    /// How many active rows of session `$1` lie strictly between keys `$2` and `$3`.
    #[doc(hidden)]
    const SQL_COUNT_ACTIVE_BETWEEN: &'static str;
    /// The full rows (the engine's `ROW_COLUMNS`) of the active rows of session `$1`, in order.
    #[doc(hidden)]
    const SQL_LOAD_ACTIVE: &'static str;
    /// Whether session `$1` has archived rows, and trimmed originals, not indexed yet.
    #[doc(hidden)]
    const SQL_PENDING_INDEX: &'static str;
    /// `row_id, handle` of the best hits of session `$1` for the full-text query `$2`
    /// (see [`fts_query`](Self::fts_query)), at most `$3`.
    #[doc(hidden)]
    const SQL_SEARCH: &'static str;

    /// How many rows a statement changed.
    #[doc(hidden)]
    fn rows_affected(done: &<Self::Db as Database>::QueryResult) -> u64;

    /// The full-text query requiring every term, each term a phrase.
    #[doc(hidden)]
    fn fts_query(terms: &[Term]) -> String;

    /// Adds documents (at most [`DOC_CHUNK`](crate::rows::DOC_CHUNK)) to the session's
    /// search index.
    #[doc(hidden)]
    fn index_docs<'a>(
        conn: &'a mut <Self::Db as Database>::Connection,
        session: &'a str,
        docs: &'a [Doc],
    ) -> BoxFuture<'a, Result<()>>;
}

pub(crate) mod sealed {
    /// Keeps [`Dialect`](super::Dialect) closed to this crate.
    pub trait Sealed {}
}
