//! Bad inputs: exit 2, `error: FILE:LINE: reason`, no output file created or overwritten,
//! no panic.

use std::path::Path;

use crate::common::{run, s, texts, tool_session, write_jsonl};
use hermes_compaction::core::parse;

/// Runs every mode on `input` with an output that already exists, and checks the error.
fn check(input: &Path, expect_position: &str, expect_reason: &str) {
    for mode in ["batch", "prune", "micro"] {
        let dir = input.parent().unwrap();
        let out = dir.join("existing-output.jsonl");
        std::fs::write(&out, "keep me\n").unwrap();
        let fresh = dir.join("fresh-output.jsonl");
        for target in [&out, &fresh] {
            let o = run(&["compact", "-i", s(input), "-o", s(target), "--mode", mode]);
            let (stdout, stderr) = texts(&o);
            assert_eq!(o.status.code(), Some(2), "{mode}: {stderr}");
            assert!(stdout.is_empty(), "{stdout}");
            let want = format!("error: {}:{expect_position}: ", input.display());
            assert!(
                stderr.starts_with(&want),
                "{mode}: want {want:?}, got {stderr:?}"
            );
            assert!(stderr.contains(expect_reason), "{mode}: {stderr}");
            assert!(!stderr.contains("panicked"), "{stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
        }
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep me\n");
        assert!(!fresh.exists());
        // No temporary file left behind either.
        let leftovers = std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".hermes-compaction-")
            })
            .count();
        assert_eq!(leftovers, 0);
    }
}

fn file(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

const GOOD: &str =
    "{\"role\":\"system\",\"content\":\"s\"}\n{\"role\":\"user\",\"content\":\"hi\"}\n";

#[test]
fn unreadable_file() {
    let dir = tempfile::tempdir().unwrap();
    check(
        &dir.path().join("missing.jsonl"),
        "0",
        "cannot read the file: no such file",
    );
    let sub = dir.path().join("a-directory.jsonl");
    std::fs::create_dir(&sub).unwrap();
    check(&sub, "0", "cannot read the file");
}

#[test]
fn empty_file() {
    let dir = tempfile::tempdir().unwrap();
    check(
        &file(dir.path(), "empty.jsonl", b""),
        "0",
        "empty transcript",
    );
    check(
        &file(dir.path(), "blank.jsonl", b"\n \n\n"),
        "0",
        "empty transcript",
    );
    check(
        &file(dir.path(), "array.json", b"[]"),
        "0",
        "empty transcript",
    );
}

#[test]
fn binary_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = GOOD.as_bytes().to_vec();
    bytes.extend([0xff, 0xfe, 0x00, 0x13, 0x80, 0x81, b'\n']);
    check(
        &file(dir.path(), "garbage.jsonl", &bytes),
        "3",
        "not valid UTF-8",
    );
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let p = file(dir.path(), "noise.bin", &noise);
    let o = run(&["compact", "-i", s(&p), "-o", s(&dir.path().join("o"))]);
    assert_eq!(o.status.code(), Some(2));
    assert!(texts(&o).1.starts_with(&format!("error: {}:", p.display())));
}

#[test]
fn truncated_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{GOOD}{{\"role\":\"assistant\",\"content\":\"hel");
    check(
        &file(dir.path(), "cut.jsonl", text.as_bytes()),
        "3",
        "invalid JSON",
    );
}

#[test]
fn valid_json_that_is_not_a_message() {
    let dir = tempfile::tempdir().unwrap();
    check(
        &file(dir.path(), "num.jsonl", format!("{GOOD}42\n").as_bytes()),
        "3",
        "must be a JSON object",
    );
    check(
        &file(
            dir.path(),
            "norole.jsonl",
            format!("{GOOD}{{\"content\":\"x\"}}\n").as_bytes(),
        ),
        "3",
        "no `role`",
    );
    check(
        &file(
            dir.path(),
            "arr.json",
            b"[{\"role\":\"user\",\"content\":\"a\"},{\"content\":\"x\"}]",
        ),
        "[1]",
        "no `role`",
    );
}

