//! Optimistic concurrency and concurrent appenders.

use std::collections::HashSet;

use compaction_core::{Edit, MarkerKind, Message, Role, marker};
use compaction_store::{Commit, StoreError, TranscriptStore};

use crate::common::{conversation, wire};

on_both_backends! {
    /// Two writers commit against the same generation: exactly one wins, the other gets the
    /// stale-generation error, nothing is lost or duplicated.
    async fn two_writers_one_generation(b) {
        let s = "race";
        b.store.create_session(s).await.unwrap();
        let mut messages = conversation(4);
        b.store.append(s, &mut messages).await.unwrap();
        let appended = wire(&messages);
        for round in 0..5u64 {
            let before = b.store.load_active(s).await.unwrap();
            let generation = b.store.generation(s).await.unwrap();
            assert_eq!(generation, round);
            // Writer A replaces one exchange, writer B an overlapping, larger range.
            let a = Edit::single(2..5, vec![marker::render(MarkerKind::Micro, Role::Assistant, "a")]);
            let bb = Edit::single(2..9, vec![marker::render(MarkerKind::Batch, Role::User, "b")]);
            let mut ca = Commit::from_edit(generation, &a, &before).unwrap();
            let mut cb = Commit::from_edit(generation, &bb, &before).unwrap();
            let other = b.reconnect().await;
            let store_a = b.store.clone();
            let ta = tokio::spawn(async move {
                let r = store_a.archive_and_compact("race", &mut ca).await;
                (r, ca)
            });
            let tb = tokio::spawn(async move {
                let r = other.archive_and_compact("race", &mut cb).await;
                (r, cb)
            });
            let (ra, ca) = ta.await.unwrap();
            let (rb, cb) = tb.await.unwrap();
            let (winner, edit, loser) = match (ra, rb) {
                (Ok(ids), Err(e)) => ((ids, ca), a, e),
                (Err(e), Ok(ids)) => ((ids, cb), bb, e),
                (ra, rb) => panic!("expected exactly one winner: {:?} / {:?}", ra.is_ok(), rb.is_ok()),
            };
            assert!(
                matches!(loser, StoreError::StaleGeneration { expected, actual, .. } if expected == round && actual == round + 1),
                "{loser:?}"
            );
            let mut edit = edit;
            assert!(compaction_store::stamp_edit(&mut edit, &winner.0));
            assert_eq!(b.store.load_active(s).await.unwrap(), edit.apply(&before).unwrap());
            assert_eq!(b.store.generation(s).await.unwrap(), round + 1);
            // Grow the transcript again for the next round.
            let mut more = b.store.load_active(s).await.unwrap();
            more.extend(conversation(2).into_iter().skip(1));
            b.store.append(s, &mut more).await.unwrap();
        }
        // Nothing lost or duplicated: every appended message is stored exactly once.
        let rows = b.store.load_all(s).await.unwrap();
        let ids: HashSet<i64> = rows.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), rows.len());
        let stored: Vec<String> = rows.iter().map(|r| r.message.to_wire_json()).collect();
        for w in &appended {
            assert!(stored.contains(w));
        }
        assert_eq!(rows.iter().filter(|r| r.kind.is_some()).count(), 5, "one marker per round");
    }
}

/// Appends `batches` batches of `per_batch` messages tagged with `writer`.
async fn appender(store: compaction_store::Store, session: String, writer: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    for batch in 0..10 {
        let mut msgs: Vec<Message> = (0..5)
            .map(|i| Message::user(format!("w{writer} b{batch} m{i}")))
            .collect();
        ids.extend(store.append(&session, &mut msgs).await.unwrap());
    }
    ids
}

fn tag_order(loaded: &[Message], writer: usize) -> Vec<String> {
    let prefix = format!("w{writer} ");
    loaded
        .iter()
        .map(|m| m.text().into_owned())
        .filter(|t| t.starts_with(&prefix))
        .collect()
}

on_both_backends! {
    /// Eight appenders on one session: every message stored once, each writer's in order,
    /// each batch contiguous.
    async fn eight_appenders_one_session(b) {
        b.store.create_session("shared").await.unwrap();
        let tasks: Vec<_> = (0..8)
            .map(|w| tokio::spawn(appender(b.store.clone(), "shared".into(), w)))
            .collect();
        let mut all_ids = HashSet::new();
        for t in tasks {
            for id in t.await.unwrap() {
                assert!(all_ids.insert(id));
            }
        }
        let loaded = b.store.load_active("shared").await.unwrap();
        assert_eq!(loaded.len(), 8 * 50);
        for w in 0..8 {
            let expected: Vec<String> = (0..10)
                .flat_map(|batch| (0..5).map(move |i| format!("w{w} b{batch} m{i}")))
                .collect();
            assert_eq!(tag_order(&loaded, w), expected);
        }
        for chunk in loaded.chunks(5) {
            let first = chunk[0].text().into_owned();
            let batch_tag = first.rsplit_once(' ').unwrap().0.to_owned();
            assert!(chunk.iter().all(|m| m.text().starts_with(&batch_tag)), "batches interleaved");
        }
        assert_eq!(b.store.generation("shared").await.unwrap(), 0);
    }
}

