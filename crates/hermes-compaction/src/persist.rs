//! Writing passes and appended messages to the store: the append-only flush, the resync after
//! an overflow pass that could not be committed, the reload after another writer moved the
//! session on, and the
//! content-free failure a store write reports.

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
/// use hermes_compaction::{Compressor, Config, OneShot};
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
/// c.one_shot(&mut t, OneShot::batch()).await.into_batch().unwrap();
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
    /// What the store held when read back after a failed commit.
    pub(crate) held: Option<crate::report::StoreGeneration>,
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
            held: None,
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
            store_generation: e.held,
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

/// Writes the pin changes `t` holds that the store has not recorded
/// ([`Transcript::pending_pin_writes`]), each as a generation of its own
/// ([`TranscriptStore::set_pinned`](compaction_store::TranscriptStore::set_pinned)), adopting
/// each new generation and recording each new row id ([`Transcript::set_row_id`], which
/// forgets the change). A change to a message `t` no longer holds (a pass removed it) is not
/// pending. Returns how many generations it wrote; on error the changes not yet written stay
/// pending and nothing else changed.
#[cfg(feature = "store")]
pub(crate) async fn write_pins(
    p: &mut Persistence,
    t: &mut Transcript,
) -> Result<usize, compaction_store::StoreError> {
    let mut written = 0;
    for (row, pinned) in t.pending_pin_writes() {
        let Some(i) = t.messages().iter().rposition(|m| m.row_id() == Some(row)) else {
            continue; // listed only while held, and nothing changes `t` in between
        };
        let (new_row, generation) = p
            .store
            .set_pinned(&p.session, p.generation, row, pinned)
            .await?;
        written += usize::from(generation != p.generation);
        p.generation = generation;
        t.set_row_id(i, new_row);
    }
    Ok(written)
}

/// Adopts a change another writer made to the session's pins only (a
/// [`Session::pin_at`](compaction_store::Session::pin_at) or `set_pinned` on the store side):
/// when the session's active rows are the stored messages of `t` in order, equal but for
/// their pins and row ids, `t` takes the store's row ids and pins and the generation is
/// adopted, so the pin set on either side is one pin. A pin change `t` has not written yet
/// wins over the store's (it stays pending). Returns whether it adopted; `false` (nothing
/// changed) when the store changed anything else, which only a reload adopts. One read.
#[cfg(feature = "store")]
pub(crate) async fn adopt_pins(
    p: &mut Persistence,
    t: &mut Transcript,
) -> Result<bool, compaction_store::StoreError> {
    let (rows, generation) = p.store.load_active_with_generation(&p.session).await?;
    let stored = t
        .messages()
        .iter()
        .rposition(|m| m.row_id().is_some())
        .map_or(0, |i| i + 1);
    if generation == p.generation
        || rows.len() != stored
        || t.messages()[..stored].iter().any(|m| m.row_id().is_none())
        || rows.iter().any(|r| r.row_id().is_none())
    {
        return Ok(false);
    }
    let bare = |m: &Message| {
        let mut m = m.clone();
        m.meta_mut().pinned = false;
        m.meta_mut().row_id = None;
        m
    };
    if rows
        .iter()
        .zip(t.messages())
        .any(|(r, m)| bare(r) != bare(m))
    {
        return Ok(false);
    }
    let pending = t.pending_pin_writes();
    for (i, row) in rows.iter().enumerate() {
        let (old, new) = (t.messages()[i].row_id(), row.row_id());
        let (Some(old), Some(new)) = (old, new) else {
            continue; // checked above: every one has its row id
        };
        if old == new {
            continue;
        }
        let wanted = pending.iter().find(|&&(r, _)| r == old).map(|&(_, w)| w);
        // Forgets a pending change (set again below when the store disagrees).
        t.set_row_id(i, new);
        if t.messages()[i].is_pinned() != row.is_pinned() {
            // The store's pin, adopted: not a change for the store to write.
            t.pin(i, row.is_pinned());
            t.set_row_id(i, new);
        }
        if let Some(w) = wanted {
            t.pin(i, w);
        }
    }
    p.generation = generation;
    Ok(true)
}

/// Refuses with [`StoreError::StaleGeneration`](compaction_store::StoreError::StaleGeneration)
/// when the session is no longer at the generation the transcript reflects (one read).
#[cfg(feature = "store")]
pub(crate) async fn check_generation(p: &Persistence) -> Result<(), compaction_store::StoreError> {
    let actual = p.store.generation(&p.session).await?;
    if actual == p.generation {
        Ok(())
    } else {
        Err(compaction_store::StoreError::StaleGeneration {
            session: p.session.clone(),
            expected: p.generation,
            actual,
        })
    }
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
