//! `detect` recognises each raw log and no normalized fixture.

use compaction_logs::{Format, detect};

#[test]
fn raw_logs_are_recognised() {
    let Some(raw) = test_support::raw_fixtures_dir() else {
        return;
    };
    for (dir, format) in [("claude-code", Format::ClaudeCode), ("pi", Format::Pi)] {
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
    for f in Format::ALL {
        assert_eq!(Format::from_name(f.name()), Some(f));
    }
    assert_eq!(Format::from_name("openai"), None);
}
