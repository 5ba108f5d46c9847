//! Issue 33, item 2: no credential of the hostile shapes leaves through any surface of the
//! binary: `compact --dry-run` (text and JSON), the messages `compact` writes (prune lines and
//! their names indexes, the batch summary and its ledger), `session diff`, `session history`;
//! and `compression.redaction_rules` loads a gitleaks-format file, naming every rule it cannot
//! use. Bodies are generated here from seeds (not the corpus strings).

use hermes_compaction::core::{Message, ToolCall};
use test_support::secrets::Gen;

use crate::common::{read_messages, run, s, texts, write_jsonl};

/// Base64 of `bytes` (standard alphabet, padded).
fn b64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let v = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                A[((v >> (18 - 6 * i)) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

const URL64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Planted texts and the random bodies that must never be printed or written.
fn shapes(seed: u64) -> (Vec<String>, Vec<String>) {
    let mut g = Gen::new(seed);
    let mut texts = Vec::new();
    let mut bodies = Vec::new();
    let mut add = |t: String, b: Vec<String>| {
        texts.push(t);
        bodies.extend(b);
    };
    let sess = g.b62(32);
    add(format!("Cookie: sessionid={sess}; lang=en"), vec![sess]);
    let pass = g.password(18);
    let docker = b64(format!(
        r#"{{"auths":{{"r.example.com":{{"auth":"{}"}}}}}}"#,
        b64(format!("ci:{pass}").as_bytes())
    )
    .as_bytes());
    add(
        format!(".dockerconfigjson: {docker}"),
        vec![pass, docker[docker.len() - 20..].to_owned()],
    );
    let gh = g.b62(36);
    let wrapped = b64(format!("GITHUB_TOKEN=ghp_{gh}").as_bytes());
    add(format!("echo {wrapped} | base64 -d"), vec![gh, wrapped]);
    let cn = g.password(14);
    add(format!("数据库密码：{cn}"), vec![cn]);
    let mg = g.hex(32);
    add(format!("MAILGUN_API_KEY=key-{mg}"), vec![mg]);
    let hvs = g.pick(URL64, 95);
    add(format!("VAULT_TOKEN=hvs.{hvs}"), vec![hvs]);
    let unseal = g.b64(44);
    add(format!("Unseal Key 1: {unseal}"), vec![unseal]);
    let dp = g.b62(43);
    add(format!("doppler secrets --token dp.pt.{dp}"), vec![dp]);
    let okta = g.pick(URL64, 40);
    add(format!("Authorization: SSWS 00{okta}"), vec![okta]);
    let pg = g.password(20);
    add(format!("db.internal:5432:app:app_user:{pg}"), vec![pg]);
    let tg = g.pick(URL64, 33);
    add(
        format!("https://api.telegram.org/bot{}:AA{tg}/getMe", g.digits(10)),
        vec![tg],
    );
    let d = g.b62(43);
    add(
        format!(r#"{{"kty":"EC","crv":"P-256","d":"{d}"}}"#),
        vec![d],
    );
    (texts, bodies)
}

/// A session whose middle holds every shape in long tool outputs (pruned), in commands (the
/// ledger), in an assistant's text (names), and a token split across two neighbouring outputs.
fn session(seed: u64) -> (Vec<Message>, Vec<String>) {
    let (planted, mut bodies) = shapes(seed);
    let mut g = Gen::new(seed + 1000);
    let split = format!("ghp_{}", g.b62(36));
    let (a, b) = split.split_at(18);
    bodies.push(split[4..18].to_owned());
    bodies.push(b.to_owned());
    let mut msgs = vec![Message::system("You are a coding agent.")];
    let filler = "log line of the build output, nothing secret here\n".repeat(60);
    for (i, p) in planted.iter().enumerate() {
        let id = format!("call_{i}");
        msgs.push(Message::user(format!("request {i}: inspect the config")));
        let args = serde_json::json!({ "cmd": format!("printf '%s' \"{p}\"") }).to_string();
        msgs.push(Message::assistant_tool_calls(
            format!("Looking at it: {p}"),
            vec![ToolCall::function(&id, "run_shell", args)],
        ));
        msgs.push(Message::tool_result(&id, format!("{filler}{p}\n{filler}")));
        msgs.push(Message::assistant(format!("request {i} done")));
    }
    // The split token: the end of one output, the start of the next.
    msgs.push(Message::user("print the token file in two chunks"));
    for (i, half) in [format!("{filler}{a}"), format!("{b}\n{filler}")]
        .into_iter()
        .enumerate()
    {
        let id = format!("call_split_{i}");
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "run_shell",
                "{\"cmd\":\"head -c 4096 token\"}",
            )],
        ));
        msgs.push(Message::tool_result(&id, half));
    }
    msgs.push(Message::assistant("done"));
    for i in 0..8 {
        msgs.push(Message::user(format!("later request {i}")));
        msgs.push(Message::assistant(format!("later answer {i}")));
    }
    (msgs, bodies)
}

