//! history and restore: undo to any recorded generation, refused when stale, atomic under
//! injected faults and under kill -9.

use std::collections::BTreeMap;

use compaction_core::{Edit, MarkerKind, Message, Meta, Role, Splice, marker};
use compaction_store::{
    Commit, FaultPoint, GenerationKind, PassLabel, Store, StoreError, TranscriptStore,
};
use proptest::prelude::*;

use crate::common::{conversation, snapshot};

/// What a resume would see, without row ids: each message's wire body and the rest of its
/// metadata.
type Content = Vec<(String, Option<Meta>)>;

fn content(messages: &[Message]) -> Content {
    messages
        .iter()
        .map(|m| {
            let meta = m.meta().cloned().map(|mut meta| {
                meta.row_id = None;
                meta
            });
            (m.to_wire_json(), meta.filter(|m| !m.is_empty()))
        })
        .collect()
}

async fn active(store: &dyn TranscriptStore, session: &str) -> Content {
    content(&store.load_active(session).await.unwrap())
}

/// A small deterministic generator (tests must not depend on a clock or on entropy).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n.max(1) as u64) as usize
    }
}

/// One step of a random session history.
#[derive(Clone, Debug)]
enum Op {
    /// Append this many messages.
    Append(usize),
    /// Replace `len` messages from `start` (both taken modulo the active length) with
    /// `insert` markers; a pure insertion when `len` is 0.
    Compact {
        start: usize,
        len: usize,
        insert: usize,
    },
    /// Restore the generation `pick` (modulo the current generation + 1).
    Restore(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1usize..4).prop_map(Op::Append),
        (0usize..64, 0usize..5, 0usize..3).prop_map(|(start, len, insert)| Op::Compact {
            start,
            len,
            insert
        }),
        (0usize..64).prop_map(Op::Restore),
    ]
}

/// Runs `ops` on a fresh session and checks, after every restore, that the active rows are
/// exactly those active at the restored generation (the state the session had when it last
/// stood at that generation: what was appended while there counts, what came after does not).
/// Returns how many restores changed something.
async fn replay(store: &dyn TranscriptStore, session: &str, ops: &[Op]) -> usize {
    store.create_session(session).await.unwrap();
    let mut states: BTreeMap<u64, Content> = BTreeMap::new();
    states.insert(0, Vec::new());
    let mut counter = 0usize;
    let mut restores = 0;
    for op in ops {
        let (messages, generation) = store.load_active_with_generation(session).await.unwrap();
        match *op {
            Op::Append(n) => {
                let mut fresh: Vec<Message> = (0..n)
                    .map(|_| {
                        counter += 1;
                        if counter.is_multiple_of(3) {
                            Message::assistant(format!("reply {counter}"))
                        } else {
                            Message::user(format!("message {counter}"))
                        }
                    })
                    .collect();
                store.append(session, &mut fresh).await.unwrap();
            }
            Op::Compact { start, len, insert } => {
                let start = start % (messages.len() + 1);
                let len = len.min(messages.len() - start);
                let replacement: Vec<Message> = (0..insert)
                    .map(|i| marker::render(MarkerKind::Micro, Role::Assistant, &format!("s{i}")))
                    .collect();
                if len == 0 && replacement.is_empty() {
                    continue;
                }
                let edit = Edit::single(start..start + len, replacement);
                let mut commit = Commit::from_edit(generation, &edit, &messages)
                    .unwrap()
                    .with_label(PassLabel::new(GenerationKind::Micro).with_tokens(10, 4));
                store
                    .archive_and_compact(session, &mut commit)
                    .await
                    .unwrap();
                let expected = edit.apply(&messages).unwrap();
                assert_eq!(active(store, session).await, content(&expected));
            }
            Op::Restore(pick) => {
                let target = pick as u64 % (generation + 1);
                let done = store.restore(session, generation, target).await.unwrap();
                let now = active(store, session).await;
                assert_eq!(
                    now, states[&target],
                    "restore to {target} from {generation}"
                );
                if done.generation != generation {
                    restores += 1;
                    assert_eq!(done.generation, generation + 1);
                    let info = store.history(session).await.unwrap();
                    let last = info.last().unwrap();
                    assert_eq!(last.label.kind, GenerationKind::Restore);
                    assert_eq!(last.restored_to, Some(target));
                    assert_eq!(
                        (last.archived, last.inserted),
                        (done.archived, done.reactivated)
                    );
                } else {
                    assert_eq!((done.archived, done.reactivated), (0, 0));
                }
            }
        }
        let generation = store.generation(session).await.unwrap();
        states.insert(generation, active(store, session).await);
    }
    let info = store.history(session).await.unwrap();
    assert_eq!(
        info.len() as u64,
        store.generation(session).await.unwrap() + 1
    );
    assert!(
        info.iter()
            .enumerate()
            .all(|(i, g)| g.generation == i as u64 && g.restorable)
    );
    restores
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// For random histories of appends, compactions and restores, restoring generation g
    /// gives exactly the rows active at g.
    #[test]
    fn restore_gives_exactly_the_rows_active_at_that_generation(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let store = Store::connect("sqlite::memory:").await.unwrap();
            replay(&*store, "p", &ops).await;
        });
    }
}

