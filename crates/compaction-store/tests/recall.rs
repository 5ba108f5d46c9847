//! Recall: trimmed originals by handle, rows by id, full-text search over what compaction
//! removed. Results never cross sessions.

use compaction_core::{Edit, Message};
use compaction_store::{Commit, HitSource, StoreError};

use crate::common::{archived_session, conversation, tool_turn};

on_both_backends! {
    /// The stored original comes back byte-identical, also for NUL escapes, any Unicode,
    /// unknown fields and megabytes; storing it again is a no-op; a different original under
    /// the same handle is refused and the first is kept.
    async fn originals_round_trip_byte_identical(b) {
        let s = &*b.store;
        s.create_session("o").await.unwrap();
        let big = "line of output é 🦀\n".repeat(150_000);
        let lines = [
            r#"{"role":"tool","tool_call_id":"c\u0000","content":"nul \u0000 inside \ud83e\udd80","x":[1.50]}"#.to_owned(),
            serde_json::json!({"role": "tool", "tool_call_id": "c2", "content": big}).to_string(),
            r#"{ "role" : "user", "content":[{"type":"text","text":"a"},{"type":"text","text":"b"}] }"#.to_owned(),
        ];
        for (i, line) in lines.iter().enumerate() {
            let m = Message::from_json(line).unwrap();
            let handle = format!("trim-{i:016x}");
            s.store_original("o", &handle, &m).await.unwrap();
            s.store_original("o", &handle, &m).await.unwrap();
            let back = s.load_original("o", &handle).await.unwrap().expect("stored");
            assert!(back.to_wire_json() == m.to_wire_json(), "original {i} differs");
            assert!(back.meta().is_none());
        }
        let other = Message::tool_result("c9", "something else");
        let err = s.store_original("o", "trim-0000000000000000", &other).await.unwrap_err();
        assert!(matches!(err, StoreError::HandleConflict { ref handle } if handle == "trim-0000000000000000"), "{err}");
        let kept = s.load_original("o", "trim-0000000000000000").await.unwrap().unwrap();
        assert_eq!(kept.to_wire_json(), lines[0].as_str());
        // Unknown handle, unknown session, invalid handle.
        assert!(s.load_original("o", "trim-ffffffffffffffff").await.unwrap().is_none());
        assert!(matches!(s.load_original("nope", "h").await, Err(StoreError::UnknownSession { .. })));
        assert!(matches!(s.store_original("nope", "h", &other).await, Err(StoreError::UnknownSession { .. })));
        assert!(matches!(s.store_original("o", "", &other).await, Err(StoreError::InvalidHandle)));
        assert!(matches!(s.load_original("o", "a\nb").await, Err(StoreError::InvalidHandle)));
        // A restarted process reads the same bytes.
        let again = b.reconnect().await;
        let back = again.load_original("o", "trim-0000000000000001").await.unwrap().unwrap();
        assert!(back.to_wire_json() == lines[1]);
    }
}

