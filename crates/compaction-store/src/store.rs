//! [`Store`]: a backend chosen from a URL.

use std::sync::Arc;

use compaction_core::Message;

use crate::options::{Inner, StoreOptions};
use crate::{
    Backend, BoxFuture, Commit, CompactionState, FaultPoint, GenerationInfo, Restored, Result,
    RowId, SearchHit, SessionInfo, StoreError, StoredRow, TranscriptStore,
};

/// A store whose backend is picked from its URL by the [`Backend`] table: `sqlite:<path>`,
/// `sqlite://<path>`, `sqlite::memory:`, or `postgres://` / `postgresql://`. A URL whose
/// backend's cargo feature (`sqlite`, `postgres`) is off fails with
/// [`StoreError::BackendDisabled`], which names the feature; a URL no backend answers to
/// fails with [`StoreError::UnsupportedUrl`]. Clones share the pool.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Store {
    /// The embedded default.
    #[cfg(feature = "sqlite")]
    Sqlite(crate::SqliteStore),
    /// The scale-out backend.
    #[cfg(feature = "postgres")]
    Postgres(crate::PostgresStore),
}

/// What [`Store::open`] may do to the database its location names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// A missing SQLite file is created (an import).
    Create,
    /// A missing SQLite file is [`StoreError::NoDatabase`] and nothing is created.
    Existing,
    /// As `Existing`, and a SQLite database the process may not write (a read-only mount or
    /// file, or a `sqlite:PATH?mode=ro` URL) is opened read-only, which works when its schema
    /// is current and otherwise says which migration it needs.
    Read,
}

impl Store {
    /// Opens the store a location names: a URL with a scheme a backend declares
    /// ([`Backend::for_url`]: `sqlite:`, `postgres://`, `postgresql://`), or a plain path (a
    /// SQLite file), used as `access` allows. Any other `scheme://` is
    /// [`StoreError::UnsupportedUrl`] before any connection.
    ///
    /// ```
    /// # #[cfg(feature = "sqlite")]
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use compaction_store::{Access, Store, StoreError};
    ///
    /// let dir = std::env::temp_dir().join(format!("store-open-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("s.db").display().to_string();
    /// let missing = Store::open(&path, Access::Existing).await.unwrap_err();
    /// assert!(matches!(missing, StoreError::NoDatabase { .. }));
    /// let store = Store::open(&path, Access::Create).await.unwrap();
    /// store.close().await;
    /// let read = Store::open(&path, Access::Read).await.unwrap();
    /// read.close().await;
    /// let other = Store::open("mysql://host/db", Access::Read).await.unwrap_err();
    /// assert!(matches!(other, StoreError::UnsupportedUrl { .. }));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # });
    /// ```
    pub async fn open(location: &str, access: Access) -> Result<Store> {
        let url = if Backend::for_url(location).is_some() {
            location.to_owned()
        } else if let Some((scheme, _)) = location.split_once("://") {
            // The scheme only: the rest may hold credentials.
            return Err(StoreError::UnsupportedUrl {
                scheme: scheme.chars().take(32).collect(),
            });
        } else {
            format!("{}:{location}", Backend::Sqlite.schemes()[0])
        };
        if access != Access::Create
            && let Some(path) = sqlite_file(&url)
            && !std::path::Path::new(path).exists()
        {
            return Err(StoreError::NoDatabase {
                path: path.to_owned(),
            });
        }
        let options = StoreOptions {
            create_if_missing: access == Access::Create,
            ..StoreOptions::default()
        };
        match Store::connect_with(&url, &options).await {
            // Opened for writing, the database refused (read-only file or mount, or a schema
            // migration it could not write): a read needs no write access.
            Err(StoreError::Database {
                failure: crate::DatabaseFailure::ReadOnly | crate::DatabaseFailure::CannotOpen,
                ..
            }) if access == Access::Read && sqlite_file(&url).is_some() => {
                let read_only = StoreOptions {
                    read_only: true,
                    ..options
                };
                Store::connect_with(&url, &read_only).await
            }
            other => other,
        }
    }

    /// Connects with default [`StoreOptions`] and runs the embedded migrations.
    pub async fn connect(url: &str) -> Result<Store> {
        Store::connect_with(url, &StoreOptions::default()).await
    }

    /// Connects and runs the embedded migrations.
    pub async fn connect_with(url: &str, options: &StoreOptions) -> Result<Store> {
        // The backend table names the backend; each arm is its own `connect_with`, statically
        // dispatched (so the future stays `Send` as the backend's is).
        let Some(backend) = Backend::for_url(url) else {
            // The scheme only: the rest of the URL may hold credentials.
            let scheme = crate::backend::scheme(url).unwrap_or("");
            return Err(StoreError::UnsupportedUrl {
                scheme: scheme.chars().take(32).collect(),
            });
        };
        #[cfg(not(any(feature = "sqlite", feature = "postgres")))]
        let _ = options;
        match backend {
            #[cfg(feature = "sqlite")]
            Backend::Sqlite => Ok(Store::Sqlite(
                crate::SqliteStore::connect_with(url, options).await?,
            )),
            #[cfg(feature = "postgres")]
            Backend::Postgres => Ok(Store::Postgres(
                crate::PostgresStore::connect_with(url, options).await?,
            )),
            #[allow(unreachable_patterns)]
            disabled => Err(StoreError::BackendDisabled {
                backend: disabled.name(),
            }),
        }
    }

