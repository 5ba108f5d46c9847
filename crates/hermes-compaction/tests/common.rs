//! Test helpers: locating the shared fixtures, building compressors.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use compaction_core::{Estimator, Message, parse};
use compaction_llm::{ExtractiveSummarizer, Summarizer};
use compaction_store::{Store, StoreOptions};
use hermes_compaction::{Compressor, CompressorBuilder, Config};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// The shared fixture transcripts, or `None` (after saying so) when they are absent.
pub fn fixtures() -> Option<Vec<(String, Vec<Message>)>> {
    let files = test_support::fixture_files()?;
    Some(
        files
            .iter()
            .map(|p| {
                let bytes = std::fs::read(p).expect("fixture readable");
                let (msgs, _) = parse::parse_transcript(&bytes).expect("fixture parses");
                (test_support::file_name(p), msgs)
            })
            .collect(),
    )
}

/// A config for a window of `context_length` tokens.
pub fn config(context_length: u64) -> Config {
    let mut c = Config::default();
    c.model.context_length = context_length;
    c
}

/// A compressor with the extractive summarizer.
pub fn extractive(config: Config) -> Compressor {
    with_summarizer(config, Arc::new(ExtractiveSummarizer::default()))
}

/// A compressor with the given summarizer.
pub fn with_summarizer(config: Config, s: Arc<dyn Summarizer>) -> Compressor {
    builder_with(config, s).build().unwrap()
}

/// The builder of [`extractive`], to add a store, a clock or a state.
pub fn builder(config: Config) -> CompressorBuilder {
    builder_with(config, Arc::new(ExtractiveSummarizer::default()))
}

/// The builder of [`with_summarizer`].
pub fn builder_with(config: Config, s: Arc<dyn Summarizer>) -> CompressorBuilder {
    Compressor::builder(config)
        .summarizer(s)
        .counter(Arc::new(Estimator::default()))
        .session("test-session")
}

/// A current-thread runtime.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A long tool-heavy session: `turns` user turns, each with one `bash` call whose output is the
/// turn number repeated `repeat` times.
pub fn tool_session(turns: usize, repeat: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        let id = format!("call-{i}");
        msgs.push(Message::user(format!("step {i}: keep going")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![compaction_core::ToolCall::function(
                &id,
                "bash",
                r#"{"command":"make test"}"#,
            )],
        ));
        msgs.push(Message::tool_result(&id, format!("{i} ").repeat(repeat)));
        msgs.push(Message::assistant(format!("step {i} done")));
    }
    msgs
}

/// A [`tool_session`] over `c`'s threshold that is not near its window (within
/// `NEAR_WINDOW_RATIO` of the context length minus the output reservation): the prompt a
/// paused or cooling-down compressor may leave alone.
pub fn over_threshold_within_window(c: &Compressor, repeat: usize) -> Vec<Message> {
    let window = (c.status().config.window().effective_window() as f64
        * hermes_compaction::compressor::NEAR_WINDOW_RATIO) as u64;
    let e = Estimator::default();
    let size = |m: &[Message]| -> u64 {
        m.iter()
            .map(|x| compaction_core::TokenCounter::count_message(&e, x))
            .sum()
    };
    let mut turns = 1;
    while size(&tool_session(turns, repeat)) < c.status().threshold_tokens {
        turns += 1;
    }
    let msgs = tool_session(turns, repeat);
    assert!(size(&msgs) < window, "{} within {window}", size(&msgs));
    msgs
}

/// Collects the (target, message) of every event.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<(String, String)>>>);

struct MessageField(Option<String>);

impl Visit for MessageField {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

impl Subscriber for Lines {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut message = MessageField(None);
        event.record(&mut message);
        if let Some(m) = message.0 {
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((event.metadata().target().to_owned(), m));
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// Runs `f` on a current-thread runtime with a minimal capturing `tracing` subscriber (this
/// crate has no tracing-subscriber), scoped to the test's thread, which is where the hooks
/// log; returns its value and the (target, message) of every event logged meanwhile.
///
/// `tracing` caches each callsite's interest process-wide, and while at most one dispatcher is
/// registered it computes that interest from the *registering* thread's default: a sibling
/// test thread without a subscriber reaching the emit callsite first would cache "never" and
/// blind this capture. A second live dispatcher (the anchor, which sees nothing) makes the
/// cache consult every registered dispatcher instead, and rebuilding it inside the scope
/// repairs whatever was cached before.
pub fn capture_logs<T>(f: impl AsyncFnOnce() -> T) -> (T, Vec<(String, String)>) {
    let lines = Lines::default();
    let _anchor = tracing::Dispatch::new(Lines::default());
    let value = tracing::subscriber::with_default(lines.clone(), || {
        tracing::callsite::rebuild_interest_cache();
        rt().block_on(f())
    });
    let out = lines
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    (value, out)
}

/// SQLite in memory, plus a throw-away PostgreSQL schema when `HERMES_TEST_DATABASE_URL` is
/// set (required with `HERMES_REQUIRE_POSTGRES=1`; otherwise the skip is said).
pub async fn stores(test: &str) -> Vec<Store> {
    let mut out = vec![Store::connect("sqlite::memory:").await.unwrap()];
    if let Some(url) = test_support::postgres_url(test) {
        let schema = format!("hermes_fr_{test}_{}", std::process::id());
        let options = StoreOptions {
            postgres_schema: Some(schema),
            ..StoreOptions::default()
        };
        out.push(Store::connect_with(&url, &options).await.unwrap());
    }
    out
}

/// Drops the PostgreSQL schema of a store from [`stores`].
pub async fn finish(store: Store) {
    #[cfg(feature = "postgres")]
    if let Some(pg) = store.downcast_ref::<compaction_store::PostgresStore>() {
        pg.drop_schema().await.unwrap();
    }
    // Without PostgreSQL there is no schema to drop.
    #[cfg(not(feature = "postgres"))]
    drop(store);
}

/// A configuration that trims tool results over 500 tokens to 400-character ends.
pub fn trim_config() -> Config {
    let mut c = config(64_000);
    c.compression.insert_trim_tokens = 500;
    c.compression.insert_trim_head_chars = 400;
    c.compression.insert_trim_tail_chars = 400;
    c
}

/// An assistant message calling the `bash` tool with `command`.
pub fn shell_call(id: &str, command: &str) -> Message {
    let args = serde_json::json!({ "command": command }).to_string();
    Message::assistant_tool_calls(
        "",
        vec![compaction_core::ToolCall::function(id, "bash", args)],
    )
}
