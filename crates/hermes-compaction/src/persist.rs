//! Writing passes and appended messages to the store: the append-only flush, the resync after
//! an overflow pass that could not be committed, the reload after another writer moved the
//! session on, the mapping of [`ThrashState`](crate::compressor::ThrashState) onto the store's
//! `CompactionState`, and the content-free failure a store write reports.

#[cfg(feature = "store")]
use std::sync::Arc;

#[cfg(feature = "store")]
use compaction_core::{Message, Transcript};

use crate::report::{FailureKind, PassFailure};

/// Where passes are persisted.
///
/// ```
/// use std::sync::Arc;
/// use hermes_compaction::compressor::Persistence;
/// use hermes_compaction::core::{Estimator, Message};
/// use hermes_compaction::llm::ExtractiveSummarizer;
/// use hermes_compaction::store::Store;
/// use hermes_compaction::{Compressor, Config};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// // One store per deployment (a file path, `sqlite:` or `postgres://` URL), one session per
/// // conversation.
/// let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
/// store.create_session("s1").await.unwrap();
/// let persistence = Persistence {
///     store: store.clone(),
///     session: "s1".into(),
///     generation: store.generation("s1").await.unwrap(),
/// };
/// let mut c = Compressor::builder(Config::default())
///     .summarizer(Arc::new(ExtractiveSummarizer::default()))
///     .counter(Arc::new(Estimator::default()))
///     .session("s1")
///     .store(persistence)
///     .build()
///     .unwrap();
/// let mut t = c.transcript(vec![Message::system("sys"), Message::user("hi")]);
/// // Every pass commits to the store (archive_and_compact) before it changes `t`; `flush`
/// // persists what the agent appended.
/// c.compress(&mut t, None).await;
/// c.flush(&mut t).await.unwrap();
/// # });
/// ```
#[cfg(feature = "store")]
#[derive(Clone, Debug)]
pub struct Persistence {
    /// The store.
    pub store: Arc<dyn compaction_store::TranscriptStore>,
    /// The session in it.
    pub session: String,
    /// The session generation the agent's transcript reflects (from
    /// [`TranscriptStore::generation`](compaction_store::TranscriptStore::generation) when it
    /// was loaded). Each commit names it, so a pass planned on a transcript another writer has
    /// since compacted is refused; the compressor advances it after each of its own commits.
    pub generation: u64,
}

/// What a store that returned a different number of row ids than it was given rows is told.
#[cfg(feature = "store")]
pub(crate) const ROW_COUNT: &str = "the number of row ids the store returned";

/// A store write that failed: the failure class and the store error's message (content-free).
#[derive(Debug)]
pub(crate) struct PersistError {
    pub(crate) failure: FailureKind,
    pub(crate) cause: String,
}

impl PersistError {
    #[cfg(feature = "store")]
    pub(crate) fn store(e: compaction_store::StoreError) -> PersistError {
        PersistError {
            failure: match e {
                compaction_store::StoreError::StaleGeneration { .. } => {
                    FailureKind::StaleGeneration
                }
                _ => FailureKind::Store,
            },
            cause: e.to_string(),
        }
    }
}

/// Appends the unstamped suffix of `t` (what the agent appended since the last flush) and
/// stamps the new row ids on `t`.
impl From<PersistError> for PassFailure {
    fn from(e: PersistError) -> PassFailure {
        PassFailure {
            kind: e.failure,
            cause: Some(e.cause),
        }
    }
}

#[cfg(feature = "store")]
pub(crate) async fn append_unstamped(
    p: &mut Persistence,
    t: &mut Transcript,
) -> Result<usize, compaction_store::StoreError> {
    let first_unstamped = t
        .messages()
        .iter()
        .rposition(|m| m.row_id().is_some())
        .map_or(0, |i| i + 1);
    if first_unstamped == t.len() {
        return Ok(0);
    }
    let mut fresh: Vec<Message> = t.messages()[first_unstamped..].to_vec();
    // Refused (nothing written) when another writer moved the session past the generation
    // this transcript reflects: the caller reloads (`Compressor::reload`).
    let ids = p
        .store
        .append_at(&p.session, p.generation, &mut fresh)
        .await?;
    // The copies share their bodies with the transcript's messages until dropped; stamping
    // the transcript while they live would copy every body.
    drop(fresh);
    let expected = t.len() - first_unstamped;
    if ids.len() != expected {
        return Err(compaction_store::StoreError::OutOfRange { what: ROW_COUNT });
    }
    for (i, id) in (first_unstamped..).zip(ids) {
        t.set_row_id(i, id);
    }
    Ok(expected)
}

