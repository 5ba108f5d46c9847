//! Failures that say which: atomic import, classified database errors, and the snapshot read
//! a compaction is planned from.

use compaction_core::{Edit, MarkerKind, Message, Role, marker};
use compaction_store::{Commit, DatabaseFailure, FaultPoint, Store, StoreError, StoreOptions};

use crate::common::{conversation, wire};

/// No session `id`: unknown to `open`, absent from the list.
async fn no_session(store: &Store, id: &str) {
    assert!(
        matches!(store.open(id).await, Err(StoreError::UnknownSession { .. })),
        "session {id} was left behind"
    );
    assert!(
        store
            .list_sessions()
            .await
            .unwrap()
            .iter()
            .all(|s| s.id != id)
    );
}

on_both_backends! {
    /// An import commits whole or not at all: a fault after the session and its messages were
    /// written, before the commit, leaves no session; the same import then succeeds, and a
    /// second import under the same id is refused without touching the first.
    async fn import_is_atomic(b) {
        let st = &b.store;
        let original = conversation(3);
        let mut messages = original.clone();
        st.inject_fault(FaultPoint::BeforeImportCommit);
        let e = st.import_session("imp", &mut messages).await.unwrap_err();
        assert!(matches!(e, StoreError::InjectedFault), "{e:?}");
        assert!(messages.iter().all(|m| m.row_id().is_none()), "nothing stamped on failure");
        no_session(st, "imp").await;

        let ids = st.import_session("imp", &mut messages).await.unwrap();
        assert_eq!(ids.len(), original.len());
        assert_eq!(messages.iter().map(|m| m.row_id().unwrap()).collect::<Vec<_>>(), ids);
        let loaded = st.load_active("imp").await.unwrap();
        assert_eq!(wire(&loaded), wire(&original));
        assert_eq!(loaded, messages);
        assert_eq!(st.generation("imp").await.unwrap(), 0);

        let mut again = conversation(1);
        let e = st.import_session("imp", &mut again).await.unwrap_err();
        assert!(matches!(e, StoreError::SessionExists { ref session } if session == "imp"), "{e:?}");
        assert_eq!(st.load_active("imp").await.unwrap(), loaded);

        // An empty import creates an empty session; appends continue after imported rows.
        st.import_session("empty", &mut []).await.unwrap();
        assert!(st.load_active("empty").await.unwrap().is_empty());
        let mut more = vec![Message::user("after the import")];
        st.append("imp", &mut more).await.unwrap();
        assert_eq!(st.load_active("imp").await.unwrap().len(), original.len() + 1);
    }
}

/// Makes the database refuse to insert tool results: SQLite aborts (a constraint failure),
/// PostgreSQL raises SQLSTATE 53100, what a full disk gives. Returns the class to expect.
async fn reject_tool_rows(store: &Store) -> DatabaseFailure {
    match crate::common::engine(store) {
        crate::common::Engine::Sqlite(sq) => {
            sqlx::query(
                "CREATE TRIGGER hermes_test_reject BEFORE INSERT ON hermes_messages \
                 WHEN NEW.role = 'tool' BEGIN SELECT RAISE(ABORT, 'rejected'); END",
            )
            .execute(sq.pool())
            .await
            .unwrap();
            DatabaseFailure::Constraint
        }
        #[cfg(feature = "postgres")]
        crate::common::Engine::Postgres(pg) => {
            sqlx::query(
                "CREATE FUNCTION hermes_test_reject() RETURNS trigger AS $$ BEGIN \
                 RAISE EXCEPTION 'rejected' USING ERRCODE = '53100'; END $$ LANGUAGE plpgsql",
            )
            .execute(pg.pool())
            .await
            .unwrap();
            sqlx::query(
                "CREATE TRIGGER hermes_test_reject BEFORE INSERT ON hermes_messages \
                 FOR EACH ROW WHEN (NEW.role = 'tool') EXECUTE FUNCTION hermes_test_reject()",
            )
            .execute(pg.pool())
            .await
            .unwrap();
            DatabaseFailure::DiskFull
        }
    }
}

