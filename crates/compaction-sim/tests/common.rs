//! Shared helpers: small sessions, the example session, a simulation run.

use std::path::Path;
use std::sync::Arc;

use compaction_sim::{Options, Simulation, SummarizerFactory, Variant, simulate};
use hermes_compaction::core::{Message, ToolCall, parse};
use hermes_compaction::llm::{ExtractiveSummarizer, Summarizer};

/// The extractive summarizer, for every replay.
pub fn extractive() -> SummarizerFactory<'static> {
    &|| Ok(Arc::new(ExtractiveSummarizer::default()) as Arc<dyn Summarizer>)
}

/// The bundled example session.
pub fn example() -> (String, Vec<Message>) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/coding-agent.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    (
        "coding-agent.jsonl".into(),
        parse::parse_jsonl(&text).unwrap(),
    )
}

/// A coding session of `turns` turns, each reading a file and running a command with
/// `output_chars` characters of output.
pub fn tool_session(turns: usize, output_chars: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        let read = format!("read_{i}");
        let run = format!("run_{i}");
        msgs.push(Message::user(format!("request {i}: fix module {i}")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &read,
                "read",
                format!("{{\"path\":\"src/module_{i}.rs\"}}"),
            )],
        ));
        msgs.push(Message::tool_result(
            &read,
            "fn main() {}\n".repeat(output_chars / 13),
        ));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &run,
                "bash",
                format!("{{\"command\":\"cargo test --test t{i} -- \\\"quoted\\\"\"}}"),
            )],
        ));
        let line = format!("test case {i} line ok\n");
        msgs.push(Message::tool_result(
            &run,
            line.repeat(output_chars / line.len()),
        ));
        msgs.push(Message::assistant(format!("request {i} done")));
    }
    msgs
}

/// Runs `variants` over `inputs` with `options` and the extractive summarizer.
pub fn run(
    inputs: &[(String, Vec<Message>)],
    variants: &[Variant],
    options: &Options,
) -> Simulation {
    simulate(inputs, variants, options, extractive(), &|_| {}).unwrap()
}
