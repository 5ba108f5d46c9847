//! The two transactions that change a session's generation: `archive_and_compact` (archive the
//! rows each splice replaces, insert what replaced them at their ordering keys) and `restore`
//! (make the rows active at a past generation the active rows again), each recorded in
//! `hermes_generations` in the same transaction.

use std::collections::HashMap;

use super::{ID_CHUNK, SqlStore, Tx, unknown};
use crate::rows::{STRIDE, check_session_id, now_ms, placeholders, prepare, spread, to_i64};
use crate::{Commit, FaultPoint, GenerationKind, PassLabel, Restored, Result, RowId, StoreError};

engine_impl! { SqlStore {
    pub(super) async fn commit_pass(
        &self,
        session: &str,
        commit: &mut Commit,
    ) -> Result<Vec<RowId>> {
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
        // The commit has landed; an armed fault tells the caller otherwise (a lost
        // acknowledgement), and nothing is stamped.
        self.faults.check(FaultPoint::AfterCommit)?;

        let inserted = commit.splices.iter_mut().flat_map(|s| s.insert.iter_mut());
        for (m, &id) in inserted.zip(&ids) {
            m.meta_mut().row_id = Some(id);
        }
        Ok(ids)
    }

    pub(super) async fn restore_generation(
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
} }