async fn accept_tool_rows(store: &Store) {
    let sql = match crate::common::engine(store) {
        crate::common::Engine::Sqlite(_) => "DROP TRIGGER hermes_test_reject",
        #[cfg(feature = "postgres")]
        crate::common::Engine::Postgres(_) => "DROP TRIGGER hermes_test_reject ON hermes_messages",
    };
    match crate::common::engine(store) {
        crate::common::Engine::Sqlite(sq) => {
            sqlx::query(sql).execute(sq.pool()).await.unwrap();
        }
        #[cfg(feature = "postgres")]
        crate::common::Engine::Postgres(pg) => {
            sqlx::query(sql).execute(pg.pool()).await.unwrap();
        }
    }
}

on_both_backends! {
    /// The database refuses a message in the middle of an import (after the session row and
    /// the messages before it were written in the same transaction): the error says what the
    /// database said, by class, and no session is left; once the database accepts the
    /// messages again, the same import succeeds.
    async fn import_refused_mid_way_leaves_nothing(b) {
        let st = &b.store;
        let expected = reject_tool_rows(st).await;
        let mut messages = conversation(2);
        let e = st.import_session("imp", &mut messages).await.unwrap_err();
        assert_eq!(e.database_failure(), Some(expected), "{e:?}");
        assert!(!format!("{e} {e:?}").contains("rejected"), "the database's message is not kept");
        no_session(st, "imp").await;
        accept_tool_rows(st).await;
        st.import_session("imp", &mut messages).await.unwrap();
        assert_eq!(wire(&st.load_active("imp").await.unwrap()), wire(&conversation(2)));
    }
}

on_both_backends! {
    /// Messages and generation come from one snapshot; an unknown session says so.
    async fn load_active_with_generation_matches_the_separate_reads(b) {
        let st = &b.store;
        assert!(matches!(
            st.load_active_with_generation("nope").await,
            Err(StoreError::UnknownSession { .. })
        ));
        st.create_session("s").await.unwrap();
        assert_eq!(st.load_active_with_generation("s").await.unwrap(), (vec![], 0));
        let mut messages = conversation(2);
        st.append("s", &mut messages).await.unwrap();
        let edit = Edit::single(1..3, vec![marker::render(MarkerKind::Micro, Role::Assistant, "m")]);
        let mut commit = Commit::from_edit(0, &edit, &messages).unwrap();
        st.archive_and_compact("s", &mut commit).await.unwrap();
        let (active, generation) = st.load_active_with_generation("s").await.unwrap();
        assert_eq!(active, st.load_active("s").await.unwrap());
        assert_eq!(generation, 1);
    }
}

on_both_backends! {
    /// Two processes compacting one session, each planning from
    /// `load_active_with_generation`: every commit that loses a race reports a stale
    /// generation, never another store error.
    async fn racing_compactors_lose_with_stale_generation(b) {
        let s = "race";
        b.store.create_session(s).await.unwrap();
        b.store.append(s, &mut conversation(6)).await.unwrap();
        let mut tasks = Vec::new();
        for worker in 0..2 {
            let store = if worker == 0 { b.store.clone() } else { b.reconnect().await };
            tasks.push(tokio::spawn(async move {
                let (mut won, mut stale) = (0, 0);
                for _ in 0..12 {
                    let (active, generation) = store.load_active_with_generation(s).await.unwrap();
                    if active.len() < 6 {
                        let mut more = conversation(2).split_off(1);
                        store.append(s, &mut more).await.unwrap();
                        continue;
                    }
                    let edit = Edit::single(
                        1..3,
                        vec![marker::render(MarkerKind::Micro, Role::Assistant, "m")],
                    );
                    let mut commit = Commit::from_edit(generation, &edit, &active).unwrap();
                    match store.archive_and_compact(s, &mut commit).await {
                        Ok(_) => won += 1,
                        Err(StoreError::StaleGeneration { .. }) => stale += 1,
                        Err(e) => panic!("a lost race must report a stale generation: {e:?}"),
                    }
                }
                (won, stale)
            }));
        }
        let mut won = 0;
        for t in tasks {
            won += t.await.unwrap().0;
        }
        assert!(won > 0);
        assert_eq!(b.store.generation(s).await.unwrap(), won);
    }
}