on_both_backends! {
    /// The same property on both backends, over a long seeded history.
    async fn restore_matches_every_generation_on_both_backends(b) {
        let mut rng = Lcg(24);
        let ops: Vec<Op> = (0..160)
            .map(|_| match rng.next(3) {
                0 => Op::Append(1 + rng.next(3)),
                1 => Op::Compact { start: rng.next(64), len: rng.next(5), insert: rng.next(3) },
                _ => Op::Restore(rng.next(64)),
            })
            .collect();
        let restores = replay(&*b.store, "seeded", &ops).await;
        assert!(restores > 10, "the history exercises restores ({restores})");
    }
}

/// A session with two recorded passes: its contents at generations 0, 1 and 2.
async fn two_passes(store: &dyn TranscriptStore, session: &str) -> [Content; 3] {
    store.create_session(session).await.unwrap();
    let mut messages = conversation(4);
    store.append(session, &mut messages).await.unwrap();
    let g0 = active(store, session).await;
    let edit = Edit::single(
        1..5,
        vec![marker::render(MarkerKind::Micro, Role::Assistant, "a")],
    );
    let mut c = Commit::from_edit(0, &edit, &messages)
        .unwrap()
        .with_label(PassLabel::new(GenerationKind::Micro).with_tokens(90, 40));
    store.archive_and_compact(session, &mut c).await.unwrap();
    let messages = store.load_active(session).await.unwrap();
    let edit = Edit {
        splices: vec![
            Splice {
                range: 0..0,
                replacement: vec![],
            },
            Splice {
                range: 1..6,
                replacement: vec![marker::render(MarkerKind::Batch, Role::User, "b")],
            },
        ],
    };
    let g1 = active(store, session).await;
    let mut c = Commit::from_edit(1, &edit, &messages)
        .unwrap()
        .with_label(PassLabel::new(GenerationKind::Batch));
    store.archive_and_compact(session, &mut c).await.unwrap();
    [g0, g1, active(store, session).await]
}