/// The bodies with an 8-character run in `text` (their index only, never the text).
fn leaks(text: &str, bodies: &[String]) -> Vec<usize> {
    bodies
        .iter()
        .enumerate()
        .filter(|(_, b)| {
            let c: Vec<char> = b.chars().collect();
            c.windows(8.min(c.len()))
                .any(|w| text.contains(&w.iter().collect::<String>()))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The lines of `text` that show a body (synthetic values, for a failure message).
fn lines_with(text: &str, bodies: &[String]) -> String {
    text.lines()
        .filter(|l| !leaks(l, bodies).is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_hostile_shape_reaches_dry_run_or_the_written_messages() {
    for seed in [41, 42] {
        let (msgs, bodies) = session(seed);
        let dir = tempfile::tempdir().unwrap();
        let input = write_jsonl(dir.path(), "in.jsonl", &msgs);
        let wire_in: Vec<String> = msgs.iter().map(Message::to_wire_json).collect();
        // The names indexes on (off by default), so their surface is checked too.
        let config = dir.path().join("names.toml");
        std::fs::write(&config, "[compression]\nprune_names_max_chars = 400\n").unwrap();
        for mode in ["prune", "batch"] {
            for json in [false, true] {
                let mut args = vec![
                    "compact",
                    "--input",
                    s(&input),
                    "--mode",
                    mode,
                    "--dry-run",
                    "--context-length",
                    "16000",
                    "--config",
                    s(&config),
                ];
                if json {
                    args.push("--json");
                }
                let o = run(&args);
                let (stdout, stderr) = texts(&o);
                assert_eq!(o.status.code(), Some(0), "{mode}: {stderr}");
                let left = leaks(&stdout, &bodies);
                assert!(
                    left.is_empty(),
                    "{mode} dry run (json {json}), seed {seed}: bodies {left:?}"
                );
            }
            let out = dir.path().join(format!("out-{mode}.jsonl"));
            let o = run(&[
                "compact",
                "--input",
                s(&input),
                "--output",
                s(&out),
                "--mode",
                mode,
                "--context-length",
                "16000",
                "--config",
                s(&config),
            ]);
            assert_eq!(o.status.code(), Some(0), "{mode}: {}", texts(&o).1);
            let written: Vec<String> = read_messages(&out)
                .iter()
                .map(Message::to_wire_json)
                .filter(|m| !wire_in.contains(m))
                .collect();
            assert!(!written.is_empty(), "{mode} rewrote nothing");
            let joined = written.join("\n");
            let left = leaks(&joined, &bodies);
            assert!(
                left.is_empty(),
                "{mode} written messages, seed {seed}: bodies {left:?}"
            );
        }
    }
}

#[test]
fn no_hostile_shape_reaches_session_diff_or_history() {
    let (msgs, bodies) = session(43);
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "in.jsonl", &msgs);
    let db = format!("sqlite://{}", dir.path().join("s.db").display());
    let o = run(&[
        "session",
        "import",
        s(&input),
        "--db",
        &db,
        "--session",
        "sec",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let o = run(&[
        "session",
        "compact",
        "--db",
        &db,
        "--session",
        "sec",
        "--mode",
        "prune",
        "--context-length",
        "16000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let o = run(&[
        "session",
        "diff",
        "--db",
        &db,
        "--session",
        "sec",
        "--generation",
        "1",
    ]);
    let (diff, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // The diff shows the archived outputs (redacted) and what replaced them.
    assert!(diff.contains("--- archived by generation 1"), "{diff}");
    assert!(diff.contains("[REDACTED]"), "{diff}");
    let left = leaks(&diff, &bodies);
    assert!(
        left.is_empty(),
        "session diff: bodies {left:?}\n{}",
        lines_with(&diff, &bodies)
    );
    let o = run(&["session", "history", "--db", &db, "--session", "sec"]);
    let (history, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(leaks(&history, &bodies).is_empty());
}

#[test]
fn redaction_rules_load_a_gitleaks_file_and_name_the_rules_not_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        r#"
title = "team rules"
[extend]
useDefault = true
[[rules]]
id = "acme-internal-token"
regex = '''\b(acmeint_[a-z]{30})\b'''
keywords = ["acmeint_"]
[[rules]]
id = "needs-lookahead"
regex = '''secret(?=[0-9])'''
"#,
    )
    .unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[compression]\nredaction_rules = {:?}\n",
            rules.display().to_string()
        ),
    )
    .unwrap();
    // A token the bundled rules do not know (lower-case letters: not random-looking).
    let mut g = Gen::new(44);
    let body = g.pick("abcdefghijklmnopqrstuvwxyz", 30);
    let mut msgs = vec![Message::system("s")];
    for i in 0..30 {
        let id = format!("c{i}");
        msgs.push(Message::user(format!("q{i}")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(&id, "run_shell", "{\"cmd\":\"env\"}")],
        ));
        msgs.push(Message::tool_result(
            &id,
            format!(
                "{}\nTOKEN acmeint_{body}\n",
                format!("line {i}\n").repeat(300)
            ),
        ));
        msgs.push(Message::assistant(format!("a{i}")));
    }
    let input = write_jsonl(dir.path(), "in.jsonl", &msgs);
    let db = format!("sqlite://{}", dir.path().join("s.db").display());
    let ok = |args: &[&str]| {
        let o = run(args);
        let (stdout, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {stderr}");
        (stdout, stderr)
    };
    ok(&[
        "session",
        "import",
        s(&input),
        "--db",
        &db,
        "--session",
        "r",
    ]);
    let (_, stderr) = ok(&[
        "session",
        "compact",
        "--db",
        &db,
        "--session",
        "r",
        "--mode",
        "prune",
        "--config",
        s(&config),
        "--context-length",
        "16000",
    ]);
    assert!(
        stderr.contains("rule `needs-lookahead` is not in force")
            && stderr.contains("does not compile"),
        "{stderr}"
    );
    let diff = |with: bool| {
        let mut args = vec![
            "session",
            "diff",
            "--db",
            &db,
            "--session",
            "r",
            "--generation",
            "1",
        ];
        if with {
            args.extend(["--config", s(&config)]);
        }
        ok(&args)
    };
    // The bundled rules leave this token alone; the configured file redacts it.
    let (plain, _) = diff(false);
    assert!(
        plain.contains(&body),
        "the check needs a token the bundled rules miss"
    );
    let (redacted, stderr) = diff(true);
    assert!(!redacted.contains(&body[..8]), "{redacted}");
    assert!(redacted.contains("TOKEN [REDACTED]"), "{redacted}");
    assert!(stderr.contains("needs-lookahead"), "{stderr}");
    // A file that is not a ruleset: exit 2, naming the key and the line.
    std::fs::write(&rules, "[[rules]\nid = 1\n").unwrap();
    let o = run(&[
        "compact",
        "--input",
        s(&input),
        "--dry-run",
        "--config",
        s(&config),
        "--context-length",
        "16000",
    ]);
    let (_, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("compression.redaction_rules") && stderr.contains("line 1"),
        "{stderr}"
    );
}
