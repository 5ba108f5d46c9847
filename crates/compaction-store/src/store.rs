//! [`Store`]: a thin handle over a boxed [`TranscriptStore`], reached from a URL through the
//! backend table.

use std::any::Any;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::options::StoreOptions;
use crate::{Backend, Result, StoreError, TranscriptStore};

/// A store picked from its URL by the [`Backend`] table: `sqlite:<path>`, `sqlite://<path>`,
/// `sqlite::memory:`, `postgres://` / `postgresql://`, or the scheme of a backend of one's own
/// ([`Backend::register`]). A URL whose backend's cargo feature (`sqlite`, `postgres`) is off
/// fails with [`StoreError::BackendDisabled`], which names the feature; a URL no backend
/// answers to fails with [`StoreError::UnsupportedUrl`].
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
            format!("{}:{location}", Backend::SQLITE.schemes()[0])
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

    /// Connects through the backend table (each backend runs its own migrations).
    pub async fn connect_with(url: &str, options: &StoreOptions) -> Result<Store> {
        let Some(backend) = Backend::for_url(url) else {
            // The scheme only: the rest of the URL may hold credentials.
            let scheme = crate::backend::scheme(url).unwrap_or("");
            return Err(StoreError::UnsupportedUrl {
                scheme: scheme.chars().take(32).collect(),
            });
        };
        backend.connect(url, options).await
    }

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

/// The file of a `sqlite:` URL (`None` for an in-memory database or another backend).
fn sqlite_file(url: &str) -> Option<&str> {
    if Backend::for_url(url) != Some(Backend::SQLITE) {
        return None;
    }
    let rest = url.split_once(':')?.1;
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let path = rest.split_once('?').map_or(rest, |(p, _)| p);
    (!path.is_empty() && path != ":memory:" && !url.contains("mode=memory")).then_some(path)
}
