//! Telemetry of the insertion-time trimming hooks: one content-free `insert trim telemetry`
//! line per trim that was due, with the session's running totals; none when no trim was due.
//!
//! The lines are captured with the minimal `tracing` subscriber of
//! [`capture_logs`](crate::common::capture_logs).

use std::collections::HashSet;
use std::sync::Arc;

use crate::common::{builder, capture_logs, config, extractive, shell_call, trim_config};
use compaction_core::{Estimator, Message, TokenCounter};
use compaction_store::{Store, TranscriptStore};
use hermes_compaction::Compressor;
use hermes_compaction::compressor::Persistence;
use hermes_compaction::telemetry::TARGET;
use hermes_compaction::trim::TrimStatus;
use serde_json::Value;

const PREFIX: &str = "insert trim telemetry: ";

/// The telemetry lines logged while `f` runs (see [`capture_logs`]).
fn captured<T>(f: impl AsyncFnOnce() -> T) -> (T, Vec<String>) {
    let (value, logs) = capture_logs(f);
    let lines = logs
        .into_iter()
        .filter(|(target, _)| target == TARGET)
        .map(|(_, message)| message)
        .collect();
    (value, lines)
}

/// The JSON objects of the trim lines among `lines`, checking there is nothing else.
fn trim_lines(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|l| {
            let json = l
                .strip_prefix(PREFIX)
                .unwrap_or_else(|| panic!("not a trim line: {l}"));
            serde_json::from_str(json).unwrap()
        })
        .collect()
}

/// A tool output of distinct lines, so any 16-character window of it is recognisable.
fn big_log(tag: &str) -> String {
    let mut s: String = (0..600)
        .map(|i| format!("test {tag}::case_{i:03} ... ok\n"))
        .collect();
    s.push_str("test wombat_regression ... FAILED\nexit code: 101");
    s
}

/// Whether `line` holds any 16-character window of `text`.
fn leaks(line: &str, text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let windows: HashSet<String> = chars.windows(16).map(|w| w.iter().collect()).collect();
    let line: Vec<char> = line.chars().collect();
    line.windows(16)
        .any(|w| windows.contains(&w.iter().collect::<String>()))
}

async fn sqlite_persistence(session: &str) -> Persistence {
    let store: Arc<dyn TranscriptStore> =
        Store::connect("sqlite::memory:").await.unwrap().into_dyn();
    store.create_session(session).await.unwrap();
    Persistence {
        store,
        session: session.into(),
        generation: 0,
    }
}

