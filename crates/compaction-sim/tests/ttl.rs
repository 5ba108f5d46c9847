//! The time-to-live rule never makes a session dearer: each policy replayed with
//! `cold_cache_rewrites` on and off over sessions with idle gaps past the cache's lifetime.

use compaction_sim::{Options, Policy, Pricing, Variant, time};
use hermes_compaction::Config;
use hermes_compaction::core::Message;
use hermes_compaction::core::cache::CacheProfile;

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
        let variants: Vec<Variant> = [Policy::Batch, Policy::MicroGate]
            .into_iter()
            .flat_map(|p| {
                let v = p.variant(&base, 8_000);
                let off = v.without_ttl_rule();
                [v, off]
            })
            .collect();
        let options = Options {
            pricings: vec![Pricing::Profile(CacheProfile::anthropic())],
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
