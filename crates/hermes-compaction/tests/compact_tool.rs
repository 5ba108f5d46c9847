//! The `compact_context` tool: the model asks, the next `before_request` compacts, bounded.

use hermes_compaction::OneShot;
use std::sync::Arc;

use compaction_core::Message;
use compaction_llm::ScriptedSummarizer;
use hermes_compaction::compact_tool::{MAX_FOCUS_CHARS, compact_tool_definition};
use hermes_compaction::{Outcome, Trigger};

use crate::common::{config, rt, tool_session, with_summarizer};

#[test]
fn the_definition_is_an_openai_function_tool() {
    let d = compact_tool_definition();
    assert_eq!(d["type"], "function");
    assert_eq!(d["function"]["name"], "compact_context");
    assert_eq!(
        d["function"]["parameters"]["properties"]["focus"]["type"],
        "string"
    );
    assert_eq!(d["function"]["parameters"]["additionalProperties"], false);
}

#[test]
fn a_request_is_honoured_once_per_user_turn_with_its_focus() {
    rt().block_on(async {
        let s = Arc::new(ScriptedSummarizer::new());
        let mut cfg = config(128_000);
        cfg.compression.proactive_prune_tokens = 0;
        let mut c = with_summarizer(cfg, s.clone());
        // Below the threshold: nothing would run on its own.
        let mut t = c.transcript(tool_session(400, 40));
        assert!(t.current_tokens() < c.status().threshold_tokens);
        s.push_text("a short summary");
        let (_, none) = c.before_request(&mut t).await;
        assert!(none.is_none());

        let secret = "sk-abcdefghijklmnopqrstuvwxyz0123456789";
        let focus = format!("the parser rewrite {secret} {}", "x".repeat(1_000));
        let args = serde_json::json!({ "focus": focus }).to_string();
        let answer = c.request_compaction(&t, &args);
        assert!(answer.starts_with("Compaction requested"), "{answer}");
        assert!(c.status().compaction_requested);
        // A second call before it ran is declined, and nothing else is scheduled.
        assert!(c.request_compaction(&t, "{}").contains("already scheduled"));

        let (_, report) = c.before_request(&mut t).await;
        let report = report.expect("the requested pass ran");
        // The report names why the pass ran: the model asked (a forcing trigger).
        assert_eq!(report.detail.trigger, Trigger::Requested);
        assert!(report.detail.trigger.forces());
        assert!(
            matches!(report.outcome, Outcome::Summarized | Outcome::Pruned),
            "{:?}",
            report.outcome
        );
        assert!(!c.status().compaction_requested);
        if report.outcome == Outcome::Summarized {
            let sent = s.requests()[0].focus.clone().unwrap();
            assert!(sent.starts_with("the parser rewrite"), "{sent}");
            assert!(!sent.contains("abcdefghijklmnop"), "the focus is redacted");
            assert!(
                sent.chars().count() <= MAX_FOCUS_CHARS + 40,
                "bounded: {}",
                sent.len()
            );
        }
        // The same user turn: declined, and the next request runs nothing.
        let again = c.request_compaction(&t, "{}");
        assert!(again.starts_with("Not now"), "{again}");
        let (_, none) = c.before_request(&mut t).await;
        assert!(none.is_none());
        // A new user turn: allowed again.
        t.push(Message::user("next task"), c.status().counter);
        assert!(
            c.request_compaction(&t, "")
                .starts_with("Compaction requested")
        );
    });
}

#[test]
fn bad_arguments_are_explained_and_schedule_nothing() {
    let mut c = with_summarizer(config(128_000), Arc::new(ScriptedSummarizer::new()));
    let t = c.transcript(tool_session(5, 20));
    for bad in ["not json", "[1]", r#"{"focus":3}"#, r#"{"topic":"x"}"#] {
        let answer = c.request_compaction(&t, bad);
        assert!(answer.contains("nothing was scheduled"), "{bad}: {answer}");
        assert!(
            !answer.contains(bad) || bad.len() < 4,
            "the arguments are not echoed"
        );
        assert!(!c.status().compaction_requested);
    }
}

#[test]
fn a_requested_pass_waits_out_a_cooldown() {
    rt().block_on(async {
        let s = Arc::new(ScriptedSummarizer::new());
        let mut cfg = config(128_000);
        cfg.compression.fallback_to_extractive = false;
        let mut c = with_summarizer(cfg, s.clone());
        let mut t = c.transcript(tool_session(60, 20));
        // A failed summarizer starts a cooldown.
        s.push_error(compaction_llm::Error::Transient { status: Some(502) });
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Failed);
        assert!(c.status().state.cooldown_until_ms.is_some());
        let before = t.messages().to_vec();
        assert!(
            c.request_compaction(&t, "{}")
                .starts_with("Compaction requested")
        );
        let (_, report) = c.before_request(&mut t).await;
        assert_eq!(report.unwrap().outcome, Outcome::Skipped);
        assert_eq!(t.messages(), &before[..]);
        assert!(
            !c.status().compaction_requested,
            "a skipped request is not kept to loop on"
        );
    });
}