#[test]
fn unknown_role() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{GOOD}\n{{\"role\":\"narrator\",\"content\":\"x\"}}\n");
    // Line 4: the blank line 3 still counts. The role is not quoted (transcript text).
    let input = file(dir.path(), "role.jsonl", text.as_bytes());
    check(&input, "4", "unknown role (known:");
    let out = dir.path().join("role-out.jsonl");
    let o = run(&["compact", "-i", s(&input), "-o", s(&out)]);
    let (_, stderr) = texts(&o);
    assert!(!stderr.contains("narrator"), "{stderr}");
}

#[test]
fn orphan_tool_result() {
    let dir = tempfile::tempdir().unwrap();
    let mut msgs = tool_session(3, 300);
    msgs.insert(
        5,
        hermes_compaction::core::Message::tool_result("call_missing", "out"),
    );
    let p = write_jsonl(dir.path(), "orphan.jsonl", &msgs);
    check(&p, "6", "orphan tool result");
}

#[test]
fn a_50_mb_message_works() {
    let dir = tempfile::tempdir().unwrap();
    let mut msgs = tool_session(8, 3_000);
    // A 50 MB tool output in the middle of the session.
    msgs[7] = hermes_compaction::core::Message::tool_result(
        "call_1",
        "0123456789abcdef\n".repeat(50 << 20 >> 4),
    );
    let p = write_jsonl(dir.path(), "huge.jsonl", &msgs);
    assert!(std::fs::metadata(&p).unwrap().len() > 50_000_000);
    for mode in ["prune", "batch"] {
        let out = dir.path().join(format!("huge-{mode}.jsonl"));
        let o = run(&["compact", "-i", s(&p), "-o", s(&out), "--mode", mode]);
        let (stdout, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(0), "{mode}: {stderr}");
        assert!(!stderr.contains("panicked"));
        let written = std::fs::metadata(&out).unwrap().len();
        assert!(
            written < 5_000_000,
            "{mode}: {written} bytes after compaction: {stdout}"
        );
        let after = parse::parse_transcript(&std::fs::read(&out).unwrap())
            .unwrap()
            .0;
        assert!(hermes_compaction::core::validate::validate(&after).tool_pairing_ok());
    }
}

/// Issue 21, item 18: the minimum context length is stated once, by the configuration's
/// validation. A value under it exits 2 naming `model.context_length` and the allowed range,
/// in every command that takes `--context-length`; the smallest allowed value is accepted.
#[test]
fn the_context_length_minimum_is_the_validations_one() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(4, 300));
    let out = dir.path().join("o.jsonl");
    for n in ["0", "999", "1000", "1023"] {
        for args in [
            vec![
                "compact",
                "-i",
                s(&input),
                "-o",
                s(&out),
                "--context-length",
                n,
            ],
            vec!["simulate", "-i", s(&input), "--context-length", n],
        ] {
            let o = run(&args);
            let (stdout, stderr) = texts(&o);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
            assert!(stdout.is_empty(), "{stdout}");
            assert!(
                stderr.contains("model.context_length"),
                "{args:?}: {stderr}"
            );
            assert!(stderr.contains("1024"), "{args:?}: {stderr}");
            assert!(!stderr.contains("1000 tokens"), "{args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
        }
        assert!(!out.exists());
    }
    let o = run(&[
        "compact",
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--context-length",
        "1024",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    assert!(out.exists());
}

/// Issue 25, item 3: a configuration file that still says `target_ratio` (now `tail_ratio`)
/// works, and the command warns once on stderr naming both keys; a negative or zero cadence
/// is a configuration error (exit 2) naming the key.
#[test]
fn a_deprecated_key_warns_and_a_bad_cadence_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(4, 300));
    let out = dir.path().join("o.jsonl");
    let old = file(
        dir.path(),
        "old.toml",
        b"[compression]\ntarget_ratio = 0.1\n",
    );
    let o = run(&[
        "compact",
        "-i",
        s(&input),
        "-o",
        s(&out),
        "--config",
        s(&old),
    ]);
    let (_, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("deprecated"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("compression.target_ratio")
            && warnings[0].contains("compression.tail_ratio"),
        "{stderr}"
    );
    for bad in ["0", "-3"] {
        let cfg = file(
            dir.path(),
            "bad.toml",
            format!("[compression]\nmicro_compact_every_n_turns = {bad}\n").as_bytes(),
        );
        let o = run(&["simulate", "-i", s(&input), "--config", s(&cfg)]);
        let (_, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains("micro_compact_every_n_turns"),
            "{bad}: {stderr}"
        );
    }
}
