//! Agents' own logs as input (`--format`): the raw Claude Code and pi logs simulate to the
//! figures of their normalized fixtures, import and compact like them, and a wrong format is
//! refused with its line.

use std::path::PathBuf;

use crate::common::{run, texts};

fn raw_and_normalized() -> Option<Vec<(PathBuf, PathBuf)>> {
    let raw = test_support::raw_fixtures_dir()?;
    let normalized = test_support::fixtures_dir()?;
    Some(vec![
        (
            raw.join("claude-code/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl"),
            normalized.join("claude-code__spotter-8463c716.jsonl"),
        ),
        (
            raw.join("claude-code/tool_heavy.jsonl"),
            normalized.join("claude-code__spotter-tool-heavy.jsonl"),
        ),
        (
            raw.join("pi/large-session.jsonl"),
            normalized.join("pi__large-session.jsonl"),
        ),
    ])
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn simulating_a_raw_log_gives_the_figures_of_its_normalized_form() {
    let Some(pairs) = raw_and_normalized() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A raw log carries the time of every line, the normalized form none: with the
    // time-to-live rule off the replay's decisions do not depend on the gaps, so the figures
    // must be the same.
    let config = dir.path().join("no-ttl.toml");
    std::fs::write(&config, "[compression]\ncold_cache_rewrites = false\n").unwrap();
    for (i, (raw, normalized)) in pairs.iter().enumerate() {
        let mut outs = Vec::new();
        for (input, format) in [(raw, "auto"), (normalized, "openai")] {
            let json = dir.path().join(format!("{i}-{format}.json"));
            let o = run(&[
                "simulate",
                "--config",
                s(&config),
                "--format",
                format,
                "--context-length",
                "64000",
                "--policies",
                "none,batch,micro",
                "--json",
                s(&json),
                "--input",
                s(input),
            ]);
            let (out, err) = texts(&o);
            assert!(o.status.success(), "{}: {err}", raw.display());
            let mut v: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            // Only the file name and the wall time may differ.
            strip(&mut v);
            outs.push((out, v));
        }
        assert!(
            outs[0].1 == outs[1].1,
            "{}: the figures differ",
            raw.display()
        );
        assert!(outs[0].0.contains("batch"), "{}", outs[0].0);
    }
}

/// Removes the keys that name a file or measure time: wall time, and the simulated waits
/// (`*_ms`), and how many micro passes after a turn the next request waited for, which the
/// raw log's real gaps between requests decide (the normalized form has none).
fn strip(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|k, _| {
                !matches!(
                    k.as_str(),
                    "transcript" | "file" | "name" | "micro_between_turns_waited"
                ) && !k.ends_with("_ms")
            });
            m.values_mut().for_each(strip);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

#[test]
fn compact_and_import_read_agent_logs() {
    let Some(pairs) = raw_and_normalized() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (raw, _) = &pairs[1];
    let out = dir.path().join("out.jsonl");
    let o = run(&[
        "compact",
        "--format",
        "claude-code",
        "--mode",
        "prune",
        "--context-length",
        "8000",
        "--input",
        s(raw),
        "--output",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", texts(&o).1);
    // The output is an OpenAI chat transcript that reads back as such.
    let o2 = run(&[
        "simulate",
        "--format",
        "openai",
        "--policies",
        "none",
        "--input",
        s(&out),
    ]);
    assert!(o2.status.success(), "{}", texts(&o2).1);

    let db = dir.path().join("s.db");
    let o = run(&[
        "session",
        "import",
        s(raw),
        "--db",
        s(&db),
        "--session",
        "cc",
    ]);
    assert!(o.status.success(), "{}", texts(&o).1);
    let o = run(&["session", "export", "--db", s(&db), "--session", "cc"]);
    let exported = hermes_compaction::core::parse::parse_jsonl(&texts(&o).0).unwrap();
    let normalized = crate::common::read_messages(&pairs[1].1);
    let wire = |m: &[hermes_compaction::core::Message]| {
        m.iter().map(|m| m.to_wire_json()).collect::<Vec<_>>()
    };
    assert!(
        wire(&exported) == wire(&normalized),
        "the stored session is the normalized transcript"
    );
}

#[test]
fn a_log_in_the_wrong_format_is_refused_with_its_line() {
    let Some(pairs) = raw_and_normalized() else {
        return;
    };
    let (raw, normalized) = &pairs[1];
    // A Claude Code log read as OpenAI chat: its first line has no role.
    let o = run(&["simulate", "--format", "openai", "--input", s(raw)]);
    let err = texts(&o).1;
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains(":1: "), "{err}");
    // A chat transcript read as a pi session holds no pi entries: nothing to read.
    let o = run(&["simulate", "--format", "pi", "--input", s(normalized)]);
    let err = texts(&o).1;
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no messages"), "{err}");
    // A broken line of a Codex log names its line, not its text.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("rollout.jsonl");
    std::fs::write(
        &bad,
        "{\"timestamp\":\"t\",\"type\":\"session_meta\",\"payload\":{}}\n{\"type\":\"response_item\",\"payload\":{\"type\":\"function_call\",\"name\":\"shell\",\"arguments\":\"SECRET-ARGS\"}}\n",
    )
    .unwrap();
    let o = run(&["simulate", "--input", s(&bad)]);
    let err = texts(&o).1;
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("rollout.jsonl:2: codex log: field `call_id` must be a string"),
        "{err}"
    );
    assert!(!err.contains("SECRET"), "{err}");
}

/// An Anthropic Messages transcript: thinking, parallel calls, results with cache marks, and
/// big outputs so a prune pass has work.
fn anthropic_transcript() -> String {
    let mut lines = vec![r#"{"role":"user","content":"Fix the failing test."}"#.to_owned()];
    let big = "test output line\\n".repeat(400);
    for i in 0..8 {
        lines.push(format!(
            r#"{{"role":"assistant","content":[{{"type":"thinking","thinking":"Step {i}: run it.","signature":"EqQBCkYIBxgCKkD{i}=="}},{{"type":"tool_use","id":"toolu_{i}a","name":"Bash","input":{{"command":"cargo test {i}"}}}},{{"type":"tool_use","id":"toolu_{i}b","name":"Read","input":{{"file_path":"src/m{i}.rs"}}}}]}}"#
        ));
        lines.push(format!(
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_{i}a","content":"{big}"}},{{"type":"tool_result","tool_use_id":"toolu_{i}b","content":[{{"type":"text","text":"fn m{i}() {{}}"}}],"cache_control":{{"type":"ephemeral"}}}},{{"type":"text","text":"keep going"}}]}}"#
        ));
    }
    lines.push(r#"{"role":"assistant","content":[{"type":"text","text":"Fixed."}]}"#.to_owned());
    lines.join("\n") + "\n"
}

#[test]
fn anthropic_transcripts_compact_import_and_export_in_their_dialect() {
    use compaction_anthropic as anthropic;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("claude-api.jsonl");
    let text = anthropic_transcript();
    std::fs::write(&input, &text).unwrap();

    // Auto recognises the dialect; the pass writes Anthropic back.
    let out = dir.path().join("out.jsonl");
    let o = run(&[
        "compact",
        "--mode",
        "prune",
        "--context-length",
        "8000",
        "--input",
        s(&input),
        "--output",
        s(&out),
    ]);
    assert!(o.status.success(), "{}", texts(&o).1);
    let written = std::fs::read_to_string(&out).unwrap();
    assert_ne!(written, text, "the prune pass changed nothing");
    let back = anthropic::parse(&written).unwrap();
    assert_eq!(anthropic::to_jsonl(&back), written);
    for i in 0..8 {
        let thinking = format!(
            r#"{{"type":"thinking","thinking":"Step {i}: run it.","signature":"EqQBCkYIBxgCKkD{i}=="}}"#
        );
        assert!(
            written.contains(&thinking),
            "thinking block {i} changed or lost"
        );
    }
    assert!(
        !written.contains("\"role\":\"tool\""),
        "chat roles leaked into the dialect"
    );

    // Through the store (bodies only) and back: byte-identical.
    let db = dir.path().join("a.db");
    let o = run(&[
        "session",
        "import",
        s(&input),
        "--db",
        s(&db),
        "--session",
        "a",
    ]);
    assert!(o.status.success(), "{}", texts(&o).1);
    let o = run(&[
        "session",
        "export",
        "--db",
        s(&db),
        "--session",
        "a",
        "--format",
        "anthropic",
    ]);
    assert!(o.status.success(), "{}", texts(&o).1);
    assert!(
        texts(&o).0 == text,
        "export --format anthropic is not the imported transcript"
    );
    let o = run(&[
        "session",
        "export",
        "--db",
        s(&db),
        "--session",
        "a",
        "--format",
        "anthropic",
        "--all",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", texts(&o).1);

    // Read as OpenAI chat, the same file has no pairing to offer: tool_use blocks are opaque,
    // but nothing is refused; as Anthropic it simulates with its tool pairs.
    let o = run(&["simulate", "--policies", "none,batch", "--input", s(&input)]);
    assert!(o.status.success(), "{}", texts(&o).1);
    // A broken line names its line, never its text.
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        text.replacen("\"tool_use_id\":\"toolu_3a\"", "\"tool_use_id\":7", 1),
    )
    .unwrap();
    let o = run(&["simulate", "--format", "anthropic", "--input", s(&bad)]);
    let err = texts(&o).1;
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.jsonl:9: field `tool_use_id` must be a string"),
        "{err}"
    );
    assert!(!err.contains("test output"), "{err}");
}
