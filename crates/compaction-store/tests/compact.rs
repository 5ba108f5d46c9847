//! archive_and_compact: micro- and batch-shaped commits, positions, law 9, atomicity.

use std::collections::HashMap;

use compaction_core::{Edit, MarkerKind, Message, Role, Splice, marker};
use compaction_store::{Commit, FaultPoint, StoreError, TranscriptStore, stamp_edit};

use crate::common::{conversation, snapshot, wire};

/// Applies `edit` to what the store has, commits it, and checks that load_active then
/// matches the edited transcript exactly (bodies and kinds) and that every inserted message
/// got its row id. Returns the new active transcript.
async fn check_commit(store: &dyn TranscriptStore, session: &str, mut edit: Edit) -> Vec<Message> {
    let before = store.load_active(session).await.unwrap();
    let generation = store.generation(session).await.unwrap();
    let mut commit = Commit::from_edit(generation, &edit, &before).unwrap();
    let ids = store
        .archive_and_compact(session, &mut commit)
        .await
        .unwrap();
    assert_eq!(ids.len(), commit.inserted_len());
    let inserted: Vec<_> = commit
        .splices
        .iter()
        .flat_map(|s| &s.insert)
        .map(|m| m.row_id())
        .collect();
    assert_eq!(inserted, ids.iter().copied().map(Some).collect::<Vec<_>>());
    assert!(stamp_edit(&mut edit, &ids));
    let expected = edit.apply(&before).unwrap();
    let after = store.load_active(session).await.unwrap();
    assert_eq!(
        wire(&after),
        wire(&expected),
        "load_active matches the compacted transcript"
    );
    let kinds = |m: &[Message]| m.iter().map(Message::marker_kind).collect::<Vec<_>>();
    assert_eq!(kinds(&after), kinds(&expected));
    // Stamps agree too: the applied transcript is exactly what a resume would load.
    assert_eq!(after, expected);
    assert_eq!(store.generation(session).await.unwrap(), generation + 1);
    after
}

/// Law 9: active plus archived rows hold every message ever written, byte-identical, once.
async fn check_nothing_lost(store: &dyn TranscriptStore, session: &str, ever: &[String]) {
    let rows = store.load_all(session).await.unwrap();
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for w in ever {
        *counts.entry(w.as_str()).or_default() += 1;
    }
    let stored: Vec<String> = rows.iter().map(|r| r.message.to_wire_json()).collect();
    for w in &stored {
        *counts.entry(w.as_str()).or_default() -= 1;
    }
    assert!(
        counts.values().all(|&c| c == 0),
        "stored rows differ from everything written"
    );
    for r in &rows {
        assert_eq!(
            r.compacted, !r.active,
            "archived rows are exactly the compacted ones"
        );
        assert_eq!(r.archived_at_ms.is_some(), !r.active);
    }
}

on_both_backends! {
    /// Micro-shaped passes: archive one exchange (and the previous marker), insert one marker.
    async fn micro_shaped_commits(b) {
        let s = "micro";
        b.store.create_session(s).await.unwrap();
        let mut messages = conversation(5);
        b.store.append(s, &mut messages).await.unwrap();
        let mut ever = wire(&messages);

        // Pass 1: the first exchange (indices 2..5) becomes a micro marker.
        let m1 = marker::render(MarkerKind::Micro, Role::Assistant, "turn 0 summary");
        ever.push(m1.to_wire_json());
        let after = check_commit(&*b.store, s, Edit::single(2..5, vec![m1])).await;
        assert_eq!(after.len(), messages.len() - 2);
        assert_eq!(after[2].marker_kind(), Some(MarkerKind::Micro));

        // Pass 2: the old marker plus the next exchange (after the user message at 3).
        let m2 = marker::render(MarkerKind::Micro, Role::Assistant, "turns 0-1 summary");
        ever.push(m2.to_wire_json());
        let edit = Edit {
            splices: vec![
                Splice { range: 2..3, replacement: vec![m2] },
                Splice { range: 4..7, replacement: vec![] },
            ],
        };
        let after = check_commit(&*b.store, s, edit).await;
        assert_eq!(after.iter().filter(|m| m.marker_kind().is_some()).count(), 1);
        check_nothing_lost(&*b.store, s, &ever).await;

        // Appends after a compaction land after everything and keep the generation.
        let mut more = after.clone();
        more.push(Message::user("new request"));
        let new = b.store.append(s, &mut more).await.unwrap();
        assert_eq!(new.len(), 1, "the flush skips the stamped marker");
        ever.push(more.last().unwrap().to_wire_json());
        assert_eq!(wire(&b.store.load_active(s).await.unwrap()), wire(&more));
        assert_eq!(b.store.generation(s).await.unwrap(), 2);
        check_nothing_lost(&*b.store, s, &ever).await;

        // The archived rows are flagged, stamped with the generation they were written at.
        let rows = b.store.load_all(s).await.unwrap();
        assert_eq!(rows.iter().filter(|r| !r.active).count(), 3 + 1 + 3);
        let marker_rows: Vec<_> = rows.iter().filter(|r| r.kind == Some(MarkerKind::Micro)).collect();
        assert_eq!(marker_rows.len(), 2);
        assert_eq!(marker_rows.iter().map(|r| r.generation).collect::<Vec<_>>(), [1, 2]);
    }
}

