//! Recall: trimmed originals kept by handle, the full-text search of archived rows and
//! originals, and the index catch-up a search runs first (rows archived since the last search
//! are indexed then, so a commit costs nothing extra).

use std::collections::HashMap;

use compaction_core::Message;

use super::{SqlStore, Tx, decode_original, unknown};
use crate::rows::{
    DOC_CHUNK, Doc, check_handle, check_session_id, decode, now_ms, search_terms, search_text,
};
use crate::{HitSource, Result, RowId, SearchHit, StoreError, StoredRow};

/// Archived rows indexed per catch-up statement.
const INDEX_CHUNK: i64 = 200;

/// Trimmed originals indexed per catch-up statement (each may be megabytes).
const ORIGINAL_CHUNK: i64 = 20;

engine_impl! { SqlStore {
    pub(super) async fn keep_original(
        &self,
        session: &str,
        handle: &str,
        original: &Message,
    ) -> Result<()> {
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

    pub(super) async fn search(
        &self,
        session: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>> {
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
        let mut conn = self.pool.acquire().await?;
        let mut rows: HashMap<RowId, StoredRow> = Self::rows_by_id(&mut conn, session, &row_ids)
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
                    .fetch_optional(&mut *conn)
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
} }
