//! `compact --dry-run`: the preview of the pass, printed or as JSON; nothing written.

use crate::common::{run, s, texts, tool_session, write_jsonl};

/// Runs `compact --dry-run` over `msgs` (message `pin` pinned) and returns stdout, checking
/// that nothing but the input exists afterwards and the input is unchanged.
fn dry_run(mode: &str, mut msgs: Vec<hermes_compaction::core::Message>, pin: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    msgs[pin].meta_mut().pinned = true;
    let input = write_jsonl(dir.path(), "in.jsonl", &msgs);
    let before = std::fs::read(&input).unwrap();
    let o = run(&[
        "compact",
        "--input",
        s(&input),
        "--mode",
        mode,
        "--dry-run",
        "--context-length",
        "16000",
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{mode}: {stderr}");
    let header = stdout.lines().next().unwrap();
    assert!(header.starts_with("dry run: pass="), "{header}");
    assert!(
        header.contains(&format!("messages={}", msgs.len())),
        "{header}"
    );
    assert!(stdout.contains("kept verbatim"), "{mode}: {stdout}");
    assert_eq!(std::fs::read(&input).unwrap(), before);
    let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(files.len(), 1, "nothing but the input");
    stdout
}

#[test]
fn dry_run_prints_every_fate_and_writes_nothing() {
    // Large outputs: pruning is enough.
    let out = dry_run("prune", tool_session(60, 3_000), 2 + 4 * 10);
    assert!(out.contains("pass=prune"), "{out}");
    assert!(
        out.contains("run_shell") && out.contains("pruned -> [pruned] run_shell output"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim_start().starts_with("42 ") && l.ends_with("pinned, kept")),
        "{out}"
    );
    // Small outputs, many turns: a summary.
    let out = dry_run("batch", tool_session(150, 300), 41);
    assert!(out.contains("pass=batch"), "{out}");
    assert!(
        out.contains("summary 0: batch marker for messages"),
        "{out}"
    );
    assert!(out.contains("summarized (summary 0)"), "{out}");
    assert!(out.contains("pinned, kept"), "{out}");
    let out = dry_run("micro", tool_session(150, 300), 41);
    assert!(out.contains("pass=micro"), "{out}");
    assert!(out.contains("summarized (summary 0)"), "{out}");
}

#[test]
fn dry_run_json_is_the_preview_as_data() {
    let dir = tempfile::tempdir().unwrap();
    let msgs = tool_session(60, 3_000);
    let input = write_jsonl(dir.path(), "in.jsonl", &msgs);
    let o = run(&[
        "compact",
        "--input",
        s(&input),
        "--dry-run",
        "--json",
        "--context-length",
        "16000",
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(v["kind"], "prune");
    let messages = v["messages"].as_array().unwrap();
    assert_eq!(messages.len(), msgs.len());
    assert_eq!(messages[0]["fate"]["fate"], "kept");
    assert_eq!(messages[0]["role"], "system");
    let pruned = messages
        .iter()
        .find(|m| m["fate"]["fate"] == "pruned")
        .unwrap();
    assert_eq!(pruned["tool"], "run_shell");
    assert!(pruned["fate"]["one_liner"].as_str().unwrap().len() > 5);
    assert!(v["tokens_after"].as_u64().unwrap() < v["tokens_before"].as_u64().unwrap());
    assert_eq!(v["summaries"].as_array().unwrap().len(), 0);
}

#[test]
fn dry_run_usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "in.jsonl", &tool_session(3, 30));
    let out = dir.path().join("out.jsonl");
    for args in [
        vec!["compact", "--input", s(&input), "--json"],
        vec![
            "compact",
            "--input",
            s(&input),
            "--dry-run",
            "--output",
            s(&out),
        ],
        vec!["compact", "--input", s(&input)],
        vec![
            "compact",
            "--input",
            s(&input),
            "--dry-run",
            "--passes",
            "2",
            "--mode",
            "micro",
        ],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(!out.exists());
    }
}

/// `--profile NAME` applies `[profiles.NAME]` of the configuration over `[compression]`; an
/// unknown profile or a bad key in it exits 2 and writes nothing.
#[test]
fn profiles_apply_over_compression_and_bad_ones_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "in.jsonl", &tool_session(60, 3_000));
    let config = dir.path().join("hermes.toml");
    std::fs::write(
        &config,
        "[profiles.subagent]\nthreshold = 0.9\n[profiles.broken]\nno_such_key = 1\n",
    )
    .unwrap();
    let out = dir.path().join("out.jsonl");
    let threshold = |profile: Option<&str>| -> String {
        let mut args = vec![
            "compact",
            "--input",
            s(&input),
            "--output",
            s(&out),
            "--mode",
            "prune",
            "--context-length",
            "32000",
            "--config",
            s(&config),
        ];
        if let Some(p) = profile {
            args.extend(["--profile", p]);
        }
        let o = run(&args);
        let (stdout, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(0), "{stderr}");
        stdout
            .split_whitespace()
            .find_map(|w| w.strip_prefix("threshold="))
            .unwrap()
            .to_owned()
    };
    // 0.9 of the 32,000-token window; the default policy's is lower.
    assert_eq!(threshold(Some("subagent")), "28800");
    assert_ne!(threshold(None), "28800");
    std::fs::remove_file(&out).unwrap();
    for bad in ["nope", "broken"] {
        let o = run(&[
            "compact",
            "--input",
            s(&input),
            "--output",
            s(&out),
            "--config",
            s(&config),
            "--profile",
            bad,
        ]);
        let (_, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains(&format!("profile `{bad}`")), "{stderr}");
        assert!(!out.exists());
    }
}
