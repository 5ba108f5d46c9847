//! The store implementation shared by both backends: one engine, generic over the backend's
//! [`Dialect`], so both run the same statements and the same checks. What differs (SQL
//! strings, the write-transaction begin, the full-text index) is the dialect's.
//!
//! This file holds [`SqlStore`], its [`TranscriptStore`] implementation and the row decoding
//! every part shares; the statements behind the trait's methods are grouped by concern:
//! `read.rs` (a session, a snapshot of its active rows, its history, rows by id), `append.rs`
//! (appends, imports, the multi-row insert), `compact.rs` (`archive_and_compact` and `restore`,
//! the only writes that change the generation) and `recall.rs` (trimmed originals, the
//! full-text search and its index catch-up).

mod append;
mod compact;
mod read;
mod recall;

use compaction_core::Message;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Type};

use crate::dialect::Dialect;
use crate::rows::{Faults, check_handle, check_session_id, decode, now_ms};
use crate::{
    Backend, BoxFuture, Commit, CompactionState, FaultPoint, GenerationInfo, Restored, Result,
    RowId, SearchHit, SessionInfo, StoreError, StoredRow, TranscriptStore,
};

type Tx<D> = sqlx::Transaction<'static, <D as Dialect>::Db>;
type Conn<D> = <<D as Dialect>::Db as Database>::Connection;

/// A session store over one backend's connection pool: [`SqliteStore`](crate::SqliteStore)
/// or [`PostgresStore`](crate::PostgresStore). Clones share the pool.
pub struct SqlStore<D: Dialect> {
    pub(crate) pool: sqlx::Pool<D::Db>,
    pub(crate) faults: Faults,
    pub(crate) dialect: D,
}

impl<D: Dialect> Clone for SqlStore<D> {
    fn clone(&self) -> Self {
        SqlStore {
            pool: self.pool.clone(),
            faults: self.faults.clone(),
            dialect: self.dialect.clone(),
        }
    }
}

impl<D: Dialect> std::fmt::Debug for SqlStore<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &D::BACKEND)
            .field("pool", &self.pool)
            .field("dialect", &self.dialect)
            .finish_non_exhaustive()
    }
}

