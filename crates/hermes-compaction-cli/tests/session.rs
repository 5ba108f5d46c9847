//! `session import | export | compact` round trips, and the bundled example.

use hermes_compaction::core::{Message, parse};

use crate::common::{
    read_messages, repo_root, responses_session, run, s, texts, tool_session, write_jsonl,
};

fn round_trip(db: &str) {
    round_trip_of(db, tool_session(30, 6_000));
}

fn round_trip_of(db: &str, msgs: Vec<Message>) {
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "rt.jsonl", &msgs);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let session = format!("rt-{}-{nanos}", std::process::id());

    let o = run(&[
        "session",
        "import",
        s(&input),
        "--db",
        db,
        "--session",
        &session,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    assert!(
        texts(&o)
            .0
            .contains(&format!("imported {} messages", msgs.len()))
    );
    // The same id twice is a usage error, and the first import is untouched.
    let o = run(&[
        "session",
        "import",
        s(&input),
        "--db",
        db,
        "--session",
        &session,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", texts(&o).1);
    assert!(texts(&o).1.contains("already exists"), "{}", texts(&o).1);

    let export = |all: bool| {
        let mut args = vec!["session", "export", "--db", db, "--session", &session];
        if all {
            args.push("--all");
        }
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
        parse::parse_jsonl(&texts(&o).0).unwrap()
    };
    let wire = |m: &[Message]| m.iter().map(Message::to_wire_json).collect::<Vec<_>>();
    let stored = export(false);
    assert_eq!(wire(&stored), wire(&msgs));
    assert!(stored.iter().all(|m| m.row_id().is_some()), "row ids kept");
    // `--wire`: what a model is sent, line for line, no `_hermes`.
    let o = run(&[
        "session",
        "export",
        "--db",
        db,
        "--session",
        &session,
        "--wire",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let printed = texts(&o).0;
    let lines: Vec<String> = printed.lines().map(str::to_owned).collect();
    assert_eq!(lines, wire(&msgs));
    assert!(!printed.contains("_hermes"));

    for mode in ["prune", "batch", "micro"] {
        let o = run(&[
            "session",
            "compact",
            "--db",
            db,
            "--session",
            &session,
            "--mode",
            mode,
            "--context-length",
            "32000",
        ]);
        let (stdout, stderr) = texts(&o);
        assert_eq!(o.status.code(), Some(0), "{mode}: {stderr}");
        assert!(
            stdout.starts_with(&format!("session={session} mode={mode}")),
            "{stdout}"
        );
    }
    let active = export(false);
    assert!(active.len() < msgs.len());
    let all = export(true);
    assert!(all.len() > active.len());
    let flag = |m: &Message, k: &str| m.meta().and_then(|x| x.extra.get(k)).cloned();
    let archived = all
        .iter()
        .filter(|m| flag(m, "active") == Some(false.into()))
        .count();
    assert_eq!(all.len() - archived, active.len());
    assert!(
        all.iter()
            .all(|m| flag(m, "generation").is_some() && flag(m, "position").is_some())
    );
    // Nothing lost: every original message is among all rows, byte-identical on the wire.
    let all_wire = wire(&all);
    for m in wire(&msgs) {
        assert!(all_wire.contains(&m));
    }
}

#[test]
fn sqlite_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("store.db");
    round_trip(s(&db));
    round_trip(&format!("sqlite:{}", s(&dir.path().join("other.db"))));
}

/// Issue 21, item 3: a session of Responses-style calls (`id` differs from `call_id`) is
/// imported, compacted in every mode and exported through the store; every original message
/// stays byte-identical among the rows (spec section 2, law 9).
#[test]
fn sqlite_round_trip_of_responses_style_calls() {
    let dir = tempfile::tempdir().unwrap();
    round_trip_of(
        s(&dir.path().join("responses.db")),
        responses_session(30, 6_000),
    );
}

#[test]
fn postgres_round_trip() {
    let Some(url) = test_support::postgres_only_url("postgres_round_trip") else {
        return;
    };
    round_trip(&url);
    round_trip_of(&url, responses_session(30, 6_000));
}

#[test]
fn unknown_session_and_bad_url_fail_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    // A database that does not exist is a usage error, and nothing is created, for every
    // command but import, plain path or sqlite: URL.
    for url in [
        s(&db).to_owned(),
        format!("sqlite:{}", s(&db)),
        format!("sqlite://{}?mode=rwc", s(&db)),
    ] {
        for args in [
            vec!["session", "export", "--db", &url, "--session", "nope"],
            vec!["session", "compact", "--db", &url, "--session", "nope"],
        ] {
            let o = run(&args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", texts(&o).1);
            assert!(texts(&o).1.contains("no database at"), "{}", texts(&o).1);
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert!(left.is_empty(), "{args:?} created {left:?}");
        }
    }
    // An existing database without the session: a usage error (exit 2) naming it.
    let input = write_jsonl(dir.path(), "one.jsonl", &[Message::user("hi")]);
    let o = run(&["session", "import", s(&input), "--db", s(&db)]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let o = run(&["session", "export", "--db", s(&db), "--session", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(texts(&o).1.starts_with("error: store: "));
    let o = run(&[
        "session",
        "export",
        "--db",
        "mysql://h/db",
        "--session",
        "nope",
    ]);
    assert_ne!(o.status.code(), Some(0));
}

/// Every command closes its SQLite store, which checkpoints the write-ahead log: the `.db`
/// file alone, copied after `session import` or `session compact`, holds the session.
#[test]
fn the_database_file_alone_holds_the_session_after_each_command() {
    let dir = tempfile::tempdir().unwrap();
    let msgs = tool_session(20, 6_000);
    let input = write_jsonl(dir.path(), "w.jsonl", &msgs);
    let db = dir.path().join("w.db");
    let export = |db: &std::path::Path, tag: &str| {
        let o = run(&[
            "session",
            "export",
            "--db",
            s(db),
            "--session",
            "w",
            "--wire",
        ]);
        assert_eq!(o.status.code(), Some(0), "{tag}: {}", texts(&o).1);
        texts(&o).0
    };
    let copy = |tag: &str| {
        let copy = dir.path().join(format!("copy-{tag}.db"));
        std::fs::copy(&db, &copy).unwrap();
        copy
    };
    let o = run(&["session", "import", s(&input), "--db", s(&db)]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let imported = export(&copy("import"), "import");
    assert_eq!(imported.lines().count(), msgs.len());
    let o = run(&[
        "session",
        "compact",
        "--db",
        s(&db),
        "--session",
        "w",
        "--mode",
        "batch",
        "--context-length",
        "16000",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    assert!(texts(&o).0.contains("generation=0->1"), "{}", texts(&o).0);
    let compacted = export(&copy("compact"), "compact");
    assert_ne!(compacted, imported, "the committed pass is in the copy");
    assert_eq!(compacted, export(&db, "original"));
}

#[test]
fn the_bundled_example_is_what_the_generator_writes() {
    let o = run(&["example-session"]);
    assert_eq!(o.status.code(), Some(0));
    let file = repo_root().join("examples/sessions/coding-agent.jsonl");
    let on_disk = std::fs::read_to_string(&file).unwrap();
    assert!(
        on_disk == texts(&o).0,
        "regenerate with: hermes-compaction example-session > examples/sessions/coding-agent.jsonl"
    );
    let msgs = read_messages(&file);
    assert!(msgs.iter().filter(|m| m.is_user()).count() >= 30);
}

#[test]
fn the_demo_runs_on_the_embedded_defaults() {
    let o = run(&["demo"]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("imported"), "{stdout}");
    assert!(stdout.contains("mode=batch outcome="), "{stdout}");
    for p in ["none", "batch", "batch-naive", "micro"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("policy") && l.contains(p)),
            "{stdout}"
        );
    }
    // It ends by saying which policy to pick, named from the table.
    let last = stdout.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("What this says:") && last.contains("Pick the cheapest policy"),
        "{stdout}"
    );
    let picked = last.split('`').nth(1).unwrap_or_default();
    assert!(
        ["batch", "batch-naive", "micro"].contains(&picked),
        "{last}"
    );
    // What the pick keeps, said once, beside what never compacting keeps.
    assert_eq!(last.matches("far identifiers").count(), 1, "{last}");
    assert!(
        last.contains("in unchanged messages, where never compacting keeps"),
        "{last}"
    );
}

/// One user message and many tool rounds: micro mode absorbs inside the turn and commits
/// each pass to the store.
#[test]
fn session_micro_absorbs_inside_a_long_single_turn() {
    use hermes_compaction::core::ToolCall;
    let mut msgs = vec![
        Message::system("You are a coding agent."),
        Message::user("fix every failing test"),
    ];
    for i in 0..80 {
        let id = format!("call_{i}");
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(&id, "shell", "{\"cmd\":\"cargo test\"}")],
        ));
        msgs.push(Message::tool_result(&id, format!("run {i}\n").repeat(400)));
    }
    msgs.push(Message::assistant("all green"));
    let dir = tempfile::tempdir().unwrap();
    let input = write_jsonl(dir.path(), "long.jsonl", &msgs);
    let db = dir.path().join("s.db");
    // One tool group per pass, as the seed describes: no economic reclaim gate.
    let cfg = dir.path().join("ungated.toml");
    std::fs::write(&cfg, "[compression]\ncache_profile = \"none\"\n").unwrap();
    let o = run(&["session", "import", s(&input), "--db", s(&db)]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let o = run(&[
        "session",
        "compact",
        "--db",
        s(&db),
        "--session",
        "long",
        "--mode",
        "micro",
        "--passes",
        "10",
        "--context-length",
        "32000",
        "--config",
        s(&cfg),
    ]);
    let (stdout, stderr) = texts(&o);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // In-turn absorption is an absorption in the one micro vocabulary (spec section 8).
    assert!(stdout.contains("outcome=absorbed passes=10 "), "{stdout}");
    assert!(stdout.trim_end().ends_with("generation=0->10"), "{stdout}");
    let export = |all: bool| {
        let mut args = vec!["session", "export", "--db", s(&db), "--session", "long"];
        if all {
            args.push("--all");
        }
        let o = run(&args);
        assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
        parse::parse_jsonl(&texts(&o).0).unwrap()
    };
    assert!(export(false).len() < msgs.len());
    let all: Vec<String> = export(true).iter().map(Message::to_wire_json).collect();
    for m in &msgs {
        assert!(all.contains(&m.to_wire_json()), "a row was lost");
    }
}

/// `session export` reads a database it may not write: `sqlite:PATH?mode=ro` is SQLite's own
/// read-only open (tests run as root, where file permissions stop nothing), so any write
/// would fail. The export equals the writable one and leaves the file byte-identical; a
/// command that writes is refused as read-only.
#[test]
fn export_reads_a_read_only_database() {
    let dir = tempfile::tempdir().unwrap();
    let msgs = tool_session(12, 2_000);
    let input = write_jsonl(dir.path(), "r.jsonl", &msgs);
    let db = dir.path().join("r.db");
    let o = run(&[
        "session",
        "import",
        s(&input),
        "--db",
        s(&db),
        "--session",
        "r",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", texts(&o).1);
    let bytes = std::fs::read(&db).unwrap();
    let export = |url: &str| {
        let o = run(&["session", "export", "--db", url, "--session", "r"]);
        assert_eq!(o.status.code(), Some(0), "{url}: {}", texts(&o).1);
        texts(&o).0
    };
    let ro = format!("sqlite:{}?mode=ro", s(&db));
    let read_only = export(&ro);
    assert_eq!(read_only.lines().count(), msgs.len());
    assert_eq!(
        std::fs::read(&db).unwrap(),
        bytes,
        "the read-only export wrote nothing"
    );
    assert_eq!(read_only, export(s(&db)));
    let o = run(&[
        "session",
        "compact",
        "--db",
        &ro,
        "--session",
        "r",
        "--mode",
        "batch",
        "--context-length",
        "8000",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", texts(&o).1);
    assert!(texts(&o).1.contains("read-only"), "{}", texts(&o).1);
    // A missing file stays a usage error, read-only too, and nothing is created.
    let missing = format!("sqlite:{}?mode=ro", s(&dir.path().join("none.db")));
    let o = run(&["session", "export", "--db", &missing, "--session", "r"]);
    assert_eq!(o.status.code(), Some(2), "{}", texts(&o).1);
    assert!(!dir.path().join("none.db").exists());
}
