//! Batch compaction behaviour with scripted summarizers: failure classes, fallback, cooldown,
//! anti-thrash, stale usage, overflow retries, persistence, and the laws on generated
//! transcripts.

use hermes_compaction::{OneShot, Usage};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use compaction_core::laws::{self, PassKind};
use compaction_core::{Estimator, Message};
use compaction_llm::{Error, ScriptedSummarizer};
use hermes_compaction::{Compressor, FailureKind, Outcome};
use proptest::prelude::*;

use crate::common::{builder_with, config, rt, with_summarizer};

fn session(turns: usize, chars: usize) -> Vec<Message> {
    crate::common::tool_session(turns, chars / 3)
}

fn scripted(cfg: hermes_compaction::Config) -> (Compressor, Arc<ScriptedSummarizer>) {
    let s = Arc::new(ScriptedSummarizer::new());
    (with_summarizer(cfg, s.clone()), s)
}

/// [`scripted`] on the test clock.
fn scripted_on_test_clock(cfg: hermes_compaction::Config) -> (Compressor, Arc<ScriptedSummarizer>) {
    let s = Arc::new(ScriptedSummarizer::new());
    let c = builder_with(cfg, s.clone())
        .clock(test_clock)
        .build()
        .unwrap();
    (c, s)
}

fn no_fallback(context: u64) -> hermes_compaction::Config {
    let mut c = config(context);
    c.compression.fallback_to_extractive = false;
    c
}

#[test]
fn auth_and_quota_abort_and_leave_the_transcript_byte_identical() {
    let rt = rt();
    for err in [
        Error::Auth { status: Some(401) },
        Error::Quota { status: 402 },
    ] {
        // Even with the fallback allowed, auth and quota abort.
        let (mut c, s) = scripted(config(16_000));
        s.fail_always(Some(err.clone()));
        let mut t = c.transcript(session(200, 300));
        let before = t.messages().to_vec();
        let r = rt
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Failed);
        assert_eq!(r.failure_kind(), Some(FailureKind::Summarizer(err.class())));
        assert!(!r.stats.fallback_used());
        assert_eq!(t.messages(), &before[..]);
        assert!(c.status().state.cooldown_until_ms.is_some());
    }
}

#[test]
fn other_failures_use_the_fallback_or_abort_per_config() {
    let rt = rt();
    let errors = [
        Error::RateLimited { retry_after: None },
        Error::Transient { status: Some(503) },
        Error::Network { connect: true },
        Error::ContextLengthExceeded { status: 400 },
        Error::MalformedResponse {
            reason: "no choices",
        },
        Error::EmptyOutput,
        Error::TruncatedOutput,
        Error::DirectiveOutput,
    ];
    for err in errors {
        let (mut c, s) = scripted(config(16_000));
        s.fail_always(Some(err.clone()));
        let mut t = c.transcript(session(200, 300));
        let r = rt
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized, "{err:?}");
        assert!(r.stats.fallback_used(), "{err:?}");
        assert!(r.stats.tokens_after < r.stats.tokens_before);

        let (mut c, s) = scripted(no_fallback(16_000));
        s.fail_always(Some(err.clone()));
        let mut t = c.transcript(session(200, 300));
        let before = t.messages().to_vec();
        let r = rt
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Failed, "{err:?}");
        assert_eq!(r.failure_kind(), Some(FailureKind::Summarizer(err.class())));
        assert_eq!(t.messages(), &before[..], "{err:?}");
    }
}

static NOW: AtomicU64 = AtomicU64::new(1_000_000);

fn test_clock() -> u64 {
    NOW.load(Ordering::SeqCst)
}

