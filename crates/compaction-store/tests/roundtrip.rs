//! Append and load: byte-identical bodies, stamps, kinds, idempotent flushes.

use compaction_core::{MarkerKind, Message, Role, marker, parse};
use compaction_store::Store;

use crate::common::{conversation, wire};

on_both_backends! {
    /// Every shared transcript comes back byte-identical, in order, stamped with row ids.
    async fn fixtures_round_trip(b) {
        let Some(files) = test_support::fixture_files() else { return };
        assert!(files.len() >= 21, "expected the 21 shared transcripts, found {}", files.len());
        for path in files {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let (mut messages, _) = parse::parse_transcript(&std::fs::read(&path).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let expected = wire(&messages);
            b.store.create_session(&name).await.unwrap();
            let ids = b.store.append(&name, &mut messages).await.unwrap();
            assert_eq!(ids.len(), messages.len(), "{name}");
            let loaded = b.store.load_active(&name).await.unwrap();
            assert_eq!(wire(&loaded), expected, "{name}: bodies differ");
            let loaded_ids: Vec<_> = loaded.iter().map(|m| m.row_id().unwrap()).collect();
            assert_eq!(loaded_ids, ids, "{name}: row ids");
            let stamped: Vec<_> = messages.iter().map(|m| m.row_id().unwrap()).collect();
            assert_eq!(stamped, ids, "{name}: stamps");
        }
    }
}

on_both_backends! {
    /// NUL escapes, multi-megabyte content, any Unicode, odd spacing and unknown fields.
    async fn hard_bodies_round_trip_byte_identical(b) {
        let big = "x".repeat(3 << 20) + "é\\u0000end";
        let lines = [
            r#"{"role":"user","content":"nul \u0000 inside"}"#.to_owned(),
            r#"{"role":"user","content":"key","\u0000weird":"\u0000","n":[1.50,2e3]}"#.to_owned(),
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c\u0000","type":"function","function":{"name":"run","arguments":"{\"cmd\":\"printf '\\u0000'\"}"}}]}"#.to_owned(),
            r#"{"role":"tool","tool_call_id":"c\u0000","content":"ok"}"#.to_owned(),
            "{ \"role\" : \"user\" ,\n \"content\":\"spaced\\tout\" }".to_owned(),
            r#"{"role":"user","content":"日本語 한국어 العربية עברית 🦀👩‍👩‍👧 e\u0301 \u00e9 é \ud83e\udd80"}"#.to_owned(),
            r#"{"role":"assistant","content":[{"type":"text","text":"parts"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}],"reasoning_content":"думаю"}"#.to_owned(),
            format!(r#"{{"role":"user","content":"{big}"}}"#),
        ];
        let mut messages: Vec<Message> =
            lines.iter().map(|l| Message::from_json(l).unwrap()).collect();
        let expected = wire(&messages);
        assert_eq!(expected[1], lines[1], "parsing itself is lossless");
        b.store.create_session("hard").await.unwrap();
        b.store.append("hard", &mut messages).await.unwrap();
        let loaded = b.store.load_active("hard").await.unwrap();
        assert_eq!(loaded.len(), expected.len());
        for (i, (got, want)) in wire(&loaded).iter().zip(&expected).enumerate() {
            assert!(got == want, "message {i} differs ({} vs {} bytes)", got.len(), want.len());
        }
        let all = b.store.load_all("hard").await.unwrap();
        assert_eq!(all.len(), expected.len());
        assert!(all.iter().all(|r| r.active && !r.compacted && r.generation == 0));
    }
}

on_both_backends! {
    /// Marker kind survives as a column; other metadata (a trimmed handle) survives too.
    async fn marker_kind_and_metadata_survive(b) {
        let mut messages = vec![
            Message::user("hi"),
            marker::render(MarkerKind::Batch, Role::User, "batch body"),
            marker::render(MarkerKind::Micro, Role::Assistant, "micro body"),
            marker::render(MarkerKind::Progress, Role::Assistant, "progress body"),
            Message::tool_result("c1", "short"),
            // Issue 21, item 14: the continuation is a kind of its own, not a summary.
            marker::continuation(),
        ];
        messages[4].meta_mut().trimmed_handle = Some("blob-17".into());
        b.store.create_session("kinds").await.unwrap();
        b.store.append("kinds", &mut messages).await.unwrap();
        let loaded = b.store.load_active("kinds").await.unwrap();
        let kinds: Vec<_> = loaded.iter().map(Message::marker_kind).collect();
        assert_eq!(
            kinds,
            [
                None,
                Some(MarkerKind::Batch),
                Some(MarkerKind::Micro),
                Some(MarkerKind::Progress),
                None,
                Some(MarkerKind::Continuation),
            ]
        );
        assert_eq!(loaded[4].meta().unwrap().trimmed_handle.as_deref(), Some("blob-17"));
        // The loaded messages equal the stamped originals, metadata included.
        assert_eq!(loaded, messages);
        let all = b.store.load_all("kinds").await.unwrap();
        let column: Vec<_> = all.iter().map(|r| r.kind).collect();
        assert_eq!(column, kinds);
    }
}

