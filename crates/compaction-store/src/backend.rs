//! The backend table: each backend's name, the URL schemes it answers to and how to connect
//! to it, and [`Store::open`] / [`Store::connect`], which open a URL by it. The one place a
//! scheme is looked up: a command line asks [`Backend::for_url`] whether a string is a store URL
//! at all. This crate's two backends are its first rows (declared in `lib.rs`, beside their
//! modules); a store of one's own joins it with [`Backend::register`].

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::RwLock;

use crate::store::Access;
use crate::{BoxFuture, DatabaseFailure, Result, Store, StoreError, StoreOptions};

/// How a backend connects: a URL that carries one of its schemes and the connection
/// settings, to a [`Store`] (wrap the backend's own store with [`Store::new`]).
pub type Connect = for<'a> fn(&'a str, &'a StoreOptions) -> BoxFuture<'a, Result<Store>>;

/// A row of the backend table: a name, the URL schemes it answers to, and its [`Connect`].
///
/// This crate's backends are listed whether or not their cargo feature is on, so a URL for a
/// backend left out of the build is told apart from a URL for no backend at all. Backends are
/// equal when their names are.
///
/// ```
/// use compaction_store::Backend;
///
/// assert_eq!(Backend::for_url("sqlite::memory:"), Some(Backend::SQLITE));
/// assert_eq!(Backend::for_url("postgresql://db.example/app"), Some(Backend::POSTGRES));
/// assert_eq!(Backend::for_url("mysql://db.example/app"), None);
/// assert_eq!(Backend::POSTGRES.schemes(), ["postgres", "postgresql"]);
/// // Whether the build can open it is its cargo feature.
/// assert_eq!(Backend::SQLITE.is_compiled(), cfg!(feature = "sqlite"));
/// ```
#[derive(Clone, Copy)]
pub struct Backend {
    name: &'static str,
    schemes: &'static [&'static str],
    connect: Option<Connect>,
}

/// The backends registered at run time, after this crate's own.
static REGISTERED: RwLock<Vec<Backend>> = RwLock::new(Vec::new());

impl Backend {
    /// A row of this crate's (in `lib.rs`): `connect` is `None` when its feature is off.
    pub(crate) const fn built_in(
        name: &'static str,
        schemes: &'static [&'static str],
        connect: Option<Connect>,
    ) -> Backend {
        Backend {
            name,
            schemes,
            connect,
        }
    }

    /// A backend of one's own: its name, the URL schemes it answers to (the text before a
    /// URL's first `:`, compared exactly) and how it connects. Add it to the table with
    /// [`register`](Self::register).
    pub const fn new(
        name: &'static str,
        schemes: &'static [&'static str],
        connect: Connect,
    ) -> Backend {
        Backend {
            name,
            schemes,
            connect: Some(connect),
        }
    }

    /// Adds this backend to the table, so [`Store::connect`] and [`Backend::for_url`] find it
    /// by its schemes. Registering the same backend (name and schemes) again changes nothing;
    /// a name or a scheme another backend has is [`StoreError::BackendConflict`] and the table
    /// is left as it was.
    pub fn register(self) -> Result<()> {
        let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
        for other in BUILT_IN.iter().chain(registered.iter()) {
            if other.name == self.name && other.schemes == self.schemes && !other.is_built_in() {
                return Ok(());
            }
            let shared = self.schemes.iter().find(|s| other.schemes.contains(s));
            if other.name == self.name || shared.is_some() {
                return Err(StoreError::BackendConflict {
                    backend: self.name,
                    taken_by: other.name,
                });
            }
        }
        registered.push(self);
        Ok(())
    }

    /// Every backend, compiled in or not: this crate's, then the registered ones in the order
    /// they were registered.
    pub fn all() -> Vec<Backend> {
        let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
        BUILT_IN.iter().chain(registered.iter()).copied().collect()
    }

    /// The backend's name (for this crate's, also the cargo feature that compiles it:
    /// `sqlite`, `postgres`).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The URL schemes the backend answers to, without the `:`.
    pub fn schemes(&self) -> &'static [&'static str] {
        self.schemes
    }

    /// Whether this build can open the backend (for this crate's, its cargo feature is on).
    pub fn is_compiled(&self) -> bool {
        self.connect.is_some()
    }

    /// The backend whose scheme `url` carries (the text before its first `:`, compared
    /// exactly), compiled in or not; `None` when no backend answers to it.
    pub fn for_url(url: &str) -> Option<Backend> {
        let scheme = scheme(url)?;
        Backend::all()
            .into_iter()
            .find(|b| b.schemes.contains(&scheme))
    }

    /// Connects to `url` with this backend: [`StoreError::BackendDisabled`] when it is not
    /// compiled in.
    pub(crate) async fn connect(&self, url: &str, options: &StoreOptions) -> Result<Store> {
        match self.connect {
            Some(connect) => connect(url, options).await,
            None => Err(StoreError::BackendDisabled { backend: self.name }),
        }
    }

    fn is_built_in(&self) -> bool {
        BUILT_IN.iter().any(|b| b.name == self.name)
    }
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
            return Err(unsupported(scheme));
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
                failure: DatabaseFailure::ReadOnly | DatabaseFailure::CannotOpen,
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
            let scheme = scheme(url).unwrap_or("");
            return Err(unsupported(scheme));
        };
        backend.connect(url, options).await
    }
}

