//! Helpers: run the binary, find the shared fixtures, build small transcripts.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hermes_compaction::core::{Message, ToolCall, parse};

/// Runs the binary with `args`.
pub fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hermes-compaction"))
        .args(args)
        .env_remove("HERMES_COMPACTION__MODEL__CONTEXT_LENGTH")
        .output()
        .expect("the binary runs")
}

/// stdout and stderr as text.
pub fn texts(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    test_support::workspace_root()
}

/// The shared fixture transcripts, or `None` (with the skip line) when absent.
pub fn fixtures() -> Option<Vec<PathBuf>> {
    test_support::fixture_files()
}

/// Parses a JSONL file.
pub fn read_messages(path: &Path) -> Vec<Message> {
    let bytes = std::fs::read(path).expect("readable");
    parse::parse_transcript(&bytes).expect("parses").0
}

/// A small tool-heavy session with large outputs: `turns` turns of request, call, output,
/// answer.
pub fn tool_session(turns: usize, output_chars: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        let id = format!("call_{i}");
        msgs.push(Message::user(format!("request {i}: run the tests")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "run_shell",
                "{\"cmd\":\"cargo test\"}",
            )],
        ));
        msgs.push(Message::tool_result(&id, "ok\n".repeat(output_chars / 3)));
        msgs.push(Message::assistant(format!("request {i} done")));
    }
    msgs
}

/// [`tool_session`] with Responses-style calls (issue 21, item 3): each call has an item `id`
/// (`fc_…`) and the `call_id` (`call_…`) its result answers.
pub fn responses_session(turns: usize, output_chars: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        msgs.push(Message::user(format!("request {i}: run the tests")));
        msgs.push(
            Message::from_json(&format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"fc_{i}","call_id":"call_{i}","type":"function","function":{{"name":"run_shell","arguments":"{{\"cmd\":\"cargo test\"}}"}}}}]}}"#
            ))
            .expect("a valid message"),
        );
        msgs.push(Message::tool_result(
            format!("call_{i}"),
            "ok\n".repeat(output_chars / 3),
        ));
        msgs.push(Message::assistant(format!("request {i} done")));
    }
    msgs
}

/// Writes messages as JSONL into `dir/name`.
pub fn write_jsonl(dir: &Path, name: &str, msgs: &[Message]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, parse::to_jsonl(msgs)).expect("writable");
    p
}

/// `p` as &str.
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
