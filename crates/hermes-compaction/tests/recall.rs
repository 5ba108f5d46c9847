//! Insertion-time trimming hooks and recall through the store (SQLite in memory, plus
//! PostgreSQL when `HERMES_TEST_DATABASE_URL` is set).

use std::sync::Arc;

use compaction_core::trim::TrimConfig;
use compaction_core::{Edit, Estimator, MarkerKind, Message, Role, ToolCall, marker};
use compaction_store::{Commit, Store, TranscriptStore};
use hermes_compaction::compressor::Persistence;
use hermes_compaction::recall::{RecallLimits, recall, recall_tool_definition, recall_with};
use hermes_compaction::trim::{TrimStatus, trim_for_insert};

use crate::common::{
    builder, config, extractive, finish, fixtures, rt, shell_call, stores, trim_config,
};

fn big_log() -> String {
    let mut s: String = (0..600)
        .map(|i| format!("test case_{i:03} ... ok\n"))
        .collect();
    s.push_str("test case_dingo ... FAILED\nexit code: 101");
    s
}

#[test]
fn trim_then_recall_returns_the_original_byte_identical() {
    rt().block_on(async {
        for store in stores("trim_recall").await {
            let dyn_store = store.clone().into_dyn();
            store.create_session("s").await.unwrap();
            let p = Persistence {
                store: dyn_store.clone(),
                session: "s".into(),
                generation: 0,
            };
            let mut c = builder(trim_config()).store(p.clone()).build().unwrap();
            let mut t = c.transcript(vec![Message::system("sys"), Message::user("run the tests")]);
            t.push(shell_call("call_1", "cargo test"), &Estimator::default());
            let result = Message::from_json(&format!(
                r#"{{"role":"tool","tool_call_id":"call_1","content":{},"ts":1.50}}"#,
                serde_json::to_string(&big_log()).unwrap()
            ))
            .unwrap();

            let (compact, status) = c.before_append(&t, result.clone()).await;
            let TrimStatus::Trimmed { handle, .. } = &status else {
                panic!("expected a trim, got {status:?}")
            };
            assert!(status.saved_tokens() > 1_000);
            let text = compact.text();
            assert!(text.starts_with("[trimmed] bash `cargo test`:"), "{text}");
            assert!(text.ends_with("test case_dingo ... FAILED\nexit code: 101"));
            assert!(text.contains(handle.as_str()));
            assert_eq!(compact.tool_call_id(), Some("call_1"));
            assert!(compact.to_wire_json().ends_with(r#","ts":1.50}"#));
            assert_eq!(
                compact.meta().unwrap().trimmed_handle.as_ref(),
                Some(handle)
            );

            // The store's copy is byte-identical to what the tool returned.
            let original = store.load_original("s", handle).await.unwrap().unwrap();
            assert!(original.to_wire_json() == result.to_wire_json());
            // Recall by handle pages through the same text.
            let limits = RecallLimits {
                max_chars: 5_000,
                ..RecallLimits::default()
            };
            let mut read = String::new();
            let mut offset = 0;
            loop {
                let args = serde_json::json!({"handle": handle, "offset": offset}).to_string();
                let page = recall_with(&*store, "s", &args, &limits).await.unwrap();
                let (label, rest) = page.split_once('\n').unwrap();
                assert!(label.starts_with(&format!(
                    "[recalled from trimmed original {handle}, chars {offset}-"
                )));
                let body = match rest.rsplit_once("\n[") {
                    Some((body, more)) if more.contains("more chars") => body,
                    _ => rest,
                };
                read.push_str(body);
                offset += body.chars().count();
                if offset >= big_log().chars().count() {
                    break;
                }
            }
            assert_eq!(read, big_log());
            // A search finds the original by a word only it holds.
            let found = recall(&*store, "s", r#"{"query":"dingo"}"#).await.unwrap();
            assert!(
                found.starts_with(&format!("[recalled from trimmed original {handle}, chars ")),
                "{found}"
            );
            assert!(found.contains("test case_dingo ... FAILED"));
            // The compact form is appended and flushed like any message; it is not trimmed again.
            let (again, status) = c.before_append(&t, compact.clone()).await;
            assert_eq!(status, TrimStatus::NotNeeded);
            assert_eq!(again.to_json(), compact.to_json());
            drop((c, p));
            finish(store).await;
        }
    });
}

#[test]
fn nothing_is_trimmed_without_a_place_to_keep_the_original() {
    rt().block_on(async {
        let mut c = extractive(trim_config());
        let mut t = c.transcript(vec![Message::user("go")]);
        t.push(shell_call("c", "cargo test"), &Estimator::default());
        let result = Message::tool_result("c", big_log());
        // No store.
        let (m, status) = c.before_append(&t, result.clone()).await;
        assert_eq!(status, TrimStatus::KeptNoStore);
        assert_eq!(m.to_json(), result.to_json());
        // The store write fails (the session does not exist): kept whole.
        let store: Arc<dyn TranscriptStore> =
            Store::connect("sqlite::memory:").await.unwrap().into_dyn();
        let p = Persistence {
            store,
            session: "missing".into(),
            generation: 0,
        };
        let failing = builder(trim_config()).store(p).build().unwrap();
        let (m, status) = failing.before_append(&t, result.clone()).await;
        assert_eq!(status, TrimStatus::KeptStoreFailed);
        assert_eq!(m.to_json(), result.to_json());
        // Trimming off.
        let off = extractive(config(64_000));
        let (_, status) = off.before_append(&t, result.clone()).await;
        assert_eq!(status, TrimStatus::NotNeeded);
        // Protected tools are never trimmed.
        let mut t2 = c.transcript(vec![Message::user("go")]);
        t2.push(
            Message::assistant_tool_calls("", vec![ToolCall::function("r", "memory", "{}")]),
            &Estimator::default(),
        );
        let (_, status) = c
            .before_append(&t2, Message::tool_result("r", big_log()))
            .await;
        assert_eq!(status, TrimStatus::NotNeeded);
    });
}

#[test]
fn user_pastes_are_trimmed_only_when_enabled() {
    rt().block_on(async {
        let store: Arc<dyn TranscriptStore> =
            Store::connect("sqlite::memory:").await.unwrap().into_dyn();
        store.create_session("u").await.unwrap();
        let p = Persistence {
            store: store.clone(),
            session: "u".into(),
            generation: 0,
        };
        let paste = Message::user(big_log());
        let t0 = compaction_core::Transcript::new(Vec::new(), &Estimator::default());
        let (_, status) = builder(trim_config())
            .store(p.clone())
            .build()
            .unwrap()
            .before_append(&t0, paste.clone())
            .await;
        assert_eq!(status, TrimStatus::NotNeeded);
        let mut cfg = trim_config();
        cfg.compression.insert_trim_user_pastes = true;
        let (m, status) = builder(cfg)
            .store(p)
            .build()
            .unwrap()
            .before_append(&t0, paste.clone())
            .await;
        assert!(matches!(status, TrimStatus::Trimmed { .. }), "{status:?}");
        assert!(m.text().starts_with("[trimmed] pasted text"));
    });
}

#[test]
fn recall_searches_archived_rows_with_bounded_labelled_excerpts() {
    rt().block_on(async {
        for store in stores("recall_search").await {
            for session in ["a", "b"] {
                store.create_session(session).await.unwrap();
                let mut messages = vec![
                    Message::system("sys"),
                    Message::user("first"),
                    Message::assistant(format!(
                        "{} the numbat config lives in {session}/cfg.toml {}",
                        "filler ".repeat(500),
                        "tail ".repeat(500)
                    )),
                    Message::user("second"),
                    Message::assistant("ok"),
                ];
                store.append(session, &mut messages).await.unwrap();
                let edit = Edit::single(
                    1..3,
                    vec![marker::render(MarkerKind::Batch, Role::User, "summary")],
                );
                let mut commit = Commit::from_edit(0, &edit, &messages).unwrap();
                store
                    .archive_and_compact(session, &mut commit)
                    .await
                    .unwrap();
            }
            let limits = RecallLimits {
                max_chars: 2_000,
                max_hits: 5,
                excerpt_chars: 300,
            };
            let text = recall_with(&*store, "a", r#"{"query":"NUMBAT config"}"#, &limits)
                .await
                .unwrap();
            let label = text.lines().next().unwrap();
            assert!(
                label.starts_with("[recalled from archived message "),
                "{label}"
            );
            assert!(text.contains("the numbat config lives in a/cfg.toml"));
            assert!(
                !text.contains("b/cfg.toml"),
                "never another session's content"
            );
            let excerpt = text.lines().nth(1).unwrap();
            assert_eq!(excerpt.chars().count(), 302, "300 chars and two ellipses");
            assert!(text.ends_with("to read it whole]"));
            // The id in the label reads the whole message.
            let id: i64 = label
                .trim_start_matches("[recalled from archived message ")
                .split(',')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            let whole = recall(&*store, "a", &format!(r#"{{"message_id":{id}}}"#))
                .await
                .unwrap();
            assert!(whole.starts_with(&format!("[recalled from archived message {id}, chars 0-")));
            let from_b = recall(&*store, "b", &format!(r#"{{"message_id":{id}}}"#))
                .await
                .unwrap();
            assert_eq!(
                from_b,
                format!("[recall_compacted: this session has no message {id}]")
            );
            // Misuse is explained, not an error.
            for bad in ["not json", "{}", r#"{"query":"  "}"#, r#"{"path":"x"}"#] {
                let answer = recall(&*store, "a", bad).await.unwrap();
                assert!(answer.starts_with("[recall_compacted: "), "{bad}: {answer}");
                assert!(answer.contains(r#"{"query": "#), "{answer}");
            }
            let none = recall(&*store, "a", r#"{"query":"wallaby"}"#)
                .await
                .unwrap();
            assert_eq!(
                none,
                "[recall_compacted: no archived content of this session contains all of: wallaby]"
            );
            let unknown = recall(&*store, "a", r#"{"handle":"trim-0000000000000000"}"#)
                .await
                .unwrap();
            assert!(unknown.contains("nothing is stored under handle"));
            // A failing store is an error.
            assert!(recall(&*store, "zzz", r#"{"query":"x"}"#).await.is_err());
            finish(store).await;
        }
        assert_eq!(
            recall_tool_definition()["function"]["parameters"]["properties"]["handle"]["type"],
            "string"
        );
    });
}

/// Every shared transcript: each tool result over 8,000 tokens trims, its original round-trips
/// byte-identically, and the compact form keeps every field but content.
#[test]
fn shared_fixtures_trim_and_round_trip() {
    let Some(all) = fixtures() else { return };
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        let cfg = TrimConfig {
            max_tokens: 8_000,
            ..TrimConfig::default()
        };
        let e = Estimator::default();
        let mut trimmed = 0;
        for (name, messages) in all {
            store.create_session(&name).await.unwrap();
            let calls = compaction_core::prune::CallIndex::build(&messages);
            for m in messages.iter().filter(|m| m.is_tool()) {
                let tool = calls.for_result(m).copied();
                let (out, status) =
                    trim_for_insert(Some((&*store, &name)), &cfg, &e, tool.as_ref(), m.clone())
                        .await;
                let TrimStatus::Trimmed { handle, .. } = status else {
                    assert_eq!(out.to_json(), m.to_json());
                    continue;
                };
                trimmed += 1;
                assert!(out.text().starts_with("[trimmed]"));
                let mut a = out.to_wire_value();
                let mut b = m.to_wire_value();
                a.as_object_mut().unwrap().remove("content");
                b.as_object_mut().unwrap().remove("content");
                assert_eq!(a, b, "{name}");
                let original = store.load_original(&name, &handle).await.unwrap().unwrap();
                assert!(original.to_wire_json() == m.to_wire_json(), "{name}");
            }
        }
        eprintln!("shared fixtures: {trimmed} tool results trimmed at 8000 tokens");
    });
}

/// Issue 22: recall results are redacted before they are paged or excerpted, so neither a
/// page, nor a search excerpt, nor a page boundary shows part of a credential.
#[test]
fn recall_results_are_redacted() {
    rt().block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap();
        store.create_session("s").await.unwrap();
        let corpus = test_support::secrets::credentials();
        for (i, p) in corpus.iter().enumerate().take(30) {
            let handle = format!("trim-{i:016x}");
            let text = format!(
                "{}\n{}\n{}",
                "log line ok\n".repeat(50),
                p.text,
                "done\n".repeat(20)
            );
            store
                .store_original("s", &handle, &Message::tool_result("c", text))
                .await
                .unwrap();
            let mut pages = String::new();
            for offset in [0usize, 300, 600, 700] {
                let args = format!(r#"{{"handle":"{handle}","offset":{offset}}}"#);
                let limits = RecallLimits {
                    max_chars: 400,
                    ..RecallLimits::default()
                };
                pages.push_str(&recall_with(&*store, "s", &args, &limits).await.unwrap());
            }
            for part in &p.secrets {
                let chars: Vec<char> = part.chars().collect();
                for w in chars.windows(8.min(chars.len())) {
                    let run: String = w.iter().collect();
                    assert!(!pages.contains(&run), "{}: recalled unredacted", p.family);
                }
            }
        }
    });
}
