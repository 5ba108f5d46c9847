use super::*;
use crate::defaults;
use crate::message::ToolCall;

fn call(args: &str) -> Message {
    Message::assistant_tool_calls("", vec![ToolCall::function("c", "tool", args)])
}

#[test]
fn paths_commands_and_recency() {
    let mut l = Ledger::default();
    l.observe(&call(
        r#"{"file_path":"src/a.rs","command":"  ls -la  \nmore"}"#,
    ));
    l.observe(&call(
        r#"{"paths":["b.rs","src/a.rs"],"cmd":["git","status"]}"#,
    ));
    l.observe(&call(
        r#"{"path":"multi\nline","filename":"   ","query":"x"}"#,
    ));
    l.observe(&call("not json"));
    assert_eq!(l.files(), ["b.rs", "src/a.rs"]);
    assert_eq!(l.commands(), ["ls -la", "git status"]);
}

#[test]
fn long_commands_are_cut_and_long_paths_skipped() {
    let mut l = Ledger::default();
    let long = "é".repeat(MAX_ENTRY_CHARS + 5);
    l.observe(&call(&format!(r#"{{"command":"{long}","path":"{long}"}}"#)));
    assert_eq!(l.commands()[0].chars().count(), MAX_ENTRY_CHARS);
    assert!(l.files().is_empty());
}

#[test]
fn secrets_in_commands_are_redacted() {
    let mut l = Ledger::default();
    let key = format!("sk-proj-{}", "a1B2c3D4e5F6g7H8".repeat(3));
    l.observe(&call(&format!(
        r#"{{"command":"curl -H 'Authorization: Bearer {key}' https://x"}}"#
    )));
    let rendered = l.render(1_000).unwrap();
    assert!(!rendered.contains(&key), "{rendered}");
    assert!(!rendered.contains("a1B2c3D4e5F6g7H8"), "{rendered}");
}

#[test]
fn a_secret_straddling_the_cut_leaves_no_fragment() {
    let body = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVcXz";
    for at in [
        MAX_ENTRY_CHARS - 30,
        MAX_ENTRY_CHARS - 8,
        MAX_ENTRY_CHARS - 1,
    ] {
        let mut l = Ledger::default();
        let pad = "a".repeat(at);
        for key in [
            format!("sk-proj-{body}{body}"),
            format!("ghp_{body}"),
            format!("AKIA{}", &body[..16].to_ascii_uppercase()),
        ] {
            // JSON-escaped quotes and a backslash around the key: the parser unescapes
            // them, the redaction sees the key as the shell would.
            let args = serde_json::json!({ "command": format!("{pad} \"{key}\"\\ tail") });
            l.observe(&call(&args.to_string()));
            let rendered = l.render(10_000).unwrap();
            for frag in [&key[..8], &body[..6]] {
                assert!(!rendered.contains(frag), "at {at}: {frag} in {rendered}");
            }
        }
    }
}

#[test]
fn render_split_round_trip_and_budget_drops_oldest_commands_first() {
    let mut l = Ledger::default();
    for i in 0..50 {
        l.observe(&call(&format!(
            r#"{{"path":"src/file{i}.rs","command":"cargo test --package crate{i} -- --nocapture"}}"#
        )));
    }
    let full = l.render(100_000).unwrap();
    let (text, back) = Ledger::split(&full);
    assert_eq!(text, "");
    assert_eq!(back, l);

    let small = l.render(300).unwrap();
    assert!(estimate_text(&small) <= 300, "{}", estimate_text(&small));
    let (_, kept) = Ledger::split(&small);
    // Every file survives before any command does, and the newest commands are the kept ones.
    assert_eq!(kept.files(), l.files());
    assert!(kept.commands().len() < 50);
    assert!(l.commands().ends_with(kept.commands()));
    assert!(small.contains("older entries dropped to fit"));

    assert_eq!(l.render(0), None);
    assert_eq!(Ledger::default().render(1_000), None);
}

#[test]
fn attach_replaces_an_earlier_section_and_split_takes_the_last() {
    let mut a = Ledger::default();
    a.observe(&call(r#"{"path":"old.rs"}"#));
    let mut b = Ledger::default();
    b.observe(&call(r#"{"path":"new.rs"}"#));
    let once = a.attach("summary text", 1_000);
    let twice = b.attach(&once, 1_000);
    let (text, got) = Ledger::split(&twice);
    assert_eq!(text, "summary text");
    assert_eq!(got, b);
    // A heading inside a line is not a section.
    let inline = format!("see {HEADING}\n- x.rs");
    assert_eq!(Ledger::split(&inline).1, Ledger::default());
}

#[test]
fn names_come_from_the_agents_own_text_and_arguments_only() {
    let mut l = Ledger::default();
    l.observe(&Message::assistant_tool_calls(
        "I will fix `parse_args` in the cli; see fooBar and issue_42.",
        vec![ToolCall::function(
            "c",
            "edit",
            r#"{"path":"src/cli.rs","old":"fn parse_args()","new":"fn parse_args_v2()","nested":"{\"k\":\"inner_name\"}"}"#,
        )],
    ));
    l.observe(&Message::user("the user mentions user_name.rs"));
    l.observe(&Message::tool_result("c", "tool output with tool_name.rs"));
    // The path is a file entry, so not repeated as a name; user and tool text never count.
    assert_eq!(
        l.names(),
        [
            "fooBar",
            "issue_42",
            "parse_args",
            "parse_args_v2",
            "inner_name"
        ]
    );
    assert_eq!(l.files(), ["src/cli.rs"]);
    // A name a later command shows leaves the names list.
    l.observe(&call(r#"{"command":"cargo test issue_42"}"#));
    assert!(!l.names().contains(&"issue_42"), "{:?}", l.names());
}

#[test]
fn names_round_trip_and_go_first_when_the_budget_is_short() {
    let mut l = Ledger::default();
    l.observe(&call(r#"{"path":"src/keep.rs"}"#));
    for i in 0..200 {
        l.observe(&Message::assistant(format!("looked at helper_fn_{i}")));
    }
    let full = l.render(100_000).unwrap();
    assert!(full.contains(NAMES), "{full}");
    let (_, back) = Ledger::split(&full);
    assert_eq!(back, l);
    let small = l.render(150).unwrap();
    assert!(estimate_text(&small) <= 150, "{}", estimate_text(&small));
    let (_, kept) = Ledger::split(&small);
    assert_eq!(kept.files(), ["src/keep.rs"]);
    assert!(!kept.names().is_empty() && kept.names().len() < 200);
    // The newest names are the kept ones.
    assert!(l.names().ends_with(&kept.names()));
    assert!(small.contains("names)"), "{small}");
}

/// A message with more names than any section shows keeps the newest MAX_NAMES, and a
/// repeat moves a name to the newest end.
#[test]
fn the_names_list_is_bounded_and_keeps_the_newest() {
    let text: String = (0..3 * MAX_NAMES).map(|i| format!("name_{i} ")).collect();
    let mut l = Ledger::default();
    l.observe(&Message::assistant(text));
    l.observe(&Message::assistant("name_0 again"));
    let names = l.names();
    assert_eq!(names.len(), MAX_NAMES);
    assert_eq!(names.last(), Some(&"name_0"));
    assert_eq!(
        names[names.len() - 2],
        format!("name_{}", 3 * MAX_NAMES - 1)
    );
    assert!(!names.contains(&"name_1"));
}

#[test]
fn no_fragment_of_a_secret_becomes_a_name() {
    // A low-entropy value the redaction knows only by its context, and a key-shaped one.
    let body = "O8xsTtlmGj&rqriRTMdEdHt";
    let key = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0L";
    let mut l = Ledger::default();
    l.observe(&Message::assistant_tool_calls(
        format!("the secret: {body} is set"),
        vec![ToolCall::function(
            "c",
            "bash",
            serde_json::json!({ "script": format!("export GITHUB_TOKEN=ghp_{key}\nrun_it") })
                .to_string(),
        )],
    ));
    let rendered = l.render(10_000).unwrap_or_default();
    for frag in ["O8xsTtlm", "rqriRTMd", "Zx9Qw8Er"] {
        assert!(!rendered.contains(frag), "{frag} in {rendered}");
        let index = names_index(&format!("password: {body}\nghp_{key}"), 1_000);
        assert!(!index.contains(frag), "{frag} in {index}");
    }
    assert!(l.names().contains(&"run_it"), "{:?}", l.names());
}

#[test]
fn names_in_follows_its_definition() {
    assert_eq!(
        names_in("a/b c_d src/x.rs 123456 v1.2.3 -./lead.trail./- camelCase UPPER plain"),
        ["src/x.rs", "v1.2.3", "lead.trail", "camelCase"]
    );
    let long = format!("x_{}", "a".repeat(MAX_NAME_CHARS));
    assert!(names_in(&long).is_empty());
    assert_eq!(names_index("", 100), "");
    let got = names_in("Fixed `parse_args` in src/cli.rs (see fooBar, issue #12; plain words no).");
    assert_eq!(got, ["parse_args", "src/cli.rs", "fooBar"]);
}

#[test]
fn names_index_is_most_frequent_first_and_bounded() {
    let out = "src/a.rs:3: fn parse_args\nsrc/b.rs:9: parse_args(x)\nsrc/a.rs:7: ok";
    assert_eq!(names_index(out, 100), "src/a.rs, parse_args, src/b.rs");
    assert_eq!(names_index(out, 20), "src/a.rs, parse_args");
    assert_eq!(names_index(out, 0), "");
}

/// Issue 20's names index against the issue 22 corpus (`test_support::secrets`): no
/// credential, nor any 8-character run of one, becomes a name of a pruned output's index.
/// The ledger's half of this check is `no_credential_becomes_a_ledger_name` below.
#[test]
fn no_credential_becomes_a_name_of_the_names_index() {
    let mut failures = Vec::new();
    for planted in test_support::secrets::credentials() {
        let output = format!("src/main.rs: ok\n{}\nparse_args done", planted.text);
        let index = names_index(&output, 10_000);
        let leaked = planted.secrets.iter().any(|part| {
            let chars: Vec<char> = part.chars().collect();
            chars
                .windows(8.min(chars.len()))
                .any(|w| index.contains(&w.iter().collect::<String>()))
        });
        if leaked {
            failures.push(format!("{}: names index", planted.family));
        }
    }
    failures.dedup();
    assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
}

#[test]
fn without_name_indexes_strips_only_the_indexes() {
    let mut l = Ledger::default();
    l.observe(&call(r#"{"path":"src/a.rs"}"#));
    l.observe(&Message::assistant("named some_name here"));
    let body = l.attach("## Summary\n- did other_name work", 1_000);
    let stripped = without_name_indexes(&body);
    assert!(stripped.contains("other_name") && stripped.contains("src/a.rs"));
    assert!(!stripped.contains("some_name"), "{stripped}");
    assert!(!stripped.contains(NAMES));
}

#[test]
fn extend_keeps_order_and_moves_repeats_to_the_end() {
    let mut a = Ledger::default();
    a.observe(&call(r#"{"path":"a","command":"x"}"#));
    a.observe(&call(r#"{"path":"b","command":"y"}"#));
    let mut b = Ledger::default();
    b.observe(&call(r#"{"path":"a","command":"z"}"#));
    a.extend(&b);
    assert_eq!(a.files(), ["b", "a"]);
    assert_eq!(a.commands(), ["x", "y", "z"]);
}

/// Issue 20's names indexes against the credential corpus (`test_support::secrets`): no
/// credential, nor any 8-character run of one, becomes a name of a summary's ledger, as written
/// or inside JSON arguments, nor of a names line read back from a summary body.
#[test]
fn no_credential_becomes_a_ledger_name() {
    let mut failures: Vec<String> = Vec::new();
    let mut check = |what: &str, text: &str, planted: &test_support::secrets::Planted| {
        for part in &planted.secrets {
            let chars: Vec<char> = part.chars().collect();
            if chars
                .windows(8.min(chars.len()))
                .any(|w| text.contains(&w.iter().collect::<String>()))
            {
                failures.push(format!("{}: {what}", planted.family));
                return;
            }
        }
    };
    for planted in test_support::secrets::credentials() {
        let mut ledger = Ledger::default();
        let args = serde_json::json!({ "script": format!("run_step_1\n{}", planted.text) });
        ledger.observe(&Message::assistant_tool_calls(
            format!("Using {} for deploy_v2", planted.text),
            vec![ToolCall::function("c1", "bash", args.to_string())],
        ));
        let rendered = ledger.render(100_000).unwrap_or_default();
        check("ledger names", &rendered, &planted);
        for name in ledger.names() {
            check("ledger name", name, &planted);
        }
        // A names line of a summary body read back: the credential is not taken as a name.
        let mut names_only = Ledger::default();
        names_only.observe(&Message::assistant("run_step_1 then deploy_v2"));
        let section = names_only.render(100_000).unwrap();
        let body = format!(
            "{}\n- run_step_1, {}, deploy_v2",
            section.trim_end(),
            planted.text
        );
        let (_, read) = Ledger::split(&body);
        for name in read.names() {
            check("split name", name, &planted);
        }
    }
    failures.dedup();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// [`names_index`] as it was before [`may_hold_names`] (issue 31): always redacts. The
/// reference the fast path is checked against.
fn names_index_reference(text: &str, max_chars: usize) -> String {
    if max_chars == 0 {
        return String::new();
    }
    ranked_names(&redact::redact(text), max_chars)
}

/// Every text pruning may index in `m`: its text and each string of its tool-call arguments.
fn indexable(m: &Message) -> Vec<String> {
    fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
            Value::Object(o) => o.values().for_each(|x| strings(x, out)),
            _ => {}
        }
    }
    let mut out = vec![m.text().into_owned()];
    for c in m.tool_calls() {
        out.push(c.function.arguments.clone());
        if let Ok(v) = serde_json::from_str::<Value>(&c.function.arguments) {
            strings(&v, &mut out);
        }
    }
    out
}

/// Asserts [`names_index`] and the reference agree on `text` at each bound of `maxes`;
/// whether the fast path skipped the redaction.
fn assert_same_index(text: &str, maxes: &[usize], what: &str) -> bool {
    for &max in maxes {
        assert_eq!(
            names_index(text, max),
            names_index_reference(text, max),
            "{what} at {max}"
        );
    }
    !may_hold_names(text)
}

/// The fast path changes no index: every text of the 21 shared fixtures (each message's text,
/// each tool call's arguments and every string in them) gets the index the always-redacting
/// reference gives at the default bound.
#[test]
#[allow(clippy::print_stderr, reason = "how many texts took the fast path")]
fn names_index_matches_the_reference_on_the_fixtures() {
    let Some(files) = test_support::fixture_bytes() else {
        return;
    };
    let (mut texts, mut skipped) = (0, 0);
    for (name, bytes) in &files {
        let (msgs, _) = crate::parse::parse_transcript(bytes).expect("fixtures parse");
        for (i, m) in msgs.iter().enumerate() {
            for text in indexable(m) {
                texts += 1;
                skipped += usize::from(assert_same_index(
                    &text,
                    &[defaults::PRUNE_NAMES_MAX_CHARS],
                    &format!("{name} message {i}"),
                ));
            }
        }
    }
    eprintln!("names_index: {skipped} of {texts} fixture texts need no redaction");
}

/// The same against the issue 22 corpus, where redaction does cut runs: each planted secret
/// alone, and between text with names and without.
#[test]
fn names_index_matches_the_reference_on_planted_secrets() {
    for planted in test_support::secrets::credentials() {
        let t = &planted.text;
        for text in [
            t.clone(),
            format!("src/main.rs: ok\n{t}\nparse_args done"),
            format!("plain words only\n{t}\nmore plain words"),
            format!("path/to/{t}"),
            format!("{t}_suffix12"),
        ] {
            assert_same_index(&text, &[400, 10_000], &planted.family);
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, .. Default::default() })]

    /// Generated text of name characters, separators, brackets and secret-shaped pieces.
    #[test]
    fn names_index_matches_the_reference(parts in proptest::collection::vec(
        proptest::prop_oneof![
            "[a-zA-Z0-9_./ -]{0,12}",
            "[a-z]{1,8}",
            proptest::strategy::Just("[REDACTED]".to_owned()),
            proptest::strategy::Just("password=".to_owned()),
            proptest::strategy::Just("ghp_".to_owned()),
            proptest::strategy::Just("AKIA".to_owned()),
            "[A-Za-z0-9]{16,40}",
            "[ \n:=\"'{}\\[\\]]{1,3}",
        ],
        0..24,
    )) {
        let text = parts.concat();
        for max in [0, 10, 400] {
            proptest::prop_assert_eq!(names_index(&text, max), names_index_reference(&text, max));
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 2_048, .. Default::default() })]

    /// The pair search of [`may_hold_names`] never rules out a text the exact scan accepts
    /// (texts over several 64-byte blocks, names across their edges).
    #[test]
    fn the_pair_search_keeps_every_text_with_a_name_run(
        dense in "[a-cA-C0-2_./ \\-:é]{0,300}",
        // Short runs, only some of them long enough and marked: both answers.
        sparse in "([a-cA-C]{0,5}[0-2_./\\-]?[a-c]{0,2}[ :é]{1,2}){0,60}",
    ) {
        for text in [dense, sparse] {
            proptest::prop_assert_eq!(may_hold_names(&text), has_name_run(text.as_bytes()));
        }
    }
}
