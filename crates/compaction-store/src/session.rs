//! [`Session`]: one session of a store, the id bound once.

use std::fmt;

use compaction_core::Message;

use crate::{
    Commit, CompactionState, GenerationDiff, GenerationInfo, Restored, Result, RowId, SearchHit,
    SessionInfo, StoredRow, TranscriptStore,
};

/// One session of a store: what an agent loop, a pass or a recall tool needs of the store,
/// with the session id bound once. It reaches this session only: it cannot list, create or
/// import sessions, nor name another id. Get one with `session(id)` on a
/// `dyn TranscriptStore` or a [`Store`](crate::Store), or [`Session::new`] for any other
/// store; it is two references, so copy it freely.
///
/// Each method is the [`TranscriptStore`] method of the same name for this session, with
/// the same contract and the same errors ([`StoreError::UnknownSession`] when the session
/// does not exist, [`StoreError::InvalidSessionId`] for an id no store accepts); `info` is
/// [`TranscriptStore::open`]. Two controls are composed from them, so every store has them:
/// [`undo`](Session::undo) (back to an earlier generation, by default the one before) and
/// [`pin_at`](Session::pin_at) (pin the active message at an index), and one view,
/// [`diff`](Session::diff) (what a generation archived and wrote).
///
/// [`StoreError::UnknownSession`]: crate::StoreError::UnknownSession
/// [`StoreError::InvalidSessionId`]: crate::StoreError::InvalidSessionId
///
/// ```
/// # #[cfg(feature = "sqlite")]
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> compaction_store::Result<()> {
/// use compaction_core::{Edit, Message, marker, MarkerKind, Role};
/// use compaction_store::{Commit, Store, TranscriptStore};
///
/// let store = Store::connect("sqlite::memory:").await?.into_dyn();
/// store.create_session("s1").await?;
/// let session = store.session("s1");
///
/// let mut messages = vec![Message::user("hi"), Message::assistant("hello"), Message::user("next")];
/// session.append(&mut messages).await?;
/// let (active, generation) = session.load_active_with_generation().await?;
/// let edit = Edit::single(0..2, vec![marker::render(MarkerKind::Micro, Role::Assistant, "...")]);
/// let mut commit = Commit::from_edit(generation, &edit, &active)?;
/// session.archive_and_compact(&mut commit).await?;
/// assert_eq!(session.generation().await?, 1);
/// assert_eq!(session.load_active().await?.len(), 2);
/// assert_eq!(session.info().await?.id, "s1");
/// # Ok(())
/// # }
/// # #[cfg(not(feature = "sqlite"))]
/// # fn main() {}
/// ```
#[derive(Clone, Copy)]
pub struct Session<'a> {
    store: &'a (dyn TranscriptStore + 'a),
    id: &'a str,
}

impl fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("store", &self.store)
            .finish()
    }
}

impl<'a> Session<'a> {
    /// The handle for session `id` of `store` (nothing is read or checked until a method
    /// runs).
    pub fn new(store: &'a (dyn TranscriptStore + 'a), id: &'a str) -> Session<'a> {
        Session { store, id }
    }