#[test]
fn a_failure_starts_an_escalating_cooldown_for_automatic_passes() {
    let rt = rt();
    let mut cfg = no_fallback(16_000);
    // The cooldown is the subject, not the circuit breaker.
    cfg.auxiliary.compression.breaker_failures = 0;
    let (mut c, s) = scripted_on_test_clock(cfg);
    s.fail_always(Some(Error::Transient { status: Some(500) }));
    // Over the threshold, within the window.
    let mut t = c.transcript(crate::common::over_threshold_within_window(&c, 100));
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::Failed);
    let first = c.status().state.cooldown_until_ms.unwrap() - test_clock();
    // Inside the cooldown: skipped without calling the summarizer.
    let calls = s.calls();
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::Skipped);
    assert_eq!(s.calls(), calls);
    // After it: tried again, fails again, and the next cooldown is longer.
    NOW.fetch_add(first + 1, Ordering::SeqCst);
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::Failed);
    let second = c.status().state.cooldown_until_ms.unwrap() - test_clock();
    assert!(second > first, "{second} > {first}");
    // Issue 20, item 4: inside this cooldown too, a transcript over the window is not skipped
    // (the request would be refused): the pass is tried at once, as the overflow hook would.
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::Skipped);
    let calls = s.calls();
    let mut big = c.transcript(session(200, 300));
    assert!(big.current_tokens() > 16_000);
    let (_, r) = rt.block_on(c.before_request(&mut big));
    assert_eq!(r.unwrap().outcome, Outcome::Failed);
    assert!(s.calls() > calls);
    // The user can always force it.
    s.fail_always(None);
    let r = rt
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert_eq!(r.outcome, Outcome::Summarized);
    assert_eq!(c.status().state.cooldown_until_ms, None);
}

#[test]
fn usage_from_before_a_compaction_is_ignored() {
    let rt = rt();
    let (mut c, _s) = scripted(config(16_000));
    let mut t = c.transcript(session(200, 300));
    let stale_ticket = {
        let mut small = c.transcript(vec![Message::user("x")]);
        rt.block_on(c.before_request(&mut small)).0
    };
    let r = rt
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert_eq!(r.outcome, Outcome::Summarized);
    let after = t.current_tokens();
    // A huge usage figure measured before the compaction must not calibrate the transcript.
    rt.block_on(c.after_response(&mut t, stale_ticket, Usage::prompt(1_000_000).record_only()));
    assert_eq!(t.current_tokens(), after);
    assert_eq!(t.calibration(), None);
}

#[test]
fn ineffective_compactions_pause_automatic_compaction() {
    let rt = rt();
    let (mut c, _s) = scripted_on_test_clock(config(16_000));
    let threshold = c.status().threshold_tokens;
    for round in 0..2 {
        let mut t = c.transcript(session(200, 300));
        let (ticket, r) = rt.block_on(c.before_request(&mut t));
        assert_eq!(r.unwrap().outcome, Outcome::Summarized, "round {round}");
        // The provider says the prompt is still over the threshold: ineffective.
        rt.block_on(c.after_response(&mut t, ticket, Usage::prompt(threshold + 1).record_only()));
    }
    assert_eq!(c.status().state.ineffective, 2);
    assert!(c.status().state.paused_until_ms.is_some());
    // Over the threshold within the window: paused.
    let mut t = c.transcript(crate::common::over_threshold_within_window(&c, 100));
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::Skipped);
    // Issue 20, item 4: over the window the pause would only turn the request into the
    // provider's refusal, so the pass is made (the pause stays for prompts that fit).
    let mut big = c.transcript(session(200, 300));
    let (_, r) = rt.block_on(c.before_request(&mut big));
    assert_eq!(r.unwrap().outcome, Outcome::Summarized);
    assert!(big.current_tokens() <= 16_000);
    assert!(c.status().state.paused_until_ms.is_some());
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::Skipped);
    // Forcing it works and clears the pause.
    let r = rt
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert_eq!(r.outcome, Outcome::Summarized);
    assert_eq!(c.status().state.paused_until_ms, None);
}

