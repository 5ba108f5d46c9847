//! `detect` recognises each raw log and no normalized fixture.

use compaction_logs::{Format, detect};

#[test]
fn raw_logs_are_recognised() {
    let Some(raw) = test_support::raw_fixtures_dir() else {
        return;
    };
    for (dir, format) in [("claude-code", Format::CLAUDE_CODE), ("pi", Format::PI)] {
        for entry in std::fs::read_dir(raw.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(detect(&text), Some(format), "{}", path.display());
        }
    }
}

#[test]
fn chat_transcripts_are_no_agent_log() {
    let Some(files) = test_support::fixture_bytes() else {
        return;
    };
    for (name, bytes) in files {
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(detect(&text), None, "{name}");
    }
    for text in [
        "",
        "\n\n",
        "not json",
        "[{\"role\":\"user\",\"content\":\"hi\"}]",
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\"}]}",
        "{\"type\":\"message\"}",
        "{",
    ] {
        assert_eq!(detect(text), None, "{text:?}");
    }
}

#[test]
fn names_round_trip() {
    for f in Format::BUILT_IN {
        assert_eq!(Format::from_name(f.name()), Some(f));
    }
    assert_eq!(Format::from_name("openai"), None);
}

/// A small Claude Code log: a request, a tool round, an answer.
const CLAUDE: &str = concat!(
    r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"list the files"}}"#,
    "\n",
    r#"{"type":"assistant","uuid":"u2","sessionId":"s","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]}}"#,
    "\n",
    r#"{"type":"user","uuid":"u3","sessionId":"s","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"a.rs"}]}}"#,
    "\n",
    r#"{"type":"assistant","uuid":"u4","sessionId":"s","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"one file: a.rs"}]}}"#,
    "\n",
    r#"{"type":"user","uuid":"u5","sessionId":"s","message":{"role":"user","content":"thanks"}}"#,
    "\n",
);

const CHAT: &str = concat!(
    r#"{"role":"user","content":"hello"}"#,
    "\n",
    r#"{"role":"assistant","content":"hi"}"#,
    "\n",
);

fn sample(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn parse(text: &str, format: compaction_logs::TranscriptFormat) -> Result<usize, String> {
    compaction_logs::TranscriptFile::parse(
        "mixed.jsonl".as_ref(),
        text.as_bytes(),
        format,
        compaction_logs::Strictness::COMPACTION,
    )
    .map(|f| f.messages.len())
    .map_err(|e| e.to_string())
}

/// Issue 33, item 6: two lines of one agent's log followed by another agent's log (or by
/// chat messages) are refused at the first line of the other one, under `auto` and under the
/// first log's own format, for every pair; each log alone reads.
#[test]
fn a_mixed_or_concatenated_log_is_refused_at_the_other_formats_first_line() {
    use compaction_logs::TranscriptFormat;
    let logs = [
        (
            Format::CLAUDE_CODE,
            CLAUDE.to_owned(),
            Some("a Claude Code log line"),
        ),
        (
            Format::CODEX,
            sample("codex-rollout.jsonl"),
            Some("a Codex log line"),
        ),
        (Format::PI, sample("pi-tree.jsonl"), Some("a pi log line")),
    ];
    for (format, log, _) in &logs {
        assert!(
            parse(log, TranscriptFormat::Auto).is_ok_and(|n| n > 0),
            "{format:?}"
        );
        assert!(
            compaction_logs::check_single(log, *format).is_ok(),
            "{format:?}"
        );
    }
    let others = logs
        .iter()
        .map(|(f, log, what)| (Some(*f), log.clone(), what.unwrap_or_default()))
        .chain([(None, CHAT.to_owned(), "a chat message")]);
    for (other, second, what) in others {
        for (format, first, _) in &logs {
            if other == Some(*format) {
                continue;
            }
            let head: String = first.split_inclusive('\n').take(2).collect();
            let mixed = format!("{head}{second}");
            for as_format in [TranscriptFormat::Auto, TranscriptFormat::Log(*format)] {
                let e = parse(&mixed, as_format).unwrap_err();
                assert!(
                    e.starts_with("mixed.jsonl:3: ")
                        && e.contains(what)
                        && e.contains(format.name()),
                    "{format:?} then {other:?} as {as_format:?}: {e}"
                );
            }
        }
    }
}

#[test]
fn the_raw_logs_are_single_logs() {
    let Some(raw) = test_support::raw_fixtures_dir() else {
        return;
    };
    for (dir, format) in [("claude-code", Format::CLAUDE_CODE), ("pi", Format::PI)] {
        for entry in std::fs::read_dir(raw.join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(
                compaction_logs::check_single(&text, format),
                Ok(()),
                "{}",
                path.display()
            );
        }
    }
}

/// An agent's log saved as one JSON array of its records (compact or pretty-printed) reads as
/// the same messages as its JSONL, under `auto` and under its own format; a mixed array is
/// refused at the other record's index; an OpenAI chat array still reads as chat.
#[test]
fn a_log_saved_as_a_json_array_reads_like_its_jsonl() {
    use compaction_logs::TranscriptFormat;
    let as_array = |log: &str, pretty: bool| {
        let records: Vec<serde_json::Value> = log
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if pretty {
            serde_json::to_string_pretty(&records).unwrap()
        } else {
            serde_json::to_string(&records).unwrap()
        }
    };
    let messages = |text: &str, format| {
        compaction_logs::TranscriptFile::parse(
            "log.json".as_ref(),
            text.as_bytes(),
            format,
            compaction_logs::Strictness::COMPACTION,
        )
        .map(|f| f.messages)
        .map_err(|e| e.to_string())
    };
    for (format, log) in [
        (Format::CLAUDE_CODE, CLAUDE.to_owned()),
        (Format::CODEX, sample("codex-rollout.jsonl")),
        (Format::PI, sample("pi-tree.jsonl")),
    ] {
        let want = messages(&log, TranscriptFormat::Auto).unwrap();
        assert!(!want.is_empty());
        for pretty in [false, true] {
            let array = as_array(&log, pretty);
            for as_format in [TranscriptFormat::Auto, TranscriptFormat::Log(format)] {
                let got = messages(&array, as_format)
                    .unwrap_or_else(|e| panic!("{format:?} pretty={pretty}: {e}"));
                assert_eq!(got, want, "{format:?} pretty={pretty} as {as_format:?}");
            }
        }
        // A chat message among the records is refused at its record index.
        let mut mixed = as_array(&log, false);
        mixed.pop();
        mixed.push_str(r#",{"role":"user","content":"hello"}]"#);
        let n = log.lines().filter(|l| !l.trim().is_empty()).count();
        let e = messages(&mixed, TranscriptFormat::Auto).unwrap_err();
        assert!(
            e.starts_with(&format!("log.json:[{n}]: ")) && e.contains("a chat message"),
            "{format:?}: {e}"
        );
    }
    let chat = as_array(CHAT, false);
    assert_eq!(messages(&chat, TranscriptFormat::Auto).unwrap().len(), 2);
}