on_both_backends! {
    /// Batch-shaped pass: the whole middle becomes one summary; head and tail untouched.
    async fn batch_shaped_commit(b) {
        let s = "batch";
        b.store.create_session(s).await.unwrap();
        let mut messages = conversation(8);
        b.store.append(s, &mut messages).await.unwrap();
        let mut ever = wire(&messages);
        let n = messages.len();
        let summary = marker::render(MarkerKind::Batch, Role::User, "the middle, summarized");
        ever.push(summary.to_wire_json());
        let after = check_commit(&*b.store, s, Edit::single(3..n - 4, vec![summary])).await;
        assert_eq!(after.len(), 3 + 1 + 4);
        assert_eq!(wire(&after[..3]), wire(&messages[..3]));
        assert_eq!(wire(&after[4..]), wire(&messages[n - 4..]));
        check_nothing_lost(&*b.store, s, &ever).await;
        // A resumed session loads the summary once and none of what it replaced.
        let resumed = b.reconnect().await.load_active(s).await.unwrap();
        assert_eq!(resumed, after);
    }
}

on_both_backends! {
    /// More rows than were archived, pure insertions (start, middle, end), pure deletions,
    /// and repeated insertion into the same gap: order stays right, nothing renumbered.
    async fn positions_for_every_splice_shape(b) {
        let s = "shapes";
        b.store.create_session(s).await.unwrap();
        let mut messages = conversation(3);
        b.store.append(s, &mut messages).await.unwrap();
        let n = messages.len();
        let edit = Edit {
            splices: vec![
                Splice { range: 0..0, replacement: vec![Message::system("prepended")] },
                Splice {
                    range: 2..3,
                    replacement: vec![Message::assistant("a"), Message::assistant("b"), Message::assistant("c")],
                },
                Splice { range: 6..6, replacement: vec![Message::user("inserted")] },
                Splice { range: 8..10, replacement: vec![] },
                Splice { range: n..n, replacement: vec![Message::assistant("appended by a pass")] },
            ],
        };
        let positions_before: HashMap<i64, i64> = b.store.load_all(s).await.unwrap()
            .iter().map(|r| (r.id, r.position)).collect();
        check_commit(&*b.store, s, edit).await;
        // Untouched rows kept their ordering keys.
        for r in b.store.load_all(s).await.unwrap() {
            if let Some(p) = positions_before.get(&r.id) {
                assert_eq!(*p, r.position, "row {} was renumbered", r.id);
            }
        }
        // Insert into the same gap again and again (each new row before the previous one):
        // the gap halves each time, so after about 30 nested insertions no key is left and
        // the commit is refused cleanly rather than renumbering the session.
        let mut wedged = 0;
        let err = loop {
            let before = b.store.load_active(s).await.unwrap();
            let rows_before = snapshot(&b.store.load_all(s).await.unwrap());
            let generation = b.store.generation(s).await.unwrap();
            let edit = Edit::single(3..3, vec![Message::user(format!("wedge {wedged}"))]);
            let mut commit = Commit::from_edit(generation, &edit, &before).unwrap();
            match b.store.archive_and_compact(s, &mut commit).await {
                Ok(_) => wedged += 1,
                Err(e) => {
                    assert_eq!(snapshot(&b.store.load_all(s).await.unwrap()), rows_before);
                    assert_eq!(b.store.generation(s).await.unwrap(), generation);
                    break e;
                }
            }
            assert!(wedged < 64, "keys never ran out");
        };
        assert!(matches!(err, StoreError::KeysExhausted { splice: 0 }), "{err:?}");
        assert!(wedged >= 25, "only {wedged} nested insertions fit");
        let after = b.store.load_active(s).await.unwrap();
        assert_eq!(after[3].text(), format!("wedge {}", wedged - 1));
        // A later append still lands at the end.
        let mut more = after.clone();
        more.push(Message::user("tail"));
        b.store.append(s, &mut more).await.unwrap();
        assert_eq!(wire(&b.store.load_active(s).await.unwrap()), wire(&more));
    }
}

