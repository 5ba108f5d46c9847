//! Appends: the unstamped messages after the active rows (checked against a generation when
//! the writer names one), a session created and filled in one transaction, and the multi-row
//! insert that commits share.

use compaction_core::Message;

use super::{Conn, SqlStore, Tx, unknown};
use crate::rows::{INSERT_CHUNK, Prepared, STRIDE, check_session_id, insert_sql, now_ms, prepare};
use crate::{CompactionState, FaultPoint, Result, RowId, StoreError};

engine_impl! { SqlStore {
    /// Appends the unstamped messages; with `expected`, only while the session is at that
    /// generation (checked under the session row's lock, in the append's transaction).
    pub(super) async fn append_fresh(
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
    pub(super) async fn import(
        &self,
        session: &str,
        messages: &mut [Message],
    ) -> Result<Vec<RowId>> {
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

    /// Inserts rows at the given (ascending) positions with multi-row INSERTs; returns their ids
    /// in order.
    pub(super) async fn insert_rows(
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

    /// Replaces the session's compaction state (one statement).
    pub(super) async fn set_state(&self, session: &str, state: &CompactionState) -> Result<()> {
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
    }
} }