/// A read-only SQLite database (`?mode=ro`) says so: at connect, or at the first write.
#[tokio::test]
async fn read_only_sqlite_says_read_only() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ro.db");
    let url = format!("sqlite:{}", file.display());
    let store = Store::connect(&url).await.unwrap();
    store.create_session("s").await.unwrap();
    store.close().await;
    let e = match Store::connect(&format!("{url}?mode=ro")).await {
        Ok(ro) => {
            assert_eq!(
                ro.list_sessions().await.unwrap().len(),
                1,
                "reads still work"
            );
            ro.create_session("t").await.unwrap_err()
        }
        Err(e) => e,
    };
    assert_eq!(
        e.database_failure(),
        Some(DatabaseFailure::ReadOnly),
        "{e:?}"
    );
    assert!(e.to_string().contains("read-only"), "{e}");
}

/// With `create_if_missing` off, a missing SQLite file is an error naming the failure, and no
/// file (nor `-wal`/`-shm`) is created; the same options open an existing file.
#[tokio::test]
async fn missing_sqlite_file_is_not_created_when_asked_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typo.db");
    let url = format!("sqlite:{}", file.display());
    let existing_only = StoreOptions {
        create_if_missing: false,
        ..StoreOptions::default()
    };
    let e = Store::connect_with(&url, &existing_only).await.unwrap_err();
    assert_eq!(
        e.database_failure(),
        Some(DatabaseFailure::CannotOpen),
        "{e:?}"
    );
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing created: {left:?}");
    let store = Store::connect(&url).await.unwrap();
    store.create_session("s").await.unwrap();
    store.close().await;
    let again = Store::connect_with(&url, &existing_only).await.unwrap();
    assert_eq!(again.list_sessions().await.unwrap().len(), 1);
}

/// `Store::close` checkpoints the write-ahead log: the `.db` file alone, copied elsewhere,
/// holds the imported session byte for byte.
#[tokio::test]
async fn close_leaves_everything_in_the_database_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.db");
    let url = format!("sqlite:{}", file.display());
    let store = Store::connect(&url).await.unwrap();
    let mut messages = conversation(40);
    messages.push(Message::tool_result("call_big", "y".repeat(512 * 1024)));
    store.import_session("s1", &mut messages).await.unwrap();
    let before = wire(&store.load_active("s1").await.unwrap());
    store.close().await;
    let copy = dir.path().join("copy.db");
    std::fs::copy(&file, &copy).unwrap();
    let copied = Store::connect(&format!("sqlite:{}", copy.display()))
        .await
        .unwrap();
    assert_eq!(wire(&copied.load_active("s1").await.unwrap()), before);
    copied.close().await;
}

/// A database that cannot grow (SQLite `max_page_count`, as a full disk) reports a full disk,
/// and an import that hit it leaves no session; with room again the same import succeeds.
#[tokio::test]
async fn full_sqlite_database_says_disk_full_and_import_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("full.db").display());
    let options = StoreOptions {
        max_connections: 1,
        ..StoreOptions::default()
    };
    let store = Store::connect_with(&url, &options).await.unwrap();
    let sq = store
        .downcast_ref::<compaction_store::SqliteStore>()
        .expect("a sqlite: URL");
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(sq.pool())
        .await
        .unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "PRAGMA max_page_count = {}",
        pages + 4
    )))
    .execute(sq.pool())
    .await
    .unwrap();
    let mut messages = conversation(2);
    messages.push(Message::tool_result("call_big", "x".repeat(256 * 1024)));
    let e = store
        .import_session("big", &mut messages)
        .await
        .unwrap_err();
    assert_eq!(
        e.database_failure(),
        Some(DatabaseFailure::DiskFull),
        "{e:?}"
    );
    assert!(e.to_string().contains("full"), "{e}");
    assert!(!e.to_string().contains("xxxx") && !format!("{e:?}").contains("xxxx"));
    no_session(&store, "big").await;

    sqlx::query("PRAGMA max_page_count = 1073741823")
        .execute(sq.pool())
        .await
        .unwrap();
    store.import_session("big", &mut messages).await.unwrap();
    assert_eq!(
        store.load_active("big").await.unwrap().len(),
        messages.len()
    );
}