/// This crate's rows of the table.
const BUILT_IN: [Backend; 2] = [Backend::SQLITE, Backend::POSTGRES];

impl PartialEq for Backend {
    fn eq(&self, other: &Backend) -> bool {
        self.name == other.name
    }
}

impl Eq for Backend {}

impl Hash for Backend {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state)
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backend")
            .field("name", &self.name)
            .field("schemes", &self.schemes)
            .field("compiled", &self.is_compiled())
            .finish()
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// The text before the first `:` of `url`.
pub(crate) fn scheme(url: &str) -> Option<&str> {
    url.split_once(':').map(|(s, _)| s)
}

/// Every scheme of the table, for messages: `sqlite:, postgres:, postgresql:`.
fn expected_schemes() -> String {
    Backend::all()
        .iter()
        .flat_map(|b| b.schemes)
        .map(|s| format!("{s}:"))
        .collect::<Vec<_>>()
        .join(", ")
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

/// [`StoreError::UnsupportedUrl`] for `scheme` (cut to 32 characters), with the schemes the
/// table knows now.
fn unsupported(scheme: &str) -> StoreError {
    StoreError::UnsupportedUrl {
        scheme: scheme.chars().take(32).collect(),
        expected: expected_schemes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_has_one_row_and_schemes_are_unique() {
        for backend in BUILT_IN {
            for scheme in backend.schemes() {
                assert_eq!(Backend::for_url(&format!("{scheme}:x")), Some(backend));
            }
        }
        let all: Vec<_> = BUILT_IN.iter().flat_map(|b| b.schemes).collect();
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(all.len(), unique.len());
        assert!(expected_schemes().starts_with("sqlite:, postgres:, postgresql:"));
    }

    #[test]
    fn schemes_match_exactly() {
        for url in [
            "",
            "sqlite",
            "SQLITE:x",
            "sqlite3:x",
            "postgre://x",
            " sqlite:x",
            "C:\\x",
        ] {
            assert_eq!(Backend::for_url(url), None, "{url}");
        }
        assert_eq!(Backend::for_url("sqlite:"), Some(Backend::SQLITE));
        assert_eq!(Backend::POSTGRES.to_string(), "postgres");
    }

    fn refuse<'a>(_: &'a str, _: &'a StoreOptions) -> BoxFuture<'a, Result<Store>> {
        Box::pin(async { Err(StoreError::InvalidSessionId) })
    }

    #[test]
    fn a_registered_backend_joins_the_table_once_and_takes_no_scheme_of_another() {
        let own = Backend::new("unit-test-store", &["unit-test-store"], refuse);
        own.register().unwrap();
        own.register().unwrap();
        assert_eq!(Backend::for_url("unit-test-store:x"), Some(own));
        assert_eq!(Backend::all().iter().filter(|b| **b == own).count(), 1);
        let thief = Backend::new("thief", &["x", "sqlite"], refuse);
        assert!(matches!(
            thief.register(),
            Err(StoreError::BackendConflict {
                taken_by: "sqlite",
                ..
            })
        ));
        let same_name = Backend::new("postgres", &["pg2"], refuse);
        assert!(same_name.register().is_err());
        assert_eq!(Backend::for_url("x:y"), None);
    }
}