on_both_backends! {
    /// history lists every generation with its label; undo and redo move between them, and
    /// a restore is itself undone by restoring the generation before it.
    async fn history_and_undo_of_an_undo(b) {
        let st = &*b.store;
        let [g0, g1, g2] = two_passes(st, "h").await;
        let info = st.history("h").await.unwrap();
        let kinds: Vec<_> = info.iter().map(|g| g.label.kind).collect();
        assert_eq!(kinds, [GenerationKind::Created, GenerationKind::Micro, GenerationKind::Batch]);
        assert_eq!((info[1].label.tokens_before, info[1].label.tokens_after), (Some(90), Some(40)));
        assert_eq!((info[1].archived, info[1].inserted), (4, 1));
        assert_eq!((info[2].archived, info[2].inserted), (5, 1));
        assert!(info.iter().all(|g| g.created_at_ms.is_some() && g.restorable));

        // Each row says which generation archived it and which wrote it.
        let all = st.load_all("h").await.unwrap();
        let by = |f: &dyn Fn(&compaction_store::StoredRow) -> bool| all.iter().filter(|r| f(r)).count();
        assert_eq!(by(&|r| r.archived_generation == Some(1)), 4);
        assert_eq!(by(&|r| r.pass_generation == Some(1)), 1);
        assert_eq!(by(&|r| r.archived_generation == Some(2)), 5);
        assert_eq!(by(&|r| r.pass_generation == Some(2)), 1);
        assert_eq!(by(&|r| r.pass_generation.is_none()), 17);
        let r = st.restore("h", 2, 1).await.unwrap();
        assert_eq!((r.generation, r.archived, r.reactivated), (3, 1, 5));
        let all = st.load_all("h").await.unwrap();
        assert_eq!(all.iter().filter(|r| r.pass_generation == Some(3)).count(), 5);
        assert_eq!(all.iter().filter(|r| r.archived_generation == Some(3)).count(), 1);
        assert_eq!(active(st, "h").await, g1);
        // Undo the undo.
        let r = st.restore("h", 3, 2).await.unwrap();
        assert_eq!(r.generation, 4);
        assert_eq!(active(st, "h").await, g2);
        st.restore("h", 4, 0).await.unwrap();
        assert_eq!(active(st, "h").await, g0);
        st.restore("h", 5, 3).await.unwrap();
        assert_eq!(active(st, "h").await, g1);
        // The archive was never rewritten: every row written is still there, and each came
        // back as a new row.
        let all = st.load_all("h").await.unwrap();
        assert_eq!(all.iter().filter(|r| r.active).count(), g1.len());
        let ids: std::collections::HashSet<_> = all.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), all.len());
        // Restoring where the session is changes nothing.
        let before = snapshot(&st.load_all("h").await.unwrap());
        let r = st.restore("h", 6, 6).await.unwrap();
        assert_eq!((r.generation, r.archived, r.reactivated), (6, 0, 0));
        assert_eq!(snapshot(&st.load_all("h").await.unwrap()), before);
        assert_eq!(st.history("h").await.unwrap().len(), 7);
        // Appending after a restore continues after the restored rows.
        let mut more = vec![Message::user("after")];
        st.append("h", &mut more).await.unwrap();
        let mut expected = g1.clone();
        expected.extend(content(&more));
        assert_eq!(active(st, "h").await, expected);
    }
}

on_both_backends! {
    /// Bad restores are refused, name the problem and change nothing.
    async fn bad_restores_change_nothing(b) {
        let st = &*b.store;
        two_passes(st, "bad").await;
        let before = snapshot(&st.load_all("bad").await.unwrap());
        let history = st.history("bad").await.unwrap();
        let e = st.restore("bad", 2, 3).await.unwrap_err();
        assert!(matches!(e, StoreError::UnknownGeneration { generation: 3, current: 2 }), "{e:?}");
        let e = st.restore("bad", 1, 0).await.unwrap_err();
        assert!(matches!(e, StoreError::StaleGeneration { expected: 1, actual: 2, .. }), "{e:?}");
        let e = st.restore("bad", 3, 0).await.unwrap_err();
        assert!(matches!(e, StoreError::StaleGeneration { expected: 3, actual: 2, .. }), "{e:?}");
        let e = st.restore("nope", 0, 0).await.unwrap_err();
        assert!(matches!(e, StoreError::UnknownSession { .. }), "{e:?}");
        assert!(matches!(st.history("nope").await, Err(StoreError::UnknownSession { .. })));
        st.inject_fault(FaultPoint::AfterRestoreArchive);
        let e = st.restore("bad", 2, 0).await.unwrap_err();
        assert!(matches!(e, StoreError::InjectedFault), "{e:?}");
        assert_eq!(snapshot(&st.load_all("bad").await.unwrap()), before);
        assert_eq!(st.history("bad").await.unwrap(), history);
        assert_eq!(st.generation("bad").await.unwrap(), 2);
        // And the same restore then succeeds.
        st.restore("bad", 2, 0).await.unwrap();
    }
}