/// A directory that does not exist cannot hold the database file.
#[tokio::test]
async fn missing_sqlite_directory_says_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("no/such/dir/x.db").display());
    let e = Store::connect(&url).await.unwrap_err();
    assert_eq!(
        e.database_failure(),
        Some(DatabaseFailure::CannotOpen),
        "{e:?}"
    );
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;

    /// `url` with its user name and database replaced (either when given).
    fn with(url: &str, user: Option<&str>, database: Option<&str>) -> String {
        let (scheme, rest) = url.split_once("://").unwrap();
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (db, query) = match path.split_once('?') {
            Some((d, q)) => (d, Some(q)),
            None => (path, None),
        };
        let userinfo = match (user, userinfo) {
            (Some(u), _) => Some(u.to_owned()),
            (None, u) => u.map(str::to_owned),
        };
        let mut out = format!("{scheme}://");
        if let Some(u) = userinfo {
            out.push_str(&u);
            out.push('@');
        }
        out.push_str(host);
        out.push('/');
        out.push_str(database.unwrap_or(db));
        if let Some(q) = query {
            out.push('?');
            out.push_str(q);
        }
        out
    }

    fn quick() -> StoreOptions {
        StoreOptions {
            busy_timeout: std::time::Duration::from_secs(2),
            ..StoreOptions::default()
        }
    }

    /// Nothing listens on port 1 of 127.0.0.1.
    #[tokio::test]
    async fn closed_port_says_connection_refused() {
        let e = Store::connect_with("postgres://hermes:pw-not-shown@127.0.0.1:1/x", &quick())
            .await
            .unwrap_err();
        assert_eq!(
            e.database_failure(),
            Some(DatabaseFailure::ConnectionRefused),
            "{e:?}"
        );
        let text = format!("{e} {e:?}");
        assert!(
            text.contains("refused") && !text.contains("pw-not-shown"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn missing_database_says_so() {
        let Some(url) = crate::common::postgres_only_url("missing_database_says_so") else {
            return;
        };
        let bad = with(&url, None, Some("hermes_no_such_database_9f3a"));
        let e = Store::connect_with(&bad, &quick()).await.unwrap_err();
        assert_eq!(
            e.database_failure(),
            Some(DatabaseFailure::MissingDatabase),
            "{e:?}"
        );
        assert!(!e.to_string().contains("hermes_no_such_database"), "{e}");
    }

    #[tokio::test]
    async fn unknown_user_says_authentication_failed() {
        let Some(url) = crate::common::postgres_only_url("unknown_user_says_authentication_failed")
        else {
            return;
        };
        let bad = with(&url, Some("hermes_no_such_user_9f3a:pw-not-shown"), None);
        let e = Store::connect_with(&bad, &quick()).await.unwrap_err();
        assert_eq!(
            e.database_failure(),
            Some(DatabaseFailure::Authentication),
            "{e:?}"
        );
        let text = format!("{e} {e:?}");
        assert!(
            !text.contains("pw-not-shown") && !text.contains("hermes_no_such_user"),
            "{text}"
        );
    }

    #[test]
    fn url_rewriting() {
        assert_eq!(
            with(
                "postgres://postgres@127.0.0.1:5432/db?sslmode=disable",
                Some("u:p"),
                Some("x")
            ),
            "postgres://u:p@127.0.0.1:5432/x?sslmode=disable"
        );
        assert_eq!(
            with("postgres://h/db", Some("u"), None),
            "postgres://u@h/db"
        );
    }
}
