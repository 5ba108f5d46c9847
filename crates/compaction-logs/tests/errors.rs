//! Hostile input: every error names the line (or record) and never quotes the log.

use compaction_logs::{Format, Options, Position, Reader};

const SECRET: &str = "hunter2-SECRET-value";

/// Feeds `lines` and returns the first error, checking it carries no log text.
fn first_error(format: Format, lines: &[&str]) -> compaction_logs::Error {
    let mut reader = Reader::with_options(format, Options::default());
    for line in lines {
        if let Err(e) = reader.push_line(line) {
            assert!(!e.to_string().contains("hunter2"), "{e}");
            assert!(!format!("{e:?}").contains("hunter2"), "{e:?}");
            return e;
        }
    }
    let e = reader.finish().expect_err("must fail");
    assert!(!e.to_string().contains("hunter2"), "{e}");
    e
}

#[test]
fn claude_code_errors() {
    let ok = r#"{"type":"user","message":{"role":"user","content":"fine"}}"#;
    let cases: Vec<(Vec<String>, Position, &str)> = vec![
        (
            vec![
                ok.into(),
                format!("{{\"type\":\"user\",\"message\":{{\"content\":{SECRET}}}}}"),
            ],
            Position::Line(2),
            "invalid JSON",
        ),
        (
            vec![ok.into(), "".into(), format!("[\"{SECRET}\"]")],
            Position::Line(3),
            "expected a JSON object, found an array",
        ),
        (
            vec![format!(
                "{{\"type\":\"assistant\",\"message\":\"{SECRET}\"}}"
            )],
            Position::Line(1),
            "field `message` must be an object",
        ),
        (
            vec![format!(
                "{{\"type\":\"assistant\",\"message\":{{\"id\":\"m\",\"content\":[{{\"type\":\"tool_use\",\"id\":\"t\",\"name\":7,\"input\":\"{SECRET}\"}}]}}}}"
            )],
            Position::Line(1),
            "field `name` must be a string",
        ),
        (
            vec![format!(
                "{{\"type\":\"user\",\"message\":{{\"content\":[{{\"type\":\"tool_result\",\"content\":\"{SECRET}\"}}]}}}}"
            )],
            Position::Line(1),
            "field `tool_use_id` must be a string",
        ),
        (
            vec![format!(
                "{{\"type\":\"user\",\"isSidechain\":\"{SECRET}\",\"message\":{{}}}}"
            )],
            Position::Line(1),
            "field `isSidechain` must be a boolean",
        ),
        (
            vec![format!(
                "{{\"type\":\"user\",\"message\":{{\"content\":[{{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":{{\"x\":\"{SECRET}\"}}}}]}}}}"
            )],
            Position::Line(1),
            "field `content` must be a string or a list of blocks",
        ),
    ];
    for (lines, position, reason) in cases {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let e = first_error(Format::CLAUDE_CODE, &lines);
        assert_eq!(e.position, position, "{e}");
        assert!(e.to_string().contains(reason), "{e}");
    }
}

#[test]
fn codex_pi_and_gemini_errors() {
    let e = first_error(
        Format::CODEX,
        &[&format!(
            "{{\"type\":\"response_item\",\"payload\":{{\"type\":\"function_call_output\",\"output\":\"{SECRET}\"}}}}"
        )],
    );
    assert_eq!(e.to_string(), "line 1: field `call_id` must be a string");
    let e = first_error(
        Format::CODEX,
        &[
            "{}",
            r#"{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":7}}"#,
        ],
    );
    assert_eq!(e.position, Position::Line(2));

    let e = first_error(
        Format::PI,
        &[&format!(
            "{{\"type\":\"message\",\"message\":{{\"role\":\"toolResult\",\"content\":\"{SECRET}\"}}}}"
        )],
    );
    assert_eq!(e.to_string(), "line 1: field `toolCallId` must be a string");
    // A last entry whose parent is missing: the tree is broken, named at that entry's line.
    let e = first_error(
        Format::PI,
        &[
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"cwd\":\"/\"}",
            &format!(
                "{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{{\"role\":\"user\",\"content\":\"{SECRET}\"}}}}"
            ),
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"zz\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}",
        ],
    );
    assert_eq!(e.position, Position::Line(3));
    // A loop of parents is broken too (and terminates).
    let e = first_error(
        Format::PI,
        &[
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"b\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}",
            "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"message\":{\"role\":\"user\",\"content\":\"y\"}}",
        ],
    );
    assert!(e.to_string().contains("broken session tree"), "{e}");

    let e = first_error(
        Format::GEMINI,
        &["{", &format!("  \"messages\": [{SECRET}]"), "}"],
    );
    assert_eq!(e.position, Position::Line(2));
    let e = first_error(
        Format::GEMINI,
        &[&format!(
            "{{\"messages\":[{{\"type\":\"user\",\"content\":\"ok\"}},{{\"type\":\"gemini\",\"toolCalls\":[{{\"name\":\"{SECRET}\"}}]}}]}}"
        )],
    );
    assert_eq!(e.to_string(), "messages[1]: field `id` must be a string");
    let e = first_error(Format::GEMINI, &[&format!("[\"{SECRET}\"]")]);
    assert_eq!(e.to_string(), "log: expected a JSON object, found an array");
}

#[test]
fn arbitrary_bytes_never_panic_and_never_quote() {
    // A small deterministic sweep over cut and corrupted lines of every format's sample.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut samples = vec![
        (dir.join("codex-rollout.jsonl"), Format::CODEX),
        (dir.join("pi-tree.jsonl"), Format::PI),
        (dir.join("gemini-session.json"), Format::GEMINI),
    ];
    if let Some(raw) = test_support::raw_fixtures_dir() {
        samples.push((raw.join("claude-code/short.jsonl"), Format::CLAUDE_CODE));
    }
    for (path, format) in samples {
        let text = std::fs::read_to_string(path).unwrap();
        for cut in (0..text.len()).step_by(7) {
            if !text.is_char_boundary(cut) {
                continue;
            }
            let mut reader = Reader::new(format);
            let mut failed = None;
            for line in text[..cut].split('\n') {
                if let Err(e) = reader.push_line(line) {
                    failed = Some(e);
                    break;
                }
            }
            let result = match failed {
                Some(e) => Err(e),
                None => reader.finish(),
            };
            if let Err(e) = result {
                // Errors are built from the reader's own words: no 12-character run of the
                // sample's text appears in them unless it is one of the field names.
                let msg = e.to_string();
                assert!(
                    !msg.contains("sum test") && !msg.contains("TODO") && !msg.contains("title"),
                    "{msg}"
                );
            }
        }
    }
}
