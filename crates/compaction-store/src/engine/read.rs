//! Reads: a session's row, its active rows and generation from one snapshot, the history of
//! its generations, and rows by id.

use std::collections::HashMap;

use super::{
    Conn, FullRow, ID_CHUNK, ROW_COLUMNS, SqlStore, Tx, session_info, stored_row, unknown,
};
use crate::rows::{check_session_id, placeholders};
use crate::{
    GenerationInfo, GenerationKind, PassLabel, Result, RowId, Rows, SessionInfo, Snapshot,
    StoredRow,
};

engine_impl! { SqlStore {
    pub(super) async fn open_session(&self, session: &str) -> Result<SessionInfo> {
        check_session_id(session)?;
        let row: Option<(String, i64, i64)> =
            sqlx::query_as("SELECT id, generation, created_at FROM hermes_sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&self.pool)
                .await?;
        row.map(session_info).ok_or_else(|| unknown(session))
    }

    /// The rows asked for and the generation, read from one snapshot.
    pub(super) async fn snapshot(&self, session: &str, rows: Rows<'_>) -> Result<Snapshot> {
        check_session_id(session)?;
        let mut tx: Tx<D> = self.pool.begin_with(D::BEGIN_READ).await?;
        let generation: Option<(i64,)> =
            sqlx::query_as("SELECT generation FROM hermes_sessions WHERE id = $1")
                .bind(session)
                .fetch_optional(&mut *tx)
                .await?;
        let (generation,) = generation.ok_or_else(|| unknown(session))?;
        let rows = match rows {
            Rows::Active => {
                let found: Vec<FullRow> = sqlx::query_as(D::SQL_LOAD_ACTIVE)
                    .bind(session)
                    .fetch_all(&mut *tx)
                    .await?;
                found.into_iter().map(stored_row).collect::<Result<_>>()?
            }
            Rows::All => {
                let sql = format!(
                    "SELECT {ROW_COLUMNS} FROM hermes_messages WHERE session_id = $1 \
                     ORDER BY pos, id"
                );
                let found: Vec<FullRow> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(session)
                    .fetch_all(&mut *tx)
                    .await?;
                found.into_iter().map(stored_row).collect::<Result<_>>()?
            }
            Rows::Ids(ids) => Self::rows_by_id(&mut tx, session, ids).await?,
        };
        tx.commit().await?;
        Ok(Snapshot::new(generation as u64, rows))
    }

    pub(super) async fn list_history(&self, session: &str) -> Result<Vec<GenerationInfo>> {
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

    /// The session's rows among `ids`, in transcript order, each once.
    pub(super) async fn rows_by_id(
        conn: &mut Conn<D>,
        session: &str,
        ids: &[RowId],
    ) -> Result<Vec<StoredRow>> {
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
            for row in q.fetch_all(&mut *conn).await? {
                out.push(stored_row(row)?);
            }
        }
        out.sort_by_key(|r| (r.position, r.id));
        out.dedup_by_key(|r| r.id);
        Ok(out)
    }
} }
