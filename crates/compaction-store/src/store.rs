//! [`Store`]: a thin handle over a boxed [`TranscriptStore`] (reached from a URL through the
//! backend table, `backend.rs`), and what [`Store::open`] may do ([`Access`]).

use std::any::Any;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::TranscriptStore;

/// A store picked from its URL by the [`Backend`](crate::Backend) table: `sqlite:<path>`, `sqlite://<path>`,
/// `sqlite::memory:`, `postgres://` / `postgresql://`, or the scheme of a backend of one's own
/// ([`Backend::register`](crate::Backend::register)). A URL whose backend's cargo feature (`sqlite`, `postgres`) is off
/// fails with [`StoreError::BackendDisabled`](crate::StoreError::BackendDisabled), which names the feature; a URL no backend
/// answers to fails with [`StoreError::UnsupportedUrl`](crate::StoreError::UnsupportedUrl).
///
/// It is a handle over the backend's [`TranscriptStore`], which it dereferences to: every
/// method of the trait is called on it as it is (no method is forwarded). Clones share the
/// store (and its pool).
#[derive(Clone)]
pub struct Store {
    store: Arc<dyn TranscriptStore>,
    /// The same store, for [`downcast_ref`](Store::downcast_ref).
    any: Arc<dyn Any + Send + Sync>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.store, f)
    }
}

impl Deref for Store {
    type Target = dyn TranscriptStore;

    fn deref(&self) -> &(dyn TranscriptStore + 'static) {
        &*self.store
    }
}

/// What [`Store::open`] may do to the database its location names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// A missing SQLite file is created (an import).
    Create,
    /// A missing SQLite file is [`StoreError::NoDatabase`](crate::StoreError::NoDatabase) and nothing is created.
    Existing,
    /// As `Existing`, and a SQLite database the process may not write (a read-only mount or
    /// file, or a `sqlite:PATH?mode=ro` URL) is opened read-only, which works when its schema
    /// is current and otherwise says which migration it needs.
    Read,
}

impl Store {
    /// The handle over `store` (what a backend's [`Connect`](crate::Connect) returns).
    ///
    /// ```
    /// # #[cfg(feature = "sqlite")]
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> compaction_store::Result<()> {
    /// use compaction_store::{SqliteStore, Store};
    ///
    /// let store = Store::new(SqliteStore::connect("sqlite::memory:").await?);
    /// store.create_session("s").await?; // a `TranscriptStore` method, through `Deref`
    /// assert!(store.downcast_ref::<SqliteStore>().is_some());
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "sqlite"))]
    /// # fn main() {}
    /// ```
    pub fn new<S: TranscriptStore + 'static>(store: S) -> Store {
        let store = Arc::new(store);
        Store {
            store: store.clone(),
            any: store,
        }
    }

    /// Closes the store ([`TranscriptStore::close`]). On SQLite this closes the pool, waiting
    /// for the connections in use to be returned, and the last connection to close
    /// checkpoints the write-ahead log into the database file, so the `.db` file alone then
    /// holds everything (a process that exits without closing leaves the data in the `-wal`
    /// file until the next open). Later calls fail with
    /// [`DatabaseFailure::PoolClosed`](crate::DatabaseFailure).
    pub async fn close(&self) {
        self.store.close().await
    }

    /// The store as a shared trait object.
    pub fn into_dyn(self) -> Arc<dyn TranscriptStore> {
        self.store
    }

    /// The backend's own store, when it is a `S` (a [`SqliteStore`](crate::SqliteStore) for
    /// its pool, say).
    pub fn downcast_ref<S: TranscriptStore + 'static>(&self) -> Option<&S> {
        self.any.downcast_ref::<S>()
    }
}