#[test]
fn overflow_retries_are_bounded_by_max_attempts() {
    let rt = rt();
    let (mut c, _s) = scripted(config(16_000));
    let mut t = c.transcript(session(20, 30));
    for _ in 0..3 {
        assert!(rt.block_on(c.on_context_overflow(&mut t)).is_some());
    }
    assert!(rt.block_on(c.on_context_overflow(&mut t)).is_none());
}

#[test]
fn irreducible_floor_is_reported_instead_of_looping() {
    let rt = rt();
    let (mut c, s) = scripted(config(16_000));
    // One user message larger than the whole window: nothing can be rewritten.
    let mut t = c.transcript(vec![
        Message::system("s"),
        Message::user("x".repeat(100_000)),
    ]);
    let before = t.messages().to_vec();
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.unwrap().outcome, Outcome::IrreducibleFloor);
    assert_eq!(t.messages(), &before[..]);
    assert_eq!(s.calls(), 0);
}

/// A refused prompt whose floor is system messages (a long system prompt and a mid-session
/// system notice in the tail, an earlier summary between them): the overflow pass cannot help
/// under the laws, and its report says why instead of `NotNeeded`.
#[test]
fn an_overflow_over_a_floor_of_system_messages_reports_the_floor() {
    let rt = rt();
    let (mut c, s) = scripted(config(16_000));
    let mut t = c.transcript(vec![
        Message::system(format!("Sandbox rules. {}", "rule ".repeat(9_000))),
        Message::system("You are the primary agent."),
        compaction_core::marker::render(
            compaction_core::MarkerKind::Batch,
            compaction_core::Role::User,
            "Goal: tidy the repository. Done: the build runs.",
        ),
        Message::user("update the ignore rules"),
        Message::assistant_tool_calls(
            "Checking the ignore rules.",
            vec![compaction_core::ToolCall::function(
                "c0",
                "exec",
                r#"{"cmd":"cat .gitignore"}"#,
            )],
        ),
        Message::tool_result("c0", "/target\n/web/node_modules\n"),
        Message::assistant("Updated .gitignore for the build outputs."),
        Message::system(format!("The model changed. {}", "note ".repeat(5_000))),
        Message::user("now help me with the grant application"),
    ]);
    assert!(t.current_tokens() > 16_000);
    let before = t.messages().to_vec();
    let r = rt.block_on(c.on_context_overflow(&mut t)).unwrap();
    assert_eq!(r.outcome, Outcome::IrreducibleFloor, "{r:?}");
    assert_eq!(t.messages(), &before[..]);
    assert_eq!(s.calls(), 0);
}

#[test]
fn a_failed_summary_never_drops_the_middle() {
    // Spec 9: "A failed summary call dropped the middle anyway (context lost)."
    let rt = rt();
    let (mut c, s) = scripted(no_fallback(16_000));
    s.push_error(Error::Transient { status: Some(502) });
    let mut t = c.transcript(session(200, 300));
    let before = t.messages().to_vec();
    let r = rt
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert_eq!(r.outcome, Outcome::Failed);
    assert_eq!(t.messages(), &before[..]);
}

#[test]
fn exactly_one_summary_remains_after_repeated_passes() {
    // Spec 9: "summaries nest and grow without bound"; "a summary was inserted twice".
    let rt = rt();
    let (mut c, s) = scripted(config(16_000));
    let mut t = c.transcript(session(200, 300));
    for i in 0..4 {
        s.push_text(format!("summary {i}"));
        let r = rt
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized, "pass {i}");
        let markers = t
            .messages()
            .iter()
            .filter(|m| compaction_core::marker::classify(m).is_some())
            .count();
        assert_eq!(markers, 1, "pass {i}");
        for m in session(10, 300).into_iter().skip(1) {
            t.push(m, c.status().counter);
        }
    }
    let reqs = s.requests();
    assert!(reqs[0].previous_summary.is_none());
    assert_eq!(reqs[1].previous_summary.as_deref(), Some("summary 0"));
}

