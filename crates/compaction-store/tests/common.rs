//! Runs each test body on every available backend.

#![allow(clippy::print_stderr)]

#[cfg(feature = "postgres")]
use std::sync::atomic::{AtomicUsize, Ordering};

use compaction_core::{Message, ToolCall};
use compaction_store::{SqliteStore, Store, StoreOptions, StoredRow};

/// One backend prepared for one test.
#[derive(Debug)]
pub struct TestBackend {
    pub store: Store,
    pub name: &'static str,
    url: String,
    options: StoreOptions,
    _dir: Option<tempfile::TempDir>,
}

/// The backend's own store behind a [`Store`], for tests that reach its database directly.
pub enum Engine<'a> {
    Sqlite(&'a SqliteStore),
    #[cfg(feature = "postgres")]
    Postgres(&'a compaction_store::PostgresStore),
}

/// Which of this crate's backends `store` is.
pub fn engine(store: &Store) -> Engine<'_> {
    if let Some(sq) = store.downcast_ref::<SqliteStore>() {
        return Engine::Sqlite(sq);
    }
    #[cfg(feature = "postgres")]
    if let Some(pg) = store.downcast_ref::<compaction_store::PostgresStore>() {
        return Engine::Postgres(pg);
    }
    unreachable!("a store of this crate's backends")
}

impl TestBackend {
    /// A second, independent connection to the same database (a restarted process).
    pub async fn reconnect(&self) -> Store {
        Store::connect_with(&self.url, &self.options).await.unwrap()
    }

    /// The URL and options this backend was opened with (for a child process).
    pub fn connection(&self) -> (&str, &StoreOptions) {
        (&self.url, &self.options)
    }

    /// Drops the per-test PostgreSQL schema.
    pub async fn finish(self) {
        #[cfg(feature = "postgres")]
        if let Engine::Postgres(pg) = engine(&self.store) {
            pg.drop_schema().await.unwrap();
        }
    }
}

#[cfg(feature = "postgres")]
static COUNTER: AtomicUsize = AtomicUsize::new(0);

/// The PostgreSQL database to test against (`HERMES_TEST_DATABASE_URL`, looked up by
/// `test_support`), or `None` after saying why there is none: the variable is unset, or the
/// `postgres` feature is off. With `HERMES_REQUIRE_POSTGRES=1` a missing database fails the
/// test instead.
pub fn postgres_url(test: &str) -> Option<String> {
    if cfg!(feature = "postgres") {
        return test_support::postgres_url(test);
    }
    feature_off(test, test_support::Skip::Part)
}

/// As [`postgres_url`], for a test that runs on PostgreSQL only (counted as skipped, not
/// passed, when there is no database).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub fn postgres_only_url(test: &str) -> Option<String> {
    if cfg!(feature = "postgres") {
        return test_support::postgres_only_url(test);
    }
    feature_off(test, test_support::Skip::Whole)
}

fn feature_off(test: &str, kind: test_support::Skip) -> Option<String> {
    let why = "the `postgres` feature is off";
    if std::env::var("HERMES_REQUIRE_POSTGRES").as_deref() == Ok("1") {
        panic!("{why} (HERMES_REQUIRE_POSTGRES=1)");
    }
    test_support::skip(kind, &format!("skipped: {why} ({test}: PostgreSQL part)"));
    None
}

/// SQLite on a temporary file, plus PostgreSQL when `HERMES_TEST_DATABASE_URL` is set.
pub async fn backends(test: &str) -> Vec<TestBackend> {
    let mut out = Vec::new();
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("store.db").display());
    let options = StoreOptions::default();
    out.push(TestBackend {
        store: Store::connect_with(&url, &options).await.unwrap(),
        name: "sqlite",
        url,
        options,
        _dir: Some(dir),
    });
    #[cfg(feature = "postgres")]
    if let Some(url) = postgres_url(test) {
        let short: String = test.chars().take(30).collect();
        let schema = format!(
            "hermes_t_{short}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        let options = StoreOptions {
            postgres_schema: Some(schema),
            ..StoreOptions::default()
        };
        out.push(TestBackend {
            store: Store::connect_with(&url, &options).await.unwrap(),
            name: "postgres",
            url,
            options,
            _dir: None,
        });
    }
    #[cfg(not(feature = "postgres"))]
    let _ = postgres_url(test);
    out
}

/// `#[tokio::test]` whose body runs once per backend, with `$b: &TestBackend`.
macro_rules! on_both_backends {
    ($(#[$attr:meta])* async fn $name:ident($b:ident) $body:block) => {
        $(#[$attr])*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            for backend in crate::common::backends(stringify!($name)).await {
                {
                    let $b = &backend;
                    eprintln!("{}: running on {}", stringify!($name), $b.name);
                    $body
                }
                backend.finish().await;
            }
        }
    };
}

/// The wire JSON of each message.
pub fn wire(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::to_wire_json).collect()
}

/// A small agent conversation: a system prompt, then `turns` turns of user request,
/// assistant tool call, tool result and assistant reply.
pub fn conversation(turns: usize) -> Vec<Message> {
    let mut out = vec![Message::system("You are a careful coding agent.")];
    for t in 0..turns {
        out.push(Message::user(format!(
            "request {t}: fix the bug in file_{t}.rs"
        )));
        out.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                format!("call_{t}"),
                "read_file",
                format!(r#"{{"path":"file_{t}.rs"}}"#),
            )],
        ));
        out.push(Message::tool_result(
            format!("call_{t}"),
            format!("fn f{t}() {{}}"),
        ));
        out.push(Message::assistant(format!("fixed file_{t}.rs")));
    }
    out
}

/// Rows as comparable tuples: (id, active, compacted, wire body).
pub fn snapshot(rows: &[StoredRow]) -> Vec<(i64, bool, bool, String)> {
    rows.iter()
        .map(|r| (r.id, r.active, r.compacted, r.message.to_wire_json()))
        .collect()
}

/// Appends `messages` to a new session and archives `range` behind a micro marker.
pub async fn archived_session(
    store: &dyn compaction_store::TranscriptStore,
    session: &str,
    mut messages: Vec<Message>,
    range: std::ops::Range<usize>,
) -> Vec<Message> {
    store.create_session(session).await.unwrap();
    store.append(session, &mut messages).await.unwrap();
    let edit = compaction_core::Edit::single(
        range,
        vec![compaction_core::marker::render(
            compaction_core::MarkerKind::Micro,
            compaction_core::Role::Assistant,
            "summary",
        )],
    );
    let generation = store.generation(session).await.unwrap();
    let mut commit = compaction_store::Commit::from_edit(generation, &edit, &messages).unwrap();
    store
        .archive_and_compact(session, &mut commit)
        .await
        .unwrap();
    messages
}

pub fn tool_turn(id: &str, command: &str, output: &str) -> Vec<Message> {
    vec![
        Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                id,
                "bash",
                format!(r#"{{"command":"{command}"}}"#),
            )],
        ),
        Message::tool_result(id, output),
    ]
}
