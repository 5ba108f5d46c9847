//! The raw Claude Code and pi logs read into their normalized fixtures, byte for byte.

use std::path::{Path, PathBuf};

use compaction_core::parse;
use compaction_logs::{Format, Log, Options, Reader};

fn dirs() -> Option<(PathBuf, PathBuf)> {
    let raw = test_support::raw_fixtures_dir()?;
    let normalized = test_support::fixtures_dir()?;
    Some((raw, normalized))
}

/// Reads a file line by line through the streaming reader.
fn read(path: &Path, format: Format, options: Options) -> Log {
    let text = std::fs::read_to_string(path).unwrap();
    let mut reader = Reader::with_options(format, options);
    for (i, line) in text.split('\n').enumerate() {
        reader
            .push_line(line)
            .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
    }
    reader.finish().unwrap()
}

/// The log reads into exactly the normalized fixture: same number of messages and each
/// message's wire JSON byte-identical (roles, texts, calls with ids and arguments, results).
fn assert_same(log: &Log, normalized: &Path) {
    let text = std::fs::read_to_string(normalized).unwrap();
    let expected = parse::parse_jsonl(&text).unwrap();
    let name = normalized.display();
    for (i, (got, want)) in log.messages.iter().zip(&expected).enumerate() {
        assert_eq!(
            got.to_wire_json(),
            want.to_wire_json(),
            "{name}: message {i} differs (read from line {})",
            log.lines[i]
        );
    }
    assert_eq!(log.messages.len(), expected.len(), "{name}: message count");
    assert_eq!(log.lines.len(), log.messages.len());
    assert!(
        log.lines
            .iter()
            .all(|&l| l >= 1 && l <= text_lines(normalized, log))
    );
}

/// An upper bound of the source lines (the raw log is longer than any transcript).
fn text_lines(_: &Path, log: &Log) -> usize {
    log.lines.iter().copied().max().unwrap_or(0)
}

const CLAUDE: [(&str, &str); 3] = [
    (
        "claude-code/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
        "claude-code__spotter-8463c716.jsonl",
    ),
    (
        "claude-code/short.jsonl",
        "claude-code__spotter-short.jsonl",
    ),
    (
        "claude-code/tool_heavy.jsonl",
        "claude-code__spotter-tool-heavy.jsonl",
    ),
];

#[test]
fn claude_code_logs_read_into_their_normalized_fixtures() {
    let Some((raw, normalized)) = dirs() else {
        return;
    };
    for (log, fixture) in CLAUDE {
        let got = read(&raw.join(log), Format::CLAUDE_CODE, Options::default());
        assert_same(&got, &normalized.join(fixture));
    }
}

#[test]
fn pi_log_reads_into_its_normalized_fixture() {
    let Some((raw, normalized)) = dirs() else {
        return;
    };
    let got = read(
        &raw.join("pi/large-session.jsonl"),
        Format::PI,
        Options::default(),
    );
    assert_same(&got, &normalized.join("pi__large-session.jsonl"));
    assert!(got.summaries.is_empty());
}

#[test]
fn claude_codes_own_summary_is_a_summary_where_it_inserted_it() {
    let Some((raw, normalized)) = dirs() else {
        return;
    };
    let log = raw.join(CLAUDE[0].0);
    let got = read(&log, Format::CLAUDE_CODE, Options::default());
    let reference = normalized
        .join("reference-summaries")
        .join("claude-code__spotter-8463c716.native_compaction_summaries.json");
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reference).unwrap()).unwrap();
    let reference = reference.as_array().unwrap();
    assert_eq!(got.summaries.len(), reference.len());
    for (s, r) in got.summaries.iter().zip(reference) {
        assert_eq!(s.text, r["text"].as_str().unwrap());
        assert_eq!(
            s.before_message as u64,
            r["insert_before_output_message_index"].as_u64().unwrap()
        );
        // The summary is no user message of the transcript.
        assert!(got.messages.iter().all(|m| m.text() != s.text));
    }
    // As markers: the same transcript with the summary where Claude Code put it.
    let marked = read(
        &log,
        Format::CLAUDE_CODE,
        Options::default().with_summaries_as_markers(true),
    );
    assert_eq!(
        marked.messages.len(),
        got.messages.len() + got.summaries.len()
    );
    let at = got.summaries[0].before_message;
    let marker = &marked.messages[at];
    assert_eq!(
        marker.marker_kind(),
        Some(compaction_core::MarkerKind::Batch)
    );
    assert_eq!(marker.text(), got.summaries[0].text);
    assert_eq!(marked.messages[at + 1], got.messages[at]);
    assert_eq!(
        marked.summaries,
        got.summaries
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.before_message += 1;
                s
            })
            .collect::<Vec<_>>()
    );
}

#[test]
fn subagent_logs_are_read_as_their_own_transcripts() {
    let Some((raw, _)) = dirs() else {
        return;
    };
    let sub =
        raw.join("claude-code/8463c716-a2ea-4c14-9efa-87158ebd9f20_subagents_agent-a7be2f0.jsonl");
    let got = read(&sub, Format::CLAUDE_CODE, Options::default());
    // 1 task prompt, 19 calls with 19 results, 13 text replies merged with their calls.
    let calls: usize = got.messages.iter().map(|m| m.tool_calls().len()).sum();
    let results = got.messages.iter().filter(|m| m.is_tool()).count();
    assert_eq!((calls, results), (19, 19));
    assert!(got.messages[0].is_user());
    let v = compaction_core::validate::validate(&got.messages);
    assert!(v.issues.is_empty(), "{:?}", v.issues);
    // The session log beside it does not include the subagent's lines.
    let main = read(
        &raw.join(CLAUDE[0].0),
        Format::CLAUDE_CODE,
        Options::default(),
    );
    assert!(
        !main
            .messages
            .iter()
            .any(|m| m.text() == got.messages[0].text())
    );
}
