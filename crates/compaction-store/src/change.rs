//! The values of [`TranscriptStore`](crate::TranscriptStore)'s two row primitives: what
//! [`load`](crate::TranscriptStore::load) reads ([`Rows`], answered with a [`Snapshot`]) and
//! what [`write`](crate::TranscriptStore::write) applies ([`Change`], answered with
//! [`Written`]). Every named operation of the trait is one of these.

use compaction_core::Message;

use crate::{Commit, CompactionState, RowId, StoredRow};

/// Which rows of a session [`TranscriptStore::load`](crate::TranscriptStore::load) reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows<'a> {
    /// The active rows, in transcript order: what a resumed agent loads.
    Active,
    /// Active and archived rows, in ordering-key order (an archived row sorts before the row
    /// that took its position).
    All,
    /// The rows among these ids (active or archived), in transcript order, each once. Ids of
    /// other sessions or of no row are left out.
    Ids(&'a [RowId]),
}

/// What [`TranscriptStore::load`](crate::TranscriptStore::load) read: rows and the generation
/// they belong to, from one snapshot.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Snapshot {
    /// The session's generation when the rows were read.
    pub generation: u64,
    /// The rows asked for, each message stamped with its row id and marker kind.
    pub rows: Vec<StoredRow>,
}

impl Snapshot {
    /// Rows read at `generation` (for a store implemented outside this crate).
    ///
    /// ```
    /// let read = compaction_store::Snapshot::new(3, Vec::new());
    /// assert_eq!((read.generation, read.rows.len()), (3, 0));
    /// ```
    pub fn new(generation: u64, rows: Vec<StoredRow>) -> Snapshot {
        Snapshot { generation, rows }
    }

    /// The messages of the rows, in order.
    pub fn into_messages(self) -> Vec<Message> {
        self.rows.into_iter().map(|r| r.message).collect()
    }
}

/// One atomic change to a session, applied by
/// [`TranscriptStore::write`](crate::TranscriptStore::write): all of it or, on any error,
/// nothing. Each variant's contract is that of the provided method that sends it.
///
/// Not `#[non_exhaustive]` on purpose: a store matches every variant, and a new kind of
/// change is a breaking change it must handle.
#[derive(Debug)]
pub enum Change<'a> {
    /// Creates the session at generation 0 with these messages in order, and stamps each
    /// with its new row id (ids they carried are replaced). [`StoreError::SessionExists`]
    /// when the id is taken. Sent by
    /// [`create_session`](crate::TranscriptStore::create_session) (no messages) and
    /// [`import_session`](crate::TranscriptStore::import_session).
    ///
    /// [`StoreError::SessionExists`]: crate::StoreError::SessionExists
    Create {
        /// The transcript, stamped in place.
        messages: &'a mut [Message],
    },
    /// Appends every message without a row id after all active rows and stamps each; with
    /// `expected`, only while the session is at that generation (checked in the same
    /// transaction: [`StoreError::StaleGeneration`], nothing written). Does not change the
    /// generation. Sent by [`append`](crate::TranscriptStore::append) and
    /// [`append_at`](crate::TranscriptStore::append_at).
    ///
    /// [`StoreError::StaleGeneration`]: crate::StoreError::StaleGeneration
    Append {
        /// The generation the writer's view reflects, when it must still hold.
        expected: Option<u64>,
        /// The transcript; the unstamped messages are written and stamped.
        messages: &'a mut [Message],
    },
    /// One compaction pass, written as
    /// [`archive_and_compact`](crate::TranscriptStore::archive_and_compact) says.
    Commit(&'a mut Commit),
    /// Undo to generation `target`, as [`restore`](crate::TranscriptStore::restore) says.
    Restore {
        /// The generation the caller's view reflects.
        expected: u64,
        /// The generation whose active rows become the active rows again.
        target: u64,
    },
    /// Replaces the session's durable compaction state.
    State(&'a CompactionState),
    /// Keeps a trimmed original, as
    /// [`store_original`](crate::TranscriptStore::store_original) says.
    Original {
        /// 1-128 bytes, no control characters.
        handle: &'a str,
        /// The full original message.
        message: &'a Message,
    },
}

/// What [`TranscriptStore::write`](crate::TranscriptStore::write) did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Written {
    /// The session's generation after the change, for the changes that may move it
    /// ([`Change::Create`]: 0, [`Change::Commit`], [`Change::Restore`]); `None` for the others.
    pub generation: Option<u64>,
    /// The ids of the rows written, in order ([`Change::Create`], [`Change::Append`],
    /// [`Change::Commit`]).
    pub ids: Vec<RowId>,
    /// Rows archived ([`Change::Commit`], [`Change::Restore`]).
    pub archived: u64,
    /// Rows a [`Change::Restore`] made active again.
    pub reactivated: u64,
}

impl Written {
    /// Nothing written and no generation (a state or an original kept); set the public
    /// fields for the rest (for a store implemented outside this crate).
    ///
    /// ```
    /// let mut done = compaction_store::Written::new();
    /// done.generation = Some(4);
    /// done.ids = vec![10, 11];
    /// assert_eq!(done.archived, 0);
    /// ```
    pub fn new() -> Written {
        Written::default()
    }

    /// Rows `ids` written, at `generation` when the change moved or created it.
    pub fn rows(generation: Option<u64>, ids: Vec<RowId>) -> Written {
        Written {
            generation,
            ids,
            ..Written::default()
        }
    }
}