on_both_backends! {
    /// Search finds words that only exist in archived rows (tool output, tool arguments) and
    /// in trimmed originals; words of active rows only are not found.
    async fn search_finds_only_what_compaction_removed(b) {
        let s = &*b.store;
        let mut messages = conversation(1);
        messages.extend(tool_turn("t1", "make zebrafish", "error: quokka not found\nexit code: 2"));
        messages.push(Message::user("now look at the pangolin"));
        // Archive the tool turn (indices 5 and 6).
        let messages = archived_session(s, "s", messages, 5..7).await;
        let tool_row = messages[6].row_id().unwrap();
        let call_row = messages[5].row_id().unwrap();

        let hits = s.search_archived("s", "Quokka", 10).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].source, HitSource::Row(tool_row));
        assert_eq!(hits[0].message.to_wire_json(), messages[6].to_wire_json());
        let hits = s.search_archived("s", "zebrafish", 10).await.unwrap();
        assert_eq!(hits.iter().map(|h| h.source.clone()).collect::<Vec<_>>(), [HitSource::Row(call_row)]);
        // Every word must occur; punctuation is ignored.
        assert_eq!(s.search_archived("s", "quokka, exit!", 10).await.unwrap().len(), 1);
        assert!(s.search_archived("s", "quokka pangolin", 10).await.unwrap().is_empty());
        // Active rows are not searched.
        assert!(s.search_archived("s", "pangolin", 10).await.unwrap().is_empty());
        // No words, zero limit: nothing.
        assert!(s.search_archived("s", " ?! ", 10).await.unwrap().is_empty());
        assert!(s.search_archived("s", "quokka", 0).await.unwrap().is_empty());

        // A trimmed original is searchable as soon as it is stored.
        let original = Message::tool_result("t2", "the axolotl test failed at step 3");
        s.store_original("s", "trim-00000000000000aa", &original).await.unwrap();
        let hits = s.search_archived("s", "axolotl", 10).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].source, HitSource::Original("trim-00000000000000aa".into()));
        assert_eq!(hits[0].message.to_wire_json(), original.to_wire_json());
        // Storing it again does not index it twice.
        s.store_original("s", "trim-00000000000000aa", &original).await.unwrap();
        assert_eq!(s.search_archived("s", "axolotl", 10).await.unwrap().len(), 1);

        // Rows archived later are indexed by the next search, each once.
        let active = s.load_active("s").await.unwrap();
        let pangolin = active.iter().position(|m| m.text().contains("pangolin")).unwrap();
        let edit = Edit::single(pangolin..pangolin + 1, vec![Message::user("(elided)")]);
        let generation = s.generation("s").await.unwrap();
        let mut commit = Commit::from_edit(generation, &edit, &active).unwrap();
        s.archive_and_compact("s", &mut commit).await.unwrap();
        assert_eq!(s.search_archived("s", "pangolin", 10).await.unwrap().len(), 1);
        assert_eq!(s.search_archived("s", "pangolin", 10).await.unwrap().len(), 1);
        assert_eq!(s.search_archived("s", "quokka", 10).await.unwrap().len(), 1);
        assert!(matches!(s.search_archived("nope", "x", 3).await, Err(StoreError::UnknownSession { .. })));
    }
}

on_both_backends! {
    /// Two sessions with the same words: each search, row lookup and handle lookup sees only
    /// its own session.
    async fn recall_never_crosses_sessions(b) {
        let s = &*b.store;
        let mut per_session = Vec::new();
        for name in ["a", "b"] {
            let mut messages = conversation(1);
            messages.extend(tool_turn("t", "run", &format!("shared wombat output of {name}")));
            messages.push(Message::user("next"));
            let messages = archived_session(s, name, messages, 5..7).await;
            s.store_original(name, "trim-000000000000000b", &Message::tool_result("x", format!("wombat original of {name}")))
                .await
                .unwrap();
            per_session.push(messages);
        }
        for (name, messages) in ["a", "b"].iter().zip(&per_session) {
            let hits = s.search_archived(name, "wombat", 10).await.unwrap();
            assert_eq!(hits.len(), 2, "{name}");
            for h in &hits {
                assert!(h.message.text().ends_with(&format!("of {name}")), "{name}: {:?}", h.source);
            }
            let original = s.load_original(name, "trim-000000000000000b").await.unwrap().unwrap();
            assert!(original.text().ends_with(&format!("of {name}")));
            // Row lookups leave out the other session's rows.
            let other = if *name == "a" { &per_session[1] } else { &per_session[0] };
            let mut ids: Vec<i64> = other.iter().map(|m| m.row_id().unwrap()).collect();
            ids.push(messages[6].row_id().unwrap());
            let rows = s.load_rows(name, &ids).await.unwrap();
            assert_eq!(rows.len(), 1);
            assert_eq!(rows[0].id, messages[6].row_id().unwrap());
            assert!(!rows[0].active && rows[0].compacted);
        }
    }
}

