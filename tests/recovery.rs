//! Micro cursor recovery across backends: a session micro-compacted on SQLite is exported
//! with the command line, imported into a fresh SQLite store and into PostgreSQL, and a new
//! compressor on each resumes where the first stopped: it merges into the rolling summary it
//! finds and does not summarize absorbed work again. The cursor lives in the transcript (its
//! markers), not in any one backend.

use std::sync::Arc;

use hermes_compaction::compressor::Persistence;
use hermes_compaction::core::{MarkerKind, Message, marker};
use hermes_compaction::llm::ScriptedSummarizer;
use hermes_compaction::store::{Store, StoreOptions};

use crate::common::{builder_with, cli, config, jsonl, rt, s, tool_session, wire};

fn micro_config() -> hermes_compaction::Config {
    let mut c = config(32_000);
    c.compression.micro_compact = true;
    // One exchange per pass (recovery is the subject, not the economic gate).
    c.compression.cache_profile = "none".into();
    c
}

fn micro_markers(msgs: &[Message]) -> usize {
    msgs.iter()
        .filter(|m| marker::classify(m) == Some(MarkerKind::Micro))
        .count()
}

/// Connects the target stores: a fresh SQLite database, and a throw-away PostgreSQL schema
/// when `HERMES_TEST_DATABASE_URL` is set.
async fn targets(dir: &std::path::Path) -> Vec<(&'static str, Store)> {
    let sqlite = format!("sqlite:{}", dir.join("target.db").display());
    let mut out = vec![("sqlite", Store::connect(&sqlite).await.unwrap())];
    if let Some(url) = test_support::postgres_url("cursor_recovery_across_backends") {
        let options = StoreOptions {
            postgres_schema: Some(format!("hermes_suite_recovery_{}", std::process::id())),
            ..StoreOptions::default()
        };
        out.push((
            "postgres",
            Store::connect_with(&url, &options).await.unwrap(),
        ));
    }
    out
}

#[test]
fn cursor_recovery_across_backends() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.db");
    let rt = rt();

    // Three micro passes on SQLite, committed through the store.
    let cursor = rt.block_on(async {
        let store = Store::connect(&format!("sqlite:{}", source.display()))
            .await
            .unwrap()
            .into_dyn();
        store.create_session("s").await.unwrap();
        let scripted = Arc::new(ScriptedSummarizer::new());
        let mut c = builder_with(micro_config(), scripted.clone(), "s")
            .store(Persistence {
                store: store.clone(),
                session: "s".into(),
                generation: 0,
            })
            .build()
            .unwrap();
        let mut t = c.transcript(tool_session(60, 1_200));
        for i in 0..3 {
            scripted.push_text(format!("summary {i}"));
            let before = t.messages().to_vec();
            let r = c.finalize_turn(&mut t).await.unwrap();
            assert_ne!(
                t.messages(),
                &before[..],
                "pass {i} absorbed nothing: {r:?}"
            );
        }
        assert_eq!(micro_markers(t.messages()), 1);
        c.status()
            .micro
            .cursor
            .expect("a cursor after three passes")
    });

    // The command line moves the active transcript out of the source database.
    let exported = jsonl(&cli(&[
        "session",
        "export",
        "--db",
        s(&source),
        "--session",
        "s",
    ]));
    assert_eq!(micro_markers(&exported), 1);

    rt.block_on(async {
        for (backend, store) in targets(dir.path()).await {
            let dyn_store = store.clone().into_dyn();
            dyn_store.create_session("moved").await.unwrap();
            // The export carries the source's row ids in `_hermes`; rows of another database
            // are new rows (`append` skips messages that already have an id).
            let mut messages = exported.clone();
            for m in &mut messages {
                m.meta_mut().row_id = None;
            }
            dyn_store.append("moved", &mut messages).await.unwrap();
            let generation = dyn_store.generation("moved").await.unwrap();
            let scripted = Arc::new(ScriptedSummarizer::new());
            let mut fresh = builder_with(micro_config(), scripted.clone(), "moved")
                .store(Persistence {
                    store: dyn_store.clone(),
                    session: "moved".into(),
                    generation,
                })
                .build()
                .unwrap();
            let loaded = dyn_store.load_active("moved").await.unwrap();
            assert_eq!(wire(&loaded), wire(&exported), "{backend}");
            let mut t = fresh.transcript(loaded);
            scripted.push_text("summary 3");
            let before = t.messages().to_vec();
            let r = fresh.finalize_turn(&mut t).await.unwrap();
            assert_ne!(
                t.messages(),
                &before[..],
                "{backend}: nothing absorbed ({r:?})"
            );
            // It merged into the rolling summary it found, at or after the old cursor.
            let requests = scripted.requests();
            assert_eq!(requests.len(), 1, "{backend}");
            assert_eq!(
                requests[0].previous_summary.as_deref(),
                Some("summary 2"),
                "{backend}"
            );
            assert!(
                r.stats.earliest_changed_index.unwrap() + 1 >= cursor,
                "{backend}: re-absorbed before the cursor {cursor} ({r:?})"
            );
            assert_eq!(micro_markers(t.messages()), 1, "{backend}");
            let reloaded = dyn_store.load_active("moved").await.unwrap();
            assert_eq!(wire(&reloaded), wire(t.messages()), "{backend}");
            drop(dyn_store);
            if let Some(pg) = store.downcast_ref::<hermes_compaction::store::PostgresStore>() {
                pg.drop_schema().await.unwrap();
            }
        }
    });
}