#[test]
fn persisted_passes_are_mirrored_and_a_stale_generation_changes_nothing() {
    use compaction_store::{Commit, Store};
    use hermes_compaction::compressor::Persistence;
    let rt = rt();
    rt.block_on(async {
        let store = Store::connect("sqlite::memory:").await.unwrap().into_dyn();
        store.create_session("s1").await.unwrap();
        let s = Arc::new(ScriptedSummarizer::new());
        let mut c = builder_with(config(16_000), s.clone())
            .store(Persistence {
                store: store.clone(),
                session: "s1".into(),
                generation: 0,
            })
            .build()
            .unwrap();
        let mut t = c.transcript(session(200, 300));
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Summarized);
        // What a resumed agent loads is exactly the compacted transcript.
        let loaded = store.load_active("s1").await.unwrap();
        let wire = |m: &[Message]| m.iter().map(Message::to_wire_json).collect::<Vec<_>>();
        assert_eq!(wire(&loaded), wire(t.messages()));
        // Law 9: nothing lost.
        let all = store.load_all("s1").await.unwrap();
        assert!(all.len() >= 801);
        // The store's history says what the pass was, with its estimated sizes.
        let history = store.history("s1").await.unwrap();
        let pass = &history[1].label;
        assert_eq!(pass.kind, compaction_store::GenerationKind::Batch);
        let (before, after) = (pass.tokens_before.unwrap(), pass.tokens_after.unwrap());
        assert!(before > 16_000 && after < before / 2, "{before} -> {after}");
        assert_eq!(after, t.current_tokens());

        // Another writer compacts first: our next pass is discarded, transcript unchanged.
        let mut other = store.load_active("s1").await.unwrap();
        let g = store.generation("s1").await.unwrap();
        let edit = compaction_core::Edit::single(1..2, vec![]);
        let mut commit = Commit::from_edit(g, &edit, &other).unwrap();
        store.archive_and_compact("s1", &mut commit).await.unwrap();
        other.remove(1);
        for m in session(100, 300).into_iter().skip(1) {
            t.push(m, c.status().counter);
        }
        let before = t.messages().to_vec();
        let r = c
            .one_shot(&mut t, OneShot::batch())
            .await
            .into_batch()
            .unwrap();
        assert_eq!(r.outcome, Outcome::Failed);
        assert_eq!(r.failure_kind(), Some(FailureKind::StaleGeneration));
        // Unchanged apart from the row ids the flush stamped.
        assert_eq!(wire(t.messages()), wire(&before));
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn forced_batch_passes_keep_the_laws(
        msgs in compaction_core::strategies::transcript(),
        fail in any::<bool>(),
    ) {
        let rt = rt();
        let (mut c, s) = scripted(no_fallback(16_000));
        if fail {
            s.fail_always(Some(Error::Transient { status: Some(500) }));
        }
        let mut t = c.transcript(msgs);
        let before = t.messages().to_vec();
        let r = rt.block_on(c.one_shot(&mut t, OneShot::batch())).into_batch().unwrap();
        let kind = match r.outcome {
            Outcome::Summarized => PassKind::Batch,
            Outcome::Pruned => PassKind::Prune,
            Outcome::Failed => PassKind::Failed,
            _ => PassKind::Unchanged,
        };
        if fail {
            prop_assert!(matches!(kind, PassKind::Failed | PassKind::Prune | PassKind::Unchanged), "{:?}", r);
        }
        let pass = r.law;
        prop_assert_eq!(pass.kind, kind);
        let v = laws::check(&before, t.messages(), &pass, &Estimator::default());
        prop_assert!(v.is_empty(), "{:?}: {:?}", r.outcome, v);
        if matches!(kind, PassKind::Batch | PassKind::Prune) {
            // Law 8: every committed batch pass shrinks the transcript.
            prop_assert!(r.stats.tokens_after < r.stats.tokens_before, "{:?}", r);
        }
    }
}

#[test]
fn proactive_prune_commits_only_a_worthwhile_reclaim_and_rearms_after_growth() {
    let rt = rt();
    let mut cfg = config(200_000);
    cfg.compression.proactive_prune_tokens = 20_000;
    cfg.compression.proactive_prune_output_min_tokens = 0;
    cfg.compression.proactive_prune_min_reclaim_tokens = 4_096;
    let (mut c, s) = scripted(cfg);
    // Below the threshold (150K) but over the proactive size, with big old tool outputs.
    let mut t = c.transcript(session(60, 3_000));
    assert!(t.current_tokens() >= 20_000 && t.current_tokens() < c.status().threshold_tokens);
    let (_, r) = rt.block_on(c.before_request(&mut t));
    let r = r.expect("proactive pass ran");
    assert_eq!(r.outcome, Outcome::Pruned);
    assert!(r.stats.tokens_before - r.stats.tokens_after >= 4_096);
    assert_eq!(s.calls(), 0, "prune-only never calls the summarizer");
    let reclaimed = r.stats.tokens_before - r.stats.tokens_after;
    let rearm_at = r.stats.tokens_after + reclaimed;
    // Disarmed until the transcript grows again by what was reclaimed.
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert!(r.is_none());
    for m in session(1, 30).into_iter().skip(1) {
        t.push(m, c.status().counter);
    }
    assert!(t.current_tokens() < rearm_at);
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert!(r.is_none(), "still disarmed");
    while t.current_tokens() < rearm_at {
        for m in session(2, 3_000).into_iter().skip(1) {
            t.push(m, c.status().counter);
        }
    }
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert!(r.is_some(), "re-armed after growth");
}

/// With `proactive_prune_output_min_tokens`, a proactive prune rewrites only what is too big
/// to carry: the two giant outputs become one line each, every other output and the long
/// (but not giant) argument stay as they were.
#[test]
fn a_proactive_prune_over_a_size_rewrites_only_the_messages_too_big_to_carry() {
    let rt = rt();
    let mut cfg = config(200_000);
    cfg.compression.proactive_prune_tokens = 20_000;
    cfg.compression.proactive_prune_min_reclaim_tokens = 4_096;
    cfg.compression.proactive_prune_output_min_tokens = 4_000;
    let (mut c, s) = scripted(cfg);
    let mut msgs = session(60, 3_000);
    let giant = |i: usize| format!("giant log line {i}\n").repeat(2_000);
    for turn in [5usize, 9] {
        msgs[1 + turn * 4 + 2].set_text(giant(turn));
    }
    let long_script = format!("{{\"command\":\"{}\"}}", "echo step; ".repeat(300));
    msgs[1 + 7 * 4 + 1] = Message::assistant_tool_calls(
        "",
        vec![compaction_core::ToolCall::function(
            "call-7",
            "bash",
            &long_script,
        )],
    );
    let mut t = c.transcript(msgs.clone());
    assert!(t.current_tokens() >= 20_000 && t.current_tokens() < c.status().threshold_tokens);
    let (_, r) = rt.block_on(c.before_request(&mut t));
    let r = r.expect("proactive pass ran");
    assert_eq!(r.outcome, Outcome::Pruned);
    assert_eq!(s.calls(), 0);
    assert_eq!(t.len(), msgs.len(), "a prune is one-for-one");
    let changed: Vec<usize> = (0..msgs.len())
        .filter(|&i| t.messages()[i] != msgs[i])
        .collect();
    assert_eq!(
        changed,
        vec![1 + 5 * 4 + 2, 1 + 9 * 4 + 2],
        "only the giant outputs"
    );
    assert!(changed.iter().all(|&i| t.messages()[i].text().len() < 300));
    // Without the size, the same pass prunes every old output and shortens the argument.
    let mut cfg = config(200_000);
    cfg.compression.proactive_prune_tokens = 20_000;
    cfg.compression.proactive_prune_output_min_tokens = 0;
    cfg.compression.proactive_prune_min_reclaim_tokens = 4_096;
    let (mut c, _) = scripted(cfg);
    let mut t = c.transcript(msgs.clone());
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.map(|r| r.outcome), Some(Outcome::Pruned));
    let changed = (0..msgs.len())
        .filter(|&i| t.messages()[i] != msgs[i])
        .count();
    assert!(changed > 20, "{changed}");
    assert_ne!(t.messages()[1 + 7 * 4 + 1], msgs[1 + 7 * 4 + 1]);
}

