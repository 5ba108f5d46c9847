//! The backend table: each backend, the URL schemes it answers to and the cargo feature that
//! compiles it. The one place a scheme is named: [`Store::connect`](crate::Store::connect)
//! opens a URL by this table, and a command line asks [`Backend::for_url`] whether a string is
//! a store URL at all. It imports nothing from the rest of the crate.

use std::fmt;

/// A store backend.
///
/// Every backend is listed whether or not its cargo feature is on, so a URL for a backend
/// left out of the build is told apart from a URL for no backend at all:
///
/// ```
/// use compaction_store::Backend;
///
/// assert_eq!(Backend::for_url("sqlite::memory:"), Some(Backend::Sqlite));
/// assert_eq!(Backend::for_url("postgresql://db.example/app"), Some(Backend::Postgres));
/// assert_eq!(Backend::for_url("mysql://db.example/app"), None);
/// assert_eq!(Backend::Postgres.schemes(), ["postgres", "postgresql"]);
/// // Whether the build can open it is its cargo feature.
/// assert_eq!(Backend::Sqlite.is_compiled(), cfg!(feature = "sqlite"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// SQLite (file or in-memory): `sqlite:<path>`, `sqlite://<path>`, `sqlite::memory:`.
    Sqlite,
    /// PostgreSQL: `postgres://…`, `postgresql://…`.
    Postgres,
}

/// One row of the backend table.
struct Row {
    backend: Backend,
    /// The backend's name, which is also its cargo feature.
    name: &'static str,
    /// The URL schemes it answers to (the text before the first `:`).
    schemes: &'static [&'static str],
    /// Whether the backend's feature is on.
    compiled: bool,
}

const TABLE: &[Row] = &[
    Row {
        backend: Backend::Sqlite,
        name: "sqlite",
        schemes: &["sqlite"],
        compiled: cfg!(feature = "sqlite"),
    },
    Row {
        backend: Backend::Postgres,
        name: "postgres",
        schemes: &["postgres", "postgresql"],
        compiled: cfg!(feature = "postgres"),
    },
];

impl Backend {
    /// Every backend, compiled in or not, in table order.
    pub const ALL: [Backend; 2] = [Backend::Sqlite, Backend::Postgres];

    fn row(self) -> &'static Row {
        TABLE
            .iter()
            .find(|r| r.backend == self)
            .unwrap_or(&TABLE[0])
    }

    /// The backend's name, which is also the cargo feature that compiles it: `sqlite`,
    /// `postgres`.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The URL schemes the backend answers to, without the `:`.
    pub fn schemes(self) -> &'static [&'static str] {
        self.row().schemes
    }

    /// Whether this build can open the backend (its cargo feature is on).
    pub fn is_compiled(self) -> bool {
        self.row().compiled
    }

    /// The backend whose scheme `url` carries (the text before its first `:`, compared
    /// exactly), compiled in or not; `None` when no backend answers to it.
    pub fn for_url(url: &str) -> Option<Backend> {
        let scheme = scheme(url)?;
        TABLE
            .iter()
            .find(|r| r.schemes.contains(&scheme))
            .map(|r| r.backend)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The text before the first `:` of `url`.
pub(crate) fn scheme(url: &str) -> Option<&str> {
    url.split_once(':').map(|(s, _)| s)
}

/// Every scheme of the table, for messages: `sqlite:, postgres:, postgresql:`.
pub(crate) fn expected_schemes() -> String {
    TABLE
        .iter()
        .flat_map(|r| r.schemes)
        .map(|s| format!("{s}:"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_backend_has_one_row_and_schemes_are_unique() {
        for backend in Backend::ALL {
            assert_eq!(TABLE.iter().filter(|r| r.backend == backend).count(), 1);
            for scheme in backend.schemes() {
                assert_eq!(Backend::for_url(&format!("{scheme}:x")), Some(backend));
            }
        }
        let all: Vec<_> = TABLE.iter().flat_map(|r| r.schemes).collect();
        let mut unique = all.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(all.len(), unique.len());
        assert_eq!(expected_schemes(), "sqlite:, postgres:, postgresql:");
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
        assert_eq!(Backend::for_url("sqlite:"), Some(Backend::Sqlite));
        assert_eq!(Backend::Postgres.to_string(), "postgres");
    }
}
