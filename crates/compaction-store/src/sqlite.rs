//! The SQLite backend: the embedded default (a file, or an in-memory database).

use std::str::FromStr;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use std::collections::HashMap;

use sqlx::Database;

use crate::dialect::{Dialect, sealed};
use crate::engine::SqlStore;
use crate::options::StoreOptions;
use crate::rows::{Doc, Faults, Term};
use crate::{Backend, BoxFuture, DatabaseFailure, Result, StoreError};

/// A SQLite session store. Files use WAL with `synchronous = NORMAL` (a crash of the process
/// loses nothing; a power loss may lose the last commits but never corrupts), a busy timeout
/// and foreign keys. Writers take the lock up front (`BEGIN IMMEDIATE`), so concurrent writers
/// queue instead of failing. An in-memory URL (`sqlite::memory:`) uses a single connection
/// that is never recycled, so the database lives as long as the store. Clones share the pool.
pub type SqliteStore = SqlStore<SqliteDialect>;

/// The SQLite [`Dialect`].
#[derive(Clone, Copy, Debug, Default)]
#[non_exhaustive]
pub struct SqliteDialect;

impl SqliteStore {
    /// Connects with default options.
    pub async fn connect(url: &str) -> Result<SqliteStore> {
        SqliteStore::connect_with(url, &StoreOptions::default()).await
    }