static TTL_NOW: AtomicU64 = AtomicU64::new(7_000_000);

fn ttl_clock() -> u64 {
    TTL_NOW.load(Ordering::SeqCst)
}

/// A compressor whose proactive prune is never worth a cache break while the cache is warm.
fn proactive_held_back(cold_cache_rewrites: bool) -> (Compressor, compaction_core::Transcript) {
    let mut cfg = config(200_000);
    cfg.compression.cache_profile = "anthropic".into();
    cfg.compression.proactive_prune_tokens = 20_000;
    cfg.compression.proactive_prune_output_min_tokens = 0;
    cfg.compression.proactive_prune_min_reclaim_tokens = 1_000_000;
    cfg.compression.cold_cache_rewrites = cold_cache_rewrites;
    let mut c = builder_with(cfg, Arc::new(ScriptedSummarizer::new()))
        .clock(ttl_clock)
        .build()
        .unwrap();
    let mut t = c.transcript(session(2, 300));
    // A first request, below the proactive size: the cache is warm from here.
    let (_, r) = rt().block_on(c.before_request(&mut t));
    assert!(r.is_none());
    for m in session(60, 3_000).into_iter().skip(1) {
        t.push(m, c.status().counter);
    }
    (c, t)
}

#[test]
fn a_cold_cache_lets_a_held_back_proactive_prune_through() {
    let rt = rt();
    let (mut c, mut t) = proactive_held_back(true);
    let before = t.messages().to_vec();
    assert!(t.current_tokens() >= 20_000 && t.current_tokens() < c.status().threshold_tokens);
    // Warm (10 s after the last request): the reclaim is under the minimum, nothing changes
    // and the pass re-arms.
    TTL_NOW.fetch_add(10_000, Ordering::SeqCst);
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.map(|r| r.outcome), Some(Outcome::NotNeeded));
    assert_eq!(t.messages(), &before[..]);
    // Still warm: disarmed.
    TTL_NOW.fetch_add(299_000, Ordering::SeqCst);
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert!(r.is_none());
    // The anthropic profile's 300 s have passed since the last request: the next request
    // re-writes the prompt anyway, so the prune is free and commits what it reclaims.
    TTL_NOW.fetch_add(300_000, Ordering::SeqCst);
    let (_, r) = rt.block_on(c.before_request(&mut t));
    let r = r.expect("the cold cache re-arms the proactive prune");
    assert_eq!(r.outcome, Outcome::Pruned);
    assert!(r.stats.tokens_after < r.stats.tokens_before);
    assert_ne!(t.messages(), &before[..]);

    // With the rule off, the same gap changes nothing.
    let (mut c, mut t) = proactive_held_back(false);
    let before = t.messages().to_vec();
    TTL_NOW.fetch_add(10_000, Ordering::SeqCst);
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert_eq!(r.map(|r| r.outcome), Some(Outcome::NotNeeded));
    TTL_NOW.fetch_add(600_000, Ordering::SeqCst);
    let (_, r) = rt.block_on(c.before_request(&mut t));
    assert!(r.is_none());
    assert_eq!(t.messages(), &before[..]);
}

