//! Codex, Gemini CLI and pi (version 3, a tree with a compaction) samples written for these
//! tests from the formats' public definitions (see `data/`), read message by message.

use compaction_core::validate;
use compaction_logs::{Format, Log, Options};

fn read(name: &str, format: Format) -> Log {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(compaction_logs::detect(&text), Some(format), "{name}");
    compaction_logs::read(format, &text, Options::default()).unwrap()
}

fn wire(log: &Log) -> Vec<String> {
    log.messages.iter().map(|m| m.to_wire_json()).collect()
}

fn assert_pairs(log: &Log) {
    let report = validate::validate(&log.messages);
    assert!(report.issues.is_empty(), "{:?}", report.issues);
}

#[test]
fn codex_rollout() {
    let log = read("codex-rollout.jsonl", Format::CODEX);
    assert_eq!(
        wire(&log),
        [
            r#"{"role":"developer","content":"Follow the repository's AGENTS.md."}"#,
            r#"{"role":"user","content":"<environment_context>\n  <cwd>/home/dev/calc</cwd>\n</environment_context>"}"#,
            r#"{"role":"user","content":"The sum test fails; fix it."}"#,
            r#"{"role":"assistant","content":"I'll run the tests first.","tool_calls":[{"id":"call_A1","type":"function","function":{"name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cargo test\"],\"workdir\":\"/home/dev/calc\"}"}},{"id":"call_A2","type":"function","function":{"name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cat src/lib.rs\"]}"}}]}"#,
            r#"{"role":"tool","tool_call_id":"call_A1","content":"{\"output\":\"test sum ... FAILED\\n\",\"metadata\":{\"exit_code\":101,\"duration_seconds\":1.2}}"}"#,
            r#"{"role":"tool","tool_call_id":"call_A2","content":"pub fn sum(a: i32, b: i32) -> i32 { a - b }\n"}"#,
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_B1","type":"function","function":{"name":"apply_patch","arguments":"*** Begin Patch\n*** Update File: src/lib.rs\n-pub fn sum(a: i32, b: i32) -> i32 { a - b }\n+pub fn sum(a: i32, b: i32) -> i32 { a + b }\n*** End Patch"}}]}"#,
            r#"{"role":"tool","tool_call_id":"call_B1","content":"Success. Updated the following files:\nM src/lib.rs\n"}"#,
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_C1","type":"function","function":{"name":"local_shell","arguments":"{\"type\": \"exec\", \"command\": [\"cargo\", \"test\"], \"timeout_ms\": 60000}"}}]}"#,
            r#"{"role":"tool","tool_call_id":"call_C1","content":"test sum ... ok\ntest result: ok. 1 passed"}"#,
            r#"{"role":"assistant","content":"Fixed: \n\n`sum` now adds."}"#,
        ]
    );
    assert_eq!(log.lines, [2, 3, 4, 9, 13, 14, 15, 16, 17, 18, 20]);
    assert_eq!(log.summaries.len(), 1);
    assert_eq!(log.summaries[0].before_message, 10);
    assert_eq!(log.summaries[0].line, 19);
    assert!(log.summaries[0].text.starts_with("The user asked to fix"));
    assert_pairs(&log);
}

#[test]
fn codex_rollout_before_the_payload_wrapper() {
    let log = read("codex-legacy.jsonl", Format::CODEX);
    assert_eq!(
        wire(&log),
        [
            r#"{"role":"user","content":"What does main.rs print?"}"#,
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"call_L1","type":"function","function":{"name":"shell","arguments":"{\"command\":[\"cat\",\"src/main.rs\"]}"}}]}"#,
            r#"{"role":"tool","tool_call_id":"call_L1","content":"fn main() { println!(\"hi\"); }"}"#,
            r#"{"role":"assistant","content":"It prints `hi`."}"#,
        ]
    );
    assert_pairs(&log);
}

#[test]
fn gemini_cli_recording() {
    let log = read("gemini-session.json", Format::GEMINI);
    assert_eq!(
        wire(&log),
        [
            r#"{"role":"user","content":"Which files mention TODO?"}"#,
            r#"{"role":"assistant","content":"Searching the tree.","tool_calls":[{"id":"search_file_content-1741-0","type":"function","function":{"name":"search_file_content","arguments":"{\"pattern\": \"TODO\", \"path\": \".\"}"}},{"id":"read_file-1741-1","type":"function","function":{"name":"read_file","arguments":"{\"absolute_path\": \"/w/src/missing.rs\"}"}}]}"#,
            r#"{"role":"tool","tool_call_id":"search_file_content-1741-0","content":"src/a.rs:3: // TODO: über-case"}"#,
            r#"{"role":"tool","tool_call_id":"read_file-1741-1","content":"File not found."}"#,
            r#"{"role":"assistant","content":"Only src/a.rs has one."}"#,
            r#"{"role":"user","content":"Thanks."}"#,
        ]
    );
    assert_eq!(log.lines, [1, 3, 3, 3, 4, 5]);
    assert_pairs(&log);
    // The same document on one line reads the same.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gemini-session.json");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let one_line = doc.to_string();
    assert_eq!(compaction_logs::detect(&one_line), Some(Format::GEMINI));
    let again = compaction_logs::read(Format::GEMINI, &one_line, Options::default()).unwrap();
    assert_eq!(wire(&again), wire(&log));
}

#[test]
fn pi_tree_follows_the_last_branch_and_recognises_its_compaction() {
    let log = read("pi-tree.jsonl", Format::PI);
    assert_eq!(
        wire(&log),
        [
            r#"{"role":"user","content":"Rename the title."}"#,
            r#"{"role":"assistant","content":"","tool_calls":[{"id":"toolu_P1","type":"function","function":{"name":"bash","arguments":"{\"command\": \"grep -n title index.html\"}"}}]}"#,
            r#"{"role":"tool","tool_call_id":"toolu_P1","content":"3:<title>Old</title>"}"#,
            r#"{"role":"assistant","content":"Which new title?"}"#,
            r#"{"role":"user","content":"Call it New."}"#,
            // Aborted: its calls never ran.
            r#"{"role":"assistant","content":"Editing."}"#,
            r#"{"role":"user","content":"Ran `git diff --stat`\n index.html | 2 +-"}"#,
        ]
    );
    assert_eq!(log.lines, [3, 4, 5, 6, 10, 11, 12]);
    assert_eq!(log.summaries.len(), 1);
    assert_eq!(
        (log.summaries[0].before_message, log.summaries[0].line),
        (4, 9)
    );
    assert_pairs(&log);

    // As markers, the summary sits where pi put it.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pi-tree.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let marked = compaction_logs::read(
        Format::PI,
        &text,
        Options::default().with_summaries_as_markers(true),
    )
    .unwrap();
    assert_eq!(marked.messages.len(), 8);
    assert_eq!(
        marked.messages[4].marker_kind(),
        Some(compaction_core::MarkerKind::Batch)
    );
}