on_both_backends! {
    /// The flush after a compaction skips stamped messages: only new ones are written.
    async fn append_skips_stamped_messages(b) {
        b.store.create_session("flush").await.unwrap();
        let mut messages = conversation(2);
        let first = b.store.append("flush", &mut messages).await.unwrap();
        assert_eq!(first.len(), messages.len());
        assert_eq!(b.store.append("flush", &mut messages).await.unwrap(), Vec::<i64>::new());
        messages.push(Message::user("one more"));
        messages.push(Message::assistant("and a reply"));
        let second = b.store.append("flush", &mut messages).await.unwrap();
        assert_eq!(second.len(), 2);
        assert!(second[0] > *first.last().unwrap());
        let loaded = b.store.load_active("flush").await.unwrap();
        assert_eq!(wire(&loaded), wire(&messages));
        assert_eq!(b.store.generation("flush").await.unwrap(), 0, "appends keep the generation");
        // An empty flush of a known session is fine too.
        assert_eq!(b.store.append("flush", &mut []).await.unwrap(), Vec::<i64>::new());
    }
}

on_both_backends! {
    /// A restarted process sees what the first one wrote; sessions list in id order.
    async fn reopen_and_list_sessions(b) {
        for id in ["b-session", "a-session"] {
            let info = b.store.create_session(id).await.unwrap();
            assert_eq!((info.id.as_str(), info.generation), (id, 0));
        }
        let mut messages = conversation(1);
        b.store.append("a-session", &mut messages).await.unwrap();
        let again = b.reconnect().await;
        let listed: Vec<String> =
            again.list_sessions().await.unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(listed, ["a-session", "b-session"]);
        assert_eq!(wire(&again.load_active("a-session").await.unwrap()), wire(&messages));
        assert_eq!(again.load_active("b-session").await.unwrap().len(), 0);
        let opened = again.open_or_create("c-session").await.unwrap();
        assert_eq!(opened.generation, 0);
        assert_eq!(again.open_or_create("a-session").await.unwrap().id, "a-session");
        // Usable as a trait object.
        let shared = again.into_dyn();
        assert_eq!(shared.list_sessions().await.unwrap().len(), 3);
    }
}

#[tokio::test]
async fn in_memory_sqlite_keeps_its_data() {
    let store = Store::connect("sqlite::memory:").await.unwrap();
    store.create_session("m").await.unwrap();
    let mut messages = conversation(3);
    store.append("m", &mut messages).await.unwrap();
    tokio::task::yield_now().await;
    assert_eq!(
        wire(&store.load_active("m").await.unwrap()),
        wire(&messages)
    );
    assert_eq!(store.backend(), Some(compaction_store::Backend::SQLITE));
}

/// Schema version 5 (the continuation kind) rebuilds SQLite's message table, as SQLite cannot
/// widen a CHECK constraint in place: every row comes back with its id, archived or active, the
/// id counter does not go back (a row deleted at the end leaves its id unused), and a
/// continuation row can be written afterwards.
#[tokio::test]
async fn the_continuation_migration_keeps_every_row_and_id() {
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.db");
    let url = format!("sqlite:{}", path.display());
    let store = Store::connect(&url).await.unwrap();
    store.create_session("s").await.unwrap();
    let mut messages = conversation(3);
    store.append("s", &mut messages).await.unwrap();
    store.create_session("t").await.unwrap();
    let mut later = conversation(1);
    let later_ids = store.append("t", &mut later).await.unwrap();
    let before = store.load_all("s").await.unwrap();
    store.close().await;
    // Back to schema version 4, as far as the migrator can tell, with the newest rows gone.
    let mut c = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::raw_sql(
        "DELETE FROM hermes_schema_migrations WHERE version = 5; \
         DELETE FROM hermes_messages WHERE session_id = 't';",
    )
    .execute(&mut c)
    .await
    .unwrap();
    c.close().await.unwrap();

    let store = Store::connect(&url).await.unwrap();
    let after = store.load_all("s").await.unwrap();
    assert_eq!(after.len(), before.len());
    for (a, b) in after.iter().zip(&before) {
        assert_eq!((a.id, a.kind, a.active), (b.id, b.kind, b.active));
        assert_eq!(a.message.to_wire_json(), b.message.to_wire_json());
    }
    let mut more = vec![marker::continuation()];
    let ids = store.append("s", &mut more).await.unwrap();
    assert!(
        ids[0] > *later_ids.last().unwrap(),
        "an id was reused: {ids:?}"
    );
    let loaded = store.load_active("s").await.unwrap();
    assert_eq!(
        loaded.last().unwrap().marker_kind(),
        Some(MarkerKind::Continuation)
    );
    store.close().await;
}