on_both_backends! {
    /// An undo racing another writer's commit, both planned at the same generation: exactly
    /// one wins, the loser is refused as stale, and the session holds the winner's result.
    async fn undo_under_a_concurrent_writer_is_refused_as_stale(b) {
        for round in 0..6 {
            let session = format!("race{round}");
            let s = session.as_str();
            let [_, g1, _] = two_passes(&*b.store, s).await;
            let other = b.reconnect().await;
            let (messages, generation) = other.load_active_with_generation(s).await.unwrap();
            let edit = Edit::single(2..4, vec![]);
            let expected_commit = content(&edit.apply(&messages).unwrap());
            let mut commit = Commit::from_edit(generation, &edit, &messages).unwrap();
            let store = b.store.clone();
            let session_owned = session.clone();
            let undo = tokio::spawn(async move { store.restore(&session_owned, 2, 1).await });
            let writer_session = session.clone();
            let writer = tokio::spawn(async move {
                other.archive_and_compact(&writer_session, &mut commit).await
            });
            let (undo, writer) = (undo.await.unwrap(), writer.await.unwrap());
            match (undo, writer) {
                (Ok(r), Err(StoreError::StaleGeneration { expected: 2, actual: 3, .. })) => {
                    assert_eq!(r.generation, 3);
                    assert_eq!(active(&*b.store, s).await, g1);
                }
                (Err(StoreError::StaleGeneration { expected: 2, actual: 3, .. }), Ok(_)) => {
                    assert_eq!(active(&*b.store, s).await, expected_commit);
                    let last = b.store.history(s).await.unwrap().pop().unwrap();
                    assert_ne!(last.label.kind, GenerationKind::Restore);
                }
                other => panic!("exactly one of the two must win: {other:?}"),
            }
            assert_eq!(b.store.generation(s).await.unwrap(), 3);
        }
    }
}

/// The environment variables that turn [`restore_crash_child`] into the child process of
/// [`kill_9_during_restores_leaves_before_or_after`].
const CHILD_URL: &str = "HERMES_RESTORE_CHILD_URL";
const CHILD_SCHEMA: &str = "HERMES_RESTORE_CHILD_SCHEMA";

/// Not a test of its own: when the parent test starts this binary with [`CHILD_URL`] set, it
/// restores the session `crash` back and forth between generations 1 and 2 until it is
/// killed. Without the variable it returns at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_crash_child() {
    let Ok(url) = std::env::var(CHILD_URL) else {
        return;
    };
    let options = compaction_store::StoreOptions {
        postgres_schema: std::env::var(CHILD_SCHEMA).ok(),
        ..Default::default()
    };
    let store = Store::connect_with(&url, &options).await.unwrap();
    loop {
        let generation = store.generation("crash").await.unwrap();
        let info = store.history("crash").await.unwrap();
        // Alternate between the contents of generation 1 and of generation 2.
        let target = match info.last().and_then(|g| g.restored_to) {
            Some(1) => 2,
            _ => 1,
        };
        store.restore("crash", generation, target).await.unwrap();
    }
}

/// A large session whose generations 1 and 2 differ in many rows, so each restore is a
/// long transaction.
async fn crash_session(store: &dyn TranscriptStore) -> (Content, Content) {
    store.create_session("crash").await.unwrap();
    let mut messages = conversation(400);
    store.append("crash", &mut messages).await.unwrap();
    let edit = Edit::single(
        1..801,
        vec![marker::render(MarkerKind::Batch, Role::User, "x")],
    );
    let mut c = Commit::from_edit(0, &edit, &messages).unwrap();
    store.archive_and_compact("crash", &mut c).await.unwrap();
    let g1 = active(store, "crash").await;
    let messages = store.load_active("crash").await.unwrap();
    let edit = Edit::single(
        1..700,
        vec![marker::render(MarkerKind::Batch, Role::User, "y")],
    );
    let mut c = Commit::from_edit(1, &edit, &messages).unwrap();
    store.archive_and_compact("crash", &mut c).await.unwrap();
    (g1, active(store, "crash").await)
}