on_both_backends! {
    /// A failure between the archive and the insert leaves the session exactly as it was;
    /// the same commit then succeeds.
    async fn injected_failure_changes_nothing(b) {
        let s = "atomic";
        b.store.create_session(s).await.unwrap();
        let mut messages = conversation(4);
        b.store.append(s, &mut messages).await.unwrap();
        let rows_before = snapshot(&b.store.load_all(s).await.unwrap());
        let edit = Edit::single(2..9, vec![marker::render(MarkerKind::Micro, Role::Assistant, "x")]);
        let mut commit = Commit::from_edit(0, &edit, &messages).unwrap();
        b.store.inject_fault(FaultPoint::AfterArchive);
        let err = b.store.archive_and_compact(s, &mut commit).await.unwrap_err();
        assert!(matches!(err, StoreError::InjectedFault), "{err:?}");
        assert_eq!(snapshot(&b.store.load_all(s).await.unwrap()), rows_before);
        assert_eq!(b.store.generation(s).await.unwrap(), 0);
        assert_eq!(commit.splices[0].insert[0].row_id(), None, "nothing stamped on failure");
        // Also for a pure insertion.
        let mut insert_only = Commit::from_edit(0, &Edit::single(1..1, vec![Message::user("i")]), &messages).unwrap();
        b.store.inject_fault(FaultPoint::AfterArchive);
        assert!(matches!(
            b.store.archive_and_compact(s, &mut insert_only).await,
            Err(StoreError::InjectedFault)
        ));
        assert_eq!(snapshot(&b.store.load_all(s).await.unwrap()), rows_before);
        // The fault was one-shot: the same commit now goes through.
        let ids = b.store.archive_and_compact(s, &mut commit).await.unwrap();
        assert_eq!(ids.len(), 1);
        assert_eq!(b.store.load_active(s).await.unwrap(), edit_applied(&edit, &messages, &ids));
    }
}

on_both_backends! {
    /// A commit whose acknowledgement is lost: the store holds the new generation although the
    /// caller was told the commit failed, so a caller must read the generation back to know.
    /// The generation read itself can be made to fail, armed with it.
    async fn a_lost_acknowledgement_leaves_the_commit_in_place(b) {
        let s = "lost-ack";
        b.store.create_session(s).await.unwrap();
        let mut messages = conversation(4);
        b.store.append(s, &mut messages).await.unwrap();
        let edit = Edit::single(2..9, vec![marker::render(MarkerKind::Micro, Role::Assistant, "x")]);
        let mut commit = Commit::from_edit(0, &edit, &messages).unwrap();
        b.store.inject_fault(FaultPoint::AfterCommit);
        b.store.inject_fault(FaultPoint::GenerationRead);
        let err = b.store.archive_and_compact(s, &mut commit).await.unwrap_err();
        assert!(matches!(err, StoreError::InjectedFault), "{err:?}");
        assert!(matches!(b.store.generation(s).await, Err(StoreError::InjectedFault)));
        assert_eq!(b.store.generation(s).await.unwrap(), 1, "the commit landed");
        assert_eq!(b.store.load_active(s).await.unwrap().len(), messages.len() - 7 + 1);
    }
}

fn edit_applied(edit: &Edit, before: &[Message], ids: &[i64]) -> Vec<Message> {
    let mut edit = edit.clone();
    assert!(stamp_edit(&mut edit, ids));
    edit.apply(before).unwrap()
}
