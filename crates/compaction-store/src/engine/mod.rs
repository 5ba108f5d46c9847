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

/// `engine_impl! { SqlStore { .. } }` is `impl<D: Dialect> SqlStore<D> { .. }`, and
/// `engine_impl! { TranscriptStore for SqlStore { .. } }` the trait's impl, under the bounds the
/// engine asks of a driver: executors, arguments, and the column types it binds and decodes.
/// Rust does not carry where-clauses on other types (`i64: Encode<..>`) from a trait to its
/// users, so every impl block needs them; this is the one place they are written (this file's
/// `TranscriptStore` impl and the `SqlStore` block of each part use it). Both drivers satisfy
/// them. (rustfmt leaves a macro's body as written: keep it formatted by hand.)
macro_rules! engine_impl {
    (SqlStore { $($body:tt)* }) => {
        engine_impl!(@impl [] $($body)*);
    };
    (TranscriptStore for SqlStore { $($body:tt)* }) => {
        engine_impl!(@impl [$crate::TranscriptStore for] $($body)*);
    };
    (@impl [$($head:tt)*] $($body:tt)*) => {
        impl<D: $crate::dialect::Dialect> $($head)* SqlStore<D>
        where
            for<'c> &'c mut $crate::engine::Conn<D>: ::sqlx::Executor<'c, Database = D::Db>,
            <D::Db as ::sqlx::Database>::Arguments: ::sqlx::IntoArguments<D::Db>,
            usize: ::sqlx::ColumnIndex<<D::Db as ::sqlx::Database>::Row>,
            i64: for<'q> ::sqlx::Encode<'q, D::Db>
                + for<'r> ::sqlx::Decode<'r, D::Db>
                + ::sqlx::Type<D::Db>,
            bool: for<'r> ::sqlx::Decode<'r, D::Db> + ::sqlx::Type<D::Db>,
            String: for<'q> ::sqlx::Encode<'q, D::Db>
                + for<'r> ::sqlx::Decode<'r, D::Db>
                + ::sqlx::Type<D::Db>,
            for<'q> &'q str: ::sqlx::Encode<'q, D::Db> + ::sqlx::Type<D::Db>,
            for<'q> &'q [u8]: ::sqlx::Encode<'q, D::Db> + ::sqlx::Type<D::Db>,
            Vec<u8>: for<'r> ::sqlx::Decode<'r, D::Db> + ::sqlx::Type<D::Db>,
            Option<i64>: for<'q> ::sqlx::Encode<'q, D::Db>
                + for<'r> ::sqlx::Decode<'r, D::Db>
                + ::sqlx::Type<D::Db>,
            Option<String>: for<'q> ::sqlx::Encode<'q, D::Db>
                + for<'r> ::sqlx::Decode<'r, D::Db>
                + ::sqlx::Type<D::Db>,
            for<'q> Option<&'q str>: ::sqlx::Encode<'q, D::Db> + ::sqlx::Type<D::Db>,
        {
            $($body)*
        }
    };
}

mod append;
mod compact;
mod read;
mod recall;

use compaction_core::Message;
use sqlx::Database;

use crate::dialect::Dialect;
use crate::rows::{Faults, check_handle, check_session_id, decode};
use crate::{
    Backend, BoxFuture, Change, CompactionState, FaultPoint, GenerationInfo, Result, Rows,
    SearchHit, SessionInfo, Snapshot, StoreError, StoredRow, Written,
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

engine_impl! { TranscriptStore for SqlStore {
    fn open<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        Box::pin(async move {
            self.faults.check(FaultPoint::GenerationRead)?;
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

    fn load<'a>(&'a self, session: &'a str, rows: Rows<'a>) -> BoxFuture<'a, Result<Snapshot>> {
        Box::pin(self.snapshot(session, rows))
    }

    fn write<'a>(&'a self, session: &'a str, change: Change<'a>) -> BoxFuture<'a, Result<Written>> {
        Box::pin(async move {
            Ok(match change {
                Change::Create { messages } => {
                    Written::rows(Some(0), self.import(session, messages).await?)
                }
                Change::Append { expected, messages } => {
                    Written::rows(None, self.append_fresh(session, expected, messages).await?)
                }
                Change::Commit(commit) => {
                    let ids = self.commit_pass(session, commit).await?;
                    let mut done = Written::rows(Some(commit.generation + 1), ids);
                    done.archived = commit.archived_len() as u64;
                    done
                }
                Change::Restore { expected, target } => {
                    let restored = self.restore_generation(session, expected, target).await?;
                    Written {
                        generation: Some(restored.generation),
                        ids: Vec::new(),
                        archived: restored.archived,
                        reactivated: restored.reactivated,
                    }
                }
                Change::State(state) => {
                    self.set_state(session, state).await?;
                    Written::new()
                }
                Change::Original { handle, message } => {
                    self.keep_original(session, handle, message).await?;
                    Written::new()
                }
            })
        })
    }

    fn history<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<GenerationInfo>>> {
        Box::pin(self.list_history(session))
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

    fn search_archived<'a>(
        &'a self,
        session: &'a str,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>>> {
        Box::pin(self.search(session, query, limit))
    }

    fn backend(&self) -> Option<Backend> {
        Some(D::BACKEND)
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.pool.close())
    }

    fn inject_fault(&self, point: FaultPoint) {
        self.faults.arm(point)
    }
} }

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