on_both_backends! {
    /// kill -9 of a process in the middle of restores leaves the session either before or
    /// after the restore that was running: its contents are those of generation 1 or 2, the
    /// newest recorded generation says which, and the session keeps working.
    async fn kill_9_during_restores_leaves_before_or_after(b) {
        let (g1, g2) = crash_session(&*b.store).await;
        let (url, options) = b.connection();
        for round in 0..4u64 {
            let start = b.store.generation("crash").await.unwrap();
            let mut child = std::process::Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "history::restore_crash_child", "--test-threads", "1"])
                .env(CHILD_URL, url)
                .envs(options.postgres_schema.as_deref().map(|s| (CHILD_SCHEMA, s)))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            // Let it complete a few restores (a different number each round), then kill it
            // wherever it is.
            while b.store.generation("crash").await.unwrap() < start + 2 + round {
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            child.kill().unwrap();
            child.wait().unwrap();
            let store = b.reconnect().await;
            let now = active(&*store, "crash").await;
            let info = store.history("crash").await.unwrap();
            let generation = store.generation("crash").await.unwrap();
            assert_eq!(info.len() as u64, generation + 1);
            let expected = match info.last().unwrap().restored_to {
                Some(1) => &g1,
                Some(2) => &g2,
                other => panic!("the newest generation is a restore: {other:?}"),
            };
            assert!(now == *expected, "round {round}: the contents are the restored ones");
            // The session still restores.
            store.restore("crash", generation, 2).await.unwrap();
            assert_eq!(active(&*store, "crash").await, g2);
        }
    }
}