#[test]
fn a_trimmed_tool_result_emits_one_content_free_line_with_running_totals() {
    let original = big_log("alpha");
    let second = big_log("beta");
    let ((first, next), lines) = captured(async || {
        let p = sqlite_persistence("s").await;
        let mut c: Compressor = builder(trim_config()).store(p).build().unwrap();
        let mut t = c.transcript(vec![Message::system("sys"), Message::user("run the tests")]);
        t.push(
            shell_call("call_1", "cargo test --workspace"),
            &Estimator::default(),
        );
        let (_, first) = c
            .before_append(&t, Message::tool_result("call_1", original.clone()))
            .await;
        t.push(
            shell_call("call_2", "cargo test --workspace"),
            &Estimator::default(),
        );
        let (_, next) = c
            .before_append(&t, Message::tool_result("call_2", second.clone()))
            .await;
        (first, next)
    });
    let TrimStatus::Trimmed {
        handle,
        original_tokens,
        trimmed_tokens,
    } = &first
    else {
        panic!("expected a trim, got {first:?}")
    };
    let events = trim_lines(&lines);
    assert_eq!(events.len(), 2, "{lines:?}");
    // The detector finds a window that is there.
    assert!(leaks(
        &format!("{}{}", lines[0], &original[100..140]),
        &original
    ));

    let e = &events[0];
    assert_eq!(e["event"], "insert_trim");
    assert_eq!(e["outcome"], "trimmed");
    assert_eq!(e["source"], "tool_result");
    assert_eq!(e["session_id"], "test-session");
    assert_eq!(e["original_tokens"], *original_tokens);
    assert_eq!(e["trimmed_tokens"], *trimmed_tokens);
    assert!(first.saved_tokens() > 1_000);
    assert_eq!(e["tokens_saved"], first.saved_tokens());
    assert_eq!(e["trims_total"], 1);
    assert_eq!(e["tokens_saved_total"], first.saved_tokens());
    // Exactly the documented keys: no handle, no tool name, no arguments.
    let keys: Vec<&str> = e.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "event",
            "original_tokens",
            "outcome",
            "session_id",
            "source",
            "tokens_saved",
            "tokens_saved_total",
            "trimmed_tokens",
            "trims_total"
        ]
    );
    assert!(!lines[0].contains(handle.as_str()));
    assert!(!lines[0].contains("bash"));
    assert!(!leaks(&lines[0], &original), "{}", lines[0]);
    assert!(!leaks(&lines[0], r#"{"command":"cargo test --workspace"}"#));

    // The second trim carries the session's running totals.
    let n = &events[1];
    assert_eq!(n["outcome"], "trimmed");
    assert_eq!(n["trims_total"], 2);
    assert_eq!(
        n["tokens_saved_total"],
        first.saved_tokens() + next.saved_tokens()
    );
    assert!(!leaks(&lines[1], &second));
}

#[test]
fn kept_results_say_why_and_save_nothing() {
    let log = big_log("gamma");
    let (statuses, lines) = captured(async || {
        let c = extractive(trim_config());
        let mut t = c_transcript();
        t.push(
            shell_call("c", "cargo test --workspace"),
            &Estimator::default(),
        );
        let result = Message::tool_result("c", log.clone());
        // No store.
        let (_, no_store) = c.before_append(&t, result.clone()).await;
        // The store write fails: the session does not exist.
        let store: Arc<dyn TranscriptStore> =
            Store::connect("sqlite::memory:").await.unwrap().into_dyn();
        let p = Persistence {
            store,
            session: "missing".into(),
            generation: 0,
        };
        let c = builder(trim_config()).store(p).build().unwrap();
        let (_, failed) = c.before_append(&t, result).await;
        (no_store, failed)
    });
    assert_eq!(
        statuses,
        (TrimStatus::KeptNoStore, TrimStatus::KeptStoreFailed)
    );
    // The store's own warning goes to another target; only the trim lines are telemetry.
    let events = trim_lines(&lines);
    assert_eq!(events.len(), 2, "{lines:?}");
    let size = Estimator::default().count_message(&Message::tool_result("c", log.clone()));
    for (e, outcome, total) in [
        // Two compressors: each counts its own session's trims.
        (&events[0], "kept_no_store", 1),
        (&events[1], "kept_store_failed", 1),
    ] {
        assert_eq!(e["outcome"], outcome);
        assert_eq!(e["source"], "tool_result");
        assert_eq!(e["original_tokens"], size);
        assert_eq!(e["trimmed_tokens"], size);
        assert_eq!(e["tokens_saved"], 0);
        assert_eq!(e["trims_total"], total);
        assert_eq!(e["tokens_saved_total"], 0);
    }
    for line in &lines {
        assert!(!leaks(line, &log), "{line}");
    }
}

#[test]
fn nothing_is_emitted_when_no_trim_was_due() {
    let (statuses, lines) = captured(async || {
        let p = sqlite_persistence("n").await;
        let c = builder(trim_config()).store(p).build().unwrap();
        let mut t = c_transcript();
        t.push(
            shell_call("c", "cargo test --workspace"),
            &Estimator::default(),
        );
        // Under the limit.
        let (_, small) = c.before_append(&t, Message::tool_result("c", "ok")).await;
        // A paste while user-paste trimming is off.
        let (_, paste) = c.before_append(&t, Message::user(big_log("delta"))).await;
        // Trimming off altogether.
        let off = extractive(config(64_000));
        let (_, off) = off
            .before_append(&t, Message::tool_result("c", big_log("delta")))
            .await;
        [small, paste, off]
    });
    assert!(statuses.iter().all(|s| *s == TrimStatus::NotNeeded));
    assert!(lines.is_empty(), "{lines:?}");
}

#[test]
fn a_trimmed_user_paste_is_reported_as_such() {
    let paste = big_log("epsilon");
    let (status, lines) = captured(async || {
        let p = sqlite_persistence("u").await;
        let mut cfg = trim_config();
        cfg.compression.insert_trim_user_pastes = true;
        let mut c = builder(cfg).store(p).build().unwrap();
        let t = c.transcript(Vec::new());
        let (_, status) = c.before_append(&t, Message::user(paste.clone())).await;
        status
    });
    assert!(matches!(status, TrimStatus::Trimmed { .. }), "{status:?}");
    let events = trim_lines(&lines);
    assert_eq!(events.len(), 1, "{lines:?}");
    assert_eq!(events[0]["outcome"], "trimmed");
    assert_eq!(events[0]["source"], "user_paste");
    assert_eq!(events[0]["tokens_saved"], status.saved_tokens());
    assert!(!leaks(&lines[0], &paste));
}

/// A short transcript for the hooks to look the tool call up in.
fn c_transcript() -> compaction_core::Transcript {
    compaction_core::Transcript::new(vec![Message::user("go")], &Estimator::default())
}
