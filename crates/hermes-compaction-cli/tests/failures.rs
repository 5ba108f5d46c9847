//! Every failure says so: micro passes that could not run exit 1 and write nothing; bad
//! session ids and telemetry paths exit 2; output files keep their mode.

use std::path::Path;

use crate::common::{run, s, texts, tool_session, write_jsonl};
use crate::fake_openai::{Reply, config, serve};

/// `compact --mode micro` against an endpoint that fails as `reply` says, without the
/// extractive fallback: exit 1, the error names the failed pass, no output is created or
/// overwritten.
fn micro_failure_exits_1(reply: Reply, class: &str) {
    let server = serve(reply, None);
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let cfg = config(dir.path(), &server.url, false);
    let existing = dir.path().join("existing.jsonl");
    std::fs::write(&existing, "keep me\n").unwrap();
    let fresh = dir.path().join("fresh.jsonl");
    for out in [&existing, &fresh] {
        let o = run(&[
            "compact",
            "-i",
            s(&input),
            "-o",
            s(out),
            "--mode",
            "micro",
            "--context-length",
            "32000",
            "--config",
            s(&cfg),
        ]);
        let (stdout, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(1), "{reply:?}: {stdout} {stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            stderr.starts_with("error: the micro pass failed: the summarizer failed"),
            "{reply:?}: {stderr}"
        );
        assert!(stderr.contains(class), "{reply:?}: {stderr}");
        assert!(stderr.contains("nothing was written"), "{stderr}");
        assert!(!stderr.contains("run the tests"), "content in {stderr}");
    }
    assert!(server.hits() >= 1);
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "keep me\n");
    assert!(!fresh.exists());
}

/// A failed pass leaves no telemetry file either: a new `--telemetry` path is not created and
/// an existing one keeps what it held.
#[test]
fn a_failed_pass_creates_no_telemetry_file() {
    let server = serve(Reply::ServerError, None);
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let cfg = config(dir.path(), &server.url, false);
    let out = dir.path().join("out.jsonl");
    let existing = dir.path().join("existing.log");
    std::fs::write(&existing, "earlier run\n").unwrap();
    let fresh = dir.path().join("fresh.log");
    for log in [&existing, &fresh] {
        let o = compact_to(
            &input,
            &out,
            &[
                "--mode",
                "micro",
                "--config",
                s(&cfg),
                "--telemetry",
                s(log),
            ],
        );
        let stderr = texts(&o).1;
        assert_eq!(o.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("nothing was written"), "{stderr}");
    }
    assert!(!fresh.exists(), "a failed pass created the telemetry file");
    assert_eq!(std::fs::read_to_string(&existing).unwrap(), "earlier run\n");
    assert!(!out.exists());
}

#[test]
fn micro_with_a_failing_summarizer_exits_1() {
    micro_failure_exits_1(Reply::ServerError, "(transient)");
}

#[test]
fn micro_with_an_empty_summary_exits_1() {
    micro_failure_exits_1(Reply::Empty, "(empty_output)");
}

#[test]
fn micro_with_a_hanging_summarizer_exits_1() {
    micro_failure_exits_1(Reply::Hang, "(transient)");
}

/// A summarizer that hangs is paid for once, not once per pass:
/// 30 micro passes then run on the extractive fallback without calling it, exit 0, and stderr
/// says so. The first failure took a whole request timeout (1 s), so it opened the breaker at
/// once: one call, not three.
#[test]
fn a_hanging_summarizer_is_skipped_after_three_failures() {
    let server = serve(Reply::Hang, None);
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(60, 6_000));
    // One exchange per pass (no economic gate), so each of the 30 passes needs a summary.
    let cfg = dir.path().join("hang.toml");
    std::fs::write(
        &cfg,
        format!(
            "[compression]\nfallback_to_extractive = true\ncache_profile = \"none\"\n\n\
             [auxiliary.compression]\nprovider = \"openai\"\nmodel = \"fake\"\n\
             base_url = \"{}\"\napi_key_env = \"\"\ntimeout = 1\nmax_retries = 0\n",
            server.url
        ),
    )
    .unwrap();
    let out = dir.path().join("out.jsonl");
    let o = run(&[
        "compact",
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--mode",
        "micro",
        "--passes",
        "30",
        "--context-length",
        "32000",
        "--config",
        s(&cfg),
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout} {stderr}");
    assert!(stdout.contains("passes=30"), "{stdout}");
    assert!(
        stderr.contains("warning: 30 passes used the extractive fallback"),
        "{stderr}"
    );
    assert_eq!(server.hits(), 1, "{stderr}");
    assert!(stderr.contains("29 of them did not call it"), "{stderr}");
}