#[test]
fn a_known_cache_profile_raises_the_prune_runway() {
    let mut cfg = config(128_000);
    let plain = hermes_compaction::compressor::batch_config(&cfg);
    assert_eq!(plain.prune_runway_ratio, 0.15);
    cfg.compression.cache_profile = "anthropic".into();
    let aware = hermes_compaction::compressor::batch_config(&cfg);
    let suggested = hermes_compaction::cache::suggested_prune_runway_ratio(
        &hermes_compaction::cache::CacheProfile::named("anthropic").unwrap(),
    );
    assert!(suggested > 0.15);
    assert_eq!(aware.prune_runway_ratio, suggested);
    cfg.compression.cache_aware = false;
    assert_eq!(
        hermes_compaction::compressor::batch_config(&cfg).prune_runway_ratio,
        0.15
    );
}

#[test]
fn real_usage_over_the_threshold_compacts_at_once() {
    let rt = rt();
    // A 64K floor in a 64K window: the threshold is the floor cap, here 85% (54,400).
    let mut cfg = config(64_000);
    cfg.compression.threshold_floor_tokens = 64_000;
    cfg.compression.floor_cap = 0.85;
    // No proactive prune: only the usage may trigger a pass here.
    cfg.compression.proactive_prune_tokens = 0;
    let (mut c, _s) = scripted(cfg);
    // Estimated just under the threshold (54,400).
    let mut t = c.transcript(session(380, 300));
    assert!(t.current_tokens() < c.status().threshold_tokens);
    assert!(t.current_tokens() > c.status().threshold_tokens * 3 / 4);
    let (ticket, r) = rt.block_on(c.before_request(&mut t));
    assert!(r.is_none(), "the estimate is below the threshold");
    // The provider counts far more than the estimate: compact now.
    let usage = Usage::prompt(c.status().threshold_tokens + 10_000);
    let r = rt
        .block_on(c.after_response(&mut t, ticket, usage))
        .expect("a pass ran");
    assert_eq!(r.detail.trigger, hermes_compaction::Trigger::Usage);
    assert!(matches!(r.outcome, Outcome::Summarized | Outcome::Pruned));
    // The rewrite dropped the calibration: no second pass from the same (stale) usage.
    assert!(
        rt.block_on(c.after_response(&mut t, ticket, usage))
            .is_none()
    );
    assert_eq!(t.calibration(), None);
}

