//! The laws of spec section 2, checked with `laws::check` over every shared fixture in every
//! mode: a batch pass, a prune-only pass and a run of micro passes, each through the facade.

use hermes_compaction::OneShot;
use hermes_compaction::Outcome;
use hermes_compaction::core::laws::{self, Pass};
use hermes_compaction::core::{Estimator, Message, Transcript};

use crate::common::{config, extractive, fixtures, rt};

/// Micro passes run per fixture (each absorbs the oldest absorbable exchange).
const MICRO_PASSES: usize = 4;

fn assert_laws(name: &str, mode: &str, before: &[Message], after: &[Message], pass: &Pass) {
    let v = laws::check(before, after, pass, &Estimator::default());
    assert!(v.is_empty(), "{name} ({mode}, {:?}): {v:?}", pass.kind);
}

fn estimated_total(msgs: &[Message]) -> u64 {
    Transcript::new(msgs.to_vec(), &Estimator::default()).estimated_total()
}

#[test]
fn a_forced_batch_pass_keeps_the_laws_on_every_fixture() {
    let Some(files) = fixtures() else { return };
    let rt = rt();
    let mut summarized = 0;
    for (name, msgs) in files {
        let mut c = extractive(config(64_000), &name);
        let mut t = c.transcript(msgs);
        let before = t.messages().to_vec();
        let r = rt
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        summarized += usize::from(r.outcome == Outcome::Summarized);
        assert_laws(&name, "batch", &before, t.messages(), &r.law);
    }
    assert!(summarized > 0, "no fixture was summarized");
}

#[test]
fn a_proactive_prune_keeps_the_laws_on_every_fixture() {
    let Some(files) = fixtures() else { return };
    let rt = rt();
    let mut pruned = 0;
    for (name, msgs) in files {
        // A window the transcript fits in twice over, so only the proactive prune can run.
        let mut cfg = config((estimated_total(&msgs) * 2).max(16_000));
        cfg.compression.proactive_prune_tokens = 1;
        cfg.compression.proactive_prune_min_reclaim_tokens = 0;
        // Every old output, not only those too big to carry: the laws on the most rewriting.
        cfg.compression.proactive_prune_output_min_tokens = 0;
        let mut c = extractive(cfg, &name);
        let mut t = c.transcript(msgs);
        let before = t.messages().to_vec();
        let (_ticket, report) = rt.block_on(c.before_request(&mut t));
        let Some(r) = report else {
            assert_eq!(t.messages(), &before[..], "{name}: no report, yet changed");
            continue;
        };
        assert_ne!(r.outcome, Outcome::Summarized, "{name}: a prune summarized");
        pruned += usize::from(r.outcome == Outcome::Pruned);
        assert_laws(&name, "prune", &before, t.messages(), &r.law);
    }
    assert!(pruned > 0, "no fixture was pruned");
}

#[test]
fn micro_passes_keep_the_laws_on_every_fixture() {
    let Some(files) = fixtures() else { return };
    let rt = rt();
    let mut changed_passes = 0;
    for (name, msgs) in files {
        let mut cfg = config(64_000);
        cfg.compression.micro_compact = true;
        let mut c = extractive(cfg, &name);
        let mut t = c.transcript(msgs);
        for _ in 0..MICRO_PASSES {
            let before = t.messages().to_vec();
            let Some(r) = rt.block_on(c.finalize_turn(&mut t)) else {
                break;
            };
            let after = t.messages();
            changed_passes += usize::from(after != &before[..]);
            let pass = r.law;
            assert_laws(&name, "micro", &before, after, &pass);
        }
    }
    assert!(changed_passes > 0, "no micro pass changed any fixture");
}
