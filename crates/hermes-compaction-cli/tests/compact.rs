//! `compact` over the shared fixtures and small sessions: every mode keeps the laws.

use std::path::Path;

use hermes_compaction::Config;
use hermes_compaction::core::laws::{self, LawOptions, Pass, PassKind, Protected};
use hermes_compaction::core::{Estimator, Message, Transcript, regions};

use crate::common::{
    fixtures, read_messages, responses_session, run, s, texts, tool_session, write_jsonl,
};

const CONTEXT: u64 = 32_000;

/// The value of `key=` in the one-line summary.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key}= in {line:?}"))
}

/// Runs one mode and checks the laws between input and output; returns the summary line.
fn check_mode(input: &Path, mode: &str, dir: &Path) -> String {
    let output = dir.join(format!("out-{mode}.jsonl"));
    let o = run(&[
        "compact",
        "--input",
        s(input),
        "--output",
        s(&output),
        "--mode",
        mode,
        "--context-length",
        &CONTEXT.to_string(),
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{}: {stderr}", input.display());
    let before = read_messages(input);
    let after = read_messages(&output);
    let line = stdout.trim().to_owned();
    let kind = match (mode, field(&line, "outcome")) {
        (_, "summarized") => PassKind::Batch,
        (_, "pruned") => PassKind::Prune,
        ("micro", _) if field(&line, "passes") != "0" => PassKind::Micro,
        _ => PassKind::Unchanged,
    };
    let protected = protected_of(&before);
    let pass = Pass {
        kind,
        protected,
        options: LawOptions {
            tail_demotion_reported: field(&line, "demoted_tail_outputs") != "0",
            expect_progress: kind != PassKind::Unchanged && mode != "micro",
            ..LawOptions::default()
        },
    };
    let v = laws::check(&before, &after, &pass, &Estimator::default());
    assert!(v.is_empty(), "{} {mode}: {line}: {v:?}", input.display());
    let tokens =
        |m: &[Message]| Transcript::new(m.to_vec(), &Estimator::default()).estimated_total();
    // Law 8: a single micro pass may grow the transcript (the first marker's scaffolding);
    // with no reclaim gate by default it runs on a small transcript too.
    let first_micro_only = mode == "micro" && field(&line, "passes") == "1";
    if kind != PassKind::Unchanged && !first_micro_only {
        assert!(
            tokens(&after) < tokens(&before),
            "{} {mode}: {line}",
            input.display()
        );
    }
    line
}

fn protected_of(before: &[Message]) -> Protected {
    let mut config = Config::default();
    config.model.context_length = CONTEXT;
    let t = Transcript::new(before.to_vec(), &Estimator::default());
    let compacted = before
        .iter()
        .any(|m| hermes_compaction::core::marker::classify(m).is_some());
    let r = regions::partition(
        &t,
        config.window().threshold_tokens(),
        &config.regions(),
        compacted,
    );
    Protected::from_regions(&r)
}

#[test]
fn every_mode_keeps_the_laws_on_every_fixture() {
    let Some(files) = fixtures() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut changed = 0;
    for f in &files {
        for mode in ["batch", "prune", "micro"] {
            let line = check_mode(f, mode, dir.path());
            if field(&line, "passes") != "0" {
                changed += 1;
            }
        }
    }
    // At 32K most fixtures are large enough for real passes.
    assert!(
        changed >= files.len(),
        "only {changed} runs changed anything"
    );
}

#[test]
fn every_mode_keeps_the_laws_on_a_small_session() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    for mode in ["batch", "prune", "micro"] {
        let line = check_mode(&input, mode, dir.path());
        assert_ne!(field(&line, "passes"), "0", "{mode}: {line}");
    }
}

/// Issue 21, item 3: Responses-style calls (`id` differs from `call_id`, the result answers the
/// `call_id`) are accepted, every mode keeps the laws over them (spec section 2, law 2), and
/// the calls that survive keep both fields byte for byte.
#[test]
fn responses_style_calls_compact_in_every_mode() {
    let dir = tempfile::tempdir().unwrap();
    let msgs = responses_session(30, 6_000);
    let input = write_jsonl(dir.path(), "r.jsonl", &msgs);
    for mode in ["batch", "prune", "micro"] {
        let line = check_mode(&input, mode, dir.path());
        assert_ne!(field(&line, "passes"), "0", "{mode}: {line}");
        let after = read_messages(&dir.path().join(format!("out-{mode}.jsonl")));
        let kept: Vec<&Message> = after.iter().filter(|m| m.has_tool_calls()).collect();
        assert!(!kept.is_empty(), "{mode}: no call kept");
        for m in kept {
            let c = &m.tool_calls()[0];
            let n = c.id.strip_prefix("fc_").expect("the item id survives");
            assert_eq!(c.call_id(), format!("call_{n}"), "{mode}");
            let wire = m.to_wire_json();
            assert!(wire.contains(&format!(r#""id":"fc_{n}""#)), "{mode}");
            assert!(wire.contains(&format!(r#""call_id":"call_{n}""#)), "{mode}");
        }
    }
}

/// `--passes N` stops after N passes while there is more to fold (every exchange may go with
/// `micro_compact_min_age_answers = 0`); with the default floor the passes end when nothing
/// eight answers old is left and the transcript is under the threshold.
#[test]
fn micro_stops_at_the_pass_limit() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let any_age = dir.path().join("any-age.toml");
    std::fs::write(
        &any_age,
        "[compression]\nmicro_compact_min_age_answers = 0\n",
    )
    .unwrap();
    let passes = |extra: &[&str]| {
        let out = dir.path().join("o.jsonl");
        let mut args = vec![
            "compact",
            "--input",
            s(&input),
            "--output",
            s(&out),
            "--mode",
            "micro",
            "--passes",
            "2",
            "--context-length",
            "32000",
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        let (stdout, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(0), "{stderr}");
        field(stdout.trim(), "passes").to_owned()
    };
    assert_eq!(passes(&["--config", s(&any_age)]), "2");
    assert_eq!(passes(&[]), "1");
}

#[test]
fn a_json_array_is_accepted_and_jsonl_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let msgs = tool_session(20, 6_000);
    let wire: Vec<serde_json::Value> = msgs.iter().map(Message::to_wire_value).collect();
    let input = dir.path().join("a.json");
    std::fs::write(&input, serde_json::to_string(&wire).unwrap()).unwrap();
    let out = dir.path().join("o.jsonl");
    let o = run(&[
        "compact",
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--context-length",
        "32000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.len() < std::fs::metadata(&input).unwrap().len() as usize,
        "nothing compacted"
    );
    assert!(text.lines().all(|l| l.starts_with('{')));
}

#[test]
fn telemetry_goes_to_the_file_and_the_report_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let out = dir.path().join("o.jsonl");
    let log = dir.path().join("telemetry.log");
    let o = run(&[
        "compact",
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--mode",
        "micro",
        "--context-length",
        "32000",
        "--telemetry",
        s(&log),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines = text
        .lines()
        .filter(|l| l.contains("micro compaction telemetry: {"))
        .count();
    assert!(lines > 0, "{text}");
    // Content-free: no request text from the session.
    assert!(!text.contains("run the tests"));

    let o = run(&["report", s(&log), "--json"]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(v.is_object());
    let o = run(&["report", s(&log), "--per-session"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(!o.stdout.is_empty());
}

#[test]
fn the_openai_summarizer_without_a_key_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(5, 100));
    let cfg = dir.path().join("c.toml");
    std::fs::write(
        &cfg,
        "[auxiliary.compression]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"HERMES_CLI_TEST_NO_SUCH_KEY\"\n",
    )
    .unwrap();
    let out = dir.path().join("o.jsonl");
    let o = run(&[
        "compact",
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--summarizer",
        "openai",
        "--config",
        s(&cfg),
    ]);
    let (_, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("HERMES_CLI_TEST_NO_SUCH_KEY"), "{stderr}");
    assert!(!out.exists());
}

#[test]
fn help_exists_for_every_subcommand() {
    for sub in [
        vec!["--help"],
        vec!["compact", "--help"],
        vec!["simulate", "--help"],
        vec!["report", "--help"],
        vec!["session", "--help"],
        vec!["session", "import", "--help"],
        vec!["session", "export", "--help"],
        vec!["session", "compact", "--help"],
        vec!["demo", "--help"],
    ] {
        let o = run(&sub);
        assert_eq!(o.status.code(), Some(0), "{sub:?}");
        assert!(texts(&o).0.contains("Usage"), "{sub:?}");
    }
    let (help, _) = texts(&run(&["compact", "--help"]));
    assert!(
        help.contains("unknown") || help.contains("other than system"),
        "{help}"
    );
    // Issue 21, item 13: the help says what happens to old image payloads.
    assert!(
        help.contains("newest three image payloads") && help.contains("archived"),
        "{help}"
    );
}

/// `compact --mode micro --passes 40` at 32K on `input`: the laws hold, something was
/// absorbed, and the summary line says whether the result is still over the threshold.
fn micro_compacts(input: &Path, dir: &Path) -> String {
    let output = dir.join("micro-40.jsonl");
    let o = run(&[
        "compact",
        "-i",
        s(input),
        "-o",
        s(&output),
        "--mode",
        "micro",
        "--passes",
        "40",
        "--context-length",
        &CONTEXT.to_string(),
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{}: {stderr}", input.display());
    let line = stdout.trim().to_owned();
    assert_ne!(field(&line, "passes"), "0", "{}: {line}", input.display());
    let before = read_messages(input);
    let after = read_messages(&output);
    let pass = Pass::new(PassKind::Micro, protected_of(&before));
    let v = laws::check(&before, &after, &pass, &Estimator::default());
    assert!(v.is_empty(), "{}: {line}: {v:?}", input.display());
    let tokens =
        |m: &[Message]| Transcript::new(m.to_vec(), &Estimator::default()).estimated_total();
    assert!(
        tokens(&after) < tokens(&before),
        "{}: {line}",
        input.display()
    );
    let over = tokens(&after) >= field(&line, "threshold").parse::<u64>().unwrap();
    assert_eq!(field(&line, "over_threshold"), over.to_string(), "{line}");
    line
}

#[test]
fn micro_compacts_the_example_session() {
    let dir = tempfile::tempdir().unwrap();
    let input = crate::common::repo_root().join("examples/sessions/coding-agent.jsonl");
    micro_compacts(&input, dir.path());
}

/// The long single-turn fixtures micro mode used to leave byte-identical: the in-turn pass
/// (turn progress) absorbs the older part of the current turn, as in an agent loop.
#[test]
fn micro_compacts_long_single_turn_fixtures() {
    let Some(files) = fixtures() else { return };
    let wanted = |p: &Path| {
        let name = p.file_name().unwrap().to_string_lossy();
        [
            "claude-code__spotter-8463c716.jsonl",
            "claude-code__spotter-subagent-a2898e3.jsonl",
            "claude-code__spotter-subagent-aa84377.jsonl",
            "openhands-v1__oas-safety-metrics-gpt4o.jsonl",
        ]
        .contains(&name.as_ref())
    };
    let chosen: Vec<_> = files.iter().filter(|p| wanted(p)).collect();
    assert_eq!(chosen.len(), 4, "{chosen:?}");
    let dir = tempfile::tempdir().unwrap();
    for f in chosen {
        let line = micro_compacts(f, dir.path());
        eprintln!("{}: {line}", f.display());
    }
}

/// Issue 21, item 17: `compact --focus TEXT` hands the focus topic to the summarizer in place
/// of the one derived from the latest request, redacted like every text bound for a summarizer
/// (spec section 6: the library redacts secrets before anything leaves the process). It is a
/// batch option: with another mode it is a usage error (exit 2) and nothing is written.
#[test]
fn focus_reaches_the_summarizer_redacted() {
    use crate::fake_openai::{Reply, config, serve};
    const SECRET: &str = "sk-live0123456789abcdefghijklmnop";
    let server = serve(Reply::Summary, None);
    let dir = tempfile::tempdir().unwrap();
    // Long replies: pruning cannot reach the low-water mark, so the middle is summarized.
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..30 {
        msgs.push(Message::user(format!("request {i}: explain the design")));
        msgs.push(Message::assistant(format!(
            "{i} {}",
            "design notes ".repeat(300)
        )));
    }
    let input = write_jsonl(dir.path(), "s.jsonl", &msgs);
    let cfg = config(dir.path(), &server.url, false);
    let out = dir.path().join("o.jsonl");
    let focus = format!("the flaky migration test (token {SECRET})");
    let o = run(&[
        "compact",
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--context-length",
        "32000",
        "--config",
        s(&cfg),
        "--focus",
        &focus,
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert_eq!(field(stdout.trim(), "outcome"), "summarized", "{stdout}");
    let bodies = server.bodies();
    assert!(!bodies.is_empty());
    for body in &bodies {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        let system = v["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.contains("Focus topic: the flaky migration test (token "),
            "{system}"
        );
        assert!(!system.contains("Focus topic: request 29"), "{system}");
        assert!(!body.contains(SECRET), "the secret reached the summarizer");
        assert!(
            !body.contains(&SECRET[..16]),
            "a part of the secret reached it"
        );
    }
    for mode in ["prune", "micro"] {
        let fresh = dir.path().join(format!("fresh-{mode}.jsonl"));
        let o = run(&[
            "compact",
            "-i",
            s(&input),
            "-o",
            s(&fresh),
            "--mode",
            mode,
            "--focus",
            "x",
        ]);
        let (_, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(2), "{mode}: {stderr}");
        assert!(stderr.contains("--focus"), "{stderr}");
        assert!(!fresh.exists());
    }
}

/// Issue 21, "also noticed": `compact --mode micro` on an over-threshold transcript whose
/// size is in user messages (screenshots) says plainly that micro could not get under the
/// threshold and why, before the summary line.
#[test]
fn micro_says_why_it_cannot_get_under_the_threshold() {
    use hermes_compaction::core::{Content, Part};
    let dir = tempfile::tempdir().unwrap();
    let mut msgs = vec![Message::system("You are a design reviewer.")];
    for i in 0..40 {
        let mut m = Message::user("");
        m.set_content(Some(Content::Parts(vec![
            Part::text_part(format!("is screen {i} aligned?")),
            Part(serde_json::json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{i}{}", "iVBORw0K".repeat(500))}})),
        ])));
        msgs.push(m);
        msgs.push(Message::assistant(format!(
            "screen {i}: the header is 2px off"
        )));
    }
    let input = write_jsonl(dir.path(), "shots.jsonl", &msgs);
    let output = dir.path().join("out.jsonl");
    let o = run(&[
        "compact",
        "-i",
        s(&input),
        "-o",
        s(&output),
        "--mode",
        "micro",
        "--context-length",
        &CONTEXT.to_string(),
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let mut lines = stdout.lines();
    let note = lines.next().unwrap();
    assert!(
        note.starts_with("note: micro passes cannot bring this transcript under the threshold"),
        "{stdout}"
    );
    assert!(
        note.contains("user messages") && note.contains("--mode batch"),
        "{note}"
    );
    let line = lines.next().unwrap();
    assert_eq!(field(line, "over_threshold"), "true", "{line}");
}

/// Issue 21, item 14 (through `hermes-compaction compact`): the only user turn is an image;
/// the batch pass still leaves a user message with text, the continuation, beside the summary,
/// and the summary is not the first user-role text (spec section 1, "Summary marker"; section
/// 2, law 3). The laws hold, the continuation included.
#[test]
fn an_image_only_user_turn_still_leaves_a_user_message_with_text() {
    use hermes_compaction::core::marker;
    use hermes_compaction::core::{Content, Part};
    let dir = tempfile::tempdir().unwrap();
    let mut image = Message::user("");
    image.set_content(Some(Content::Parts(vec![Part(serde_json::json!({
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="}
    }))])));
    let mut msgs = vec![
        Message::system("You are a computer-use agent."),
        image.clone(),
    ];
    for i in 0..60 {
        let id = format!("call_{i}");
        // What the agent says between calls is no tool output: pruning cannot reclaim it.
        msgs.push(Message::assistant_tool_calls(
            format!("step {i}: the window title changed, checking again. ").repeat(30),
            vec![hermes_compaction::core::ToolCall::function(
                &id,
                "run_shell",
                "{\"cmd\":\"xdotool getactivewindow\"}",
            )],
        ));
        msgs.push(Message::tool_result(&id, format!("window {i}")));
    }
    msgs.push(Message::assistant("The dialog is open."));
    let input = write_jsonl(dir.path(), "image-only.jsonl", &msgs);
    let line = check_mode(&input, "batch", dir.path());
    assert_eq!(field(&line, "outcome"), "summarized", "{line}");
    let after = read_messages(&dir.path().join("out-batch.jsonl"));
    assert!(after.contains(&image), "the user's turn survives");
    let first_text = after
        .iter()
        .position(|m| m.is_user() && m.has_visible_text())
        .expect("a user message with text survives");
    assert!(
        marker::is_continuation(&after[first_text]),
        "the first user-role text is {:?}",
        after[first_text].text()
    );
    assert_eq!(
        after.iter().filter(|m| marker::is_continuation(m)).count(),
        1
    );
    let beside = |i: usize| after.get(i).is_some_and(marker::is_summary);
    assert!(
        beside(first_text + 1) || first_text.checked_sub(1).is_some_and(beside),
        "the continuation sits beside the summary"
    );
}

/// Issue 21, "also noticed", a Codex-style session (Responses-style calls, one long turn) over
/// the threshold: `compact --mode micro` makes progress or says why it could not.
#[test]
fn micro_on_a_codex_style_session_makes_progress_or_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut msgs = vec![
        Message::system("You are Codex."),
        Message::user("port the parser"),
    ];
    for i in 0..80 {
        msgs.push(
            Message::from_json(&format!(
                r#"{{"role":"assistant","content":null,"tool_calls":[{{"id":"fc_{i}","call_id":"call_{i}","type":"function","function":{{"name":"shell","arguments":"{{\"cmd\":[\"rg\",\"fn parse\"]}}"}}}}]}}"#
            ))
            .unwrap(),
        );
        msgs.push(Message::tool_result(
            format!("call_{i}"),
            format!("src/parse.rs:{i}: fn parse_{i}() {{}}\n").repeat(60),
        ));
    }
    let input = write_jsonl(dir.path(), "codex.jsonl", &msgs);
    let output = dir.path().join("out.jsonl");
    let o = run(&[
        "compact",
        "-i",
        s(&input),
        "-o",
        s(&output),
        "--mode",
        "micro",
        "--context-length",
        &CONTEXT.to_string(),
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let before = read_messages(&input);
    let after = read_messages(&output);
    let tokens =
        |m: &[Message]| Transcript::new(m.to_vec(), &Estimator::default()).estimated_total();
    assert!(
        tokens(&after) < tokens(&before) || stdout.starts_with("note: micro passes cannot"),
        "micro left it unchanged without a word: {stdout}"
    );
    let line = stdout.lines().last().unwrap();
    assert_ne!(field(line, "passes"), "0", "{stdout}");
}