    /// Opens the database at `url` (creating it when missing, unless
    /// [`StoreOptions::create_if_missing`] is off) and runs the embedded migrations; read-only
    /// ([`StoreOptions::read_only`], `mode=ro` or `immutable` in the URL), it checks that the
    /// schema is current instead and creates and migrates nothing.
    pub async fn connect_with(url: &str, options: &StoreOptions) -> Result<SqliteStore> {
        let memory = url.contains(":memory:") || url.contains("mode=memory");
        let read_only = !memory && (options.read_only || read_only_url(url));
        let mut connect = SqliteConnectOptions::from_str(url)?
            .create_if_missing((options.create_if_missing && !read_only) || memory)
            .foreign_keys(true)
            .busy_timeout(options.busy_timeout);
        if read_only {
            connect = connect.read_only(true);
        } else if !memory {
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
        let mut immutable = false;
        loop {
            let opened = match open_pool(&pool, &connect, options.busy_timeout).await {
                Ok(p) if read_only => check_schema(&p).await.map(|()| p),
                Ok(p) => migrate(&p, options.busy_timeout).await.map(|()| p),
                Err(e) => Err(e),
            };
            match opened {
                // A WAL database on a read-only mount without its `-shm` file: SQLite can
                // read it only as immutable, which is exact when no `-wal` file holds commits
                // that are not in the database file yet.
                Err(StoreError::Database {
                    failure: DatabaseFailure::CannotOpen,
                    ..
                }) if read_only && !immutable && wal_merged(connect.get_filename()) => {
                    immutable = true;
                    connect = connect.immutable(true);
                }
                Err(e) => return Err(e),
                Ok(pool) => {
                    return Ok(SqliteStore {
                        pool,
                        faults: Faults::default(),
                        dialect: SqliteDialect,
                    });
                }
            }
        }
    }
}

/// Connects the pool. Two processes creating the same new file race on switching it to WAL,
/// and SQLite may answer "busy" at once rather than wait: retried within the busy timeout.
async fn open_pool(
    pool: &SqlitePoolOptions,
    connect: &SqliteConnectOptions,
    busy_timeout: std::time::Duration,
) -> Result<SqlitePool> {
    let mut backoff = Backoff::new(busy_timeout);
    loop {
        match pool.clone().connect_with(connect.clone()).await {
            Ok(p) => return Ok(p),
            Err(e) if is_busy(&e) && backoff.wait().await => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// The backend table's [`Connect`](crate::Connect) for this backend.
pub(crate) fn connect<'a>(
    url: &'a str,
    options: &'a StoreOptions,
) -> BoxFuture<'a, Result<crate::Store>> {
    Box::pin(async move {
        Ok(crate::Store::new(
            SqliteStore::connect_with(url, options).await?,
        ))
    })
}

/// Runs the embedded migrations, tolerating other processes migrating the same file at the
/// same moment. SQLite has no advisory lock for sqlx to take (PostgreSQL has one), so two
/// first opens can both see a migration as pending; the slower one then fails on the faster
/// one's work (a duplicate version row, an added column already there, a busy database). Each
/// migration runs in its own transaction, so a failed attempt leaves nothing behind and is
/// retried, as long as someone is making progress (more migrations recorded than before the
/// attempt) or the database was busy, until `patience` runs out. Any other failure is returned
/// at once.
async fn migrate(pool: &SqlitePool, patience: std::time::Duration) -> Result<()> {
    let mut backoff = Backoff::new(patience);
    let mut recorded = applied_migrations(pool).await;
    loop {
        let Err(e) = migrator().run(pool).await else {
            return Ok(());
        };
        let now = applied_migrations(pool).await;
        let raced = now > recorded || is_busy(&e);
        if !raced || !backoff.wait().await {
            return Err(e.into());
        }
        recorded = now;
    }
}

/// Whether the query of a `sqlite:` URL opens the database read-only (`mode=ro`, or
/// `immutable` set).
fn read_only_url(url: &str) -> bool {
    url.split_once('?').is_some_and(|(_, query)| {
        query.split('&').any(|pair| {
            matches!(
                pair,
                "mode=ro" | "immutable=true" | "immutable=1" | "immutable=yes"
            )
        })
    })
}

/// Whether the database file exists and has no `-wal` file with content (every commit is in
/// the database file), so reading it as immutable reads everything.
fn wal_merged(file: &std::path::Path) -> bool {
    let wal = format!("{}-wal", file.display());
    file.is_file() && std::fs::metadata(wal).map_or(true, |m| m.len() == 0)
}

/// For a read-only open: the schema must be exactly what the embedded migrations make, since
/// none can run. Fails with [`StoreError::Migration`] naming the first migration it lacks
/// (or the newer one it has).
async fn check_schema(pool: &SqlitePool) -> Result<()> {
    let applied: Vec<i64> = match sqlx::query_scalar(
        "SELECT version FROM hermes_schema_migrations WHERE success ORDER BY version",
    )
    .fetch_all(pool)
    .await
    {
        Ok(v) => v,
        // No migrations table: an empty file, or not a hermes-compaction database.
        Err(sqlx::Error::Database(db)) if db.message().contains("no such table") => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let migrator = migrator();
    let known: Vec<i64> = migrator.iter().map(|m| m.version).collect();
    if let Some(v) = applied.iter().find(|v| !known.contains(v)) {
        return Err(StoreError::Migration {
            reason: format!(
                "the database has migration {v}, which this version does not know (written by a newer version?)"
            ),
        });
    }
    if let Some(m) = migrator.iter().find(|m| !applied.contains(&m.version)) {
        return Err(StoreError::Migration {
            reason: format!(
                "the database is opened read-only and needs migration {} ({}), which cannot run \
                 read-only: open it once with write access to migrate",
                m.version, m.description
            ),
        });
    }
    Ok(())
}

/// Growing pauses (5 ms doubling up to 200 ms) until a deadline.
struct Backoff {
    deadline: std::time::Instant,
    pause: std::time::Duration,
}

impl Backoff {
    fn new(patience: std::time::Duration) -> Backoff {
        Backoff {
            deadline: std::time::Instant::now() + patience,
            pause: std::time::Duration::from_millis(5),
        }
    }

    /// Sleeps the next pause and returns true, or returns false at once past the deadline.
    async fn wait(&mut self) -> bool {
        if std::time::Instant::now() >= self.deadline {
            return false;
        }
        tokio::time::sleep(self.pause).await;
        self.pause = (self.pause * 2).min(std::time::Duration::from_millis(200));
        true
    }
}

/// Migrations recorded as applied (0 before the first one creates the table).
async fn applied_migrations(pool: &SqlitePool) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM hermes_schema_migrations")
        .fetch_one(pool)
        .await
        .unwrap_or(0)
}

/// Whether an error (or one of its causes) is SQLite's "busy" or "locked" from another
/// connection holding the database.
fn is_busy(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(e);
    while let Some(err) = source {
        if let Some(db) = err
            .downcast_ref::<sqlx::Error>()
            .and_then(sqlx::Error::as_database_error)
        {
            // SQLITE_BUSY, SQLITE_LOCKED and their extended codes (the low byte is the primary).
            let primary = db
                .code()
                .and_then(|c| c.parse::<i64>().ok())
                .map(|c| c & 0xff);
            if matches!(primary, Some(5 | 6)) {
                return true;
            }
        }
        source = err.source();
    }
    false
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
        (
            4,
            "history: archived generations, restore",
            include_str!("../migrations/sqlite/0004_history.sql"),
        ),
        (
            5,
            "the continuation marker kind",
            include_str!("../migrations/sqlite/0005_continuation.sql"),
        ),
    ])
}

impl sealed::Sealed for SqliteDialect {}

