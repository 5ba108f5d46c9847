//! The PostgreSQL backend: many agent processes sharing one server.

use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use sqlx::Database;

use crate::dialect::{Dialect, sealed};
use crate::engine::SqlStore;
use crate::options::StoreOptions;
use crate::rows::{Doc, Faults, Term};
use crate::{Backend, BoxFuture, DatabaseFailure, Result, StoreError};

/// A PostgreSQL session store over a connection pool. Migrations run under PostgreSQL's
/// advisory lock, so many processes may start at once. The message body is stored as BYTEA
/// (its UTF-8 bytes): PostgreSQL rejects NUL in `text` and `jsonb`, and a byte column also
/// keeps the text independent of the database encoding. Clones share the pool.
pub type PostgresStore = SqlStore<PostgresDialect>;

/// The PostgreSQL [`Dialect`], with the schema the store keeps its tables in.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct PostgresDialect {
    schema: Option<String>,
}

impl PostgresStore {
    /// Connects with default options.
    pub async fn connect(url: &str) -> Result<PostgresStore> {
        PostgresStore::connect_with(url, &StoreOptions::default()).await
    }

    /// Connects, creates [`StoreOptions::postgres_schema`] if set and missing, and runs the
    /// embedded migrations.
    pub async fn connect_with(url: &str, options: &StoreOptions) -> Result<PostgresStore> {
        let mut connect = PgConnectOptions::from_str(url)?;
        if let Some(schema) = &options.postgres_schema {
            if !valid_schema(schema) {
                return Err(StoreError::InvalidSchemaName);
            }
            connect = connect.options([("search_path", schema.as_str())]);
        }
        let pool = match PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.busy_timeout.max(std::time::Duration::from_secs(1)))
            .connect_with(connect.clone())
            .await
        {
            Ok(pool) => pool,
            // The pool retries a refused or unreachable server until its timeout and then
            // says only that it timed out: one direct attempt tells why.
            Err(sqlx::Error::PoolTimedOut) => {
                use sqlx::Connection;
                return Err(match sqlx::PgConnection::connect_with(&connect).await {
                    Err(cause) => cause.into(),
                    Ok(conn) => {
                        let _ = conn.close().await;
                        sqlx::Error::PoolTimedOut.into()
                    }
                });
            }
            Err(e) => return Err(e.into()),
        };
        if let Some(schema) = &options.postgres_schema {
            // Two processes creating the same schema at once would race on the catalog.
            let mut tx = pool.begin().await?;
            sqlx::query("SELECT pg_advisory_xact_lock(hashtext('hermes_compaction_schema'))")
                .execute(&mut *tx)
                .await?;
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "CREATE SCHEMA IF NOT EXISTS \"{schema}\""
            )))
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
        }
        let mut conn = pool.acquire().await?;
        // `run_direct` is `run` on a connection already acquired; `run(&mut *conn)` would make
        // this future fail to be `Send` for the backend table ("`Acquire` is not general
        // enough", as sqlx's own comment on `run_direct` says).
        if let Err(e) = migrator().run_direct(None, &mut *conn, false).await {
            // The migrator holds a session-level advisory lock; never return that connection
            // to the pool.
            conn.close_on_drop();
            return Err(e.into());
        }
        drop(conn);
        Ok(PostgresStore {
            pool,
            faults: Faults::default(),
            dialect: PostgresDialect {
                schema: options.postgres_schema.clone(),
            },
        })
    }

    /// Drops the schema named in [`StoreOptions::postgres_schema`] with everything in it,
    /// then closes the pool. For tests and benchmarks that use a throw-away schema; does
    /// nothing but close the pool when no schema was set.
    pub async fn drop_schema(&self) -> Result<()> {
        if let Some(schema) = &self.dialect.schema {
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
            )))
            .execute(&self.pool)
            .await?;
        }
        self.pool.close().await;
        Ok(())
    }
}

/// The backend table's [`Connect`](crate::Connect) for this backend.
pub(crate) fn connect<'a>(
    url: &'a str,
    options: &'a StoreOptions,
) -> BoxFuture<'a, Result<crate::Store>> {
    Box::pin(async move {
        Ok(crate::Store::new(
            PostgresStore::connect_with(url, options).await?,
        ))
    })
}

