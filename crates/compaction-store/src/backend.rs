//! The backend table: each backend's name, the URL schemes it answers to and how to connect
//! to it. The one place a scheme is named: [`Store::connect`] opens a URL by this table, and a
//! command line asks [`Backend::for_url`] whether a string is a store URL at all. The two
//! backends of this crate are its first rows; a store of one's own joins it with
//! [`Backend::register`].

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::RwLock;

use crate::{BoxFuture, Result, Store, StoreError, StoreOptions};

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
    /// SQLite (file or in-memory): `sqlite:<path>`, `sqlite://<path>`, `sqlite::memory:`.
    /// Compiled with the `sqlite` feature.
    pub const SQLITE: Backend = Backend {
        name: "sqlite",
        schemes: &["sqlite"],
        #[cfg(feature = "sqlite")]
        connect: Some(crate::sqlite::connect),
        #[cfg(not(feature = "sqlite"))]
        connect: None,
    };

    /// PostgreSQL: `postgres://…`, `postgresql://…`. Compiled with the `postgres` feature.
    pub const POSTGRES: Backend = Backend {
        name: "postgres",
        schemes: &["postgres", "postgresql"],
        #[cfg(feature = "postgres")]
        connect: Some(crate::postgres::connect),
        #[cfg(not(feature = "postgres"))]
        connect: None,
    };

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
pub(crate) fn expected_schemes() -> String {
    Backend::all()
        .iter()
        .flat_map(|b| b.schemes)
        .map(|s| format!("{s}:"))
        .collect::<Vec<_>>()
        .join(", ")
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
