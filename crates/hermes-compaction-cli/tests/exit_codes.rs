//! The README's exit codes (issue 33): 2 for bad input, configuration or usage, including an
//! undo with nothing to undo, an unknown session and a profile that does not exist; user text
//! echoed in an error never reaches the terminal with its control characters raw.

use crate::common::{run, s, texts, tool_session, write_jsonl};

fn code(args: &[&str]) -> (Option<i32>, String) {
    let o = run(args);
    let (_, stderr) = texts(&o);
    (o.status.code(), stderr)
}

#[test]
fn undo_to_zero_at_generation_zero_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(3, 30));
    let db = dir.path().join("store.db");
    let db = s(&db);
    let (c, e) = code(&["session", "import", s(&input), "--db", db, "--session", "s"]);
    assert_eq!(c, Some(0), "{e}");
    let (c, e) = code(&["session", "undo", "--db", db, "--session", "s", "--to", "0"]);
    assert_eq!(c, Some(2), "{e}");
    assert!(e.contains("nothing to undo"), "{e}");
    // Nothing was written: the history still has generation 0 alone.
    let o = run(&["session", "history", "--db", db, "--session", "s"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(texts(&o).0.lines().count(), 2, "{}", texts(&o).0);
}

#[test]
fn an_unknown_session_exits_2_for_every_session_command() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(3, 30));
    let db = dir.path().join("store.db");
    let db = s(&db);
    let (c, e) = code(&["session", "import", s(&input), "--db", db, "--session", "s"]);
    assert_eq!(c, Some(0), "{e}");
    for args in [
        vec!["session", "export", "--db", db, "--session", "nope"],
        vec!["session", "history", "--db", db, "--session", "nope"],
        vec!["session", "undo", "--db", db, "--session", "nope"],
        vec![
            "session",
            "compact",
            "--db",
            db,
            "--session",
            "nope",
            "--context-length",
            "4000",
        ],
        vec![
            "session",
            "pin",
            "--db",
            db,
            "--session",
            "nope",
            "--index",
            "0",
        ],
        vec![
            "session",
            "diff",
            "--db",
            db,
            "--session",
            "nope",
            "--generation",
            "1",
        ],
    ] {
        let (c, e) = code(&args);
        assert_eq!(c, Some(2), "{args:?}: {e}");
        assert!(e.contains("unknown session `nope`"), "{args:?}: {e}");
    }
}

#[test]
fn a_profile_name_with_control_characters_is_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(3, 30));
    let output = dir.path().join("out.jsonl");
    let profile = "x\u{1b}[2J\u{7}\ny";
    let (c, e) = code(&[
        "compact",
        "--input",
        s(&input),
        "--output",
        s(&output),
        "--profile",
        profile,
    ]);
    assert_eq!(c, Some(2), "{e}");
    assert!(
        !e.contains('\u{1b}') && !e.contains('\u{7}') && e.contains("x\\u{1b}[2J\\u{7}\\ny"),
        "{e:?}"
    );
    assert!(!output.exists());
}

#[test]
fn an_argument_clap_quotes_is_escaped_too() {
    let (c, e) = code(&[
        "session",
        "history",
        "--db",
        "x.db",
        "--session",
        "a\u{1b}[31mb",
    ]);
    assert_eq!(c, Some(2), "{e}");
    // Stripped or escaped, never raw.
    assert!(!e.contains('\u{1b}') && e.contains("--session"), "{e:?}");
}
