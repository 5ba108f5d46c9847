use super::*;
use crate::message::ToolCall;
use crate::tokens::Estimator;

fn call(id: &str, name: &str, args: &str) -> Message {
    Message::assistant_tool_calls("", vec![ToolCall::function(id, name, args)])
}

fn check(tool: &str, args: &str, output: &str, expected: &str) {
    let info = ToolInfo {
        name: tool,
        arguments: args,
    };
    assert_eq!(describe_tool_output(Some(&info), output), expected);
}

#[test]
fn one_liners_name_tool_argument_size_and_status() {
    check(
        "bash",
        r#"{"command":"cargo test"}"#,
        "a\nb\nerror\nExit code: 101",
        "[pruned] bash `cargo test`: 24 chars, 4 lines of output, exit 101",
    );
    check(
        "Read",
        r#"{"file_path":"/src/main.rs","offset":10,"limit":50}"#,
        "x\ny",
        "[pruned] Read /src/main.rs (from 10, 50 lines): 3 chars, 2 lines",
    );
    check(
        "Edit",
        r#"{"file_path":"a.rs","old_string":"x"}"#,
        "ok",
        "[pruned] Edit a.rs: 2 chars of output",
    );
    check(
        "Grep",
        r#"{"pattern":"fn main","path":"src"}"#,
        "a\nb\nc",
        "[pruned] Grep \"fn main\" in src: 3 result lines, 5 chars",
    );
    check(
        "WebFetch",
        r#"{"url":"https://example.com/x"}"#,
        "hello",
        "[pruned] WebFetch https://example.com/x: 5 chars fetched",
    );
    check(
        "deploy",
        r#"{"env":"prod","n":3}"#,
        "done",
        "[pruned] deploy env=prod n=3 (4 chars)",
    );
}

/// The arguments' fields read without building values give what a JSON map gives: the later
/// value of a key given twice at the key's first place, escaped keys, values shown as
/// compact JSON, nothing for what is not an object.
#[test]
fn argument_fields_read_as_a_json_map_reads_them() {
    let cases = [
        r#"{"command":"cargo test"}"#,
        r#"{"a":1,"b":"x","a":"later","c":[1, 2, {"d" : null}],"e":true}"#,
        r#"{"k\u0065y":"escaped key","q\"uote":"v\nw"}"#,
        r#"{ "path" : "src/ü.rs" , "offset" : 1.50 , "limit" : 10 }"#,
        r#"{"nested":{"x":{"y":[1,2,3]}},"n":-0,"big":123456789012345678901234567890}"#,
        r#"{}"#,
        r#"[1,2,3]"#,
        r#""just a string""#,
        "not json at all",
        r#"{"a":1"#,
        r#"{"a":1} trailing"#,
    ];
    let shown = |v: &Value, max: usize| match v {
        Value::String(s) => clip(s, max),
        other => clip(&other.to_string(), max),
    };
    for args in cases {
        let map: Option<serde_json::Map<String, Value>> = serde_json::from_str(args).ok();
        let fields = serde_json::from_str::<ArgFields<'_>>(args).ok();
        assert_eq!(map.is_some(), fields.is_some(), "{args}");
        let (Some(map), Some(fields)) = (map, fields) else {
            continue;
        };
        let want: Vec<(String, String)> = map
            .iter()
            .take(3)
            .map(|(k, v)| (k.clone(), shown(v, 60)))
            .collect();
        let got: Vec<(String, String)> = fields
            .first_fields(3)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), shown_value(v, 60)))
            .collect();
        assert_eq!(got, want, "{args}");
        for key in [
            "a", "b", "c", "key", "q\"uote", "path", "offset", "nested", "absent",
        ] {
            assert_eq!(
                fields.get(key).map(|v| shown_value(v, 160)),
                map.get(key).map(|v| shown(v, 160)),
                "{args} / {key}"
            );
        }
    }
    // What a description shows of them.
    check(
        "deploy",
        r#"{"env":"dev","n":[1, 2],"env":"prod","x":1,"y":2}"#,
        "done",
        "[pruned] deploy env=prod n=[1,2] x=1 (4 chars)",
    );
}