    /// The session id.
    pub fn id(&self) -> &'a str {
        self.id
    }

    /// The store the session lives in.
    pub fn store(&self) -> &'a (dyn TranscriptStore + 'a) {
        self.store
    }

    /// The session as listed ([`TranscriptStore::open`]).
    pub async fn info(&self) -> Result<SessionInfo> {
        self.store.open(self.id).await
    }

    /// [`TranscriptStore::generation`].
    pub async fn generation(&self) -> Result<u64> {
        self.store.generation(self.id).await
    }

    /// [`TranscriptStore::append`].
    pub async fn append(&self, messages: &mut [Message]) -> Result<Vec<RowId>> {
        self.store.append(self.id, messages).await
    }

    /// [`TranscriptStore::append_at`].
    pub async fn append_at(&self, expected: u64, messages: &mut [Message]) -> Result<Vec<RowId>> {
        self.store.append_at(self.id, expected, messages).await
    }

    /// [`TranscriptStore::load_active`].
    pub async fn load_active(&self) -> Result<Vec<Message>> {
        self.store.load_active(self.id).await
    }

    /// [`TranscriptStore::load_active_with_generation`].
    pub async fn load_active_with_generation(&self) -> Result<(Vec<Message>, u64)> {
        self.store.load_active_with_generation(self.id).await
    }

    /// [`TranscriptStore::load_all`].
    pub async fn load_all(&self) -> Result<Vec<StoredRow>> {
        self.store.load_all(self.id).await
    }

    /// [`TranscriptStore::load_rows`].
    pub async fn load_rows(&self, ids: &[RowId]) -> Result<Vec<StoredRow>> {
        self.store.load_rows(self.id, ids).await
    }

    /// [`TranscriptStore::archive_and_compact`].
    pub async fn archive_and_compact(&self, commit: &mut Commit) -> Result<Vec<RowId>> {
        self.store.archive_and_compact(self.id, commit).await
    }

    /// [`TranscriptStore::history`].
    pub async fn history(&self) -> Result<Vec<GenerationInfo>> {
        self.store.history(self.id).await
    }

    /// [`TranscriptStore::restore`].
    pub async fn restore(&self, expected: u64, target: u64) -> Result<Restored> {
        self.store.restore(self.id, expected, target).await
    }

    /// [`TranscriptStore::set_pinned`].
    pub async fn set_pinned(
        &self,
        expected: u64,
        row: RowId,
        pinned: bool,
    ) -> Result<(RowId, u64)> {
        self.store.set_pinned(self.id, expected, row, pinned).await
    }

    /// Undo: makes the active messages those of generation `to` again (default: the
    /// generation before the current one), as a new generation
    /// ([`TranscriptStore::restore`] against the generation read first, so a writer that
    /// moved the session in between gets [`StoreError::StaleGeneration`] and nothing
    /// changes). A session at generation 0 has nothing to undo, whatever `to` says
    /// ([`StoreError::NothingToUndo`]); an unknown or unrestorable `to` is
    /// [`StoreError::UnknownGeneration`] / [`StoreError::HistoryUnavailable`].
    ///
    /// [`StoreError::StaleGeneration`]: crate::StoreError::StaleGeneration
    /// [`StoreError::NothingToUndo`]: crate::StoreError::NothingToUndo
    /// [`StoreError::UnknownGeneration`]: crate::StoreError::UnknownGeneration
    /// [`StoreError::HistoryUnavailable`]: crate::StoreError::HistoryUnavailable
    ///
    /// ```
    /// # #[cfg(feature = "sqlite")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> compaction_store::Result<()> {
    /// use compaction_core::Message;
    /// use compaction_store::{Store, StoreError, TranscriptStore};
    ///
    /// let store = Store::connect("sqlite::memory:").await?.into_dyn();
    /// store.create_session("s").await?;
    /// let session = store.session("s");
    /// assert!(matches!(session.undo(None).await, Err(StoreError::NothingToUndo { .. })));
    /// session.append(&mut [Message::user("hi"), Message::assistant("hello")]).await?;
    /// let pinned = session.pin_at(1, true).await?; // generation 1
    /// assert_eq!((pinned.generation_before, pinned.generation), (0, 1));
    /// assert!(session.load_active().await?[1].is_pinned());
    /// let undone = session.undo(None).await?; // back to 0, as generation 2
    /// assert_eq!((undone.from, undone.target, undone.restored.generation), (1, 0, 2));
    /// assert!(!session.load_active().await?[1].is_pinned());
    /// store.create_session("fresh").await?;
    /// let fresh = store.session("fresh");
    /// assert!(matches!(fresh.undo(Some(0)).await, Err(StoreError::NothingToUndo { .. })));
    /// assert!(matches!(
    ///     session.pin_at(2, true).await,
    ///     Err(StoreError::IndexOutOfRange { index: 2, active: 2, .. })
    /// ));
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "sqlite"))]
    /// # fn main() {}
    /// ```
    pub async fn undo(&self, to: Option<u64>) -> Result<Undone> {
        let from = self.generation().await?;
        if from == 0 {
            return Err(crate::StoreError::NothingToUndo {
                session: self.id.to_owned(),
            });
        }
        let target = to.unwrap_or(from - 1);
        let restored = self.restore(from, target).await?;
        Ok(Undone {
            from,
            target,
            restored,
        })
    }

    /// Pins (or with `pinned = false` unpins) the active message at `index` (0 first, in the
    /// order [`load_active`](Session::load_active) gives) as a generation of its own
    /// ([`TranscriptStore::set_pinned`] against the generation of the same snapshot, so it is
    /// undone like a pass). An index past the active messages is
    /// [`StoreError::IndexOutOfRange`](crate::StoreError::IndexOutOfRange) and changes nothing.
    pub async fn pin_at(&self, index: usize, pinned: bool) -> Result<PinnedAt> {
        let (messages, generation_before) = self.load_active_with_generation().await?;
        let row = match messages.get(index) {
            None => {
                return Err(crate::StoreError::IndexOutOfRange {
                    session: self.id.to_owned(),
                    index,
                    active: messages.len(),
                });
            }
            Some(m) => m
                .row_id()
                .ok_or(crate::StoreError::MissingRowId { index })?,
        };
        let (new_row, generation) = self.set_pinned(generation_before, row, pinned).await?;
        Ok(PinnedAt {
            row,
            new_row,
            generation_before,
            generation,
        })
    }

    /// What generation `generation` archived and what it wrote in their place
    /// ([`GenerationDiff`], which prints redacted): the session's history and rows read, the
    /// generation's rows kept. A generation the session has not reached is
    /// [`StoreError::UnknownGeneration`](crate::StoreError::UnknownGeneration); one written
    /// before the store recorded what each generation archived (schema version 4) is
    /// [`StoreError::DiffUnavailable`](crate::StoreError::DiffUnavailable).
    pub async fn diff(&self, generation: u64) -> Result<GenerationDiff> {
        let mut history = self.history().await?;
        let current = history.len().saturating_sub(1) as u64;
        let Some(at) = history.iter().position(|g| g.generation == generation) else {
            return Err(crate::StoreError::UnknownGeneration {
                generation,
                current,
            });
        };
        let diff = GenerationDiff::of(history.swap_remove(at), self.load_all().await?);
        if diff.unrecorded() {
            return Err(crate::StoreError::DiffUnavailable { generation });
        }
        Ok(diff)
    }

    /// [`TranscriptStore::compaction_state`].
    pub async fn compaction_state(&self) -> Result<CompactionState> {
        self.store.compaction_state(self.id).await
    }

    /// [`TranscriptStore::set_compaction_state`].
    pub async fn set_compaction_state(&self, state: &CompactionState) -> Result<()> {
        self.store.set_compaction_state(self.id, state).await
    }

    /// [`TranscriptStore::store_original`].
    pub async fn store_original(&self, handle: &str, original: &Message) -> Result<()> {
        self.store.store_original(self.id, handle, original).await
    }

    /// [`TranscriptStore::load_original`].
    pub async fn load_original(&self, handle: &str) -> Result<Option<Message>> {
        self.store.load_original(self.id, handle).await
    }

    /// [`TranscriptStore::search_archived`].
    pub async fn search_archived(&self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        self.store.search_archived(self.id, query, limit).await
    }
}

/// What [`Session::undo`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Undone {
    /// The generation the session was at.
    pub from: u64,
    /// The generation whose active messages are active again.
    pub target: u64,
    /// The restore itself (its new generation, rows archived and reactivated).
    pub restored: Restored,
}

/// What [`Session::pin_at`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PinnedAt {
    /// The row that was active at the index (now archived).
    pub row: RowId,
    /// Its copy with the pin flag, in its place.
    pub new_row: RowId,
    /// The generation the session was at.
    pub generation_before: u64,
    /// The generation the pin made.
    pub generation: u64,
}

impl<'s> dyn TranscriptStore + 's {
    /// The handle for session `id` of this store ([`Session`]), for a store held as a trait
    /// object (`Arc<dyn TranscriptStore>`).
    pub fn session<'a>(&'a self, id: &'a str) -> Session<'a> {
        Session::new(self, id)
    }
}
