//! [`Session`]: one session of a store, the id bound once.

use std::fmt;

use compaction_core::Message;

use crate::{
    Commit, CompactionState, GenerationInfo, Restored, Result, RowId, SearchHit, SessionInfo,
    StoredRow, TranscriptStore,
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
/// [`TranscriptStore::open`].
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

impl<'s> dyn TranscriptStore + 's {
    /// The handle for session `id` of this store ([`Session`]), for a store held as a trait
    /// object (`Arc<dyn TranscriptStore>`).
    pub fn session<'a>(&'a self, id: &'a str) -> Session<'a> {
        Session::new(self, id)
    }
}
