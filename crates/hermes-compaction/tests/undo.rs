//! `Compressor::undo_last`: the last pass reverted in memory and in the store, the compressor
//! state following; refused with nothing changed when it cannot be done safely.

use compaction_core::Message;
use compaction_store::{Commit, GenerationKind, Store};
use hermes_compaction::OneShot;
use hermes_compaction::compressor::Persistence;
use hermes_compaction::undo::UndoError;
use hermes_compaction::{FailureKind, Outcome};

use crate::common::{builder, config, extractive, rt, tool_session};

fn wire(m: &[Message]) -> Vec<String> {
    m.iter().map(Message::to_wire_json).collect()
}

#[test]
fn undo_last_reverts_a_batch_pass_in_memory_and_in_the_store() {
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
        store.create_session("s").await.unwrap();
        let mut c = builder(config(16_000))
            .store(Persistence {
                store: store.clone(),
                session: "s".into(),
                generation: 0,
            })
            .build()
            .unwrap();
        let original = tool_session(80, 40);
        let mut t = c.transcript(original.clone());
        let state_before = c.status().state.clone();
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized);
        assert!(c.status().state.compacted && !state_before.compacted);
        // The agent goes on after the pass.
        t.push(Message::user("one more thing"), c.status().counter);
        c.flush(&mut t).await.unwrap();

        let u = c.undo_last(&mut t).await.unwrap();
        assert!(u.tokens_after > u.tokens_before && u.messages_after > u.messages_before);
        let mut expected = wire(&original);
        expected.push(Message::user("one more thing").to_wire_json());
        assert_eq!(
            wire(t.messages()),
            expected,
            "the pass reverted, the append kept"
        );
        // The store holds the same, as a restore generation, and every message has its row.
        assert_eq!(wire(&store.load_active("s").await.unwrap()), expected);
        assert!(t.messages().iter().all(|m| m.row_id().is_some()));
        let history = store.history("s").await.unwrap();
        assert_eq!(history.len(), 3);
        assert_eq!(history[2].label.kind, GenerationKind::Restore);
        // State follows: not compacted any more, and the next request does not compact again
        // at once (paused); a manual pass still runs.
        assert!(!c.status().state.compacted);
        assert!(c.status().state.paused_until_ms.is_some());
        let (_, again) = c.before_request(&mut t).await;
        assert!(
            again.as_ref().is_none_or(|r| r.outcome == Outcome::Skipped),
            "{again:?}"
        );
        assert_eq!(wire(t.messages()), expected);
        assert_eq!(c.undo_last(&mut t).await, Err(UndoError::NothingToUndo));
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized);
        assert_eq!(
            wire(&store.load_active("s").await.unwrap()),
            wire(t.messages())
        );
    });
}

#[test]
fn undo_last_is_refused_with_nothing_changed_when_unsafe() {
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
        store.create_session("s").await.unwrap();
        let mut c = builder(config(16_000))
            .store(Persistence {
                store: store.clone(),
                session: "s".into(),
                generation: 0,
            })
            .build()
            .unwrap();
        let mut t = c.transcript(tool_session(80, 40));
        assert_eq!(c.undo_last(&mut t).await, Err(UndoError::NothingToUndo));
        c.one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        let compacted = t.messages().to_vec();
        // Another writer moves the session: the undo is stale and changes nothing.
        let (active, generation) = store.load_active_with_generation("s").await.unwrap();
        let mut commit = Commit::from_edit(
            generation,
            &compaction_core::Edit::single(1..1, vec![Message::user("x")]),
            &active,
        )
        .unwrap();
        store.archive_and_compact("s", &mut commit).await.unwrap();
        let stored = wire(&store.load_active("s").await.unwrap());
        match c.undo_last(&mut t).await {
            Err(UndoError::Store {
                failure: FailureKind::StaleGeneration,
                ..
            }) => {}
            other => panic!("a moved session refuses the undo: {other:?}"),
        }
        assert_eq!(t.messages(), &compacted[..]);
        assert_eq!(wire(&store.load_active("s").await.unwrap()), stored);
    });
    rt().block_on(async {
        // Without a store: a rewrite where the pass wrote makes the undo unsafe.
        let mut c = extractive(config(16_000));
        let mut t = c.transcript(tool_session(80, 40));
        c.one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        let at = t
            .messages()
            .iter()
            .position(|m| m.marker_kind().is_some())
            .unwrap();
        let edited = Message::user("edited summary");
        t.replace(at, edited, c.status().counter);
        let before = t.messages().to_vec();
        assert_eq!(c.undo_last(&mut t).await, Err(UndoError::Changed));
        assert_eq!(t.messages(), &before[..]);
    });
}

#[test]
fn undo_last_reverts_micro_passes_and_their_cursor() {
    rt().block_on(async {
        let mut cfg = config(16_000);
        cfg.compression.micro_compact = true;
        // The economic reclaim gate of an unknown provider is not what this is about.
        cfg.compression.cache_profile = "none".into();
        let mut c = extractive(cfg);
        let mut t = c.transcript(tool_session(60, 40));
        let mut undone = 0;
        for _ in 0..6 {
            let (before, micro) = (t.messages().to_vec(), c.status().micro.clone());
            let Some(r) = c.finalize_turn(&mut t).await else {
                continue;
            };
            if r.failed() || wire(t.messages()) == wire(&before) {
                continue;
            }
            assert_ne!(c.status().micro, &micro, "the pass moved the cursor");
            c.undo_last(&mut t).await.unwrap();
            assert_eq!(wire(t.messages()), wire(&before));
            assert_eq!(
                c.status().micro,
                &micro,
                "the cursor and rolling summary follow"
            );
            undone += 1;
            // Go on: the next pass redoes it.
        }
        assert!(undone > 0);
    });
}

/// A pinned message survives the compressor's passes byte-identical and in place, and stays
/// pinned in the store.
#[test]
fn pins_survive_compress_and_persist() {
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
        store.create_session("s").await.unwrap();
        let mut c = builder(config(16_000))
            .store(Persistence {
                store: store.clone(),
                session: "s".into(),
                generation: 0,
            })
            .build()
            .unwrap();
        let original = tool_session(80, 40);
        let mut t = c.transcript(original.clone());
        // A tool result in the middle, and its call.
        let pin = (1..t.len())
            .find(|&i| i > 100 && t.messages()[i].is_tool())
            .unwrap();
        assert!(t.pin(pin, true));
        let before = t.messages().to_vec();
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized);
        let kept: Vec<usize> = t.pinned();
        assert_eq!(kept.len(), 1);
        let at = kept[0];
        assert_eq!(t.messages()[at].to_wire_json(), before[pin].to_wire_json());
        assert_eq!(
            t.messages()[at - 1].to_wire_json(),
            before[pin - 1].to_wire_json(),
            "its call stays with it"
        );
        let v = compaction_core::laws::check(&before, t.messages(), &r.law, c.status().counter);
        assert!(v.is_empty(), "{v:?}");
        let stored = store.load_active("s").await.unwrap();
        assert_eq!(stored.iter().filter(|m| m.is_pinned()).count(), 1);
        assert_eq!(wire(&stored), wire(t.messages()));
    });
}