impl<D: Dialect> SqlStore<D> {
    /// The underlying pool.
    pub fn pool(&self) -> &sqlx::Pool<D::Db> {
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

// The bounds below are what the engine asks of a driver: executors, arguments, and the column
// types it binds and decodes. Rust does not carry where-clauses on other types (`i64: Encode<..>`)
// from a trait to its users, so they are written on each impl block that needs them, the same
// list on this one and on the `SqlStore` block of each part (`read.rs`, `append.rs`,
// `compact.rs`, `recall.rs`); both drivers satisfy them.
impl<D: Dialect> TranscriptStore for SqlStore<D>
where
    for<'c> &'c mut Conn<D>: Executor<'c, Database = D::Db>,
    <D::Db as Database>::Arguments: IntoArguments<D::Db>,
    usize: ColumnIndex<<D::Db as Database>::Row>,
    i64: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    bool: for<'r> Decode<'r, D::Db> + Type<D::Db>,
    String: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    for<'q> &'q str: Encode<'q, D::Db> + Type<D::Db>,
    for<'q> &'q [u8]: Encode<'q, D::Db> + Type<D::Db>,
    Vec<u8>: for<'r> Decode<'r, D::Db> + Type<D::Db>,
    Option<i64>: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    Option<String>: for<'q> Encode<'q, D::Db> + for<'r> Decode<'r, D::Db> + Type<D::Db>,
    for<'q> Option<&'q str>: Encode<'q, D::Db> + Type<D::Db>,
{
    fn backend(&self) -> Option<Backend> {
        Some(D::BACKEND)
    }

    fn create_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        Box::pin(async move {
            check_session_id(session)?;
            let now = now_ms();
            let done = sqlx::query(
                "INSERT INTO hermes_sessions (id, created_at, updated_at) VALUES ($1, $2, $2) \
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(session)
            .bind(now)
            .execute(&self.pool)
            .await?;
            if D::rows_affected(&done) == 0 {
                return Err(StoreError::SessionExists {
                    session: session.to_owned(),
                });
            }
            Ok(SessionInfo {
                id: session.to_owned(),
                generation: 0,
                created_at_ms: now,
            })
        })
    }

    fn open<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        Box::pin(self.open_session(session))
    }

    fn open_or_create<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        Box::pin(async move {
            check_session_id(session)?;
            sqlx::query(
                "INSERT INTO hermes_sessions (id, created_at, updated_at) VALUES ($1, $2, $2) \
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(session)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
            self.open_session(session).await
        })
    }

    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>> {
        Box::pin(async move {
            let rows: Vec<(String, i64, i64)> = sqlx::query_as(
                "SELECT id, generation, created_at FROM hermes_sessions ORDER BY id",
            )
            .fetch_all(&self.pool)
            .await?;
            Ok(rows.into_iter().map(session_info).collect())
        })
    }

    fn generation<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            self.faults.check(FaultPoint::GenerationRead)?;
            Ok(self.open_session(session).await?.generation)
        })
    }

    fn append<'a>(
        &'a self,
        session: &'a str,
        messages: &'a mut [Message],
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        Box::pin(self.append_fresh(session, None, messages))
    }

    fn append_at<'a>(
        &'a self,
        session: &'a str,
        expected: u64,
        messages: &'a mut [Message],
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        Box::pin(self.append_fresh(session, Some(expected), messages))
    }

    fn import_session<'a>(
        &'a self,
        session: &'a str,
        messages: &'a mut [Message],
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        Box::pin(self.import(session, messages))
    }

    fn load_active_with_generation<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<(Vec<Message>, u64)>> {
        Box::pin(self.load_active_snapshot(session))
    }

    fn load_active<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<Message>>> {
        Box::pin(async move {
            check_session_id(session)?;
            let rows: Vec<(i64, String, Vec<u8>, Option<String>)> =
                sqlx::query_as(D::SQL_LOAD_ACTIVE)
                    .bind(session)
                    .fetch_all(&self.pool)
                    .await?;
            if rows.is_empty() {
                self.open_session(session).await?;
            }
            rows.into_iter()
                .map(|(id, kind, body, meta)| Ok(decode(id, &kind, body, meta)?.0))
                .collect()
        })
    }

    fn load_all<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<StoredRow>>> {
        Box::pin(async move {
            check_session_id(session)?;
            let sql = format!(
                "SELECT {ROW_COLUMNS} FROM hermes_messages WHERE session_id = $1 ORDER BY pos, id"
            );
            let rows: Vec<FullRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                .bind(session)
                .fetch_all(&self.pool)
                .await?;
            if rows.is_empty() {
                self.open_session(session).await?;
            }
            rows.into_iter().map(stored_row).collect()
        })
    }

    fn archive_and_compact<'a>(
        &'a self,
        session: &'a str,
        commit: &'a mut Commit,
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        Box::pin(self.commit_pass(session, commit))
    }

    fn history<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<GenerationInfo>>> {
        Box::pin(self.list_history(session))
    }

    fn restore<'a>(
        &'a self,
        session: &'a str,
        expected: u64,
        target: u64,
    ) -> BoxFuture<'a, Result<Restored>> {
        Box::pin(self.restore_generation(session, expected, target))
    }

    fn compaction_state<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<CompactionState>> {
        Box::pin(async move {
            check_session_id(session)?;
            let row: Option<(Option<i64>, i64, Option<String>)> = sqlx::query_as(
                "SELECT cooldown_until_ms, ineffective_count, state_extra FROM hermes_sessions \
                 WHERE id = $1",
            )
            .bind(session)
            .fetch_optional(&self.pool)
            .await?;
            let (cooldown, count, extra) = row.ok_or_else(|| unknown(session))?;
            let extra = match extra {
                Some(text) => serde_json::from_str(&text).map_err(|_| StoreError::CorruptRow {
                    row: 0,
                    reason: "session compaction state is not valid JSON".into(),
                })?,
                None => serde_json::Value::Null,
            };
            Ok(CompactionState {
                cooldown_until_ms: cooldown,
                ineffective_count: u32::try_from(count).unwrap_or(u32::MAX),
                extra,
            })
        })
    }

    fn set_compaction_state<'a>(
        &'a self,
        session: &'a str,
        state: &'a CompactionState,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            check_session_id(session)?;
            let extra = match &state.extra {
                serde_json::Value::Null => None,
                v => Some(serde_json::to_string(v).map_err(StoreError::Meta)?),
            };
            let done = sqlx::query(
                "UPDATE hermes_sessions SET cooldown_until_ms = $2, ineffective_count = $3, \
                 state_extra = $4, updated_at = $5 WHERE id = $1",
            )
            .bind(session)
            .bind(state.cooldown_until_ms)
            .bind(i64::from(state.ineffective_count))
            .bind(extra)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
            if D::rows_affected(&done) == 0 {
                return Err(unknown(session));
            }
            Ok(())
        })
    }

    fn store_original<'a>(
        &'a self,
        session: &'a str,
        handle: &'a str,
        original: &'a Message,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(self.keep_original(session, handle, original))
    }

    fn load_original<'a>(
        &'a self,
        session: &'a str,
        handle: &'a str,
    ) -> BoxFuture<'a, Result<Option<Message>>> {
        Box::pin(async move {
            check_session_id(session)?;
            check_handle(handle)?;
            let row: Option<(Vec<u8>,)> = sqlx::query_as(
                "SELECT body FROM hermes_originals WHERE session_id = $1 AND handle = $2",
            )
            .bind(session)
            .bind(handle)
            .fetch_optional(&self.pool)
            .await?;
            match row {
                Some((body,)) => Ok(Some(decode_original(body)?)),
                None => {
                    self.open_session(session).await?;
                    Ok(None)
                }
            }
        })
    }

    fn load_rows<'a>(
        &'a self,
        session: &'a str,
        ids: &'a [RowId],
    ) -> BoxFuture<'a, Result<Vec<StoredRow>>> {
        Box::pin(async move {
            check_session_id(session)?;
            let rows = self.rows_by_id(session, ids).await?;
            if rows.is_empty() {
                self.open_session(session).await?;
            }
            Ok(rows)
        })
    }

    fn search_archived<'a>(
        &'a self,
        session: &'a str,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>>> {
        Box::pin(self.search(session, query, limit))
    }
}

