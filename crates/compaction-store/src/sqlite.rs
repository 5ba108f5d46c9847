//! The SQLite backend: the embedded default (a file, or an in-memory database).

use std::str::FromStr;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::rows::Faults;
use crate::store::{Inner, StoreOptions};

/// A SQLite session store. Files use WAL with `synchronous = NORMAL` (a crash of the process
/// loses nothing; a power loss may lose the last commits but never corrupts), a busy timeout
/// and foreign keys. Writers take the lock up front (`BEGIN IMMEDIATE`), so concurrent writers
/// queue instead of failing. An in-memory URL (`sqlite::memory:`) uses a single connection
/// that is never recycled, so the database lives as long as the store. Clones share the pool.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
    faults: Faults,
}

impl SqliteStore {
    /// Connects with default options.
    pub async fn connect(url: &str) -> Result<SqliteStore> {
        SqliteStore::connect_with(url, &StoreOptions::default()).await
    }

    /// Opens (creating if missing) the database at `url` and runs the embedded migrations.
    pub async fn connect_with(url: &str, options: &StoreOptions) -> Result<SqliteStore> {
        let memory = url.contains(":memory:") || url.contains("mode=memory");
        let mut connect = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .foreign_keys(true)
            .busy_timeout(options.busy_timeout);
        if !memory {
            connect = connect
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal);
        }
        let mut pool = SqlitePoolOptions::new()
            .acquire_timeout(options.busy_timeout.max(std::time::Duration::from_secs(1)));
        pool = if memory {
            pool.max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            pool.max_connections(options.max_connections.max(1))
        };
        let pool = pool.connect_with(connect).await?;
        migrator().run(&pool).await?;
        Ok(SqliteStore {
            pool,
            faults: Faults::default(),
        })
    }

    /// The underlying pool.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await
    }

    /// Arms a one-shot fault (tests only).
    #[doc(hidden)]
    pub fn inject_fault(&self, point: FaultPoint) {
        self.faults.arm(point)
    }
}

impl Inner for SqliteStore {
    fn inject_fault(&self, point: FaultPoint) {
        self.faults.arm(point)
    }
}

fn migrator() -> sqlx::migrate::Migrator {
    crate::rows::migrator(&[
        (
            1,
            "sessions and messages",
            include_str!("../migrations/sqlite/0001_init.sql"),
        ),
        (
            2,
            "recall: originals and search index",
            include_str!("../migrations/sqlite/0002_recall.sql"),
        ),
        (
            3,
            "search: CJK bigrams, index rebuilt",
            include_str!("../migrations/sqlite/0003_cjk_bigrams.sql"),
        ),
    ])
}

type Db = sqlx::Sqlite;
type StoreImpl = SqliteStore;
const BACKEND: Backend = Backend::Sqlite;
/// Take the write lock at the start, so two writers never deadlock on a lock upgrade.
const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";
// Neighbour lookups name the partial index of active rows, so archived rows are never
// scanned however many a session accumulates.
const SQL_PREV_ACTIVE: &str = "SELECT pos FROM hermes_messages INDEXED BY hermes_messages_active_pos \
     WHERE session_id = $1 AND active AND pos < $2 ORDER BY pos DESC LIMIT 1";
const SQL_NEXT_ACTIVE: &str = "SELECT pos FROM hermes_messages INDEXED BY hermes_messages_active_pos \
     WHERE session_id = $1 AND active AND pos > $2 ORDER BY pos LIMIT 1";
const SQL_COUNT_ACTIVE_BETWEEN: &str = "SELECT COUNT(*) FROM hermes_messages \
     INDEXED BY hermes_messages_active_pos \
     WHERE session_id = $1 AND active AND pos > $2 AND pos < $3";
const SQL_LOAD_ACTIVE: &str = "SELECT id, kind, body, meta FROM hermes_messages \
     INDEXED BY hermes_messages_active_pos WHERE session_id = $1 AND active ORDER BY pos";

/// Whether the session has archived rows, and trimmed originals, not in the search index yet.
const SQL_PENDING_INDEX: &str = "SELECT \
     EXISTS (SELECT 1 FROM hermes_messages INDEXED BY hermes_messages_unindexed \
             WHERE session_id = $1 AND NOT active AND NOT search_indexed), \
     EXISTS (SELECT 1 FROM hermes_originals INDEXED BY hermes_originals_unindexed \
             WHERE session_id = $1 AND NOT search_indexed)";
// CROSS JOIN keeps the full-text lookup as the outer loop (SQLite does not reorder it).
const SQL_SEARCH: &str = "SELECT d.row_id, d.handle FROM hermes_search \
     CROSS JOIN hermes_search_docs d ON d.id = hermes_search.rowid \
     WHERE hermes_search MATCH $2 AND d.session_id = $1 \
     ORDER BY hermes_search.rank, d.id LIMIT $3";

/// An FTS5 query requiring every term: each term quoted (terms are letters and digits only).
fn fts_query(terms: &[String]) -> String {
    terms
        .iter()
        .map(|t| format!("\"{t}\""))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Adds documents (at most [`DOC_CHUNK`](crate::rows::DOC_CHUNK)) to the session's search
/// index: their session and source rows first, then their text under the same ids.
async fn index_docs(conn: &mut Conn, session: &str, docs: &[Doc]) -> Result<()> {
    if docs.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = (0..docs.len())
        .map(|i| format!("($1, ${}, ${})", 2 + 2 * i, 3 + 2 * i))
        .collect();
    let sql = format!(
        "INSERT INTO hermes_search_docs (session_id, row_id, handle) VALUES {} \
         RETURNING id, row_id, handle",
        values.join(", ")
    );
    let mut q = sqlx::query_as::<_, (i64, Option<i64>, Option<String>)>(sqlx::AssertSqlSafe(sql))
        .bind(session);
    for d in docs {
        q = q.bind(d.row_id).bind(d.handle.as_deref());
    }
    // RETURNING order is not guaranteed: match the ids back by source.
    let ids: HashMap<(Option<i64>, Option<String>), i64> = q
        .fetch_all(&mut *conn)
        .await?
        .into_iter()
        .map(|(id, row, handle)| ((row, handle), id))
        .collect();
    let values: Vec<String> = (0..docs.len())
        .map(|i| format!("(${}, ${})", 1 + 2 * i, 2 + 2 * i))
        .collect();
    let sql = format!(
        "INSERT INTO hermes_search (rowid, body_text) VALUES {}",
        values.join(", ")
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    for d in docs {
        let id = ids
            .get(&(d.row_id, d.handle.clone()))
            .copied()
            .ok_or(StoreError::OutOfRange {
                what: "search document id",
            })?;
        q = q.bind(id).bind(d.text.as_str());
    }
    q.execute(&mut *conn).await?;
    Ok(())
}

include!("engine.rs");