#[test]
fn when_the_estimate_undercounts_the_providers_count_drives_the_plan() {
    // Spec 9: "one measurement must drive both the trigger and the did-it-work check".
    let rt = rt();
    let mut cfg = config(64_000);
    cfg.compression.threshold_floor_tokens = 64_000;
    let (mut c, _s) = scripted(cfg);
    // ~5K estimated tokens, but the provider reports 70K (e.g. a tokenizer far from chars/4).
    let mut t = c.transcript(session(40, 300));
    let estimated = t.estimated_total();
    assert!(estimated * 5 < c.status().threshold_tokens);
    let (ticket, _) = rt.block_on(c.before_request(&mut t));
    let r = rt
        .block_on(c.after_response(&mut t, ticket, Usage::prompt(70_000)))
        .expect("a pass ran");
    assert!(
        matches!(r.outcome, Outcome::Summarized | Outcome::Pruned),
        "{:?}",
        r.outcome
    );
    // Scaled back to the provider's units, the result is under the threshold.
    assert!(t.estimated_total() * 70_000 / estimated < c.status().threshold_tokens);
}

/// What `preview` announces is what a batch `one_shot` then does: every message kept, pinned, pruned
/// or summarized as previewed, the summaries where previewed, and nothing called or written
/// by the preview itself.
#[test]
fn preview_is_what_compress_then_does() {
    use hermes_compaction::preview::{Fate, PreviewKind};
    let rt = rt();
    rt.block_on(async {
        for (turns, pin) in [(200, None), (200, Some(301)), (120, Some(7))] {
            let (mut c, s) = scripted(config(16_000));
            let mut t = c.transcript(session(turns, 300));
            if let Some(i) = pin {
                assert!(t.pin(i, true));
            }
            let before = t.messages().to_vec();
            let p = c.preview(&t, OneShot::batch());
            assert_eq!(
                c.preview(&t, OneShot::batch()),
                p,
                "a preview changes nothing"
            );
            assert_eq!(s.requests().len(), 0, "a preview calls no summarizer");
            assert_eq!(p.kind, PreviewKind::Batch);
            if let Some(i) = pin {
                assert_eq!(p.messages[i].fate, Fate::Pinned);
            }
            let r = c
                .one_shot(&mut t, OneShot::batch())
                .await
                .into_batch()
                .unwrap();
            assert_eq!(r.outcome, Outcome::Summarized);
            assert_eq!(s.requests().len(), p.summaries.len());
            // Rebuild the compacted transcript from the preview: kept messages verbatim,
            // pruned ones by their one-liner, each summary once where it was planned.
            let mut expected: Vec<(Option<String>, Option<String>)> = Vec::new();
            for (i, (m, fate)) in before
                .iter()
                .zip(p.messages.iter().map(|m| &m.fate))
                .enumerate()
            {
                match fate {
                    Fate::Kept | Fate::Pinned => expected.push((Some(m.to_wire_json()), None)),
                    Fate::Pruned { one_liner } => expected.push((None, one_liner.clone())),
                    Fate::Demoted { one_liner } => expected.push((None, Some(one_liner.clone()))),
                    Fate::Summarized { summary } if p.summaries[*summary].range.start == i => {
                        expected.push((None, None));
                    }
                    Fate::Summarized { .. } => {}
                    _ => expected.push((None, None)),
                }
            }
            let after = t.messages();
            assert_eq!(after.len(), expected.len());
            for (a, (wire, text)) in after.iter().zip(&expected) {
                if let Some(w) = wire {
                    assert_eq!(&a.to_wire_json(), w);
                }
                if let Some(text) = text {
                    assert_eq!(&a.text().into_owned(), text);
                }
            }
            assert!(
                after.iter().filter(|m| m.marker_kind().is_some()).count() >= p.summaries.len()
            );
        }
    });
}

