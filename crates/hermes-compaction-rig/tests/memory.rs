//! The memory: append is atomic, load compacts and commits before it returns (once, however
//! many loads race), clear archives.

use std::sync::Arc;

use hermes_compaction::Config;
use hermes_compaction::Outcome;
use hermes_compaction::store::{GenerationKind, StoreError, TranscriptStore};
use hermes_compaction_rig::{CompactingMemory, Error, to_rig};
use rig_core::completion::{AssistantContent, Message};
use rig_core::memory::ConversationMemory;
use rig_core::message::{ToolName, ToolResultContent};
use serde_json::json;

fn small() -> Config {
    let mut c = Config::default();
    c.model.context_length = 24_000;
    c
}

/// A long conversation: `turns` prompts, each with a tool call and a long result.
fn conversation(turns: usize) -> Vec<Message> {
    let mut out = Vec::new();
    for t in 0..turns {
        out.push(Message::user(format!("request {t}")));
        let call = AssistantContent::tool_call(
            format!("call_{t}"),
            ToolName::new("shell").unwrap(),
            json!({"cmd": format!("make test{t}")}),
        );
        let AssistantContent::ToolCall(c) = &call else {
            unreachable!()
        };
        out.push(Message::from(vec![
            AssistantContent::text("running"),
            call.clone(),
        ]));
        out.push(Message::tool_results(vec![c.result(vec![
            ToolResultContent::text(format!("line {t} ok\n").repeat(600)),
        ])]));
        out.push(Message::assistant(format!("done {t}")));
    }
    out
}

async fn sqlite_file() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("m.db").display());
    (dir, url)
}

async fn backends(test: &str) -> Vec<(Option<tempfile::TempDir>, String)> {
    let (dir, url) = sqlite_file().await;
    let mut out = vec![(Some(dir), url)];
    if let Some(pg) = test_support::postgres_url(test) {
        if cfg!(feature = "postgres") {
            out.push((None, pg));
        } else {
            test_support::skip(
                test_support::Skip::Part,
                &format!("skipped: feature `postgres` is off ({test}: PostgreSQL part)"),
            );
        }
    }
    out
}

fn session(test: &str) -> String {
    // Unique per run on a shared PostgreSQL database.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{test}-{}-{nanos}", std::process::id())
}

#[tokio::test]
async fn below_the_threshold_load_returns_what_was_appended() {
    for (_dir, url) in backends("below_the_threshold_load_returns_what_was_appended").await {
        let memory = CompactingMemory::connect(&url, small()).await.unwrap();
        let id = session("small").into();
        let msgs = conversation(2);
        memory.append(&id, msgs[..4].to_vec()).await.unwrap();
        memory.append(&id, msgs[4..].to_vec()).await.unwrap();
        assert_eq!(memory.load(&id).await.unwrap(), msgs);
    }
}

#[tokio::test]
async fn load_compacts_and_commits_before_it_returns() {
    for (_dir, url) in backends("load_compacts_and_commits_before_it_returns").await {
        let memory = CompactingMemory::connect(&url, small()).await.unwrap();
        let id = session("long");
        let msgs = conversation(12);
        memory.append_messages(&id, &msgs).await.unwrap();
        let loaded = memory.load_session(&id).await.unwrap();
        let report = loaded.report.expect("a pass ran");
        assert!(
            matches!(report.outcome, Outcome::Pruned | Outcome::Summarized),
            "{:?}",
            report.outcome
        );
        assert_ne!(loaded.messages, msgs);
        // The laws hold for the pass.
        let v = compaction_core::laws::check(
            &loaded.before,
            &loaded.kept,
            &report.law,
            &compaction_core::Estimator::default(),
        );
        assert!(v.is_empty(), "{v:?}");
        // Committed: the store holds what rig got, and a fresh handle loads the same.
        let stored = memory.store().load_active(&id).await.unwrap();
        assert_eq!(to_rig(&stored).unwrap(), loaded.messages);
        let again = CompactingMemory::connect(&url, small()).await.unwrap();
        let second = again.load_session(&id).await.unwrap();
        assert!(second.report.is_none(), "no second pass");
        assert_eq!(second.messages, loaded.messages);
        // The newest turn is kept verbatim.
        assert_eq!(loaded.messages.last(), msgs.last());
    }
}