on_both_backends! {
    /// Rows by id: active and archived, in transcript order, each once, whatever the order and
    /// repetition of the ids asked for.
    async fn rows_by_id_in_transcript_order(b) {
        let s = &*b.store;
        let messages = archived_session(s, "r", conversation(3), 1..5).await;
        let ids: Vec<i64> = messages.iter().map(|m| m.row_id().unwrap()).collect();
        let asked = [ids[7], ids[2], ids[2], ids[0], 999_999];
        let rows = s.load_rows("r", &asked).await.unwrap();
        assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), [ids[0], ids[2], ids[7]]);
        assert_eq!(rows.iter().map(|r| r.active).collect::<Vec<_>>(), [true, false, true]);
        assert_eq!(rows[1].message.to_wire_json(), messages[2].to_wire_json());
        assert!(s.load_rows("r", &[]).await.unwrap().is_empty());
        assert!(matches!(s.load_rows("nope", &[1]).await, Err(StoreError::UnknownSession { .. })));
        // More ids than one lookup takes.
        let many: Vec<i64> = (0..1_200).map(|i| ids[i % ids.len()]).collect();
        assert_eq!(s.load_rows("r", &many).await.unwrap().len(), ids.len());
    }
}

on_both_backends! {
    /// A multi-megabyte original is stored whole and searchable by words near its start
    /// (the index reads the first 200,000 characters).
    async fn huge_originals_are_indexed_by_their_start(b) {
        let s = &*b.store;
        s.create_session("h").await.unwrap();
        let text = format!("capybara {}", "lorem ipsum dolor sit amet ".repeat(200_000));
        let m = Message::tool_result("c", text);
        s.store_original("h", "trim-00000000000000ff", &m).await.unwrap();
        let hits = s.search_archived("h", "capybara", 5).await.unwrap();
        assert_eq!(hits.len(), 1);
        assert!(hits[0].message.to_wire_json() == m.to_wire_json());
    }
}

/// A database written by schema version 1 (before recall existed) upgrades in place, and its
/// rows archived back then become searchable: the first search indexes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_archived_before_the_upgrade_are_searchable() {
    use sqlx::SqlSafeStr;
    use sqlx::migrate::{Migration, MigrationType, Migrator};

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("v1.db").display());
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("v1.db"))
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let mut v1 = Migrator::with_migrations(vec![Migration::new(
        1,
        "sessions and messages".into(),
        MigrationType::Simple,
        include_str!("../migrations/sqlite/0001_init.sql").into_sql_str(),
        false,
    )]);
    v1.dangerous_set_table_name("hermes_schema_migrations");
    v1.run(&pool).await.unwrap();
    sqlx::query("INSERT INTO hermes_sessions (id, created_at, updated_at) VALUES ('old', 0, 0)")
        .execute(&pool)
        .await
        .unwrap();
    let archived = Message::tool_result("c", "the old okapi log");
    for (pos, (m, active)) in [
        (archived.clone(), false),
        (Message::user("live okapi"), true),
    ]
    .into_iter()
    .enumerate()
    {
        sqlx::query(
            "INSERT INTO hermes_messages (session_id, pos, role, kind, body, active, compacted, \
             generation, created_at) VALUES ('old', $1, $2, 'normal', $3, $4, $5, 0, 0)",
        )
        .bind(pos as i64)
        .bind(m.role().as_str())
        .bind(m.to_wire_json().into_bytes())
        .bind(active)
        .bind(!active)
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;

    let store = compaction_store::Store::connect(&url).await.unwrap();
    let hits = store.search_archived("old", "okapi", 10).await.unwrap();
    assert_eq!(hits.len(), 1, "only the archived row");
    assert_eq!(hits[0].message.to_wire_json(), archived.to_wire_json());
    assert_eq!(store.load_active("old").await.unwrap().len(), 1);
}