impl Dialect for SqliteDialect {
    type Db = sqlx::Sqlite;
    const BACKEND: Backend = Backend::SQLITE;
    /// Take the write lock at the start, so two writers never deadlock on a lock upgrade.
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    /// A read transaction in WAL mode reads one snapshot from its first statement on.
    const BEGIN_READ: &'static str = "BEGIN";
    // Neighbour lookups name the partial index of active rows, so archived rows are never
    // scanned however many a session accumulates.
    const SQL_PREV_ACTIVE: &'static str = "SELECT pos FROM hermes_messages INDEXED BY hermes_messages_active_pos \
     WHERE session_id = $1 AND active AND pos < $2 ORDER BY pos DESC LIMIT 1";
    const SQL_NEXT_ACTIVE: &'static str = "SELECT pos FROM hermes_messages INDEXED BY hermes_messages_active_pos \
     WHERE session_id = $1 AND active AND pos > $2 ORDER BY pos LIMIT 1";
    const SQL_COUNT_ACTIVE_BETWEEN: &'static str = "SELECT COUNT(*) FROM hermes_messages \
     INDEXED BY hermes_messages_active_pos \
     WHERE session_id = $1 AND active AND pos > $2 AND pos < $3";
    const SQL_LOAD_ACTIVE: &'static str = "SELECT id, pos, kind, body, meta, active, compacted, generation, created_at, \
     archived_at, archived_generation, pass_generation FROM hermes_messages \
     INDEXED BY hermes_messages_active_pos WHERE session_id = $1 AND active ORDER BY pos";

    /// Whether the session has archived rows, and trimmed originals, not in the search index yet.
    const SQL_PENDING_INDEX: &'static str = "SELECT \
     EXISTS (SELECT 1 FROM hermes_messages INDEXED BY hermes_messages_unindexed \
             WHERE session_id = $1 AND NOT active AND NOT search_indexed), \
     EXISTS (SELECT 1 FROM hermes_originals INDEXED BY hermes_originals_unindexed \
             WHERE session_id = $1 AND NOT search_indexed)";
    // CROSS JOIN keeps the full-text lookup as the outer loop (SQLite does not reorder it).
    const SQL_SEARCH: &'static str = "SELECT d.row_id, d.handle FROM hermes_search \
     CROSS JOIN hermes_search_docs d ON d.id = hermes_search.rowid \
     WHERE hermes_search MATCH $2 AND d.session_id = $1 \
     ORDER BY hermes_search.rank, d.id LIMIT $3";

    /// An FTS5 query requiring every term (juxtaposed strings are ANDed). Each term is one
    /// quoted string, an FTS5 phrase: its space-separated words must appear as consecutive
    /// tokens in that order. Words are letters and digits only, so they hold no `"` to escape.
    fn fts_query(terms: &[Term]) -> String {
        terms
            .iter()
            .map(|t| format!("\"{}\"", t.join(" ")))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn rows_affected(done: &<sqlx::Sqlite as Database>::QueryResult) -> u64 {
        done.rows_affected()
    }

    /// Adds documents (at most [`DOC_CHUNK`](crate::rows::DOC_CHUNK)) to the session's search
    /// index: their session and source rows first, then their text under the same ids.
    fn index_docs<'a>(
        conn: &'a mut <sqlx::Sqlite as Database>::Connection,
        session: &'a str,
        docs: &'a [Doc],
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(index_docs(conn, session, docs))
    }
}

async fn index_docs(conn: &mut sqlx::SqliteConnection, session: &str, docs: &[Doc]) -> Result<()> {
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

/// The class of an SQLite (extended) result code, given as text: the low byte is the primary
/// code (this backend's share of error classification).
pub(crate) fn failure(code: &str) -> DatabaseFailure {
    use DatabaseFailure as F;
    match code.parse::<i64>().unwrap_or(0) & 0xff {
        3 => F::PermissionDenied, // SQLITE_PERM
        5 | 6 => F::Busy,         // SQLITE_BUSY, SQLITE_LOCKED
        8 => F::ReadOnly,         // SQLITE_READONLY
        10 => F::Io,              // SQLITE_IOERR
        11 | 26 => F::Corrupt,    // SQLITE_CORRUPT, SQLITE_NOTADB
        13 => F::DiskFull,        // SQLITE_FULL
        14 => F::CannotOpen,      // SQLITE_CANTOPEN
        19 => F::Constraint,      // SQLITE_CONSTRAINT
        23 => F::Authentication,  // SQLITE_AUTH
        _ => F::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_codes_map_to_their_class() {
        use DatabaseFailure as F;
        for (code, want) in [
            ("5", F::Busy),
            ("517", F::Busy), // SQLITE_BUSY_SNAPSHOT
            ("6", F::Busy),
            ("8", F::ReadOnly),
            ("1032", F::ReadOnly), // SQLITE_READONLY_DBMOVED
            ("13", F::DiskFull),
            ("14", F::CannotOpen),
            ("26", F::Corrupt),
            ("1", F::Other),
        ] {
            assert_eq!(failure(code), want, "{code}");
        }
    }
}
