//! SQLite opened read-only (`StoreOptions::read_only`, `mode=ro` in the URL): reads work on a
//! current schema, nothing is created, migrated or written, and a schema that would need a
//! migration is named. Tests run as root, where file permissions do not stop writes, so the
//! read-only open is SQLite's own (`SQLITE_OPEN_READONLY`), which refuses every write.

use std::path::Path;

use compaction_core::Message;
use compaction_store::{DatabaseFailure, Store, StoreError, StoreOptions};

use crate::common::{conversation, wire};

fn read_only() -> StoreOptions {
    StoreOptions {
        read_only: true,
        ..StoreOptions::default()
    }
}

/// A database file with one session, closed (its WAL merged into the file).
async fn written(path: &Path) -> Vec<Message> {
    let store = Store::connect(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    store.create_session("s").await.unwrap();
    let mut messages = conversation(3);
    store.append("s", &mut messages).await.unwrap();
    store.close().await;
    messages
}

/// Runs `sql` on the file with a plain writable connection.
async fn edit(path: &Path, sql: &str) {
    use sqlx::Connection;
    let mut c = sqlx::SqliteConnection::connect(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut c)
        .await
        .unwrap();
    c.close().await.unwrap();
}

#[tokio::test]
async fn a_read_only_open_reads_and_never_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let messages = written(&path).await;
    let bytes = std::fs::read(&path).unwrap();
    for (url, options) in [
        (format!("sqlite:{}", path.display()), read_only()),
        (
            format!("sqlite:{}?mode=ro", path.display()),
            StoreOptions::default(),
        ),
        (
            format!("sqlite://{}?mode=ro", path.display()),
            StoreOptions::default(),
        ),
    ] {
        let store = Store::connect_with(&url, &options).await.unwrap();
        assert_eq!(
            wire(&store.load_active("s").await.unwrap()),
            wire(&messages),
            "{url}"
        );
        assert_eq!(store.load_all("s").await.unwrap().len(), messages.len());
        assert_eq!(store.generation("s").await.unwrap(), 0);
        assert_eq!(store.list_sessions().await.unwrap().len(), 1);
        // Every kind of write is refused by SQLite itself, with nothing changed.
        let mut more = vec![Message::user("late")];
        let refused = [
            store.append("s", &mut more).await.map(|_| ()),
            store.create_session("t").await.map(|_| ()),
            store
                .set_compaction_state("s", &Default::default())
                .await
                .map(|_| ()),
        ];
        for (i, r) in refused.into_iter().enumerate() {
            assert!(
                matches!(
                    r,
                    Err(StoreError::Database {
                        failure: DatabaseFailure::ReadOnly,
                        ..
                    })
                ),
                "{url} write {i}: {r:?}"
            );
        }
        assert!(more[0].row_id().is_none());
        store.close().await;
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{url}: the file is unchanged"
        );
    }
}

#[tokio::test]
async fn a_read_only_open_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.db");
    for url in [
        format!("sqlite:{}", path.display()),
        format!("sqlite:{}?mode=ro", path.display()),
    ] {
        let e = Store::connect_with(&url, &read_only()).await.unwrap_err();
        assert!(
            matches!(
                e,
                StoreError::Database {
                    failure: DatabaseFailure::CannotOpen,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(!path.exists(), "{url}: no file created");
    }
}

/// A schema that is not current (older, none at all, or newer): named, with nothing
/// migrated and the file unchanged.
#[tokio::test]
async fn a_read_only_open_names_the_migration_it_needs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    written(&path).await;
    edit(
        &path,
        "DELETE FROM hermes_schema_migrations WHERE version = 4",
    )
    .await;
    let bytes = std::fs::read(&path).unwrap();
    let e = Store::connect_with(&format!("sqlite:{}?mode=ro", path.display()), &read_only())
        .await
        .unwrap_err();
    let StoreError::Migration { reason } = &e else {
        panic!("{e:?}")
    };
    assert!(
        reason.contains("read-only") && reason.contains("migration 4"),
        "{reason}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing migrated");

    // A file that is not a hermes-compaction database at all (empty): migration 1.
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    let e = Store::connect_with(&format!("sqlite:{}", empty.display()), &read_only())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("needs migration 1"), "{e}");
    assert_eq!(std::fs::read(&empty).unwrap(), b"");

    // A newer version's schema: said so, not mistaken for an older one.
    let newer = dir.path().join("newer.db");
    written(&newer).await;
    edit(
        &newer,
        "INSERT INTO hermes_schema_migrations (version, description, success, checksum, execution_time) \
         VALUES (99, 'future', TRUE, x'00', 0)",
    )
    .await;
    let e = Store::connect_with(&format!("sqlite:{}", newer.display()), &read_only())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("migration 99"), "{e}");
}

/// A database written before the continuation kind (schema version 4), opened read-only, is
/// refused naming migration 5, with nothing migrated.
#[tokio::test]
async fn a_read_only_open_of_schema_4_names_migration_5() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.db");
    written(&path).await;
    edit(
        &path,
        "DELETE FROM hermes_schema_migrations WHERE version = 5",
    )
    .await;
    let bytes = std::fs::read(&path).unwrap();
    let e = Store::connect_with(&format!("sqlite:{}", path.display()), &read_only())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("migration 5"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "nothing migrated");
}
