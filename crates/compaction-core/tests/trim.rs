//! Insertion-time trimming: tool-specific shapes (the laws, as properties, are a unit test of
//! `trim`: they check the handle too).

use compaction_core::prune::ToolInfo;
use compaction_core::trim::{TrimConfig, plan_trim};
use compaction_core::{Estimator, Message, marker};
use serde_json::Value;

fn cfg(max_tokens: u64) -> TrimConfig {
    TrimConfig {
        max_tokens,
        head_chars: 300,
        tail_chars: 300,
        ..TrimConfig::default()
    }
}

fn check(tool: &str, args: &str, output: &str, expected: &str) {
    let info = ToolInfo {
        name: tool,
        arguments: args,
    };
    let m = Message::tool_result("call_9", output);
    let t = plan_trim(&m, Some(&info), &cfg(200), &Estimator::default()).expect("trimmed");
    let text = t.message.text().replace(&t.handle, "<handle>");
    assert_eq!(text, expected);
}

/// The wire object of a message without its `content`.
fn without_content(m: &Message) -> Value {
    let mut v = m.to_wire_value();
    v.as_object_mut().unwrap().remove("content");
    v
}

#[test]
fn command_output_keeps_its_last_lines_and_exit_status() {
    let mut out = String::new();
    for i in 0..400 {
        out.push_str(&format!("compiling crate_{i:03}\n"));
    }
    out.push_str("error[E0308]: mismatched types\nexit code: 101");
    let expected_head = "compiling crate_000\ncompiling crate_001\ncompiling crate_002";
    let t = {
        let info = ToolInfo {
            name: "bash",
            arguments: r#"{"command":"cargo build"}"#,
        };
        plan_trim(
            &Message::tool_result("c", out.clone()),
            Some(&info),
            &cfg(200),
            &Estimator::default(),
        )
        .unwrap()
    };
    let text = t.message.text();
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "[trimmed] bash `cargo build`: 8045 chars, 402 lines of output, exit 101"
    );
    // The head gets a quarter of the head budget (75 chars: three whole lines).
    assert!(text.contains(&format!("{expected_head}\n[… ")), "{text}");
    // The tail gets the rest (525 chars of whole lines) and ends with the status.
    assert!(text.ends_with("error[E0308]: mismatched types\nexit code: 101"));
    let tail = text.rsplit_once("…]\n").unwrap().1;
    assert!(tail.chars().count() <= 525 && tail.chars().count() > 450);
    assert!(out.ends_with(tail));
}

#[test]
fn file_reads_keep_the_line_range_and_other_tools_their_arguments() {
    let body: String = (1..=60)
        .map(|i| format!("{i:>4}  let x{i} = {i};\n"))
        .collect();
    check(
        "Read",
        r#"{"file_path":"src/lib.rs","offset":100,"limit":60}"#,
        &body,
        &format!(
            "[trimmed] Read src/lib.rs (from 100, 60 lines): {} chars, 60 lines\n{}\n[… 30 lines (600 chars) elided at insertion; the full text is stored as <handle>: call recall_compacted with {{\"handle\":\"<handle>\"}} to read it …]\n{}\n",
            body.chars().count(),
            body.lines().take(15).collect::<Vec<_>>().join("\n"),
            body.lines().skip(45).collect::<Vec<_>>().join("\n"),
        ),
    );
    let hits: String = (0..80).map(|i| format!("src/f{i}.rs:1: TODO\n")).collect();
    let t = plan_trim(
        &Message::tool_result("g", hits),
        Some(&ToolInfo {
            name: "grep",
            arguments: r#"{"pattern":"TODO","path":"src"}"#,
        }),
        &cfg(200),
        &Estimator::default(),
    )
    .unwrap();
    assert!(
        t.message
            .text()
            .starts_with("[trimmed] grep \"TODO\" in src: 80 result lines,")
    );
}

#[test]
fn protected_small_unknown_and_persisted_messages_are_left_alone() {
    let e = Estimator::default();
    let big = "data line\n".repeat(500);
    let memory = ToolInfo {
        name: "memory",
        arguments: r#"{"action":"read"}"#,
    };
    assert!(
        plan_trim(
            &Message::tool_result("a", &big),
            Some(&memory),
            &cfg(200),
            &e
        )
        .is_none()
    );
    // Off.
    assert!(plan_trim(&Message::tool_result("a", &big), None, &cfg(0), &e).is_none());
    // Under the limit.
    assert!(plan_trim(&Message::tool_result("a", "short"), None, &cfg(200), &e).is_none());
    // Already durable history.
    let mut stored = Message::tool_result("a", &big);
    stored.meta_mut().row_id = Some(4);
    assert!(plan_trim(&stored, None, &cfg(200), &e).is_none());
    // Pruned one-liners and image parts.
    let pruned = Message::tool_result("a", format!("[pruned] bash `x`: {big}"));
    assert!(plan_trim(&pruned, None, &cfg(200), &e).is_none());
    let image = Message::from_json(&format!(
        r#"{{"role":"user","content":[{{"type":"text","text":{}}},{{"type":"image_url","image_url":{{"url":"data:x"}}}}]}}"#,
        serde_json::to_string(&big).unwrap()
    ))
    .unwrap();
    assert!(plan_trim(&image, None, &cfg(200), &e).is_none());
    // A marker in a user message.
    let m = marker::render(
        compaction_core::MarkerKind::Micro,
        compaction_core::Role::User,
        &big,
    );
    assert!(plan_trim(&m, None, &cfg(200), &e).is_none());
}

#[test]
fn text_parts_are_trimmed_to_a_string() {
    let big = "part text\n".repeat(300);
    let m = Message::from_json(&format!(
        r#"{{"role":"tool","tool_call_id":"p","content":[{{"type":"text","text":{}}}],"x":1}}"#,
        serde_json::to_string(&big).unwrap()
    ))
    .unwrap();
    let t = plan_trim(&m, None, &cfg(200), &Estimator::default()).unwrap();
    assert!(
        t.message
            .text()
            .starts_with("[trimmed] tool output (3000 chars, 300 lines)")
    );
    assert_eq!(without_content(&t.message), without_content(&m));
}