#[tokio::test]
async fn concurrent_loads_compact_once() {
    for (_dir, url) in backends("concurrent_loads_compact_once").await {
        let store = hermes_compaction::store::Store::connect(&url)
            .await
            .unwrap()
            .into_dyn();
        let a = CompactingMemory::new(store.clone(), small());
        // Another handle on the same database, as another process would have.
        let b = CompactingMemory::connect(&url, small()).await.unwrap();
        let id = session("race");
        a.append_messages(&id, &conversation(12)).await.unwrap();
        let (la, lb) = tokio::join!(a.load_session(&id), b.load_session(&id));
        let (la, lb) = (la.unwrap(), lb.unwrap());
        // One of them ran the pass; the other lost the race (its commit refused as stale,
        // then it took the winner's rows: `reloaded`, as happens on both backends here) or
        // started after it and found nothing to do.
        let ran = |l: &hermes_compaction_rig::Loaded| {
            l.report
                .as_ref()
                .is_some_and(|r| matches!(r.outcome, Outcome::Pruned | Outcome::Summarized))
        };
        assert!(
            ran(&la) != ran(&lb),
            "exactly one pass: {:?} {:?}",
            la.report,
            lb.report
        );
        assert_eq!(la.messages, lb.messages, "both see the one result");
        let passes = store
            .history(&id)
            .await
            .unwrap()
            .iter()
            .filter(|g| g.label.kind != GenerationKind::Created)
            .count();
        assert_eq!(passes, 1, "compacted once");
        assert_eq!(
            to_rig(&store.load_active(&id).await.unwrap()).unwrap(),
            la.messages
        );
    }
}

#[tokio::test]
async fn append_is_all_or_nothing() {
    let (_dir, url) = sqlite_file().await;
    let memory = CompactingMemory::connect(&url, small()).await.unwrap();
    let id = session("atomic");
    memory.append_messages(&id, &conversation(1)).await.unwrap();
    // A turn the store refuses (here: a session id with a control character) stores nothing.
    let before = memory.store().load_active(&id).await.unwrap().len();
    let bad_session = "\u{7}bell";
    match memory.append_messages(bad_session, &conversation(1)).await {
        Err(Error::Store(_)) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(memory.store().load_active(&id).await.unwrap().len(), before);
    // Nothing was created for the refused id either.
    assert!(matches!(
        memory.store().open(bad_session).await,
        Err(StoreError::InvalidSessionId | StoreError::UnknownSession { .. })
    ));
}

#[tokio::test]
async fn clear_archives_and_restore_brings_it_back() {
    let (_dir, url) = sqlite_file().await;
    let memory = CompactingMemory::connect(&url, small()).await.unwrap();
    let id = session("clear");
    let msgs = conversation(2);
    memory.append_messages(&id, &msgs).await.unwrap();
    let rid = id.clone().into();
    memory.clear(&rid).await.unwrap();
    assert!(memory.load(&rid).await.unwrap().is_empty());
    // Archived, not deleted: every row is still there, and a restore brings them back.
    let store: &Arc<dyn TranscriptStore> = memory.store();
    let all = store.load_all(&id).await.unwrap();
    assert_eq!(all.iter().filter(|r| !r.active).count(), from_len(&msgs));
    let g = store.generation(&id).await.unwrap();
    store.restore(&id, g, g - 1).await.unwrap();
    assert_eq!(memory.load(&rid).await.unwrap(), msgs);
    // Clearing an unknown conversation is fine and creates nothing.
    memory.clear(&"never-seen".into()).await.unwrap();
    assert!(matches!(
        store.open("never-seen").await,
        Err(StoreError::UnknownSession { .. })
    ));
}

fn from_len(msgs: &[Message]) -> usize {
    hermes_compaction_rig::from_rig(msgs).unwrap().len()
}
