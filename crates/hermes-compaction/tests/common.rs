//! Test helpers: locating the shared fixtures, building compressors.

use std::path::PathBuf;
use std::sync::Arc;

use compaction_core::{Estimator, Message, parse};
use compaction_llm::{ExtractiveSummarizer, Summarizer};
use hermes_compaction::{Compressor, Config};

/// The shared fixture transcripts, or `None` (after saying so) when they are absent.
pub fn fixtures() -> Option<Vec<(String, Vec<Message>)>> {
    let dir = std::env::var_os("HERMES_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
        .join("fixtures/transcripts");
    if !dir.is_dir() {
        let msg = format!("skipped: shared fixtures not found at {}", dir.display());
        if std::env::var("HERMES_REQUIRE_SHARED").as_deref() == Ok("1") {
            panic!("{msg}");
        }
        eprintln!("{msg}");
        return None;
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    Some(
        files
            .into_iter()
            .map(|p| {
                let bytes = std::fs::read(&p).expect("fixture readable");
                let (msgs, _) = parse::parse_transcript(&bytes).expect("fixture parses");
                (p.file_name().unwrap().to_string_lossy().into_owned(), msgs)
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
    Compressor::new(config, s, Arc::new(Estimator::default()), "test-session")
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