/// A database written by schema version 3 upgrades in place: its rows archived back then carry
/// no archived generation, so the session's history starts at the generation the migration
/// found (`history_from`), older generations are refused with nothing changed, and passes
/// after the upgrade are recorded and undone as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_of_an_upgraded_session_starts_where_the_upgrade_found_it() {
    use sqlx::SqlSafeStr;
    use sqlx::migrate::{Migration, MigrationType, Migrator};

    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite:{}", dir.path().join("v3.db").display());
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("v3.db"))
        .create_if_missing(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let steps = [
        include_str!("../migrations/sqlite/0001_init.sql"),
        include_str!("../migrations/sqlite/0002_recall.sql"),
        include_str!("../migrations/sqlite/0003_cjk_bigrams.sql"),
    ];
    let mut v3 = Migrator::with_migrations(
        steps
            .iter()
            .enumerate()
            .map(|(i, sql)| {
                Migration::new(
                    i as i64 + 1,
                    format!("step {i}").into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    );
    v3.dangerous_set_table_name("hermes_schema_migrations");
    v3.run(&pool).await.unwrap();
    // Generation 1 of an old session: a user message and a reply, then a pass that archived
    // the reply behind a marker.
    sqlx::query(
        "INSERT INTO hermes_sessions (id, generation, last_pos, created_at, updated_at) \
         VALUES ('old', 1, 20, 0, 0)",
    )
    .execute(&pool)
    .await
    .unwrap();
    let marker = marker::render(MarkerKind::Micro, Role::Assistant, "the reply");
    let rows = [
        (Message::user("question"), 10, true, 0, "normal"),
        (Message::assistant("reply"), 20, false, 0, "normal"),
        (marker, 20, true, 1, "micro"),
    ];
    for (m, pos, active, generation, kind) in rows {
        sqlx::query(
            "INSERT INTO hermes_messages (session_id, pos, role, kind, body, active, compacted, \
             generation, created_at) VALUES ('old', $1, $2, $3, $4, $5, $6, $7, 0)",
        )
        .bind(pos as i64)
        .bind(m.role().as_str())
        .bind(kind)
        .bind(m.to_wire_json().into_bytes())
        .bind(active)
        .bind(!active)
        .bind(generation as i64)
        .execute(&pool)
        .await
        .unwrap();
    }
    pool.close().await;

    let store = Store::connect(&url).await.unwrap();
    let info = store.history("old").await.unwrap();
    let flags: Vec<_> = info.iter().map(|g| (g.label.kind, g.restorable)).collect();
    assert_eq!(
        flags,
        [
            (GenerationKind::Unknown, false),
            (GenerationKind::Unknown, true)
        ]
    );
    assert!(info.iter().all(|g| g.created_at_ms.is_none()));
    let g1 = active(&*store, "old").await;
    let before = snapshot(&store.load_all("old").await.unwrap());
    let e = store.restore("old", 1, 0).await.unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::HistoryUnavailable {
                generation: 0,
                from: 1
            }
        ),
        "{e:?}"
    );
    assert_eq!(snapshot(&store.load_all("old").await.unwrap()), before);
    // A pass after the upgrade is recorded and can be undone back to where history starts.
    let messages = store.load_active("old").await.unwrap();
    let mut c = Commit::from_edit(1, &Edit::single(0..1, vec![]), &messages)
        .unwrap()
        .with_label(PassLabel::new(GenerationKind::Prune));
    store.archive_and_compact("old", &mut c).await.unwrap();
    assert_eq!(
        store.history("old").await.unwrap()[2].label.kind,
        GenerationKind::Prune
    );
    store.restore("old", 2, 1).await.unwrap();
    assert_eq!(active(&*store, "old").await, g1);
}

on_both_backends! {
    /// Pins persist: set with the rest of the metadata on append, or later with set_pinned
    /// (a generation of its own, undone by restore); bad pins change nothing.
    async fn pins_persist_and_pinning_is_undoable(b) {
        let st = &*b.store;
        st.create_session("pins").await.unwrap();
        let mut messages = conversation(2);
        messages[1].meta_mut().pinned = true;
        st.append("pins", &mut messages).await.unwrap();
        let pinned = |m: &[Message]| -> Vec<usize> {
            m.iter().enumerate().filter(|(_, m)| m.is_pinned()).map(|(i, _)| i).collect()
        };
        let loaded = b.reconnect().await.load_active("pins").await.unwrap();
        assert_eq!(pinned(&loaded), vec![1]);
        let g0 = active(st, "pins").await;

        let (row, generation) = st.set_pinned("pins", 0, loaded[4].row_id().unwrap(), true).await.unwrap();
        assert_eq!(generation, 1);
        let loaded = b.reconnect().await.load_active("pins").await.unwrap();
        assert_eq!(pinned(&loaded), vec![1, 4]);
        assert_eq!(loaded[4].row_id(), Some(row));
        // The body is untouched: only the flag changed.
        assert_eq!(content(&loaded)[4].0, g0[4].0);
        let last = st.history("pins").await.unwrap().pop().unwrap();
        assert_eq!((last.label.kind, last.archived, last.inserted), (GenerationKind::Pin, 1, 1));
        // Already pinned: nothing written.
        assert_eq!(st.set_pinned("pins", 1, row, true).await.unwrap(), (row, 1));
        // Unpin, then undo the unpin.
        let (unpinned, _) = st.set_pinned("pins", 1, loaded[1].row_id().unwrap(), false).await.unwrap();
        assert_eq!(pinned(&st.load_active("pins").await.unwrap()), vec![4]);
        st.restore("pins", 2, 1).await.unwrap();
        assert_eq!(pinned(&st.load_active("pins").await.unwrap()), vec![1, 4]);
        st.restore("pins", 3, 0).await.unwrap();
        assert_eq!(active(st, "pins").await, g0);

        let before = snapshot(&st.load_all("pins").await.unwrap());
        let e = st.set_pinned("pins", 4, unpinned, true).await.unwrap_err();
        assert!(matches!(e, StoreError::RowNotActive { .. }), "{e:?}");
        let e = st.set_pinned("pins", 4, 999_999, true).await.unwrap_err();
        assert!(matches!(e, StoreError::RowNotInSession { row: 999_999, .. }), "{e:?}");
        let live = st.load_active("pins").await.unwrap()[2].row_id().unwrap();
        let e = st.set_pinned("pins", 3, live, true).await.unwrap_err();
        assert!(matches!(e, StoreError::StaleGeneration { expected: 3, actual: 4, .. }), "{e:?}");
        let e = st.set_pinned("pins", 3, loaded[1].row_id().unwrap(), true).await.unwrap_err();
        assert!(matches!(e, StoreError::RowNotActive { .. } | StoreError::StaleGeneration { .. }), "{e:?}");
        assert_eq!(snapshot(&st.load_all("pins").await.unwrap()), before);
    }
}

on_both_backends! {
    /// The session controls composed from the trait (`Session::undo`, `pin_at`, `diff`): undo
    /// goes back one generation by default and to any named one, pin_at pins by index as a
    /// generation of its own, diff shows what a generation archived and wrote; every refusal
    /// (nothing to undo, an index past the end, a generation not reached, a writer that moved
    /// the session in between) names the problem and changes nothing.
    async fn session_controls_undo_pin_and_diff(b) {
        let st = b.store.clone().into_dyn();
        st.create_session("fresh").await.unwrap();
        let fresh = st.session("fresh");
        let e = fresh.undo(None).await.unwrap_err();
        assert!(matches!(e, StoreError::NothingToUndo { .. }), "{e:?}");
        assert_eq!(fresh.generation().await.unwrap(), 0);

        let [g0, _, g2] = two_passes(&*st, "c").await;
        let s = st.session("c");
        // diff: generation 1 archived 4 rows and wrote the micro marker.
        let d = s.diff(1).await.unwrap();
        assert_eq!((d.info.generation, d.archived.len(), d.inserted.len()), (1, 4, 1));
        assert!(d.archived.iter().all(|r| r.archived_generation == Some(1) && !r.active));
        assert!(d.to_string().contains("--- archived by generation 1 (4)"), "{d}");
        let e = s.diff(3).await.unwrap_err();
        assert!(matches!(e, StoreError::UnknownGeneration { generation: 3, current: 2 }), "{e:?}");

        // pin_at: out of range changes nothing; in range pins as generation 3.
        let before = snapshot(&s.load_all().await.unwrap());
        let len = g2.len();
        let e = s.pin_at(len, true).await.unwrap_err();
        assert!(matches!(e, StoreError::IndexOutOfRange { index, active, .. } if index == len && active == len), "{e:?}");
        assert_eq!(snapshot(&s.load_all().await.unwrap()), before);
        let p = s.pin_at(len - 1, true).await.unwrap();
        assert_eq!((p.generation_before, p.generation), (2, 3));
        assert_ne!(p.row, p.new_row);
        let pinned = s.load_active().await.unwrap();
        assert!(pinned[len - 1].is_pinned());
        assert_eq!(pinned[len - 1].row_id(), Some(p.new_row));

        // undo: by default one generation back (the pin goes), then to a named one.
        let u = s.undo(None).await.unwrap();
        assert_eq!((u.from, u.target, u.restored.generation), (3, 2, 4));
        assert_eq!(active(&*st, "c").await, g2);
        let u = s.undo(Some(0)).await.unwrap();
        assert_eq!((u.from, u.target), (4, 0));
        assert_eq!(active(&*st, "c").await, g0);
        let e = s.undo(Some(9)).await.unwrap_err();
        assert!(matches!(e, StoreError::UnknownGeneration { generation: 9, .. }), "{e:?}");

        // Racing another writer: whichever order the two take, the session ends in a state
        // one serial order gives, and a refused side is refused as stale, never half done.
        for round in 0..6 {
            let id = format!("race{round}");
            let [_, g1, g2] = two_passes(&*st, &id).await;
            let other = b.reconnect().await;
            let (messages, generation) = other.load_active_with_generation(&id).await.unwrap();
            let edit = Edit::single(0..1, vec![]);
            let writer_result = content(&edit.apply(&messages).unwrap());
            let mut commit = Commit::from_edit(generation, &edit, &messages).unwrap();
            let (st2, id2, id3) = (st.clone(), id.clone(), id.clone());
            let undo = tokio::spawn(async move { st2.session(&id2).undo(None).await });
            let writer = tokio::spawn(async move { other.archive_and_compact(&id3, &mut commit).await });
            let (undo, writer) = (undo.await.unwrap(), writer.await.unwrap());
            let now = active(&*st, &id).await;
            match (undo, writer) {
                // The undo first: the writer, planned at 2, is stale.
                (Ok(u), Err(StoreError::StaleGeneration { .. })) => {
                    assert_eq!((u.from, u.target), (2, 1));
                    assert_eq!(now, g1);
                }
                // The writer first, then the undo read generation 3 and went back to 2.
                (Ok(u), Ok(_)) => {
                    assert_eq!((u.from, u.target), (3, 2));
                    assert_eq!(now, g2);
                }
                // The writer committed between the undo's read and its restore.
                (Err(StoreError::StaleGeneration { .. }), Ok(_)) => assert_eq!(now, writer_result),
                other => panic!("not a serial outcome: {other:?}"),
            }
        }
    }
}