/// A plain lower-case identifier, safe to splice into DDL.
fn valid_schema(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

fn migrator() -> sqlx::migrate::Migrator {
    crate::rows::migrator(&[
        (
            1,
            "sessions and messages",
            include_str!("../migrations/postgres/0001_init.sql"),
        ),
        (
            2,
            "recall: originals and search index",
            include_str!("../migrations/postgres/0002_recall.sql"),
        ),
        (
            3,
            "search: CJK bigrams, index rebuilt",
            include_str!("../migrations/postgres/0003_cjk_bigrams.sql"),
        ),
        (
            4,
            "history: archived generations, restore",
            include_str!("../migrations/postgres/0004_history.sql"),
        ),
        (
            5,
            "the continuation marker kind",
            include_str!("../migrations/postgres/0005_continuation.sql"),
        ),
    ])
}

impl sealed::Sealed for PostgresDialect {}

impl Dialect for PostgresDialect {
    type Db = sqlx::Postgres;
    const BACKEND: Backend = Backend::POSTGRES;
    /// READ COMMITTED: the session row's lock (taken by the first UPDATE) serializes writers of
    /// one session; writers of different sessions do not wait for each other.
    const BEGIN_WRITE: &'static str = "BEGIN";
    /// One snapshot for every statement of the transaction.
    const BEGIN_READ: &'static str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    const SQL_PREV_ACTIVE: &'static str = "SELECT pos FROM hermes_messages \
     WHERE session_id = $1 AND active AND pos < $2 ORDER BY pos DESC LIMIT 1";
    const SQL_NEXT_ACTIVE: &'static str = "SELECT pos FROM hermes_messages \
     WHERE session_id = $1 AND active AND pos > $2 ORDER BY pos LIMIT 1";
    const SQL_COUNT_ACTIVE_BETWEEN: &'static str = "SELECT COUNT(*) FROM hermes_messages \
     WHERE session_id = $1 AND active AND pos > $2 AND pos < $3";
    const SQL_LOAD_ACTIVE: &'static str = "SELECT id, pos, kind, body, meta, active, compacted, generation, created_at, \
     archived_at, archived_generation, pass_generation FROM hermes_messages \
     WHERE session_id = $1 AND active ORDER BY pos";

    /// Whether the session has archived rows, and trimmed originals, not in the search index yet.
    const SQL_PENDING_INDEX: &'static str = "SELECT \
     EXISTS (SELECT 1 FROM hermes_messages \
             WHERE session_id = $1 AND NOT active AND NOT search_indexed), \
     EXISTS (SELECT 1 FROM hermes_originals WHERE session_id = $1 AND NOT search_indexed)";
    /// Every word of the query must be in the document (`$2` with each `<->` read as `&`, which
    /// the GIN index answers); a phrase must also stand at consecutive positions, unless the
    /// document is too long for PostgreSQL to have kept its positions (some word at the last
    /// position it records, 16,383, or with the most positions it keeps per word, 255): there
    /// every word present is the best the index can tell.
    const SQL_SEARCH: &'static str = "SELECT row_id, handle FROM hermes_search \
     WHERE session_id = $1 AND tsv @@ to_tsquery('simple', replace($2, '<->', '&')) \
       AND (tsv @@ to_tsquery('simple', $2) \
            OR EXISTS (SELECT 1 FROM unnest(tsv) AS u \
                       WHERE cardinality(u.positions) >= 255 OR 16383 = ANY (u.positions))) \
     ORDER BY ts_rank(tsv, to_tsquery('simple', $2)) DESC, id LIMIT $3";

    /// A `to_tsquery` input requiring every term (`&`); the words of a phrase are joined by
    /// `<->` (next position) and parenthesized: `ok & (数据 <-> 据库)`. Words are letters and
    /// digits only (`char::is_alphanumeric`, which no ASCII punctuation or space satisfies), so
    /// none holds a tsquery operator (`& | ! ( ) < - > : * '`, backslash) or a space and none
    /// needs quoting.
    ///
    /// PostgreSQL keeps at most 255 positions per word of a tsvector and none past 16,383
    /// (later words share that last position), so in a document past those limits a phrase is
    /// matched as its words alone (see `SQL_SEARCH`); SQLite keeps every position.
    fn fts_query(terms: &[Term]) -> String {
        terms
            .iter()
            .map(|t| match t.as_slice() {
                [word] => word.clone(),
                words => format!("({})", words.join(" <-> ")),
            })
            .collect::<Vec<_>>()
            .join(" & ")
    }

    fn rows_affected(done: &<sqlx::Postgres as Database>::QueryResult) -> u64 {
        done.rows_affected()
    }

    /// Adds documents (at most [`DOC_CHUNK`](crate::rows::DOC_CHUNK)) to the session's search
    /// index in one statement.
    fn index_docs<'a>(
        conn: &'a mut <sqlx::Postgres as Database>::Connection,
        session: &'a str,
        docs: &'a [Doc],
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(index_docs(conn, session, docs))
    }
}

async fn index_docs(conn: &mut sqlx::PgConnection, session: &str, docs: &[Doc]) -> Result<()> {
    if docs.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = (0..docs.len())
        .map(|i| {
            let b = 2 + 3 * i;
            format!("($1, ${b}, ${}, to_tsvector('simple', ${}))", b + 1, b + 2)
        })
        .collect();
    let sql = format!(
        "INSERT INTO hermes_search (session_id, row_id, handle, tsv) VALUES {}",
        values.join(", ")
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(session);
    for d in docs {
        q = q
            .bind(d.row_id)
            .bind(d.handle.as_deref())
            .bind(d.text.as_str());
    }
    q.execute(&mut *conn).await?;
    Ok(())
}

/// The class of a PostgreSQL SQLSTATE (this backend's share of error classification).
pub(crate) fn failure(code: &str) -> DatabaseFailure {
    use DatabaseFailure as F;
    match code {
        "28P01" | "28000" => F::Authentication,
        "3D000" => F::MissingDatabase,
        "25006" => F::ReadOnly,
        "53100" => F::DiskFull,
        "53300" => F::TooManyConnections,
        "42501" => F::PermissionDenied,
        "40001" | "40P01" | "55P03" => F::Busy,
        "57P01" | "57P02" | "57P03" => F::Unreachable,
        "42P01" | "42703" | "3F000" => F::Schema,
        c if c.starts_with("08") => F::Unreachable,
        c if c.starts_with("23") => F::Constraint,
        c if c.starts_with("58") => F::Io,
        _ => F::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_map_to_their_class() {
        use DatabaseFailure as F;
        for (code, want) in [
            ("28P01", F::Authentication),
            ("28000", F::Authentication),
            ("3D000", F::MissingDatabase),
            ("25006", F::ReadOnly),
            ("53100", F::DiskFull),
            ("53300", F::TooManyConnections),
            ("40001", F::Busy),
            ("08006", F::Unreachable),
            ("23505", F::Constraint),
            ("42601", F::Other),
        ] {
            assert_eq!(failure(code), want, "{code}");
        }
    }
}