on_both_backends! {
    /// Eight appenders on eight sessions.
    async fn eight_appenders_separate_sessions(b) {
        for w in 0..8 {
            b.store.create_session(&format!("own-{w}")).await.unwrap();
        }
        let tasks: Vec<_> = (0..8)
            .map(|w| tokio::spawn(appender(b.store.clone(), format!("own-{w}"), w)))
            .collect();
        for t in tasks {
            assert_eq!(t.await.unwrap().len(), 50);
        }
        for w in 0..8 {
            let loaded = b.store.load_active(&format!("own-{w}")).await.unwrap();
            assert_eq!(loaded.len(), 50);
            assert_eq!(tag_order(&loaded, w).len(), 50);
        }
    }
}

/// Several processes opening the same new SQLite file at once (separate pools behave like
/// separate processes for SQLite's locks): every one of them connects, the schema is migrated
/// once, and each can use the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_opens_of_one_sqlite_file_all_succeed() {
    for round in 0..6 {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("fresh.db").display());
        let opens: Vec<_> = (0..6)
            .map(|_| {
                let url = url.clone();
                tokio::spawn(async move { compaction_store::SqliteStore::connect(&url).await })
            })
            .collect();
        let mut stores = Vec::new();
        for (i, open) in opens.into_iter().enumerate() {
            match open.await.unwrap() {
                Ok(s) => stores.push(s),
                Err(e) => panic!("round {round}: open {i} failed: {e} ({e:?})"),
            }
        }
        for (i, s) in stores.iter().enumerate() {
            let session = format!("s{i}");
            s.create_session(&session).await.unwrap();
            let mut messages = conversation(2);
            s.append(&session, &mut messages).await.unwrap();
            assert_eq!(s.load_active(&session).await.unwrap().len(), messages.len());
        }
        let applied: Vec<(i64,)> =
            sqlx::query_as("SELECT version FROM hermes_schema_migrations ORDER BY version")
                .fetch_all(stores[0].pool())
                .await
                .unwrap();
        assert_eq!(
            applied,
            vec![(1,), (2,), (3,), (4,), (5,)],
            "round {round}: each migration once"
        );
    }
}

on_both_backends! {
    /// An `append_at` racing a commit of the same generation: it either lands while the
    /// session is still at that generation (its rows carry it) or is refused as stale with
    /// nothing written; never appended after the generation moved.
    async fn append_at_racing_a_commit_never_lands_stale(b) {
        let s = "append-race";
        b.store.create_session(s).await.unwrap();
        let mut seed = conversation(2);
        b.store.append(s, &mut seed).await.unwrap();
        let (mut landed, mut refused) = (0, 0);
        for round in 0..12u64 {
            let (rows, generation) = b.store.load_active_with_generation(s).await.unwrap();
            assert_eq!(generation, round);
            let edit = Edit::single(rows.len() - 1..rows.len(), vec![Message::assistant(format!("c{round}"))]);
            let mut commit = Commit::from_edit(generation, &edit, &rows).unwrap();
            let other = b.reconnect().await;
            let committer = tokio::spawn(async move {
                other.archive_and_compact(s, &mut commit).await.map(|_| ())
            });
            let mut fresh = vec![Message::user(format!("a{round}")), Message::user(format!("b{round}"))];
            let appended = b.store.append_at(s, generation, &mut fresh).await;
            committer.await.unwrap().unwrap();
            match appended {
                Ok(ids) => {
                    landed += 1;
                    let stored = b.store.load_rows(s, &ids).await.unwrap();
                    assert_eq!(stored.len(), 2);
                    assert!(stored.iter().all(|r| r.generation == generation), "round {round}");
                }
                Err(StoreError::StaleGeneration { expected, actual, .. }) => {
                    refused += 1;
                    assert_eq!((expected, actual), (generation, generation + 1));
                    assert!(fresh.iter().all(|m| m.row_id().is_none()));
                    let all = wire(&b.store.load_all(s).await.unwrap().into_iter().map(|r| r.message).collect::<Vec<_>>());
                    assert!(!all.contains(&fresh[0].to_wire_json()), "round {round}: nothing written");
                }
                Err(e) => panic!("round {round}: {e:?}"),
            }
        }
        assert_eq!(landed + refused, 12);
    }
}