    /// Closes the pool, waiting for the connections in use to be returned. On SQLite the last
    /// connection to close checkpoints the write-ahead log into the database file, so the
    /// `.db` file alone then holds everything (a process that exits without closing leaves
    /// the data in the `-wal` file until the next open). Later calls fail with
    /// [`DatabaseFailure::PoolClosed`](crate::DatabaseFailure).
    pub async fn close(&self) {
        match *self {
            #[cfg(feature = "sqlite")]
            Store::Sqlite(ref s) => s.close().await,
            #[cfg(feature = "postgres")]
            Store::Postgres(ref s) => s.close().await,
        }
    }

    /// The handle for session `id` of this store ([`Session`](crate::Session)).
    pub fn session<'a>(&'a self, id: &'a str) -> crate::Session<'a> {
        crate::Session::new(self, id)
    }

    /// The store as a shared trait object.
    pub fn into_dyn(self) -> Arc<dyn TranscriptStore> {
        Arc::new(self)
    }

    /// Arms a one-shot fault (tests only).
    #[doc(hidden)]
    pub fn inject_fault(&self, point: FaultPoint) {
        self.inner().inject_fault(point)
    }

    fn inner(&self) -> &dyn Inner {
        match *self {
            #[cfg(feature = "sqlite")]
            Store::Sqlite(ref s) => s,
            #[cfg(feature = "postgres")]
            Store::Postgres(ref s) => s,
        }
    }
}

impl TranscriptStore for Store {
    fn backend(&self) -> Option<Backend> {
        self.inner().backend()
    }

    fn create_session<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        self.inner().create_session(session)
    }

    fn open<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        self.inner().open(session)
    }

    fn open_or_create<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<SessionInfo>> {
        self.inner().open_or_create(session)
    }

    fn list_sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>> {
        self.inner().list_sessions()
    }

    fn generation<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<u64>> {
        self.inner().generation(session)
    }

    fn append<'a>(
        &'a self,
        session: &'a str,
        messages: &'a mut [Message],
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        self.inner().append(session, messages)
    }

    fn append_at<'a>(
        &'a self,
        session: &'a str,
        expected: u64,
        messages: &'a mut [Message],
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        self.inner().append_at(session, expected, messages)
    }

    fn import_session<'a>(
        &'a self,
        session: &'a str,
        messages: &'a mut [Message],
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        self.inner().import_session(session, messages)
    }

    fn load_active<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<Message>>> {
        self.inner().load_active(session)
    }

    fn load_active_with_generation<'a>(
        &'a self,
        session: &'a str,
    ) -> BoxFuture<'a, Result<(Vec<Message>, u64)>> {
        self.inner().load_active_with_generation(session)
    }

    fn load_all<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<StoredRow>>> {
        self.inner().load_all(session)
    }

    fn archive_and_compact<'a>(
        &'a self,
        session: &'a str,
        commit: &'a mut Commit,
    ) -> BoxFuture<'a, Result<Vec<RowId>>> {
        self.inner().archive_and_compact(session, commit)
    }

    fn history<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Vec<GenerationInfo>>> {
        self.inner().history(session)
    }

    fn restore<'a>(
        &'a self,
        session: &'a str,
        expected: u64,
        target: u64,
    ) -> BoxFuture<'a, Result<Restored>> {
        self.inner().restore(session, expected, target)
    }

    fn compaction_state<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<CompactionState>> {
        self.inner().compaction_state(session)
    }

    fn set_compaction_state<'a>(
        &'a self,
        session: &'a str,
        state: &'a CompactionState,
    ) -> BoxFuture<'a, Result<()>> {
        self.inner().set_compaction_state(session, state)
    }

    fn store_original<'a>(
        &'a self,
        session: &'a str,
        handle: &'a str,
        original: &'a Message,
    ) -> BoxFuture<'a, Result<()>> {
        self.inner().store_original(session, handle, original)
    }

    fn load_original<'a>(
        &'a self,
        session: &'a str,
        handle: &'a str,
    ) -> BoxFuture<'a, Result<Option<Message>>> {
        self.inner().load_original(session, handle)
    }

    fn load_rows<'a>(
        &'a self,
        session: &'a str,
        ids: &'a [RowId],
    ) -> BoxFuture<'a, Result<Vec<StoredRow>>> {
        self.inner().load_rows(session, ids)
    }

    fn search_archived<'a>(
        &'a self,
        session: &'a str,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SearchHit>>> {
        self.inner().search_archived(session, query, limit)
    }
}

/// The file of a `sqlite:` URL (`None` for an in-memory database or another backend).
fn sqlite_file(url: &str) -> Option<&str> {
    if Backend::for_url(url) != Some(Backend::Sqlite) {
        return None;
    }
    let rest = url.split_once(':')?.1;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split_once('?').map_or(rest, |(p, _)| p);
    (!path.is_empty() && path != ":memory:" && !url.contains("mode=memory")).then_some(path)
}