#[test]
fn session_micro_whose_commit_is_stale_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    let db_arg = s(&db).to_owned();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let o = run(&[
        "session",
        "import",
        s(&input),
        "--db",
        &db_arg,
        "--session",
        "s1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    // Another writer compacts the session while the micro pass waits for its summary.
    let writer_db = db_arg.clone();
    let server = serve(
        Reply::Summary,
        Some(Box::new(move || {
            let o = run(&[
                "session",
                "compact",
                "--db",
                &writer_db,
                "--session",
                "s1",
                "--mode",
                "prune",
                "--context-length",
                "32000",
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
        })),
    );
    let cfg = config(dir.path(), &server.url, true);
    let o = run(&[
        "session",
        "compact",
        "--db",
        &db_arg,
        "--session",
        "s1",
        "--mode",
        "micro",
        "--context-length",
        "32000",
        "--config",
        s(&cfg),
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(1), "{stdout} {stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.starts_with("error: the micro pass failed"),
        "{stderr}"
    );
    assert!(stderr.contains("stale generation"), "{stderr}");
    // The generation the store holds, read back after the refused commit (the other writer's),
    // and where this run started.
    assert!(
        stderr.contains("the store is at generation 1 (it was at 0 when the run started)"),
        "{stderr}"
    );
}

fn compact_to(input: &Path, output: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "compact",
        "-i",
        s(input),
        "-o",
        s(output),
        "--context-length",
        "32000",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[cfg(unix)]
#[test]
fn output_files_keep_their_mode_and_new_ones_get_the_umask_default() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    for kept in [0o644, 0o640, 0o604] {
        let out = dir.path().join(format!("out-{kept:o}.jsonl"));
        std::fs::write(&out, "old\n").unwrap();
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(kept)).unwrap();
        let o = compact_to(&input, &out, &[]);
        assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
        assert_ne!(std::fs::read_to_string(&out).unwrap(), "old\n");
        assert_eq!(mode(&out), kept);
    }
    // A new file: what creating a file here gives (the umask's default), not 0600.
    let reference = dir.path().join("reference");
    std::fs::File::create(&reference).unwrap();
    let fresh = dir.path().join("fresh.jsonl");
    let o = compact_to(&input, &fresh, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    assert_eq!(mode(&fresh), mode(&reference));
}

/// A symbolic link as `--output` stays a link (relative, absolute, chained, dangling): the
/// file it names gets the compacted transcript.
#[cfg(unix)]
#[test]
fn a_symlinked_output_keeps_its_link() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let target = real.join("target.jsonl");
    std::fs::write(&target, "old\n").unwrap();
    let relative = dir.path().join("relative.jsonl");
    symlink("real/target.jsonl", &relative).unwrap();
    let absolute = dir.path().join("absolute.jsonl");
    symlink(&target, &absolute).unwrap();
    let chained = dir.path().join("chained.jsonl");
    symlink("relative.jsonl", &chained).unwrap();
    for link in [&relative, &absolute, &chained] {
        std::fs::write(&target, "old\n").unwrap();
        let o = compact_to(&input, link, &[]);
        assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
        assert!(
            std::fs::symlink_metadata(link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        let written = std::fs::read_to_string(&target).unwrap();
        assert!(
            written.starts_with("{\"role\""),
            "{link:?} wrote {written:.40}"
        );
    }
    let dangling = dir.path().join("dangling.jsonl");
    symlink("real/new.jsonl", &dangling).unwrap();
    let o = compact_to(&input, &dangling, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    assert!(
        std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(real.join("new.jsonl").is_file());
    // No temporary file left behind anywhere.
    for d in [dir.path(), real.as_path()] {
        for e in std::fs::read_dir(d).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.starts_with(".hermes-compaction-"), "{name}");
        }
    }
}

/// A telemetry file that cannot be written (a full disk: `/dev/full`) fails the run, exit 1,
/// naming the file, and the output is not written.
#[cfg(target_os = "linux")]
#[test]
fn a_telemetry_file_that_cannot_be_written_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let out = dir.path().join("out.jsonl");
    let o = compact_to(
        &input,
        &out,
        &["--mode", "batch", "--telemetry", "/dev/full"],
    );
    let stderr = texts(&o).1;
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot write the telemetry file /dev/full"),
        "{stderr}"
    );
    assert!(!out.exists(), "no output after a telemetry failure");
}

#[test]
fn invalid_session_ids_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(3, 100));
    let long = "x".repeat(300);
    for id in ["", "a\tb", long.as_str()] {
        for args in [
            vec![
                "session",
                "import",
                s(&input),
                "--db",
                s(&db),
                "--session",
                id,
            ],
            vec!["session", "export", "--db", s(&db), "--session", id],
            vec!["session", "compact", "--db", s(&db), "--session", id],
        ] {
            let o = run(&args);
            let (stdout, stderr) = texts(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stdout.is_empty());
            assert!(stderr.contains("invalid session id"), "{stderr}");
        }
    }
    assert!(!db.exists(), "no store was created");
    // A file name that is no valid id needs --session.
    let tabbed = write_jsonl(dir.path(), "a\tb.jsonl", &tool_session(3, 100));
    let o = run(&["session", "import", s(&tabbed), "--db", s(&db)]);
    let (_, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("pass --session"), "{stderr}");
    // A store URL no backend reads is a usage error too.
    let o = run(&[
        "session",
        "export",
        "--db",
        "mysql://user:pw-not-shown@h/db",
        "--session",
        "s",
    ]);
    let (_, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    // The schemes it lists are the ones the store's backends declare; the URL is not shown.
    assert!(
        stderr.contains("`mysql`") && stderr.contains("sqlite:, postgres:, postgresql:"),
        "{stderr}"
    );
    assert!(!stderr.contains("pw-not-shown"), "{stderr}");
}

#[test]
fn telemetry_must_not_be_the_input_or_the_output() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let original = std::fs::read(&input).unwrap();
    let out = dir.path().join("o.jsonl");
    std::fs::write(&out, "keep me\n").unwrap();
    let mut same = vec![
        input.clone(),
        dir.path().join(".").join("s.jsonl"),
        out.clone(),
    ];
    #[cfg(unix)]
    {
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let hard = dir.path().join("hard.jsonl");
        std::fs::hard_link(&input, &hard).unwrap();
        same.extend([link, hard]);
    }
    for telemetry in &same {
        let o = compact_to(&input, &out, &["--telemetry", s(telemetry)]);
        let (stdout, stderr) = texts(&o);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{}: {stderr}",
            telemetry.display()
        );
        assert!(stdout.is_empty());
        assert!(stderr.contains("--telemetry"), "{stderr}");
        assert_eq!(std::fs::read(&input).unwrap(), original);
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me\n");
    }
    // A new output named by the telemetry path is refused too.
    let new_out = dir.path().join("new.jsonl");
    let o = compact_to(&input, &new_out, &["--telemetry", s(&new_out)]);
    assert_eq!(o.status.code(), Some(2), "{}", texts(&o).1);
    assert!(!new_out.exists());
}

#[test]
fn a_prune_pass_is_one_telemetry_event() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let out = dir.path().join("o.jsonl");
    let log = dir.path().join("t.log");
    let o = compact_to(&input, &out, &["--mode", "prune", "--telemetry", s(&log)]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("outcome=pruned"), "{stdout}");
    let text = std::fs::read_to_string(&log).unwrap();
    let events: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("telemetry: {"))
        .collect();
    assert_eq!(events.len(), 1, "{text}");
    assert!(events[0].contains("\"prune_only\""), "{}", events[0]);
    assert!(!text.contains("run the tests"));
}

#[test]
fn passes_outside_micro_mode_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(30, 6_000));
    let out = dir.path().join("o.jsonl");
    for mode in ["batch", "prune"] {
        let o = compact_to(&input, &out, &["--mode", mode, "--passes", "3"]);
        let (_, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(2), "{mode}: {stderr}");
        assert!(stderr.contains("--passes"), "{stderr}");
        assert!(!out.exists());
    }
}
