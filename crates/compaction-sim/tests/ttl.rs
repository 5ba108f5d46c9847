//! The time-to-live rule never makes a session dearer: each policy replayed with
//! `cold_cache_rewrites` on and off over sessions with idle gaps past the cache's lifetime.

use compaction_sim::{Options, Policy, Pricing, Variant, time};
use hermes_compaction::Config;
use hermes_compaction::cache::CacheProfile;
use hermes_compaction::core::Message;

use crate::common::{extractive, tool_session};

/// `msgs` stamped 20 s apart, with an idle gap of `idle_secs` before every `every`-th user
/// message (the user away, the cache gone cold).
fn timed(mut msgs: Vec<Message>, every: usize, idle_secs: u64) -> Vec<Message> {
    let mut at = 1_767_225_600_000u64;
    let mut users = 0;
    for m in &mut msgs {
        at += 20_000;
        if m.is_user() {
            users += 1;
            if users % every == 0 {
                at += idle_secs * 1_000;
            }
        }
        m.meta_mut()
            .extra
            .insert(time::META_KEY.into(), serde_json::Value::from(at));
    }
    msgs
}

#[test]
fn cold_cache_rewrites_never_raise_the_cost() {
    let inputs = vec![
        ("tools".to_owned(), timed(tool_session(60, 6_000), 5, 400)),
        (
            "tools-idle".to_owned(),
            timed(tool_session(60, 6_000), 2, 900),
        ),
    ];
    for context in [32_000, 64_000] {
        let mut base = Config::default();
        base.model.context_length = context;
        // The rule acts through the proactive prune, which at the defaults only takes outputs
        // too big to carry: here it takes every old output, as the rule has it at work.
        base.compression.proactive_prune_output_min_tokens = 0;
        let variants: Vec<Variant> = [Policy::Batch, Policy::MicroGate]
            .into_iter()
            .flat_map(|p| {
                let v = p.variant(&base, 8_000);
                let off = v.without_ttl_rule();
                [v, off]
            })
            .collect();
        let options = Options {
            pricings: vec![Pricing::Profile(CacheProfile::named("anthropic").unwrap())],
            threads: 1,
            ..Options::default()
        };
        let sim =
            compaction_sim::simulate(&inputs, &variants, &options, extractive(), &|_| {}).unwrap();
        for on in sim
            .rows
            .iter()
            .filter(|r| !r.policy.ends_with(Variant::NO_TTL_SUFFIX))
        {
            let off = sim
                .rows
                .iter()
                .find(|r| {
                    r.transcript == on.transcript
                        && r.policy == format!("{}{}", on.policy, Variant::NO_TTL_SUFFIX)
                })
                .unwrap();
            assert!(on.expired_requests > 0, "{} has no cold gap", on.transcript);
            assert!(
                on.cost_usd <= off.cost_usd + 1e-9,
                "{} {} at {context}: ${:.4} with the rule, ${:.4} without",
                on.policy,
                on.transcript,
                on.cost_usd,
                off.cost_usd
            );
        }
    }
}

/// Under the price table (no cache lifetime: every reused prefix is a hit) the replayed
/// compressor does not treat an idle gap as a cold cache: the rule on and off replay alike,
/// so the table never prices a "free" rewrite as the cache break it charges. The same
/// sessions under a profile with a lifetime show the rule at work (else this proves nothing).
#[test]
fn the_price_table_has_no_cold_cache() {
    let mut fired = 0;
    for (output_chars, every, idle) in [(6_000, 2, 900), (2_000, 2, 900), (1_200, 1, 400)] {
        let inputs = vec![(
            "idle".to_owned(),
            timed(tool_session(80, output_chars), every, idle),
        )];
        for context in [32_000, 64_000] {
            let mut base = Config::default();
            base.model.context_length = context;
            base.compression.proactive_prune_output_min_tokens = 0;
            let v = Policy::Batch.variant(&base, 8_000);
            let variants = vec![v.without_ttl_rule(), v];
            for pricing in [
                Pricing::Table(Default::default()),
                Pricing::Profile(CacheProfile::named("anthropic").unwrap()),
            ] {
                let table = matches!(pricing, Pricing::Table(_));
                let options = Options {
                    pricings: vec![pricing],
                    threads: 1,
                    ..Options::default()
                };
                let sim =
                    compaction_sim::simulate(&inputs, &variants, &options, extractive(), &|_| {})
                        .unwrap();
                let [off, on] = &sim.rows[..] else {
                    panic!("two rows expected, got {}", sim.rows.len());
                };
                let key =
                    |r: &compaction_sim::Row| (r.prune_events, r.summary_events, r.prompt_tokens);
                if table {
                    assert_eq!(
                        key(on),
                        key(off),
                        "{output_chars} {every} {idle} at {context}"
                    );
                } else if key(on) != key(off) {
                    fired += 1;
                }
            }
        }
    }
    assert!(
        fired > 0,
        "the rule never fired under a profile with a lifetime"
    );
}
