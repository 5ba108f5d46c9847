//! `session history | diff | pin | undo`: see, undo and pin through the command line.

use hermes_compaction::core::Message;

use crate::common::{run, s, texts, tool_session, write_jsonl};

fn ok(args: &[&str]) -> String {
    let o = run(args);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{args:?}: {stderr}");
    stdout
}

/// The active messages as a resume sees them: wire bytes and the pin flag (row ids change
/// when an undo brings rows back as copies).
fn export(db: &str) -> Vec<(String, bool)> {
    let text = ok(&["session", "export", "--db", db, "--session", "s"]);
    hermes_compaction::core::parse::parse_transcript(text.as_bytes())
        .unwrap()
        .0
        .iter()
        .map(|m| (m.to_wire_json(), m.is_pinned()))
        .collect()
}

#[test]
fn history_diff_pin_and_undo_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut msgs = tool_session(150, 300);
    // A secret in an output the pass will summarize: the diff must not print it.
    msgs[7] = Message::tool_result(
        "call_1",
        "export API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123456789",
    );
    let input = write_jsonl(dir.path(), "s.jsonl", &msgs);
    let db = dir.path().join("store.db");
    let db = s(&db);
    ok(&["session", "import", s(&input), "--db", db]);
    let original = export(db);
    let out = ok(&[
        "session",
        "compact",
        "--db",
        db,
        "--session",
        "s",
        "--context-length",
        "16000",
    ]);
    assert!(out.contains("generation=0->1"), "{out}");
    let compacted = export(db);

    let h = ok(&["session", "history", "--db", db, "--session", "s"]);
    let lines: Vec<&str> = h.lines().collect();
    assert_eq!(lines.len(), 3, "{h}");
    assert!(lines[1].contains("created"), "{h}");
    assert!(lines[2].contains("batch") && lines[2].contains("->"), "{h}");

    let d = ok(&[
        "session",
        "diff",
        "--db",
        db,
        "--session",
        "s",
        "--generation",
        "1",
    ]);
    assert!(d.contains("--- archived by generation 1"), "{d}");
    assert!(d.contains("+++ written by generation 1 (1)"), "{d}");
    assert!(d.contains("[batch marker]"), "{d}");
    assert!(d.contains("- row ") && d.contains("call run_shell("), "{d}");
    assert!(
        !d.contains("abcdefghijklmnopqrstuvwxyz"),
        "the diff is redacted"
    );

    let p = ok(&[
        "session",
        "pin",
        "--db",
        db,
        "--session",
        "s",
        "--index",
        "2",
    ]);
    assert!(
        p.contains("message 2 pinned") && p.contains("generation=1->2"),
        "{p}"
    );
    assert!(export(db)[2].1, "message 2 is pinned");
    assert_eq!(export(db).iter().filter(|m| m.1).count(), 1);
    let h = ok(&["session", "history", "--db", db, "--session", "s"]);
    assert!(h.lines().nth(3).unwrap().contains("pin"), "{h}");

    // Undo the pin, then the pass: back to exactly what was imported.
    let u = ok(&["session", "undo", "--db", db, "--session", "s"]);
    assert!(
        u.contains("restored generation 1") && u.contains("generation=2->3"),
        "{u}"
    );
    assert!(export(db) == compacted, "back to the compacted session");
    ok(&["session", "undo", "--db", db, "--session", "s", "--to", "0"]);
    assert!(export(db) == original, "back to the imported session");
    // And the undo undone.
    ok(&["session", "undo", "--db", db, "--session", "s", "--to", "1"]);
    assert!(export(db) == compacted, "the undo undone");
    let h = ok(&["session", "history", "--db", db, "--session", "s"]);
    assert!(
        h.contains("restore to 0") && h.contains("restore to 1"),
        "{h}"
    );
}

#[test]
fn bad_generations_and_indices_exit_2_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "s.jsonl", &tool_session(5, 30));
    let db = dir.path().join("store.db");
    let db = s(&db);
    ok(&["session", "import", s(&input), "--db", db]);
    let before = export(db);
    for args in [
        vec!["session", "undo", "--db", db, "--session", "s"],
        vec!["session", "undo", "--db", db, "--session", "s", "--to", "1"],
        vec![
            "session",
            "undo",
            "--db",
            db,
            "--session",
            "s",
            "--to",
            "99",
        ],
        vec![
            "session",
            "diff",
            "--db",
            db,
            "--session",
            "s",
            "--generation",
            "0",
        ],
        vec![
            "session",
            "diff",
            "--db",
            db,
            "--session",
            "s",
            "--generation",
            "1",
        ],
        vec![
            "session",
            "pin",
            "--db",
            db,
            "--session",
            "s",
            "--index",
            "21",
        ],
        vec![
            "session",
            "pin",
            "--db",
            db,
            "--session",
            "s",
            "--index",
            "-1",
        ],
        vec!["session", "undo", "--db", db, "--session", "s", "--to", "x"],
    ] {
        let o = run(&args);
        let (_, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(export(db) == before, "{args:?} changed the session");
    }
    let h = ok(&["session", "history", "--db", db, "--session", "s"]);
    assert_eq!(h.lines().count(), 2, "{h}");
    // The last index is in range.
    ok(&[
        "session",
        "pin",
        "--db",
        db,
        "--session",
        "s",
        "--index",
        "20",
    ]);
}