fn unknown(session: &str) -> StoreError {
    StoreError::UnknownSession {
        session: session.to_owned(),
    }
}

fn session_info((id, generation, created): (String, i64, i64)) -> SessionInfo {
    SessionInfo {
        id,
        generation: generation as u64,
        created_at_ms: created,
    }
}

/// Columns of a full row, in [`FullRow`] order.
const ROW_COLUMNS: &str = "id, pos, kind, body, meta, active, compacted, generation, created_at, \
     archived_at, archived_generation, pass_generation";

type FullRow = (
    i64,
    i64,
    String,
    Vec<u8>,
    Option<String>,
    bool,
    bool,
    i64,
    i64,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

fn stored_row(
    (
        id,
        pos,
        kind,
        body,
        meta,
        active,
        compacted,
        generation,
        created,
        archived,
        archived_generation,
        pass_generation,
    ): FullRow,
) -> Result<StoredRow> {
    let (message, kind) = decode(id, &kind, body, meta)?;
    Ok(StoredRow {
        id,
        position: pos,
        message,
        kind,
        active,
        compacted,
        generation: generation as u64,
        created_at_ms: created,
        archived_at_ms: archived,
        archived_generation: archived_generation.map(|g| g as u64),
        pass_generation: pass_generation.map(|g| g as u64),
    })
}

/// Ids per `IN (...)` lookup.
const ID_CHUNK: usize = 500;

/// A trimmed original's stored bytes back as a message.
fn decode_original(body: Vec<u8>) -> Result<Message> {
    let corrupt = |reason: &str| StoreError::CorruptRow {
        row: 0,
        reason: format!("trimmed original {reason}"),
    };
    let text = String::from_utf8(body).map_err(|_| corrupt("is not UTF-8"))?;
    Message::from_json(&text).map_err(|e| corrupt(&format!("does not parse: {e}")))
}