/// Issue 25, item 3: the core's defaults are the facade's. A core-only user gets the
/// threshold, tail, runway and micro settings a facade user gets, at every window.
#[test]
fn core_defaults_are_the_facade_defaults() {
    use compaction_core::batch::BatchConfig;
    use compaction_core::micro::MicroConfig;
    use compaction_core::trim::TrimConfig;
    use hermes_compaction::Config;
    use hermes_compaction::core::regions::{RegionConfig, WindowConfig};
    let config = Config::default();
    for window in [8_000u64, 32_000, 64_000, 128_000, 200_000, 1_000_000] {
        let mut c = config.clone();
        c.model.context_length = window;
        assert_eq!(
            c.window(),
            WindowConfig::for_context(window),
            "window {window}"
        );
        assert_eq!(
            c.window().threshold_tokens(),
            WindowConfig::for_context(window).threshold_tokens()
        );
    }
    assert_eq!(
        WindowConfig::for_context(128_000).threshold_tokens(),
        64_000
    );
    assert_eq!(config.window(), WindowConfig::default());
    assert_eq!(config.regions(), RegionConfig::default());
    assert_eq!(config.trim(), TrimConfig::default());
    assert_eq!(
        hermes_compaction::compressor::batch_config(&config),
        BatchConfig::default()
    );
    assert_eq!(
        hermes_compaction::compressor::micro_config(&config),
        MicroConfig::default()
    );
    // A facade key core also knows reaches it.
    let mut c = config.clone();
    c.compression.micro_compact_min_age_answers = 3;
    assert_eq!(
        hermes_compaction::compressor::micro_config(&c).min_age_answers,
        3
    );
}
