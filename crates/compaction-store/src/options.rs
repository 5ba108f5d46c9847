//! The connection settings every backend's `connect` takes.

use std::time::Duration;

/// Connection settings shared by both backends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Pool size (a SQLite in-memory database always uses one connection).
    pub max_connections: u32,
    /// How long to wait for a connection, and (SQLite) for a lock held by another writer.
    pub busy_timeout: Duration,
    /// PostgreSQL only: keep the tables in this schema (created if missing) instead of the
    /// connection's default `search_path`. 1-63 characters of `a-z`, `0-9`, `_`.
    pub postgres_schema: Option<String>,
    /// SQLite only: create the database file when it does not exist (the default). Off, a
    /// missing file fails with [`DatabaseFailure::CannotOpen`](crate::DatabaseFailure) and
    /// nothing is created: for commands that only read or change an existing session.
    pub create_if_missing: bool,
    /// SQLite only: open the database read-only (also implied by `mode=ro` or
    /// `immutable=true` in a `sqlite:` URL). Nothing is created, the journal mode is left as
    /// it is and no migration runs: a schema that is not current fails with
    /// [`StoreError::Migration`](crate::StoreError::Migration) saying which migration it
    /// needs. Writes fail with [`DatabaseFailure::ReadOnly`](crate::DatabaseFailure). A
    /// write-ahead-log database whose `-shm` file is missing and cannot be created (a
    /// read-only mount) is opened as immutable when it has no unmerged `-wal` file.
    pub read_only: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_connections: 8,
            busy_timeout: Duration::from_secs(5),
            postgres_schema: None,
            create_if_missing: true,
            read_only: false,
        }
    }
}
