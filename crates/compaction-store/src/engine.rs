//! The store implementation shared by both backends: one engine, generic over the backend's
//! [`Dialect`], so both run the same statements and the same checks. What differs (SQL
//! strings, the write-transaction begin, the full-text index) is the dialect's.

use std::collections::HashMap;

use compaction_core::Message;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Type};

use crate::dialect::Dialect;
use crate::rows::{
    DOC_CHUNK, Doc, Faults, INSERT_CHUNK, Prepared, STRIDE, check_handle, check_session_id, decode,
    insert_sql, now_ms, placeholders, prepare, search_terms, search_text, spread, to_i64,
};
use crate::{
    Backend, BoxFuture, Commit, CompactionState, FaultPoint, GenerationInfo, GenerationKind,
    HitSource, PassLabel, Restored, Result, RowId, SearchHit, SessionInfo, StoreError, StoredRow,
    TranscriptStore,
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
// from a trait to its users, so they are written on the two impl blocks that need them, the
// same list twice; both drivers satisfy them.
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
        Box::pin(async move { Ok(self.open_session(session).await?.generation) })
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

/// Archived rows indexed per catch-up statement.
const INDEX_CHUNK: i64 = 200;

/// Trimmed originals indexed per catch-up statement (each may be megabytes).
const ORIGINAL_CHUNK: i64 = 20;

impl<D: Dialect> SqlStore<D>
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
    async fn open_session(&self, session: &str) -> Result<SessionInfo> {
        check_session_id(session)?;
        let row: Option<(String, i64, i64)> =
            sqlx::query_as("SELECT id, generation, created_at FROM hermes_sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&self.pool)
                .await?;
        row.map(session_info).ok_or_else(|| unknown(session))
    }

    /// Appends the unstamped messages; with `expected`, only while the session is at that
    /// generation (checked under the session row's lock, in the append's transaction).
    async fn append_fresh(
        &self,
        session: &str,
        expected: Option<u64>,
        messages: &mut [Message],
    ) -> Result<Vec<RowId>> {
        check_session_id(session)?;
        let fresh: Vec<usize> = (0..messages.len())
            .filter(|&i| messages[i].row_id().is_none())
            .collect();
        if fresh.is_empty() {
            let actual = self.open_session(session).await?.generation;
            return match expected {
                Some(expected) if expected != actual => Err(StoreError::StaleGeneration {
                    session: session.to_owned(),
                    expected,
                    actual,
                }),
                _ => Ok(Vec::new()),
            };
        }
        let prepared = fresh
            .iter()
            .map(|&i| prepare(&messages[i]))
            .collect::<Result<Vec<_>>>()?;
        let now = now_ms();
        let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_WRITE).await?;
        let ids = Self::append_rows(&mut tx, session, expected, &prepared, now).await?;
        tx.commit().await?;
        for (&i, &id) in fresh.iter().zip(&ids) {
            messages[i].meta_mut().row_id = Some(id);
        }
        Ok(ids)
    }

    /// Creates the session and appends every message in one transaction.
    async fn import(&self, session: &str, messages: &mut [Message]) -> Result<Vec<RowId>> {
        check_session_id(session)?;
        let prepared = messages.iter().map(prepare).collect::<Result<Vec<_>>>()?;
        let now = now_ms();
        let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_WRITE).await?;
        let created = sqlx::query(
            "INSERT INTO hermes_sessions (id, created_at, updated_at) VALUES ($1, $2, $2) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(session)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        if D::rows_affected(&created) == 0 {
            return Err(StoreError::SessionExists {
                session: session.to_owned(),
            });
        }
        let ids = if prepared.is_empty() {
            Vec::new()
        } else {
            Self::append_rows(&mut tx, session, None, &prepared, now).await?
        };
        self.faults.check(FaultPoint::BeforeImportCommit)?;
        tx.commit().await?;
        for (m, &id) in messages.iter_mut().zip(&ids) {
            m.meta_mut().row_id = Some(id);
        }
        Ok(ids)
    }

    /// Inserts rows after every active row of the session; returns their ids in order.
    async fn append_rows(
        tx: &mut Tx<D>,
        session: &str,
        expected: Option<u64>,
        prepared: &[Prepared],
        now: i64,
    ) -> Result<Vec<RowId>> {
        let span = (prepared.len() as i64)
            .checked_mul(STRIDE)
            .ok_or(StoreError::OutOfRange {
                what: "append size",
            })?;
        // Reserving the keys locks the session row: appenders of one session queue here.
        let reserved: Option<(i64, i64)> = sqlx::query_as(
            "UPDATE hermes_sessions SET last_pos = last_pos + $2, updated_at = $3 WHERE id = $1 \
             RETURNING last_pos, generation",
        )
        .bind(session)
        .bind(span)
        .bind(now)
        .fetch_optional(&mut **tx)
        .await?;
        let (last, generation) = reserved.ok_or_else(|| unknown(session))?;
        if let Some(expected) = expected
            && u64::try_from(generation).ok() != Some(expected)
        {
            // The caller's transaction rolls back when dropped: nothing is reserved.
            return Err(StoreError::StaleGeneration {
                session: session.to_owned(),
                expected,
                actual: u64::try_from(generation).unwrap_or(0),
            });
        }
        let first = last - span + STRIDE;
        let positions: Vec<i64> = (0..prepared.len() as i64)
            .map(|i| first + i * STRIDE)
            .collect();
        Self::insert_rows(tx, session, generation, now, prepared, &positions).await
    }

    /// The active messages and the generation, read from one snapshot.
    async fn load_active_snapshot(&self, session: &str) -> Result<(Vec<Message>, u64)> {
        check_session_id(session)?;
        let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_READ).await?;
        let generation: Option<(i64,)> =
            sqlx::query_as("SELECT generation FROM hermes_sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&mut *tx)
                .await?;
        let (generation,) = generation.ok_or_else(|| unknown(session))?;
        let rows: Vec<(i64, String, Vec<u8>, Option<String>)> = sqlx::query_as(D::SQL_LOAD_ACTIVE)
            .bind(session)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        let messages = rows
            .into_iter()
            .map(|(id, kind, body, meta)| Ok(decode(id, &kind, body, meta)?.0))
            .collect::<Result<Vec<_>>>()?;
        Ok((messages, generation as u64))
    }

    async fn commit_pass(&self, session: &str, commit: &mut Commit) -> Result<Vec<RowId>> {
        check_session_id(session)?;
        if commit.is_empty() {
            return Err(StoreError::EmptyCommit);
        }
        let prepared = commit
            .splices
            .iter()
            .map(|s| s.insert.iter().map(prepare).collect::<Result<Vec<_>>>())
            .collect::<Result<Vec<_>>>()?;
        let expected = to_i64(commit.generation, "generation")?;
        let now = now_ms();
        let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_WRITE).await?;

        // The generation check comes first and takes the session row's lock: a concurrent commit
        // planned against the same generation waits here, then finds it moved on.
        let bumped: Option<(i64,)> = sqlx::query_as(
            "UPDATE hermes_sessions SET generation = generation + 1, updated_at = $3 \
             WHERE id = $1 AND generation = $2 RETURNING last_pos",
        )
        .bind(session)
        .bind(expected)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await?;
        let Some((last_pos,)) = bumped else {
            let current: Option<(i64,)> =
                sqlx::query_as("SELECT generation FROM hermes_sessions WHERE id = $1")
                    .bind(session)
                    .fetch_optional(&mut *tx)
                    .await?;
            return Err(match current {
                None => unknown(session),
                Some((actual,)) => StoreError::StaleGeneration {
                    session: session.to_owned(),
                    expected: commit.generation,
                    actual: actual as u64,
                },
            });
        };
        let new_generation = expected + 1;
        // The key the next append will use: rows placed after the last active row stay below it.
        let end_key = last_pos.checked_add(STRIDE).ok_or(StoreError::OutOfRange {
            what: "ordering key",
        })?;

        let mut ids = Vec::with_capacity(commit.inserted_len());
        let mut prev_key: Option<i64> = None;
        for (index, (splice, rows)) in commit.splices.iter().zip(&prepared).enumerate() {
            if splice.archive.is_empty() && rows.is_empty() {
                continue;
            }
            let positions = if splice.archive.is_empty() {
                let lo = match splice.insert_after {
                    Some(anchor) => {
                        let pos = Self::anchor_position(&mut tx, session, index, anchor).await?;
                        if prev_key.is_some_and(|p| pos <= p) {
                            return Err(StoreError::SplicesOutOfOrder { splice: index });
                        }
                        Some(pos)
                    }
                    None if prev_key.is_some() => {
                        return Err(StoreError::SplicesOutOfOrder { splice: index });
                    }
                    None => None,
                };
                let hi = match lo {
                    Some(lo) => Self::next_active(&mut tx, session, lo).await?,
                    None => Self::next_active(&mut tx, session, i64::MIN).await?,
                }
                .unwrap_or(end_key);
                prev_key = Some(lo.unwrap_or(i64::MIN));
                self.faults.check(FaultPoint::AfterArchive)?;
                let lo = lo.unwrap_or_else(|| {
                    hi.saturating_sub(STRIDE.saturating_mul(rows.len() as i64 + 1))
                });
                spread(lo, hi, rows.len(), index)?
            } else {
                let archived = Self::archive_rows(
                    &mut tx,
                    session,
                    index,
                    &splice.archive,
                    prev_key,
                    (now, new_generation),
                )
                .await?;
                prev_key = archived.last().copied();
                self.faults.check(FaultPoint::AfterArchive)?;
                if rows.len() <= archived.len() {
                    // The new rows take the places of the rows they replace.
                    archived[..rows.len()].to_vec()
                } else {
                    let first = archived[0];
                    let last = archived[archived.len() - 1];
                    let hi = Self::next_active(&mut tx, session, last)
                        .await?
                        .unwrap_or(end_key);
                    let lo = match Self::prev_active(&mut tx, session, first).await? {
                        Some(lo) => lo,
                        None => hi.saturating_sub(STRIDE.saturating_mul(rows.len() as i64 + 1)),
                    };
                    spread(lo, hi, rows.len(), index)?
                }
            };
            if !rows.is_empty() {
                ids.extend(
                    Self::insert_rows(&mut tx, session, new_generation, now, rows, &positions)
                        .await?,
                );
            }
        }
        for chunk in ids.chunks(ID_CHUNK) {
            let sql = format!(
                "UPDATE hermes_messages SET pass_generation = $1 WHERE id IN ({})",
                placeholders(2, chunk.len())
            );
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(new_generation);
            for id in chunk {
                q = q.bind(*id);
            }
            q.execute(&mut *tx).await?;
        }
        Self::record_generation(
            &mut tx,
            session,
            new_generation,
            now,
            &commit.label,
            None,
            (commit.archived_len() as i64, ids.len() as i64),
        )
        .await?;
        tx.commit().await?;

        let inserted = commit.splices.iter_mut().flat_map(|s| s.insert.iter_mut());
        for (m, &id) in inserted.zip(&ids) {
            m.meta_mut().row_id = Some(id);
        }
        Ok(ids)
    }

    /// Checks that `archive` names consecutive active rows of the session, after `prev_key`,
    /// archives them, and returns their ordering keys.
    async fn archive_rows(
        tx: &mut Tx<D>,
        session: &str,
        splice: usize,
        archive: &[RowId],
        prev_key: Option<i64>,
        (now, generation): (i64, i64),
    ) -> Result<Vec<i64>> {
        let sql = format!(
            "SELECT id, session_id, pos, active FROM hermes_messages WHERE id IN ({})",
            placeholders(1, archive.len())
        );
        let mut q = sqlx::query_as::<_, (i64, String, i64, bool)>(sqlx::AssertSqlSafe(sql));
        for id in archive {
            q = q.bind(*id);
        }
        let found: HashMap<i64, (String, i64, bool)> = q
            .fetch_all(&mut **tx)
            .await?
            .into_iter()
            .map(|(id, s, pos, active)| (id, (s, pos, active)))
            .collect();
        let mut positions = Vec::with_capacity(archive.len());
        for &row in archive {
            match found.get(&row) {
                Some((s, pos, active)) if s == session => {
                    if !active {
                        return Err(StoreError::RowNotActive { splice, row });
                    }
                    positions.push(*pos);
                }
                _ => return Err(StoreError::RowNotInSession { splice, row }),
            }
        }
        if positions.windows(2).any(|w| w[0] >= w[1]) {
            return Err(StoreError::NotContiguous { splice });
        }
        let (first, last) = (positions[0], positions[positions.len() - 1]);
        if prev_key.is_some_and(|p| first <= p) {
            return Err(StoreError::SplicesOutOfOrder { splice });
        }
        if positions.len() >= 2 {
            let (between,): (i64,) = sqlx::query_as(D::SQL_COUNT_ACTIVE_BETWEEN)
                .bind(session)
                .bind(first)
                .bind(last)
                .fetch_one(&mut **tx)
                .await?;
            if between != positions.len() as i64 - 2 {
                return Err(StoreError::NotContiguous { splice });
            }
        }
        let sql = format!(
            "UPDATE hermes_messages SET active = FALSE, compacted = TRUE, archived_at = $1, \
             archived_generation = $2 WHERE id IN ({})",
            placeholders(3, archive.len())
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(now)
            .bind(generation);
        for id in archive {
            q = q.bind(*id);
        }
        let done = q.execute(&mut **tx).await?;
        if D::rows_affected(&done) != archive.len() as u64 {
            return Err(StoreError::NotContiguous { splice });
        }
        Ok(positions)
    }

    /// Records what made `generation` (inside the transaction that writes it).
    async fn record_generation(
        tx: &mut Tx<D>,
        session: &str,
        generation: i64,
        now: i64,
        label: &PassLabel,
        restored_to: Option<i64>,
        (archived, inserted): (i64, i64),
    ) -> Result<()> {
        let tokens = |t: Option<u64>| t.map(|t| i64::try_from(t).unwrap_or(i64::MAX));
        sqlx::query(
            "INSERT INTO hermes_generations (session_id, generation, created_at, kind, \
             tokens_before, tokens_after, restored_to, archived, inserted) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(session)
        .bind(generation)
        .bind(now)
        .bind(label.kind.as_str())
        .bind(tokens(label.tokens_before))
        .bind(tokens(label.tokens_after))
        .bind(restored_to)
        .bind(archived)
        .bind(inserted)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    async fn list_history(&self, session: &str) -> Result<Vec<GenerationInfo>> {
        check_session_id(session)?;
        let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_READ).await?;
        let found: Option<(i64, i64, i64)> = sqlx::query_as(
            "SELECT generation, history_from, created_at FROM hermes_sessions WHERE id = $1",
        )
        .bind(session)
        .fetch_optional(&mut *tx)
        .await?;
        let (current, from, created) = found.ok_or_else(|| unknown(session))?;
        type Recorded = (
            i64,
            i64,
            String,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            i64,
            i64,
        );
        let recorded: Vec<Recorded> = sqlx::query_as(
            "SELECT generation, created_at, kind, tokens_before, tokens_after, restored_to, \
             archived, inserted FROM hermes_generations WHERE session_id = $1 \
             ORDER BY generation",
        )
        .bind(session)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let mut recorded: HashMap<i64, Recorded> = recorded.into_iter().map(|r| (r.0, r)).collect();
        let tokens = |t: Option<i64>| t.and_then(|t| u64::try_from(t).ok());
        Ok((0..=current)
            .map(|g| {
                let mut info = GenerationInfo {
                    generation: g as u64,
                    created_at_ms: None,
                    label: PassLabel::default(),
                    restored_to: None,
                    archived: 0,
                    inserted: 0,
                    restorable: g >= from,
                };
                if g == 0 && from == 0 {
                    info.created_at_ms = Some(created);
                    info.label = PassLabel::new(GenerationKind::Created);
                }
                if let Some((_, at, kind, before, after, to, archived, inserted)) =
                    recorded.remove(&g)
                {
                    info.created_at_ms = Some(at);
                    info.label = PassLabel {
                        kind: GenerationKind::parse(&kind),
                        tokens_before: tokens(before),
                        tokens_after: tokens(after),
                    };
                    info.restored_to = to.map(|t| t as u64);
                    info.archived = archived as u64;
                    info.inserted = inserted as u64;
                }
                info
            })
            .collect())
    }

    async fn restore_generation(
        &self,
        session: &str,
        expected: u64,
        target: u64,
    ) -> Result<Restored> {
        check_session_id(session)?;
        let expected_i = to_i64(expected, "generation")?;
        let target_i = to_i64(target, "generation")?;
        let now = now_ms();
        let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_WRITE).await?;
        // Locks the session row first, as a commit does: writers of the session queue here.
        let found: Option<(i64, i64)> = sqlx::query_as(
            "UPDATE hermes_sessions SET updated_at = updated_at WHERE id = $1 \
             RETURNING generation, history_from",
        )
        .bind(session)
        .fetch_optional(&mut *tx)
        .await?;
        let (current, from) = found.ok_or_else(|| unknown(session))?;
        if current != expected_i {
            return Err(StoreError::StaleGeneration {
                session: session.to_owned(),
                expected,
                actual: current as u64,
            });
        }
        if target_i > current {
            return Err(StoreError::UnknownGeneration {
                generation: target,
                current: current as u64,
            });
        }
        if target_i < from {
            return Err(StoreError::HistoryUnavailable {
                generation: target,
                from: from as u64,
            });
        }
        if target_i == current {
            return Ok(Restored {
                generation: expected,
                archived: 0,
                reactivated: 0,
            });
        }
        let new_generation = current + 1;
        // Active now but not at the target: written after it.
        let archived = sqlx::query(
            "UPDATE hermes_messages SET active = FALSE, compacted = TRUE, archived_at = $3, \
             archived_generation = $4 WHERE session_id = $1 AND active AND generation > $2",
        )
        .bind(session)
        .bind(target_i)
        .bind(now)
        .bind(new_generation)
        .execute(&mut *tx)
        .await?;
        let archived = D::rows_affected(&archived);
        self.faults.check(FaultPoint::AfterRestoreArchive)?;
        // Active at the target but archived since: copies of them take their old places.
        let reactivated = sqlx::query(
            "INSERT INTO hermes_messages (session_id, generation, created_at, pos, role, kind, \
             body, meta, active, compacted, origin_id, pass_generation) \
             SELECT session_id, $3, $4, pos, role, kind, body, meta, TRUE, FALSE, id, $3 \
             FROM hermes_messages WHERE session_id = $1 AND NOT active \
             AND generation <= $2 AND archived_generation > $2",
        )
        .bind(session)
        .bind(target_i)
        .bind(new_generation)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let reactivated = D::rows_affected(&reactivated);
        if archived == 0 && reactivated == 0 {
            // The generations between differ only in rows that came and went again.
            return Ok(Restored {
                generation: expected,
                archived: 0,
                reactivated: 0,
            });
        }
        sqlx::query("UPDATE hermes_sessions SET generation = $2, updated_at = $3 WHERE id = $1")
            .bind(session)
            .bind(new_generation)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        Self::record_generation(
            &mut tx,
            session,
            new_generation,
            now,
            &PassLabel::new(GenerationKind::Restore),
            Some(target_i),
            (archived as i64, reactivated as i64),
        )
        .await?;
        tx.commit().await?;
        Ok(Restored {
            generation: new_generation as u64,
            archived,
            reactivated,
        })
    }

    async fn anchor_position(
        tx: &mut Tx<D>,
        session: &str,
        splice: usize,
        row: RowId,
    ) -> Result<i64> {
        let found: Option<(String, i64, bool)> =
            sqlx::query_as("SELECT session_id, pos, active FROM hermes_messages WHERE id = $1")
                .bind(row)
                .fetch_optional(&mut **tx)
                .await?;
        match found {
            Some((s, pos, true)) if s == session => Ok(pos),
            Some((s, _, false)) if s == session => Err(StoreError::RowNotActive { splice, row }),
            _ => Err(StoreError::RowNotInSession { splice, row }),
        }
    }

    async fn prev_active(tx: &mut Tx<D>, session: &str, pos: i64) -> Result<Option<i64>> {
        let row: Option<(i64,)> = sqlx::query_as(D::SQL_PREV_ACTIVE)
            .bind(session)
            .bind(pos)
            .fetch_optional(&mut **tx)
            .await?;
        Ok(row.map(|(p,)| p))
    }

    async fn next_active(tx: &mut Tx<D>, session: &str, pos: i64) -> Result<Option<i64>> {
        let row: Option<(i64,)> = sqlx::query_as(D::SQL_NEXT_ACTIVE)
            .bind(session)
            .bind(pos)
            .fetch_optional(&mut **tx)
            .await?;
        Ok(row.map(|(p,)| p))
    }

    /// Inserts rows at the given (ascending) positions with multi-row INSERTs; returns their ids
    /// in order.
    async fn insert_rows(
        conn: &mut Conn<D>,
        session: &str,
        generation: i64,
        now: i64,
        rows: &[Prepared],
        positions: &[i64],
    ) -> Result<Vec<RowId>> {
        let mut ids = Vec::with_capacity(rows.len());
        for (chunk, keys) in rows
            .chunks(INSERT_CHUNK)
            .zip(positions.chunks(INSERT_CHUNK))
        {
            let mut q =
                sqlx::query_as::<_, (i64, i64)>(sqlx::AssertSqlSafe(insert_sql(chunk.len())))
                    .bind(session)
                    .bind(generation)
                    .bind(now);
            for (row, &pos) in chunk.iter().zip(keys) {
                q = q
                    .bind(pos)
                    .bind(row.role.as_str())
                    .bind(row.kind)
                    .bind(row.body.as_slice())
                    .bind(row.meta.as_deref());
            }
            // RETURNING order is not guaranteed: match the ids back by ordering key.
            let mut returned = q.fetch_all(&mut *conn).await?;
            returned.sort_unstable_by_key(|&(_, pos)| pos);
            ids.extend(returned.into_iter().map(|(id, _)| id));
        }
        Ok(ids)
    }

    /// The session's rows among `ids`, in transcript order, each once.
    async fn rows_by_id(&self, session: &str, ids: &[RowId]) -> Result<Vec<StoredRow>> {
        let mut out = Vec::new();
        for chunk in ids.chunks(ID_CHUNK) {
            let sql = format!(
                "SELECT {ROW_COLUMNS} FROM hermes_messages WHERE session_id = $1 AND id IN ({})",
                placeholders(2, chunk.len())
            );
            let mut q = sqlx::query_as::<_, FullRow>(sqlx::AssertSqlSafe(sql)).bind(session);
            for id in chunk {
                q = q.bind(*id);
            }
            for row in q.fetch_all(&self.pool).await? {
                out.push(stored_row(row)?);
            }
        }
        out.sort_by_key(|r| (r.position, r.id));
        out.dedup_by_key(|r| r.id);
        Ok(out)
    }

    async fn keep_original(&self, session: &str, handle: &str, original: &Message) -> Result<()> {
        check_session_id(session)?;
        check_handle(handle)?;
        let body = original.to_wire_json().into_bytes();
        let text = search_text(original);
        let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_WRITE).await?;
        let known: Option<(i64,)> =
            sqlx::query_as("SELECT generation FROM hermes_sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&mut *tx)
                .await?;
        if known.is_none() {
            return Err(unknown(session));
        }
        let done = sqlx::query(
            "INSERT INTO hermes_originals (session_id, handle, body, created_at, search_indexed) \
             VALUES ($1, $2, $3, $4, TRUE) ON CONFLICT (session_id, handle) DO NOTHING",
        )
        .bind(session)
        .bind(handle)
        .bind(body.as_slice())
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        if D::rows_affected(&done) == 0 {
            let (existing,): (Vec<u8>,) = sqlx::query_as(
                "SELECT body FROM hermes_originals WHERE session_id = $1 AND handle = $2",
            )
            .bind(session)
            .bind(handle)
            .fetch_one(&mut *tx)
            .await?;
            return if existing == body {
                Ok(())
            } else {
                Err(StoreError::HandleConflict {
                    handle: handle.to_owned(),
                })
            };
        }
        let doc = Doc {
            row_id: None,
            handle: Some(handle.to_owned()),
            text,
        };
        D::index_docs(&mut tx, session, std::slice::from_ref(&doc)).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn search(&self, session: &str, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        check_session_id(session)?;
        self.open_session(session).await?;
        self.catch_up_index(session).await?;
        let terms = search_terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let refs: Vec<(Option<i64>, Option<String>)> = sqlx::query_as(D::SQL_SEARCH)
            .bind(session)
            .bind(D::fts_query(&terms))
            .bind(limit)
            .fetch_all(&self.pool)
            .await?;
        let row_ids: Vec<RowId> = refs.iter().filter_map(|(id, _)| *id).collect();
        let mut rows: HashMap<RowId, StoredRow> = self
            .rows_by_id(session, &row_ids)
            .await?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
        let mut hits = Vec::with_capacity(refs.len());
        for (row_id, handle) in refs {
            match (row_id, handle) {
                (Some(id), _) => {
                    if let Some(row) = rows.remove(&id) {
                        hits.push(SearchHit {
                            source: HitSource::Row(id),
                            message: row.message,
                        });
                    }
                }
                (None, Some(handle)) => {
                    let body: Option<(Vec<u8>,)> = sqlx::query_as(
                        "SELECT body FROM hermes_originals WHERE session_id = $1 AND handle = $2",
                    )
                    .bind(session)
                    .bind(&handle)
                    .fetch_optional(&self.pool)
                    .await?;
                    if let Some((body,)) = body {
                        hits.push(SearchHit {
                            source: HitSource::Original(handle),
                            message: decode_original(body)?,
                        });
                    }
                }
                (None, None) => {}
            }
        }
        Ok(hits)
    }

    /// Indexes what of the session is not in the search index yet: rows archived since the last
    /// search, and trimmed originals stored before the index was last rebuilt (an original is
    /// indexed when stored; migration 3 emptied the index).
    async fn catch_up_index(&self, session: &str) -> Result<()> {
        let (rows, originals): (bool, bool) = sqlx::query_as(D::SQL_PENDING_INDEX)
            .bind(session)
            .fetch_one(&self.pool)
            .await?;
        if rows {
            self.catch_up_rows(session).await?;
        }
        if originals {
            self.catch_up_originals(session).await?;
        }
        Ok(())
    }

    /// Indexes the session's archived rows that are not in the search index yet.
    async fn catch_up_rows(&self, session: &str) -> Result<()> {
        loop {
            let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_WRITE).await?;
            // The claim re-checks `NOT search_indexed` on each row it updates, so two searches
            // running at once never index a row twice.
            let claimed: Vec<(i64, String, Vec<u8>, Option<String>)> = sqlx::query_as(
                "UPDATE hermes_messages SET search_indexed = TRUE \
                 WHERE session_id = $1 AND NOT active AND NOT search_indexed AND id IN \
                 (SELECT id FROM hermes_messages WHERE session_id = $1 AND NOT active \
                  AND NOT search_indexed ORDER BY id LIMIT $2) \
                 RETURNING id, kind, body, meta",
            )
            .bind(session)
            .bind(INDEX_CHUNK)
            .fetch_all(&mut *tx)
            .await?;
            let done = (claimed.len() as i64) < INDEX_CHUNK;
            let docs = claimed
                .into_iter()
                .map(|(id, kind, body, meta)| {
                    let (message, _) = decode(id, &kind, body, meta)?;
                    Ok(Doc {
                        row_id: Some(id),
                        handle: None,
                        text: search_text(&message),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Self::index_and_commit(tx, session, &docs).await?;
            if done {
                return Ok(());
            }
        }
    }

    /// Writes claimed documents to the search index and commits the claim with them.
    async fn index_and_commit(mut tx: Tx<D>, session: &str, docs: &[Doc]) -> Result<()> {
        for chunk in docs.chunks(DOC_CHUNK) {
            D::index_docs(&mut tx, session, chunk).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Indexes the session's trimmed originals that are not in the search index yet.
    async fn catch_up_originals(&self, session: &str) -> Result<()> {
        loop {
            let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_WRITE).await?;
            // Claimed like archived rows: two searches at once never index an original twice.
            let claimed: Vec<(String, Vec<u8>)> = sqlx::query_as(
                "UPDATE hermes_originals SET search_indexed = TRUE \
                 WHERE session_id = $1 AND NOT search_indexed AND handle IN \
                 (SELECT handle FROM hermes_originals WHERE session_id = $1 \
                  AND NOT search_indexed ORDER BY handle LIMIT $2) \
                 RETURNING handle, body",
            )
            .bind(session)
            .bind(ORIGINAL_CHUNK)
            .fetch_all(&mut *tx)
            .await?;
            let done = (claimed.len() as i64) < ORIGINAL_CHUNK;
            let docs = claimed
                .into_iter()
                .map(|(handle, body)| {
                    Ok(Doc {
                        row_id: None,
                        text: search_text(&decode_original(body)?),
                        handle: Some(handle),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Self::index_and_commit(tx, session, &docs).await?;
            if done {
                return Ok(());
            }
        }
    }
}
