//! Helpers shared by the modules.

use std::path::Path;
use std::sync::Arc;

use clap::Parser;
use hermes_compaction::core::{Estimator, Message, ToolCall, parse};
use hermes_compaction::llm::{ExtractiveSummarizer, Summarizer};
use hermes_compaction::{Compressor, Config};

/// The shared fixtures as `(file name, messages)`, or `None` after the skip line.
pub fn fixtures() -> Option<Vec<(String, Vec<Message>)>> {
    let files = test_support::fixture_bytes()?;
    Some(
        files
            .into_iter()
            .map(|(name, bytes)| {
                let (msgs, _) = parse::parse_transcript(&bytes)
                    .unwrap_or_else(|e| panic!("{name} does not parse: {e}"));
                (name, msgs)
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

/// A compressor with the given summarizer and the default estimator.
pub fn compressor(config: Config, summarizer: Arc<dyn Summarizer>, session: &str) -> Compressor {
    builder_with(config, summarizer, session).build().unwrap()
}

/// The builder of [`compressor`], to add a store, a clock or a state.
pub fn builder_with(
    config: Config,
    summarizer: Arc<dyn Summarizer>,
    session: &str,
) -> hermes_compaction::CompressorBuilder {
    Compressor::builder(config)
        .summarizer(summarizer)
        .counter(Arc::new(Estimator::default()))
        .session(session)
}

/// The builder of [`extractive`].
pub fn builder(config: Config, session: &str) -> hermes_compaction::CompressorBuilder {
    builder_with(config, Arc::new(ExtractiveSummarizer::default()), session)
}

/// A compressor with the deterministic extractive summarizer.
pub fn extractive(config: Config, session: &str) -> Compressor {
    compressor(config, Arc::new(ExtractiveSummarizer::default()), session)
}

/// A current-thread runtime.
pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs the command line (library entry point, as the binary does) and returns its stdout.
/// Must be called outside a tokio runtime: the command line starts its own.
pub fn cli(args: &[&str]) -> String {
    let parsed = hermes_compaction_cli::Cli::try_parse_from(
        std::iter::once("hermes-compaction").chain(args.iter().copied()),
    )
    .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    let mut out = Vec::new();
    hermes_compaction_cli::run(parsed, &mut out).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    String::from_utf8(out).expect("utf-8 output")
}

/// The wire JSON of each message (what a provider sees; library metadata dropped).
pub fn wire(messages: &[Message]) -> Vec<String> {
    messages.iter().map(Message::to_wire_json).collect()
}

/// Messages of a JSONL text (e.g. a `session export`).
pub fn jsonl(text: &str) -> Vec<Message> {
    parse::parse_transcript(text.as_bytes())
        .expect("exported JSONL parses")
        .0
}

/// `p` as `&str`.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A tool-heavy session: `turns` turns of request, `bash` call, output of `chars` characters,
/// answer.
pub fn tool_session(turns: usize, chars: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        let id = format!("call-{i}");
        msgs.push(Message::user(format!("step {i}: keep going")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "bash",
                r#"{"command":"make test"}"#,
            )],
        ));
        msgs.push(Message::tool_result(&id, format!("{i} ").repeat(chars / 2)));
        msgs.push(Message::assistant(format!("step {i} done")));
    }
    msgs
}