/// Makes the store's active rows match `t` in one `archive_and_compact`: the active rows `t`
/// no longer holds are archived, the messages of `t` without a row id are inserted at their
/// positions, and their new ids are stamped on `t`. Reads the session's active rows once
/// (this runs only after a commit failed). Refused, with nothing changed, when a row `t`
/// holds is no longer active or out of order (another writer changed the session), or when
/// the generation moved.
#[cfg(feature = "store")]
pub(crate) async fn resync(
    p: &mut Persistence,
    t: &mut Transcript,
) -> Result<usize, compaction_store::StoreError> {
    use compaction_store::{Commit, CommitSplice, RowId, StoreError};
    // One snapshot: rows and generation agree, so a session another writer moved on is named
    // as such (`StaleGeneration`) rather than as a row that is gone.
    let (rows, generation) = p.store.load_active_with_generation(&p.session).await?;
    if generation != p.generation {
        return Err(StoreError::StaleGeneration {
            session: p.session.clone(),
            expected: p.generation,
            actual: generation,
        });
    }
    let active: Vec<RowId> = rows.iter().filter_map(Message::row_id).collect();
    drop(rows);
    let position: std::collections::HashMap<RowId, usize> =
        active.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut splices: Vec<CommitSplice> = Vec::new();
    // Transcript indices that get new rows, in commit order.
    let mut inserted: Vec<usize> = Vec::new();
    let (mut next, mut anchor, mut pending) = (0usize, None, Vec::new());
    // Closes the run of store rows `active[next..upto]` and of pending messages into a splice.
    let close = |splices: &mut Vec<CommitSplice>,
                 inserted: &mut Vec<usize>,
                 rows: &[RowId],
                 anchor: Option<RowId>,
                 pending: &mut Vec<usize>| {
        if rows.is_empty() && pending.is_empty() {
            return;
        }
        splices.push(CommitSplice {
            insert_after: if rows.is_empty() { anchor } else { None },
            archive: rows.to_vec(),
            insert: pending.iter().map(|&i| t.messages()[i].clone()).collect(),
        });
        inserted.append(pending);
    };
    for (i, m) in t.messages().iter().enumerate() {
        let Some(id) = m.row_id() else {
            pending.push(i);
            continue;
        };
        match position.get(&id) {
            Some(&k) if k >= next => {
                close(
                    &mut splices,
                    &mut inserted,
                    &active[next..k],
                    anchor,
                    &mut pending,
                );
                (next, anchor) = (k + 1, Some(id));
            }
            _ => {
                return Err(StoreError::RowNotActive {
                    splice: splices.len(),
                    row: id,
                });
            }
        }
    }
    close(
        &mut splices,
        &mut inserted,
        &active[next..],
        anchor,
        &mut pending,
    );
    if splices.is_empty() {
        return Ok(0);
    }
    let mut commit = Commit {
        generation: p.generation,
        splices,
        label: compaction_store::PassLabel::new(compaction_store::GenerationKind::Resync),
    };
    let ids = p.store.archive_and_compact(&p.session, &mut commit).await?;
    p.generation += 1;
    // The commit's copies share bodies with the transcript's messages (see append_unstamped).
    drop(commit);
    if ids.len() != inserted.len() {
        return Err(StoreError::OutOfRange { what: ROW_COUNT });
    }
    for (i, id) in inserted.into_iter().zip(ids) {
        t.set_row_id(i, id);
    }
    Ok(t.len())
}

/// The key of [`CompactionState::extra`](compaction_store::CompactionState::extra) that holds
/// the part of [`ThrashState`](crate::compressor::ThrashState) the store has no column for.
#[cfg(feature = "store")]
pub const THRASH_STATE_KEY: &str = "thrash";

#[cfg(feature = "store")]
impl crate::compressor::ThrashState {
    /// The state as stored in a session's
    /// [`CompactionState`](compaction_store::CompactionState): `cooldown_until_ms` and
    /// `ineffective` in its columns, `compacted`, `consecutive_failures` and
    /// `paused_until_ms` under the key [`THRASH_STATE_KEY`] of `extra`. Other keys of
    /// `extra` are kept; an `extra` that is not a JSON object is kept under `"value"`.
    /// [`Compressor::save_state`](crate::Compressor::save_state) writes it.
    ///
    /// ```
    /// use hermes_compaction::compressor::ThrashState;
    /// use hermes_compaction::store::CompactionState;
    ///
    /// let state = ThrashState { compacted: true, paused_until_ms: Some(5), ..Default::default() };
    /// let mut stored = CompactionState::default();
    /// state.write_to(&mut stored);
    /// assert_eq!(ThrashState::read_from(&stored), state);
    /// ```
    pub fn write_to(&self, stored: &mut compaction_store::CompactionState) {
        stored.cooldown_until_ms = self
            .cooldown_until_ms
            .map(|ms| i64::try_from(ms).unwrap_or(i64::MAX));
        stored.ineffective_count = self.ineffective;
        let mut extra = match std::mem::take(&mut stored.extra) {
            serde_json::Value::Object(map) => map,
            serde_json::Value::Null => serde_json::Map::new(),
            other => serde_json::Map::from_iter([("value".to_owned(), other)]),
        };
        extra.insert(
            THRASH_STATE_KEY.to_owned(),
            serde_json::json!({
                "compacted": self.compacted,
                "consecutive_failures": self.consecutive_failures,
                "paused_until_ms": self.paused_until_ms,
            }),
        );
        stored.extra = serde_json::Value::Object(extra);
    }

    /// The state a session's [`CompactionState`](compaction_store::CompactionState) holds
    /// (the inverse of [`write_to`](Self::write_to)). What is missing or malformed reads as
    /// its default (a negative cooldown as none), so a state written by another version or
    /// by hand never fails a resume. [`Compressor::load_state`](crate::Compressor::load_state)
    /// reads it.
    pub fn read_from(stored: &compaction_store::CompactionState) -> Self {
        let thrash = stored.extra.get(THRASH_STATE_KEY);
        let field = |name: &str| thrash.and_then(|t| t.get(name));
        Self {
            compacted: field("compacted")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            consecutive_failures: field("consecutive_failures")
                .and_then(serde_json::Value::as_u64)
                .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX)),
            cooldown_until_ms: stored
                .cooldown_until_ms
                .and_then(|ms| u64::try_from(ms).ok()),
            ineffective: stored.ineffective_count,
            paused_until_ms: field("paused_until_ms").and_then(serde_json::Value::as_u64),
        }
    }
}