#[test]
fn prunes_middle_only_keeps_protected_and_dedupes() {
    let big = "line of output\n".repeat(200);
    let msgs = vec![
        Message::user("go"),
        call("a", "bash", r#"{"command":"ls"}"#),
        Message::tool_result("a", big.clone()),
        call("b", "read_file", r#"{"path":"x"}"#),
        Message::tool_result("b", big.clone()),
        call("c", "bash", r#"{"command":"ls"}"#),
        Message::tool_result("c", big.clone()),
        Message::user("next"),
    ];
    let e = Estimator::default();
    let t = Transcript::new(msgs, &e);
    let cfg = protecting_reads();
    let plan = plan_prune(&t, &[1..5], &cfg, &e);
    // Only index 2 changes: 4 is protected, 6 is outside the range.
    assert_eq!(plan.edit.splices.len(), 1);
    assert_eq!(plan.edit.splices[0].range, 2..3);
    assert_eq!(plan.deduplicated, 1);
    let new = &plan.edit.splices[0].replacement[0];
    assert_eq!(
        new.text(),
        "[pruned] bash output identical to the newer copy at message 6 (3000 chars)"
    );
    assert_eq!(new.tool_call_id(), Some("a"));
    assert!(plan.reclaimed_tokens > 600);
    // Idempotent.
    let after = plan.edit.apply(t.messages()).unwrap();
    let t2 = Transcript::new(after, &e);
    assert!(plan_prune(&t2, &[1..5], &cfg, &e).edit.is_empty());
}

/// The defaults with `read_file` protected, as a caller whose reads should stay sets them.
fn protecting_reads() -> PruneConfig {
    let mut cfg = PruneConfig::default();
    cfg.protected_tools.push("read_file".into());
    cfg
}

#[test]
fn file_reads_are_not_protected_by_default() {
    let cfg = PruneConfig::default();
    assert!(!is_protected(&cfg, "read_file"));
    assert!(is_protected(&cfg, "memory") && is_protected(&cfg, "todo"));
}

/// A protected tool's output that a newer large result of the same call (same tool, same
/// arguments in any key order) supersedes is pruned to a back-reference to the newest one;
/// one answering other arguments, one whose newer result is short (an error), and the newest
/// of each call stay.
#[test]
fn a_protected_output_superseded_by_the_same_call_is_pruned() {
    let v1 = "fn main() { old(); }\n".repeat(60);
    let v2 = "fn main() { new(); }\n".repeat(60);
    let other = "pub struct Other;\n".repeat(80);
    let msgs = vec![
        Message::user("go"),
        call("a", "read_file", r#"{"path":"src/main.rs","limit":400}"#),
        Message::tool_result("a", v1.clone()),
        call("b", "read_file", r#"{"path":"src/other.rs"}"#),
        Message::tool_result("b", other.clone()),
        call("c", "read_file", r#"{"path":"src/other.rs"}"#),
        Message::tool_result("c", "Error: permission denied"),
        call(
            "d",
            "read_file",
            r#"{ "limit": 400, "path": "src/main.rs" }"#,
        ),
        Message::tool_result("d", v2.clone()),
        call("e", "read_file", r#"{"path":"src/main.rs","limit":400}"#),
        Message::tool_result("e", v2.clone()),
        Message::user("next"),
    ];
    let e = Estimator::default();
    let t = Transcript::new(msgs, &e);
    let protecting = protecting_reads();
    let plan = plan_prune(&t, &[1..11], &protecting, &e);
    let changed: Vec<usize> = plan.edit.splices.iter().map(|s| s.range.start).collect();
    // 2 and 8 are superseded by 10 (the newest result of the same call); 4 is not superseded
    // by the short error at 6; 10 is the newest.
    assert_eq!(changed, vec![2, 8]);
    assert_eq!(plan.deduplicated, 2);
    assert_eq!(
        plan.edit.splices[0].replacement[0].text(),
        format!(
            "[pruned] read_file output superseded by the newer result of the same call at message 10 ({} chars)",
            v1.chars().count()
        )
    );
    assert_eq!(
        plan.edit.splices[1].replacement[0].tool_call_id(),
        Some("d")
    );
    // With the newest result outside the pruned range (in the tail), it still supersedes.
    let plan = plan_prune(&t, &[1..9], &protecting, &e);
    let changed: Vec<usize> = plan.edit.splices.iter().map(|s| s.range.start).collect();
    assert_eq!(changed, vec![2, 8]);
    // At the defaults (reads unprotected), the same outputs are pruned as any old output (the
    // older of two identical copies as a back-reference).
    let plan = plan_prune(&t, &[1..9], &PruneConfig::default(), &e);
    let changed: Vec<usize> = plan.edit.splices.iter().map(|s| s.range.start).collect();
    assert_eq!(changed, vec![2, 4, 8]);
    // Idempotent: after the pass, nothing more is superseded.
    let after = plan_prune(&t, &[1..11], &protecting, &e)
        .edit
        .apply(t.messages())
        .unwrap();
    let t2 = Transcript::new(after, &e);
    assert!(plan_prune(&t2, &[1..11], &protecting, &e).edit.is_empty());
}

#[test]
fn char_and_line_counts_match_str_chars_and_lines() {
    let long = "line\n".repeat(1_000) + "tail";
    let wide = "héllo wörld 日本語 🦀\n".repeat(300);
    for s in [
        "",
        "a",
        "a\n",
        "a\nb",
        "\n\n",
        "x\r\ny\r\n",
        "é",
        "日本\n語",
        "🦀🦀\n",
        long.as_str(),
        wide.as_str(),
    ] {
        assert_eq!(
            chars_and_lines(s),
            (s.chars().count(), s.lines().count()),
            "{s:?}"
        );
    }
}

#[test]
fn huge_arguments_are_shortened_and_stay_json() {
    let content = "x".repeat(10_000);
    let args = serde_json::json!({"path": "f.txt", "content": content}).to_string();
    let msgs = vec![
        call("w", "write_file", &args),
        Message::tool_result("w", "ok"),
    ];
    let e = Estimator::default();
    let t = Transcript::new(msgs, &e);
    let plan = plan_prune(&t, &[0..2], &PruneConfig::default(), &e);
    assert_eq!(plan.shortened_calls, 1);
    let new_args = &plan.edit.splices[0].replacement[0].tool_calls()[0]
        .function
        .arguments;
    let v: Value = serde_json::from_str(new_args).expect("valid JSON");
    assert_eq!(v["path"], "f.txt");
    assert!(
        v["content"]
            .as_str()
            .unwrap()
            .contains("chars elided by compaction")
    );
}

/// Issue 20: what pruning removes keeps an index of the names in it, bounded, most
/// frequent first; with a zero bound there is none; a secret in the output is never one.
#[test]
fn pruned_outputs_and_elided_arguments_keep_a_bounded_names_index() {
    let mut out = String::new();
    for i in 0..300 {
        out.push_str(&format!("src/mod_{}.rs:{i}: fn handler_{i}()\n", i % 7));
    }
    out.push_str("api_key=Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0L\n");
    let plan_with = |names_max_chars: usize| {
        let msgs = vec![
            Message::user("go"),
            call("a", "grep", r#"{"pattern":"fn handler","path":"src"}"#),
            Message::tool_result("a", out.clone()),
            Message::user("next"),
        ];
        let e = Estimator::default();
        let t = Transcript::new(msgs, &e);
        let cfg = PruneConfig {
            names_max_chars,
            ..PruneConfig::default()
        };
        plan_prune(&t, &[1..3], &cfg, &e).edit.splices[0].replacement[0]
            .text()
            .into_owned()
    };
    let line = plan_with(120);
    let (head, index) = line.split_once(crate::ledger::PRUNED_NAMES).expect(&line);
    assert!(head.starts_with(PRUNED_PREFIX), "{line}");
    assert!(index.len() <= 120, "{index}");
    // The seven module paths are the most frequent names: they come first.
    assert!(index.starts_with("src/mod_0.rs, src/mod_1.rs"), "{index}");
    assert!(!line.contains("Zx9Qw8Er"), "{line}");
    assert_eq!(plan_with(0), head);

    let content = format!("# Plan\n{}", "step_alpha then step_beta; ".repeat(400));
    let args = serde_json::json!({"path": "plan.md", "content": content}).to_string();
    let m = call("w", "write", &args);
    let indexed = PruneConfig {
        names_max_chars: 400,
        ..PruneConfig::default()
    };
    let short = shorten_arguments(&m, &indexed).unwrap();
    let v: Value = serde_json::from_str(&short.tool_calls()[0].function.arguments).unwrap();
    let text = v["content"].as_str().unwrap();
    assert!(
        text.ends_with("elided by compaction; names in it: step_alpha, step_beta]"),
        "{text}"
    );
}

/// The example of [`cited_outputs`]: a listing the reply cites is live, one nobody used is
/// not.
#[test]
fn an_output_cited_by_a_later_reply_is_found() {
    let msgs = vec![
        Message::user("find the parser"),
        call("c1", "sh", r#"{"cmd":"ls src"}"#),
        Message::tool_result("c1", "src/parse_args.rs\nsrc/main.rs"),
        call("c2", "sh", r#"{"cmd":"ls docs"}"#),
        Message::tool_result("c2", "docs/guide_v2.md"),
        Message::assistant("The parser is in src/parse_args.rs."),
    ];
    // The first listing is cited by the reply; nobody used the second.
    assert_eq!(
        cited_outputs(&msgs, &[0..msgs.len()], &CallIndex::build(&msgs)),
        vec![2]
    );
}

/// A long output becomes one informative line, one for one, so the tool pairing is kept.
#[test]
fn a_long_output_becomes_one_line() {
    let counter = Estimator::default();
    let msgs = vec![
        Message::user("run the tests"),
        Message::assistant_tool_calls(
            "",
            vec![ToolCall::function("c1", "shell", r#"{"cmd":"cargo test"}"#)],
        ),
        Message::tool_result("c1", "test result: ok. 120 passed\n".repeat(200)),
        Message::assistant("all green"),
    ];
    let t = Transcript::new(msgs, &counter);
    let plan = plan_prune(&t, &[0..t.len()], &PruneConfig::default(), &counter);
    assert_eq!(plan.summarized_outputs, 1);
    assert!(plan.reclaimed_tokens > 0);
    let after = plan.edit.apply(t.messages()).unwrap();
    assert_eq!(after.len(), t.len());
    assert_eq!(after[2].tool_call_id(), Some("c1"));
}

/// A freeform tool's input (a custom tool's grammar input, Codex's `apply_patch` or `exec`)
/// is raw text, not JSON: a long one is shortened like a long string value (its head redacted
/// and a note of what was elided), and stays text; a short one is left alone.
#[test]
fn a_freeform_tools_long_raw_input_is_shortened_and_stays_text() {
    let key = ["sk-proj-", "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz"].concat();
    let patch = format!(
        "*** Begin Patch\n*** Add File: src/lib.rs\n+// {key}\n{}*** End Patch",
        "+fn f() {}\n".repeat(600)
    );
    assert!(serde_json::from_str::<Value>(&patch).is_err());
    let cfg = PruneConfig::default();
    let m = call("p", "apply_patch", &patch);
    let short = shorten_arguments(&m, &cfg).expect("a long raw input is shortened");
    let args = &short.tool_calls()[0].function.arguments;
    assert!(
        args.starts_with("*** Begin Patch\n*** Add File: src/lib.rs"),
        "{args}"
    );
    let total = patch.chars().count();
    let kept = cfg.argument_max_chars / 2;
    assert!(
        args.ends_with(&format!(
            "…[{} of {total} chars elided by compaction]",
            total - kept
        )),
        "{args}"
    );
    assert!(!args.contains(&key), "{args}");
    assert!(args.chars().count() < cfg.argument_max_chars, "{args}");
    // The call keeps its id and name; the message its text.
    assert_eq!(short.tool_calls()[0].call_id(), "p");
    assert_eq!(short.tool_calls()[0].function.name, "apply_patch");
    // Pruning leaves an old one to the summary: only the last-resort demotion shortens it.
    let e = Estimator::default();
    let t = Transcript::new(
        vec![
            Message::user("add it"),
            m.clone(),
            Message::tool_result("p", "Done"),
        ],
        &e,
    );
    let plan = plan_prune(&t, &[0..3], &cfg, &e);
    assert!(
        plan.edit.splices.iter().all(|s| s.range.start != 1),
        "{plan:?}"
    );
    // Short raw inputs, and raw inputs whose characters (not bytes) fit, are not rewritten.
    assert!(shorten_arguments(&call("s", "exec", "ls -la src"), &cfg).is_none());
    let wide = "é".repeat(cfg.argument_max_chars);
    assert!(wide.len() > cfg.argument_max_chars);
    assert!(shorten_arguments(&call("w", "exec", &wide), &cfg).is_none());
}
