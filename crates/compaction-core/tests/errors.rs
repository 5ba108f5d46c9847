//! Errors never quote transcript text: every parse and validation error names the field and
//! the position (line, message index, key index), not the key, the value or the role.

use compaction_core::Location;
use compaction_core::parse;
use compaction_core::validate::{self, Issue};
use compaction_core::{Error, Message};

const SECRET: &str = "sk-proj-ERRORLEAK0123456789abcdefABCDEF0123";

/// The error's `Display` and `Debug` are short and hold none of `forbidden`.
fn check_quiet(e: &Error, forbidden: &[&str]) {
    for text in [e.to_string(), format!("{e:?}"), format!("{e:#?}")] {
        assert!(text.len() < 300, "{} bytes: {text}", text.len());
        for f in forbidden {
            assert!(!text.contains(f), "quoted {f:?}: {text}");
        }
    }
}

#[test]
fn a_duplicate_16_kb_key_is_not_quoted() {
    let key = "k".repeat(16 * 1024);
    let line = format!(r#"{{"role":"user","{key}":1,"content":"x","{key}":2}}"#);
    let e = Message::from_json(&line).unwrap_err();
    assert_eq!(
        e,
        Error::DuplicateKey {
            field: None,
            index: 3
        }
    );
    check_quiet(&e, &["kkkkkkkk"]);
    let e = parse::parse_jsonl(&format!("{{\"role\":\"user\"}}\n{line}\n")).unwrap_err();
    assert_eq!(e.location(), Some(Location::Line(2)));
    assert_eq!(e.to_string(), "line 2: duplicate key (key index 3)");
    check_quiet(&e, &["kkkkkkkk"]);
}

#[test]
fn a_duplicate_key_holding_a_secret_is_not_quoted() {
    let key = format!("export OPENAI_API_KEY={SECRET}");
    let line = format!(r#"{{"{key}":1,"role":"user","{key}":2}}"#);
    let e = parse::parse_transcript(format!("[{line}]").as_bytes()).unwrap_err();
    assert_eq!(e.location(), Some(Location::Index(0)));
    check_quiet(&e, &[SECRET, "ERRORLEAK", "OPENAI_API_KEY"]);
    // A known field is named: its name is not transcript text.
    let e = Message::from_json(r#"{"role":"user","content":"a","role":"tool"}"#).unwrap_err();
    assert_eq!(e.to_string(), "duplicate key `role` (key index 2)");
}

#[test]
fn an_unknown_role_is_not_quoted() {
    let role = format!("my password is hunter2 and the key {SECRET}");
    let line = format!(r#"{{"role":{},"content":"x"}}"#, serde_json::json!(role));
    let msgs = parse::parse_jsonl(&line).unwrap();
    let report = validate::validate(&msgs);
    assert_eq!(report.issues, vec![Issue::UnknownRole { index: 0 }]);
    for issue in &report.issues {
        for text in [issue.to_string(), format!("{issue:?}")] {
            assert!(!text.contains("hunter2"), "{text}");
            assert!(!text.contains("sk-proj"), "{text}");
        }
    }
    assert_eq!(
        report.issues[0].to_string(),
        "message index 0: unknown role (known: system, developer, user, assistant, tool)"
    );
    // Nor does a message's Debug print the role, an unknown key or the content.
    let m = Message::from_json(&format!(
        r#"{{"role":{},"{SECRET}":1,"content":"hunter2"}}"#,
        serde_json::json!(role)
    ))
    .unwrap();
    let debug = format!("{m:?}");
    assert!(
        !debug.contains("hunter2") && !debug.contains("sk-proj"),
        "{debug}"
    );
}

#[test]
fn every_parse_error_names_where_and_never_what() {
    let huge = "v".repeat(16 * 1024);
    let cases: Vec<(String, Location)> = vec![
        // Not JSON.
        (
            format!("{{\"role\":\"user\",\"content\":\"{huge}\" {SECRET}"),
            Location::Line(1),
        ),
        // Not an object.
        (format!("\"{SECRET}{huge}\""), Location::Line(1)),
        // Wrong shapes of known fields.
        (format!(r#"{{"role":["{SECRET}"]}}"#), Location::Line(1)),
        (
            format!(r#"{{"role":"user","content":{{"a":"{SECRET}"}}}}"#),
            Location::Line(1),
        ),
        (
            format!(r#"{{"role":"tool","tool_call_id":["{SECRET}"]}}"#),
            Location::Line(1),
        ),
        (
            format!(r#"{{"role":"user","name":{{"{SECRET}":1}}}}"#),
            Location::Line(1),
        ),
        (
            format!(r#"{{"role":"assistant","tool_calls":[{{"id":"{SECRET}"}}]}}"#),
            Location::Line(1),
        ),
        (
            format!(r#"{{"role":"user","_hermes":"{SECRET}"}}"#),
            Location::Line(1),
        ),
        // No role.
        (format!(r#"{{"content":"{SECRET}"}}"#), Location::Line(1)),
        // Not UTF-8 after a secret.
        (
            format!("{{\"role\":\"user\",\"content\":\"{SECRET}\"}}\n\u{0}"),
            Location::Line(2),
        ),
    ];
    for (input, location) in cases {
        let e = parse::parse_transcript(input.as_bytes()).unwrap_err();
        assert_eq!(e.location(), Some(location), "{e}");
        check_quiet(&e, &[SECRET, "ERRORLEAK", "vvvvvvvv"]);
    }
    let mut bytes = format!("{{\"role\":\"user\",\"content\":\"{SECRET}\"}}\n").into_bytes();
    bytes.push(0xff);
    let e = parse::parse_transcript(&bytes).unwrap_err();
    assert_eq!(e.location(), Some(Location::Line(2)));
    check_quiet(&e, &[SECRET]);
    // A JSON array that is not a transcript, and a broken one.
    for input in [
        format!("[\"{SECRET}\"]"),
        format!("[{{\"role\":\"user\"}}, \"{SECRET}"),
    ] {
        let e = parse::parse_transcript(input.as_bytes()).unwrap_err();
        check_quiet(&e, &[SECRET]);
    }
}

#[test]
fn duplicates_among_many_unknown_keys_are_found_in_one_pass() {
    // Linear reading (issue 14, item 5): a set of the keys seen, not a scan per key. The
    // timing lives in `benches/core.rs` (`parse_unknown_keys`); this checks the answers.
    let n = 200_000;
    let mut line = String::from(r#"{"role":"user""#);
    for i in 0..n {
        line.push_str(&format!(r#","key_{i:08}":{i}"#));
    }
    let ok = format!("{line}}}");
    let m = Message::from_json(&ok).unwrap();
    assert_eq!(m.extra_fields().count(), n);
    assert_eq!(m.to_json(), ok, "the keys survive in order");
    let dup = format!(r#"{line},"key_00123456":0}}"#);
    assert_eq!(
        Message::from_json(&dup).unwrap_err(),
        Error::DuplicateKey {
            field: None,
            index: n + 1
        }
    );
    let dup_role = format!(r#"{line},"role":"tool"}}"#);
    assert_eq!(
        Message::from_json(&dup_role).unwrap_err(),
        Error::DuplicateKey {
            field: Some("role"),
            index: n + 1
        }
    );
}
