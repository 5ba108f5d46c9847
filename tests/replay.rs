//! Every shared fixture through the command line, the facade and the store together: the
//! CLI imports it into a SQLite session, the facade loads it from the store and commits a
//! batch pass with `archive_and_compact`, and the CLI exports what the store then holds.

use hermes_compaction::OneShot;
use hermes_compaction::Outcome;
use hermes_compaction::compressor::Persistence;
use hermes_compaction::core::parse;
use hermes_compaction::store::Store;

use crate::common::{builder, cli, config, jsonl, rt, s, wire};

#[test]
fn fixtures_round_trip_through_cli_facade_and_store() {
    let Some(files) = test_support::fixture_files() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let rt = rt();
    let mut committed = 0;
    for (i, file) in files.iter().enumerate() {
        let name = test_support::file_name(file);
        let session = format!("fixture-{i}");
        let original = parse::parse_transcript(&std::fs::read(file).unwrap())
            .unwrap()
            .0;
        let line = cli(&[
            "session",
            "import",
            s(file),
            "--db",
            s(&db),
            "--session",
            &session,
        ]);
        assert!(line.contains(&session), "{name}: {line}");

        // The facade resumes from what the CLI stored and commits one pass through the store.
        let (active, outcome) = rt.block_on(async {
            let store = Store::connect(&format!("sqlite:{}", db.display()))
                .await
                .unwrap()
                .into_dyn();
            let loaded = store.load_active(&session).await.unwrap();
            assert_eq!(wire(&loaded), wire(&original), "{name}: import changed it");
            let generation = store.generation(&session).await.unwrap();
            let mut c = builder(config(64_000), &session)
                .store(Persistence {
                    store: store.clone(),
                    session: session.clone(),
                    generation,
                })
                .build()
                .unwrap();
            let mut t = c.transcript(loaded);
            let r = c
                .one_shot(&mut t, OneShot::batch())
                .await
                .into_batch()
                .unwrap();
            let stored = store.load_active(&session).await.unwrap();
            assert_eq!(
                wire(&stored),
                wire(t.messages()),
                "{name}: store and facade differ"
            );
            if matches!(r.outcome, Outcome::Summarized | Outcome::Pruned) {
                assert!(
                    store.generation(&session).await.unwrap() > generation,
                    "{name}: a committed pass did not advance the generation"
                );
            }
            (t.into_messages(), r.outcome)
        });
        committed += usize::from(matches!(outcome, Outcome::Summarized | Outcome::Pruned));

        // The CLI exports exactly the facade's transcript, and with --all every original
        // message is still there (archived, not lost).
        let exported = jsonl(&cli(&[
            "session",
            "export",
            "--db",
            s(&db),
            "--session",
            &session,
        ]));
        assert_eq!(wire(&exported), wire(&active), "{name}: export differs");
        let all = wire(&jsonl(&cli(&[
            "session",
            "export",
            "--db",
            s(&db),
            "--session",
            &session,
            "--all",
        ])));
        let all: std::collections::HashSet<&String> = all.iter().collect();
        for (j, m) in wire(&original).iter().enumerate() {
            assert!(all.contains(m), "{name}: message {j} lost from the archive");
        }
    }
    assert!(committed > 0, "no fixture was compacted");
}
